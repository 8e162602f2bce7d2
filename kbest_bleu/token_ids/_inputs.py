"""Token-id rows in, as CSR without their pad ids: 2-D arrays and tensors (numpy, ``__dlpack__``,
``__array__``), ragged sequences, Arrow ``list<int>``; references one or several per entry.
The forms and the padding rule are described in :mod:`kbest_bleu.token_ids`."""

from __future__ import annotations

import array
import itertools
import numbers
from functools import lru_cache
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import InputError
from ..stats import check_group_pointers

def _pad_value(pad_id: Any) -> Optional[int]:
    if pad_id is None:
        return None
    if type(pad_id) is not int and (isinstance(pad_id, (bool, np.bool_)) or not isinstance(pad_id, numbers.Integral)):
        raise InputError(f"pad_id: expected an integer id (or None: no padding), found {pad_id!r}")
    pad = int(pad_id)
    if not -(1 << 63) <= pad < (1 << 64):
        raise InputError(f"pad_id: {pad} does not fit a 64-bit id")
    return pad


def _pad_in(pad: Optional[int], dtype: np.dtype) -> Optional[int]:
    """The pad id as the int64 that ids of ``dtype`` are compared as (uint64 ids are read as int64
    with the same bits, :func:`_integer_array`), or None where no value of ``dtype`` equals it: a
    pad outside the dtype (2**64 - 1 beside int8 ids, -100 beside uint32 ids) occurs nowhere."""
    if pad is None or not _fits(pad, dtype):
        return None
    return pad - (1 << 64) if pad >= (1 << 63) else pad


def _integer_array(arr: np.ndarray, what: str) -> np.ndarray:
    """``arr`` as an integer array in this machine's byte order whose values compare as the ids do:
    uint64 is read as int64 with the same bits (a bijection, so equality is kept); bools, floats
    and objects are refused."""
    kind = arr.dtype.kind
    if kind not in "iu":
        raise InputError(f"{what}: expected integer token ids, found dtype {arr.dtype}; pass integer ids "
                         "(e.g. a tensor of dtype int64 or int32)")
    if not arr.dtype.isnative:  # big-endian bytes (a file's, a network's): the same values in native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr.view(np.int64) if kind == "u" and arr.dtype.itemsize == 8 else arr


def _from_object(x: Any, what: str) -> Any:
    """A numpy array for objects exposing ``__dlpack__`` (torch, JAX, CuPy on the CPU) or
    ``__array__``; ``x`` itself otherwise."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not isinstance(x, (list, tuple)):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError, ValueError) as exc:
            if not hasattr(x, "__array__"):
                raise InputError(f"{what}: could not read the {type(x).__name__} through DLPack ({exc}); move it "
                                 "to the CPU first (e.g. tensor.cpu())") from None
    if hasattr(x, "__array__") and not isinstance(x, (list, tuple)):
        try:
            return np.asarray(x)
        except Exception as exc:  # a GPU tensor's __array__ raises its own error type
            raise InputError(f"{what}: could not read the {type(x).__name__} as a numpy array ({exc}); move it to "
                             "the CPU first (e.g. tensor.cpu())") from None
    return x


_KERNELS: list = []


def kernels() -> Any:
    """:mod:`kbest_bleu.token_ids._kernels`, imported on first use (numba loads with it, not with
    this package) and kept: a function-level import costs ~0.3 us a call, five per small batch."""
    if not _KERNELS:
        from . import _kernels

        _KERNELS.append(_kernels)
    return _KERNELS[0]


def _padded_rows(arr: np.ndarray, pad: Optional[int], what: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ids int64[T], ptr int64[B+1]) of the rows of a 2-D id array without their pad ids."""
    dtype = arr.dtype
    arr = _integer_array(arr, what)
    pad = _pad_in(pad, dtype)
    n_rows, width = arr.shape
    if pad is None:
        return np.ascontiguousarray(arr, dtype=np.int64).reshape(-1), np.arange(n_rows + 1, dtype=np.int64) * width
    k = kernels()
    # one pass of a small kernel: 2.5-4x faster than numpy's mask, count and compress
    x = np.ascontiguousarray(arr)
    ids, ptr = np.empty(x.size, np.int64), np.empty(n_rows + 1, np.int64)
    n = k.compress_rows(x, pad, ids, ptr)
    return ids[:n], ptr


def _fits(pad: int, dtype: np.dtype) -> bool:
    """Whether ``pad`` is a value of ``dtype`` (a pad outside its range can occur nowhere)."""
    lo, hi = _int_range(dtype)
    return lo <= pad <= hi


