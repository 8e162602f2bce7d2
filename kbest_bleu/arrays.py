"""numpy <-> Arrow without copies, and without pyarrow's pandas import.

``pa.array``, ``pa.scalar``, ``Schema.empty_table`` and ``Array.to_numpy`` import pandas when it
is installed (to check for pandas objects, or in the C++ conversion): 0.25-0.3 s, as much as a
5,000-row job's whole scoring (issue 18). The score path goes through the buffers instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["from_numpy", "from_strings", "one_array", "read_only", "string_buffers", "strings_from_buffers", "to_numpy"]

_TYPES = {np.dtype(np.int8): pa.int8(), np.dtype(np.int16): pa.int16(), np.dtype(np.int32): pa.int32(),
          np.dtype(np.int64): pa.int64(), np.dtype(np.uint8): pa.uint8(), np.dtype(np.uint16): pa.uint16(),
          np.dtype(np.uint32): pa.uint32(), np.dtype(np.uint64): pa.uint64(), np.dtype(np.float32): pa.float32(),
          np.dtype(np.float64): pa.float64()}


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d numpy bool, integer or float array as an Arrow array without nulls (zero-copy for
    contiguous numbers; bools are bit-packed), equal to ``pa.array(values)``."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"from_numpy: expected a 1-d array, found shape {values.shape}")
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(values),
                                     [None, pa.py_buffer(np.packbits(values, bitorder="little"))])
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(_TYPES[values.dtype], len(values), [None, pa.py_buffer(values)])


_DTYPES = {t: d for d, t in _TYPES.items()}


def one_array(values: "pa.Array | pa.ChunkedArray") -> pa.Array:
    """A chunked array's chunks as one array: the chunk itself when there is one (pyarrow's
    ``combine_chunks`` copies every buffer even then); an array is returned as it is."""
    if isinstance(values, pa.ChunkedArray):
        return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    return values


def to_numpy(values: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """A 1-d Arrow bool, integer or float array as numpy (a read-only view of the buffer for
    numbers), equal to ``values.to_numpy(zero_copy_only=False)``. Arrays with nulls and other types
    take pyarrow's own conversion."""
    values = one_array(values)
    start, stop = values.offset, values.offset + len(values)
    if values.null_count == 0 and values.type in _DTYPES:
        dtype = _DTYPES[values.type]
        if len(values) == 0:
            return np.zeros(0, dtype)
        view = np.frombuffer(values.buffers()[1], dtype)[start:stop]
        view.setflags(write=False)  # Arrow's memory, read-only as pyarrow's own zero-copy view
        return view
    if values.null_count == 0 and pa.types.is_boolean(values.type):
        if len(values) == 0:
            return np.zeros(0, bool)
        bits = np.frombuffer(values.buffers()[1], np.uint8)
        return np.unpackbits(bits, count=stop, bitorder="little")[start:].view(bool)
    return values.to_numpy(zero_copy_only=False)


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy). numba compiles a kernel once per argument type, and
    read-only is part of an array's type: a kernel fed Arrow's zero-copy views by one caller and
    fresh arrays by another compiles twice."""
    view = a.view()
    view.setflags(write=False)
    return view


def string_buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 UTF-8 bytes, int64 offsets[n+1]) of an Arrow string/large_string array, zero-copy.

    The bytes are always read-only: numba compiles a kernel once per argument type, and
    read-only is part of an array's type. Arrow hands out buffers as mutable or not by where they
    came from (built in memory, or read from a file), so a job on a parquet file compiled the
    kernels again after ``kbest-bleu warmup`` had compiled them on an in-memory table."""
    if len(strings) == 0:
        data, offsets = np.zeros(1, np.uint8), np.zeros(1, np.int64)
    else:
        _, off_buf, data_buf = strings.buffers()
        off_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
        offsets = np.frombuffer(off_buf, off_type)[strings.offset:strings.offset + len(strings) + 1].astype(np.int64)
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and data_buf.size else np.zeros(1, np.uint8)
    data.setflags(write=False)
    return data, offsets


def strings_from_buffers(data: bytes, offsets: np.ndarray) -> pa.Array:
    """An Arrow large_string array without nulls from UTF-8 bytes and int64 offsets[n+1] (row i is
    ``data[offsets[i]:offsets[i + 1]]``); the bytes are not validated."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))


def from_strings(values: "list[str]") -> pa.Array:
    """Python strings as an Arrow large_string array, equal to ``pa.array(values, pa.large_string())``
    for strings without surrogates."""
    encoded = [v.encode() for v in values]
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    return strings_from_buffers(b"".join(encoded), np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)]))
