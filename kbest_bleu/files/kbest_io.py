"""The pieces every toolkit format of :mod:`kbest_bleu.files.formats` shares: a file's lines read
as a stream (compressed or not), rows gathered into Arrow record batches of bounded size, and a
scored table read back segment by segment for the writers (docs/formats.md).

Arrow arrays are built from buffers (:mod:`kbest_bleu.arrays`), not with ``pa.array``, which
imports pandas (~0.5 s) where it is installed.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import settings
from ..arrays import from_numpy, from_strings
from ..errors import InputError
from .inputs import register_input

__all__ = ["BOOL", "FLOAT", "FLOATS", "INT", "STRING", "STRINGS", "RowBatches", "column_names", "parse_float",
           "score_text", "segments", "text_lines", "write_batches"]

# column kinds of RowBatches: each maps a list of Python values to an Arrow array
INT = "int"
FLOAT = "float"
BOOL = "bool"
STRING = "string"
STRINGS = "strings"  # list<string>, e.g. references
FLOATS = "floats"  # list<double>, e.g. feature values
_CHUNK = 1 << 20


def text_lines(path: "str | os.PathLike", compression: Optional[str] = None, option: str = "input",
               what: str = "K-best file", strip_bom: bool = False) -> Iterator[str]:
    """The lines of a UTF-8 text file, one at a time (split on ``\\n`` only, a final ``\\r``
    removed; :func:`~kbest_bleu.files.references.read_lines` strips all trailing whitespace, as
    sacrebleu's command line does, for plain text), decompressed when
    ``compression`` names one of Arrow's codecs. Memory: one 1 MiB chunk and the current line.
    ``strip_bom``: a byte order mark opening the file is dropped (the toolkits' K-best lines
    start with an id, a score or JSON; plain text keeps it, as sacrebleu does, where it is part of
    the first word).

    A missing file or invalid UTF-8 raises :class:`InputError` naming ``option`` and the line.
    """
    register_input(path, option)
    try:
        src = pa.input_stream(str(path), compression=compression) if compression else open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{option} {path}: not found; expected a readable {what}") from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{option} {path}: cannot be read ({exc}); expected a readable {what}") from None
    number, rest = 0, b""
    try:
        with src:
            while True:
                try:
                    chunk = src.read(_CHUNK)
                except (OSError, pa.ArrowInvalid) as exc:  # a truncated or corrupt compressed stream
                    raise InputError(f"{option} {path}: could not read it past line {number} ({exc}); expected a "
                                     f"complete {compression or 'text'} file") from None
                if not chunk:
                    break
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                rest = data[cut:]
                lines = _decode(data[:cut], path, number).split("\n")
                lines.pop()  # after the last newline: nothing
                if strip_bom and number == 0 and lines:
                    lines[0] = lines[0].removeprefix("\ufeff")
                number += len(lines)
                yield from lines
        if rest:  # a last line without its newline
            last = _decode(rest, path, number)
            last = last.removeprefix("\ufeff") if strip_bom and number == 0 else last
            yield last[:-1] if last.endswith("\r") else last
    finally:
        src.close()


def _decode(data: bytes, path: "str | os.PathLike", before: int) -> str:
    """Whole lines of UTF-8 decoded at once (``before``: the lines already read, for messages),
    each line's final ``\r`` removed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = before + data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        raise InputError(f"{path}: line {line} is not valid UTF-8 (byte {data[exc.start]:#04x} at column "
                         f"{column}); re-encode the file as UTF-8") from None
    return text.replace("\r\n", "\n") if "\r" in text else text


def parse_float(text: str) -> Optional[float]:
    """A model score as written by a toolkit, or None when it is not finite (``-inf`` for an empty
    Sockeye translation, ``nan``): the table holds no NaN or infinity; the raw text is kept apart.
    Raises ValueError for text that is not a number."""
    value = float(text)
    return value if math.isfinite(value) else None