@lru_cache(maxsize=None)
def _int_range(dtype: np.dtype) -> tuple[int, int]:
    """(min, max) of an integer dtype, memoized: np.iinfo costs ~1 us, a part of a small batch's call."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _drop_pad(ids: np.ndarray, ptr: np.ndarray, pad: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
    """CSR without the pad ids."""
    if pad is None or not ids.size:
        return ids, ptr
    keep = ids != pad
    if keep.all():
        return ids, ptr
    kept = np.zeros(ids.size + 1, np.int64)
    np.cumsum(keep, out=kept[1:])
    return ids[keep], kept[ptr]


def _ragged_rows(rows: Sequence, pad: Optional[int], what: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR of a sequence of integer sequences (lists of ints, 1-D arrays, tensors)."""
    n = len(rows)
    ptr = np.zeros(n + 1, np.int64)
    if n == 0:
        return np.zeros(0, np.int64), ptr
    if all(isinstance(r, (list, tuple)) for r in rows):
        np.cumsum(np.fromiter(map(len, rows), np.int64, count=n), out=ptr[1:])
        # from a list, array('q') takes ~half the time it takes from an iterator (64 rows of ~53 ids: 102 -> 66 us)
        ids = _list_ids(list(itertools.chain.from_iterable(rows)), rows, what)
        return _drop_pad(ids, ptr, _pad_in(pad, _INT64))
    parts = []  # rows of several kinds (arrays, tensors, lists): each by its own dtype, pad ids dropped
    for i, r in enumerate(rows):
        a = _from_object(r, f"{what}[{i}]")
        if isinstance(a, (list, tuple)):
            a = _list_ids(list(a), [a], what, first_row=i)
        if not isinstance(a, np.ndarray) or a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise InputError(f"{what}: row {i} is {type(r).__name__}"
                             f"{'' if not isinstance(a, np.ndarray) else f' of shape {a.shape}, dtype {a.dtype}'}; "
                             "expected a 1-D sequence of integer token ids")
        if a.size:
            p = _pad_in(pad, a.dtype)
            a = _integer_array(a, f"{what}[{i}]").astype(np.int64, copy=False)
            a = a[a != p] if p is not None else a
        else:  # an empty row of any dtype (torch.tensor([]) is float32) must not make the others float
            a = np.zeros(0, np.int64)
        parts.append(a)
        ptr[i + 1] = ptr[i] + a.size
    return np.concatenate(parts), ptr


_INT64 = np.dtype(np.int64)


def _list_ids(ids: list, rows: Sequence, what: str, first_row: int = 0) -> np.ndarray:
    """int64[T] of a list of Python ints: array('q') refuses floats, strings and ids beyond int64,
    where np.fromiter or np.asarray would convert them (a bool is the int it is, True = 1, as in
    Python). ``rows``: where they came from (numbered from ``first_row``), for the message."""
    try:
        return np.frombuffer(array.array("q", ids), np.int64)
    except (TypeError, OverflowError) as exc:
        raise InputError(f"{what}: expected sequences of integer token ids that fit in int64 ({exc}); "
                         f"{_first_bad(rows, first_row)}") from None


def _first_bad(rows: Sequence, first_row: int = 0) -> str:
    """Where the first non-integer (or too large) id of a ragged input is, for the message."""
    for i, r in enumerate(rows, first_row):
        for j, t in enumerate(r):
            if isinstance(t, np.bool_) or not isinstance(t, numbers.Integral) or not (
                    -(1 << 63) <= int(t) < (1 << 63)):
                return f"row {i}, position {j} holds {t!r}"
    return "check the rows' types"


def _arrow_array(x: Any, what: str) -> Any:
    """``x`` as one Arrow array: an array, or a chunked array's chunks combined; another Arrow
    object (a table, a record batch, a scalar) is an :class:`InputError`."""
    import pyarrow as pa

    if isinstance(x, pa.ChunkedArray):
        return x.combine_chunks() if x.num_chunks != 1 else x.chunk(0)
    if not isinstance(x, pa.Array):
        raise InputError(f"{what}: expected an Arrow list<int> array or chunked array (a table's column, "
                         f"e.g. table['ids']), found a pyarrow {type(x).__name__}")
    return x