class RowBatches:
    """Rows gathered column by column and handed out as record batches of at most ``rows`` rows
    and about ``text_bytes`` characters of hypothesis text (the memory bound of the readers).

    ``columns``: (name, kind) pairs, kinds from this module (INT, FLOAT, BOOL, STRING, STRINGS,
    FLOATS); FLOAT, STRING, STRINGS and FLOATS values may be None (null). A reader appends a value
    to every list of :attr:`values` per row and the row's text length with :meth:`add_text`, then
    hands out ``while batches.full(): yield batches.take()`` (a JSON line adds a whole list).
    """

    def __init__(self, columns: Sequence[tuple], metadata: Optional[dict] = None, rows: Optional[int] = None,
                 text_bytes: Optional[int] = None):
        self.kinds = dict(columns)
        self.values = {name: [] for name in self.kinds}
        self.schema = pa.schema([(name, _TYPES[kind]) for name, kind in columns], metadata=metadata)
        self.rows = rows or settings.FORMAT_BATCH_ROWS
        self.text_bytes = text_bytes or settings.BATCH_BYTES
        self.lengths: list = []
        self.text = 0

    def __len__(self) -> int:
        return len(self.lengths)

    def add_text(self, n: int) -> None:
        """Count a row added to every list, with ``n`` characters of hypothesis."""
        self.lengths.append(n)
        self.text += n

    def full(self) -> bool:
        return len(self) >= self.rows or self.text >= self.text_bytes

    def take(self) -> pa.RecordBatch:
        """The first ``rows`` gathered rows (all of them when fewer) as a record batch, possibly
        empty; the rest stay for the next."""
        n = min(len(self), self.rows)
        arrays = [_ARRAY[self.kinds[name]](vals[:n]) for name, vals in self.values.items()]
        self.values = {name: vals[n:] for name, vals in self.values.items()}
        self.lengths = self.lengths[n:]
        self.text = sum(self.lengths)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _validity(values: list) -> Optional[pa.Buffer]:
    if all(v is not None for v in values):
        return None
    return pa.py_buffer(np.packbits(np.fromiter((v is not None for v in values), bool, len(values)),
                                    bitorder="little").tobytes())


def _ints(values: list) -> pa.Array:
    return from_numpy(np.fromiter(values, np.int64, len(values)))


def _floats(values: list) -> pa.Array:
    data = np.fromiter((0.0 if v is None else v for v in values), np.float64, len(values))
    valid = _validity(values)
    return from_numpy(data) if valid is None else pa.Array.from_buffers(
        pa.float64(), len(values), [valid, pa.py_buffer(data.tobytes())])


def _bools(values: list) -> pa.Array:
    return from_numpy(np.fromiter(values, bool, len(values)))


def _strings(values: list) -> pa.Array:
    array = from_strings(["" if v is None else v for v in values])
    valid = _validity(values)
    if valid is None:
        return array
    return pa.LargeStringArray.from_buffers(len(values), array.buffers()[1], array.buffers()[2], valid)


def _list(values: list, child) -> pa.Array:
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values))
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)]).astype(np.int32)
    flat = child([x for v in values if v is not None for x in v])
    if all(v is not None for v in values):
        return pa.ListArray.from_arrays(from_numpy(offsets), flat)
    mask = from_numpy(np.fromiter((v is None for v in values), bool, len(values)))
    return pa.ListArray.from_arrays(from_numpy(offsets), flat, mask=mask)


_TYPES = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), STRING: pa.large_string(),
          STRINGS: pa.list_(pa.large_string()), FLOATS: pa.list_(pa.float64())}
_ARRAY = {INT: _ints, FLOAT: _floats, BOOL: _bools, STRING: _strings,
          STRINGS: lambda v: _list(v, _strings), FLOATS: lambda v: _list(v, _floats)}


def segments(path: "str | os.PathLike", columns: Sequence[str], key: Sequence[str] = ("segment_id",),
             batch_rows: Optional[int] = None) -> Iterator[tuple]:
    """(segment, rows) for each K-best list of a parquet file, in file order: the runs of equal
    values of the ``key`` columns (the segment key the table was scored with); ``segment`` is the
    ``segment_id`` value when that is the key, else the list's ordinal 0, 1, ... (a key of several
    columns, ``lp`` and ``segment_id``, repeats segment ids). ``rows`` maps each of ``columns``
    (those the file has) to the run's Python values. A key that comes back after another list's is
    refused: written as two lists (or one with two ids), it would not read back as the one it is.
    Read batch by batch: memory is one batch, the current list and the keys seen."""
    import pyarrow.parquet as pq

    from ..encode import check_contiguous

    pf = pq.ParquetFile(path)
    key = list(key)
    have = [c for c in dict.fromkeys([*key, *columns]) if c in pf.schema_arrow.names]
    seen: set = set()
    current, rows, row0 = None, None, 0
    for batch in pf.iter_batches(batch_size=batch_rows or settings.FORMAT_BATCH_ROWS, columns=have):
        values = {c: batch.column(c).to_pylist() for c in have}
        keys = values[key[0]] if len(key) == 1 else list(zip(*(values[c] for c in key)))
        start = 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                if rows is not None and keys[start] != current:
                    yield (current if key == ["segment_id"] else len(seen) - 1), rows
                    rows = None
                if rows is None:
                    check_contiguous([keys[start]], seen, [row0 + start], f"{path} ({', '.join(key)})")
                    current, rows = keys[start], {c: [] for c in have}
                for c in have:
                    rows[c].extend(values[c][start:i])
                start = i
        row0 += len(keys)
    if rows is not None:
        yield (current if key == ["segment_id"] else len(seen) - 1), rows


def numbered(lists: Iterable[tuple], path: "str | os.PathLike", fmt: str) -> Iterator[tuple]:
    """``lists`` (:func:`segments`) for a format that numbers its lists by their place (OpenNMT's K
    lines per source, Sockeye's and nested JSON's one line per source: list i is read back as
    segment i, paired with line i of ``-r``): the segment ids must be 0, 1, 2, ... in table order,
    else the file written would read back with other references."""
    for i, (segment, rows) in enumerate(lists):
        if segment != i:
            raise InputError(f"{path}: list {i} has segment id {segment!r}; {fmt} numbers its lists by their line "
                             f"(list i is read back as segment i, paired with line i of -r), so the lists must come "
                             "in segment-id order 0, 1, 2, ...: sort the table by segment id first (score --sort), "
                             "or write marian, fairseq or nbest, which keep the ids")
        yield segment, rows


def write_batches(batches: Iterable[pa.RecordBatch], dst: "str | os.PathLike", codec: str = "lz4") -> int:
    """Write record batches (all of one schema, at least one) to the parquet file ``dst`` as they
    come (memory: one batch), compressed with ``codec``; returns the number of rows. ``dst`` is a
    work file (no output guard): commands write their outputs through the guard."""
    import pyarrow.parquet as pq

    rows, writer = 0, None
    try:
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(dst, batch.schema, compression=codec)
            writer.write_batch(batch)
            rows += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
    return rows


def column_names(path: "str | os.PathLike") -> list:
    """The column names of a parquet file."""
    import pyarrow.parquet as pq
    return list(pq.read_schema(Path(path)).names)


def score_text(rows: dict, field: str, i: int, segment: object, raw: bool) -> str:
    """The text a writer puts in a format's score field for row ``i`` of a segment's ``rows``: the
    model score as the toolkit wrote it (``model_score_text``) when ``field`` is ``model_score``,
    ``raw`` (the table was read from the format written) and the raw text is there, else the
    column's value as Python's shortest exact repr (a value read back equals the one in the table)."""
    if raw and field == "model_score" and rows.get("model_score_text") and rows["model_score_text"][i] is not None:
        return rows["model_score_text"][i]
    value = rows[field][i]
    if value is None or isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
        raise InputError(f"segment {segment!r}, hypothesis {i}: column {field!r} holds {value!r}, not a number to "
                         "write in the score field; choose another column with --score-field")
    if not math.isfinite(value):  # the readers refuse NaN and infinities: the file would not read back
        raise InputError(f"segment {segment!r}, hypothesis {i}: column {field!r} holds {value!r}, not a finite "
                         "number; choose another column with --score-field, or fix the table")
    return repr(float(value))


def field_text(value: object, field: str, segment: object, i: int, separator: Optional[str] = None) -> str:
    """``value`` as a field of a line of a text format: a string without a line break (the readers
    split on them) and without the format's field ``separator``, else an :class:`InputError`: a
    file written with it would not read back (a null, a cut line, fields shifted)."""
    if not isinstance(value, str):
        raise InputError(f"segment {segment!r}, hypothesis {i}: column {field!r} is "
                         f"{'null' if value is None else repr(value)}; a line of text needs a string; fill or drop "
                         "the row, or write parquet or nested")
    bad = next((s for s in ("\n", "\r", separator) if s and s in value), None)
    if bad is not None:
        raise InputError(f"segment {segment!r}, hypothesis {i}: column {field!r} holds {bad!r} ({value[:60]!r}), which "
                         "a line of this format cannot hold (it would not read back); clean the text, or write parquet "
                         "or nested")
    return value