def _arrow_rows(x: Any, pad: Optional[int], what: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR of an Arrow list<integer> array (possibly sliced or chunked)."""
    import pyarrow as pa

    x = _arrow_array(x, what)
    t = x.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_integer(t.value_type):
        raise InputError(f"{what}: expected an Arrow list of integer token ids (list<int32> or list<int64>), "
                         f"found Arrow type {t}")
    if x.null_count:
        row = int(np.flatnonzero(np.asarray(x.is_null().to_pylist()))[0])
        raise InputError(f"{what}: row {row} is null; expected a list of token ids (use [] for an empty one)")
    values = x.flatten()
    if values.null_count:
        raise InputError(f"{what}: a list holds a null id; expected integer token ids only")
    ids = _arrow_numbers(values)
    off = _arrow_numbers(x.offsets).astype(np.int64)
    pad = _pad_in(pad, ids.dtype)
    return _drop_pad(_integer_array(ids, what).astype(np.int64, copy=False), off - off[0], pad)


def _arrow_numbers(a: Any) -> np.ndarray:
    """A null-free Arrow integer array as a numpy view of its buffer (pyarrow's to_numpy may
    import pandas: ~0.3 s)."""
    dtype = np.dtype(a.type.to_pandas_dtype())
    if len(a) == 0:
        return np.zeros(0, dtype)
    return np.frombuffer(a.buffers()[1], dtype)[a.offset:a.offset + len(a)]


def _is_arrow(x: Any) -> bool:
    return type(x).__module__.startswith("pyarrow")


def rows(x: Any, pad_id: Any = None, what: str = "hypotheses") -> tuple[np.ndarray, np.ndarray]:
    """Token-id rows in any accepted form as CSR without their pad ids (:func:`kbest_bleu.token_ids.token_rows`).

    Returns
    -------
    ids : int64[T]   the rows' ids, concatenated (uint64 ids read as int64 with the same bits)
    ptr : int64[B+1] row b is ids[ptr[b]:ptr[b+1]]
    """
    pad = _pad_value(pad_id)
    if _is_arrow(x):
        return _arrow_rows(x, pad, what)
    x = _from_object(x, what)
    if isinstance(x, np.ndarray):
        if x.dtype == object and x.ndim == 1:
            return _ragged_rows(list(x), pad, what)
        if x.ndim != 2:
            raise InputError(f"{what}: expected a 2-D array of token ids (rows x length, padded with pad_id), "
                             f"found shape {x.shape}")
        return _padded_rows(x, pad, what)
    if isinstance(x, (list, tuple)):
        return _ragged_rows(x, pad, what)
    raise InputError(f"{what}: expected a 2-D integer array or tensor, a sequence of integer sequences, or an "
                     f"Arrow list<int> array; found {type(x).__name__}")


def reference_rows(refs: Any, pad_id: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """References of each entry as CSR: (ids int64[T], ptr int64[R+1] over the references,
    entry_ptr int64[E+1]: entry e holds references entry_ptr[e]:entry_ptr[e+1])."""
    what = "references"
    pad = _pad_value(pad_id)
    if _is_arrow(refs):
        import pyarrow as pa

        a = _arrow_array(refs, what)
        t = a.type
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (
                pa.types.is_list(t.value_type) or pa.types.is_large_list(t.value_type)):
            if a.null_count:
                raise InputError(f"{what}: entry {int(np.flatnonzero(a.is_null().to_pylist())[0])} is null; "
                                 "expected a list of references (use [] for none)")
            off = _arrow_numbers(a.offsets).astype(np.int64)
            inner = a.flatten()
            ids, ptr = _arrow_rows(inner, pad, what)
            raw = _arrow_numbers(inner.offsets).astype(np.int64)
            return _without_absent(ids, ptr, raw - raw[0], off - off[0])
        ids, ptr = _arrow_rows(a, pad, what)
        return ids, ptr, np.arange(len(ptr), dtype=np.int64)
    refs = _from_object(refs, what)
    if isinstance(refs, np.ndarray) and refs.dtype != object:
        if refs.ndim == 2:
            ids, ptr = _padded_rows(refs, pad, what)
            return ids, ptr, np.arange(len(ptr), dtype=np.int64)
        if refs.ndim == 3:  # (entries, references, length); an all-pad reference is absent
            e, r, width = refs.shape
            ids, ptr = _padded_rows(refs.reshape(e * r, width), pad, what)
            entry_ptr = np.arange(e + 1, dtype=np.int64) * r
            if pad is None:  # every entry has its r references (~8 us less than the mask)
                return ids, ptr, entry_ptr
            return _without_absent(ids, ptr, np.arange(e * r + 1, dtype=np.int64) * width, entry_ptr)
        raise InputError(f"{what}: expected a 2-D array (one reference per entry) or a 3-D array (entries x "
                         f"references x length), found shape {refs.shape}")
    if isinstance(refs, np.ndarray):
        refs = list(refs)
    if not isinstance(refs, (list, tuple)):
        raise InputError(f"{what}: expected token-id references (a 2-D or 3-D integer array, a sequence of id "
                         f"sequences, or an Arrow list<int> array), found {type(refs).__name__}")
    if _depth(refs) == 1:
        ids, ptr = _ragged_rows(refs, pad, what)
        return ids, ptr, np.arange(len(ptr), dtype=np.int64)
    counts, flat = [], []
    for i, entry in enumerate(refs):
        entry = _from_object(entry, f"{what}[{i}]")
        if not isinstance(entry, (list, tuple, np.ndarray)):
            raise InputError(f"{what}: entry {i} is {type(entry).__name__}; expected a list of references, each "
                             "a sequence of token ids")
        counts.append(len(entry))
        flat.extend(entry)  # a 2-D array's rows, or the list's references
    ids, ptr = _ragged_rows(flat, pad, what)
    entry_ptr = np.zeros(len(refs) + 1, np.int64)
    np.cumsum(counts, out=entry_ptr[1:])
    if pad is None:
        return ids, ptr, entry_ptr
    raw = np.zeros(len(flat) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, flat), np.int64, count=len(flat)), out=raw[1:])
    return _without_absent(ids, ptr, raw, entry_ptr)


def _without_absent(ids: np.ndarray, ptr: np.ndarray, raw_ptr: np.ndarray, entry_ptr: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The references without those that were all padding: some ids before the pad ids were dropped
    (``raw_ptr``, the CSR offsets before), none after (``ptr``). Every input form reads them so,
    each entry keeping its other references; a reference given empty stays, as "" in the text path."""
    absent = (ptr[1:] == ptr[:-1]) & (raw_ptr[1:] != raw_ptr[:-1])
    if not absent.any():
        return ids, ptr, entry_ptr
    kept = np.zeros(absent.size + 1, np.int64)
    np.cumsum(~absent, out=kept[1:])
    # absent references are empty: the kept ones stay contiguous
    return ids, np.append(ptr[:-1][~absent], ptr[-1]), kept[entry_ptr]


def _depth(refs: Sequence) -> int:
    """1 when each entry of ``refs`` is one reference (a sequence of ids), 2 when each is a list of
    references; read from the first non-empty entry (all empty: 1, one empty reference each)."""
    for entry in refs:
        e = _from_object(entry, "references")
        if isinstance(e, np.ndarray):
            if e.dtype == object:
                e = list(e)
            elif e.ndim >= 2:
                return 2
            elif e.size:
                return 1
            else:
                continue
        if not isinstance(e, (list, tuple)):
            raise InputError(f"references: an entry is {type(entry).__name__}; expected a sequence of token ids "
                             "(one reference) or a list of such sequences (several)")
        if len(e) == 0:
            continue
        first = e[0]
        if isinstance(first, numbers.Integral) or (isinstance(first, np.ndarray) and first.ndim == 0):
            return 1
        if isinstance(first, (numbers.Number, str, bytes)):
            raise InputError(f"references: an entry starts with {first!r}; expected integer token ids")
        return 2
    return 1


def group_pointers(groups: Any, n_rows: int) -> np.ndarray:
    """Row pointers int64[G+1] from a group size or pointers."""
    if isinstance(groups, numbers.Integral) and not isinstance(groups, (bool, np.bool_)):
        g = int(groups)
        if g < 1 or n_rows % g:
            raise InputError(f"groups: a group size must be a positive divisor of the number of hypothesis rows "
                             f"({n_rows}), found {g}; pass row pointers for groups of different sizes")
        return np.arange(0, n_rows + 1, g, dtype=np.int64)
    try:
        return check_group_pointers(groups, n_rows)
    except InputError:  # said with both forms the argument takes
        raise InputError(f"groups: expected a group size (int) or row pointers (int64[G+1], rows ptr[g]:ptr[g+1] "
                         f"form group g), found {groups!r}") from None


def segment_table(n_rows: int, entry_ptr: np.ndarray, groups: Any, index: Any, n_entries_name: str) -> np.ndarray:
    """The kernels' segment table int64[S, 6] (:mod:`kbest_bleu.token_ids._kernels`): each hypothesis
    row (or group of rows) with the references of its entry (``index``: the entry of each; None:
    entry i for row or group i); ``n_entries_name`` ends the message of a count that differs."""
    k = kernels()
    n_entries = len(entry_ptr) - 1
    gptr = np.arange(n_rows + 1, dtype=np.int64) if groups is None else group_pointers(groups, n_rows)
    n_seg = len(gptr) - 1
    if index is None:
        if n_entries != n_seg:
            unit = "hypothesis row" if groups is None else "group"
            raise InputError(f"references: expected one entry of references per {unit} ({n_seg}), found "
                             f"{n_entries}{n_entries_name}")
        entry = slice(None)
    else:
        entry = np.asarray(index)
        if entry.dtype.kind not in "iu" or entry.shape != (n_seg,):
            raise InputError(f"index: expected {n_seg} integer reference entries (one per "
                             f"{'row' if groups is None else 'group'}), found {entry.dtype} of shape {entry.shape}")
        if entry.size and (entry.min() < 0 or entry.max() >= n_entries):
            raise InputError(f"index: entries must be in 0..{n_entries - 1}, found {entry.min()}..{entry.max()}")
    segs = np.empty((n_seg, 6), np.int64)
    segs[:, k.SEG_H0] = gptr[:-1]
    segs[:, k.SEG_H1] = gptr[1:]
    segs[:, k.SEG_R0] = entry_ptr[:-1][entry]
    segs[:, k.SEG_R1] = entry_ptr[1:][entry]
    segs[:, k.SEG_OUT] = gptr[:-1]
    segs[:, k.SEG_SKIP] = -1
    return segs


def batch_inputs(hypotheses: Any, references: Any, pad_id: Any, groups: Any) -> tuple:
    """The kernels' inputs of a batch: ((ids, ptr) of the hypotheses, (ids, ptr) of the references,
    the segment table of :func:`segment_table`, the (min, max) of the reference ids or None where
    not found on the way).

    The shape of a reward (a 2-D array of hypotheses; a 2-D array of one reference, or a 3-D array
    of several, per row or per group of ``groups`` rows; a pad id that both dtypes hold) takes one
    kernel call (:func:`kbest_bleu.token_ids._kernels.padded_batch`), the same arrays as
    :func:`rows`, :func:`reference_rows` and :func:`segment_table` make apart: ~5 us less on a
    64 x 64 batch, a tenth of its call. Every other input, or a count that does not fit, takes
    those (and their messages)."""
    pad = _pad_value(pad_id)
    hyp, refs = hypotheses, references
    if pad is not None and (groups is None or type(groups) is int) and not (
            _is_arrow(hypotheses) or _is_arrow(references)):  # (Arrow arrays expose __array__ too)
        hyp = _from_object(hypotheses, "hypotheses")
        if isinstance(hyp, np.ndarray) and hyp.ndim == 2 and hyp.dtype.kind in "iu":  # (else its error comes first)
            refs = _from_object(references, "references")
    if (isinstance(hyp, np.ndarray) and isinstance(refs, np.ndarray) and hyp.ndim == 2 and refs.ndim in (2, 3)
            and hyp.dtype.kind in "iu" and refs.dtype.kind in "iu"):
        # a pad id that both dtypes hold is one int64 in both (uint64 ids above 2**63 fit no signed dtype)
        hyp_pad, ref_pad = _pad_in(pad, hyp.dtype), _pad_in(pad, refs.dtype)
        n_rows, group = len(hyp), 1 if groups is None else groups
        if hyp_pad is not None and ref_pad is not None and group >= 1 and len(refs) * group == n_rows:
            x = np.ascontiguousarray(_integer_array(hyp, "hypotheses"))
            r = np.ascontiguousarray(_integer_array(refs, "references"))
            per_entry = 1 if r.ndim == 2 else r.shape[1]
            r = r.reshape(len(r) * per_entry, r.shape[-1])
            tok, hyp_ptr = np.empty(x.size, np.int64), np.empty(n_rows + 1, np.int64)
            ref_tok, ref_ptr = np.empty(r.size, np.int64), np.empty(len(r) + 1, np.int64)
            segs = np.empty((len(refs), 6), np.int64)
            n_tok, n_ids, n_refs, lo, hi = kernels().padded_batch(x, r, hyp_pad, group, per_entry, refs.ndim == 3,
                                                                  tok, hyp_ptr, ref_tok, ref_ptr, segs)
            return ((tok[:n_tok], hyp_ptr), (ref_tok[:n_ids], ref_ptr[:n_refs + 1]), segs,
                    (lo, hi) if n_ids else None)
    # the forms apart, on what was read already (an exported tensor is not exported twice)
    hyp_rows = rows(hyp, pad_id, "hypotheses")
    ids, ptr, entry_ptr = reference_rows(refs, pad_id)
    return hyp_rows, (ids, ptr), segment_table(len(hyp_rows[1]) - 1, entry_ptr, groups, None, ""), None
