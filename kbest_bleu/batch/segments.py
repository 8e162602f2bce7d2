"""A parquet K-best file read as tables of whole segments, in bounded memory, for the commands
that work segment by segment beside the score job (``kbest-bleu mbr``), and a second file read in
step with it (MBR's separate pseudo-references).

Record batches hold at most a number of rows and of bytes of hypothesis text (the score job's
reader, :mod:`kbest_bleu.batch.parquet`); the rows of the segment still open at the end of a batch
wait for the next one, so a segment is never cut (one longer than a batch is read whole).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ..files.references import Columns, require_columns
from .parquet import _bounded, _checked, _guard_reads, open_parquet, _read_batches
from .stream import SegmentChunk, whole_segments

__all__ = ["InStep", "SegmentChunk", "read_segments", "whole_segments"]


def read_segments(path: "str | os.PathLike", hypothesis: str, segment: Sequence[str], batch_rows: int,
                  batch_bytes: int, source: Optional[str] = None,
                  required: Sequence[str] = ()) -> tuple[pa.Schema, Iterator[SegmentChunk]]:
    """(the file's Arrow schema, its tables of whole segments): a parquet file read in record batches
    of at most ``batch_rows`` rows and ``batch_bytes`` bytes of hypothesis text, each validated
    (UTF-8, segment ids without nulls or NaN) as the score job does. The hypothesis, segment and
    ``required`` columns are checked from the schema before any row is read. ``source``: the name
    errors give the file (default: the path)."""
    src = Path(path)
    source = source or str(src)
    try:
        pf, schema = open_parquet(src)
    except InputError as exc:
        raise InputError(str(exc).replace(str(src), source)) from None
    require_columns(schema, [hypothesis, *segment, *required], source)
    t = schema.field(hypothesis).type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
        raise InputError(f"{source}: hypothesis column {hypothesis!r} has Arrow type {schema.field(hypothesis).type}; "
                         "expected strings (choose the column with --hyp-col)")
    columns = Columns(hypothesis=hypothesis, segment=tuple(segment))
    batches = _checked(_guard_reads(_read_batches(pf, batch_rows, batch_bytes), src), columns, src)
    batches = _bounded(batches, columns, False, batch_bytes, src)
    return schema, _named(whole_segments(batches, segment, source), src, source)


def _named(chunks: Iterator[SegmentChunk], path: Path, source: str) -> Iterator[SegmentChunk]:
    """Errors name ``source`` (the user's file) instead of ``path`` (a converted or sorted copy)."""
    try:
        yield from chunks
    except InputError as exc:
        raise InputError(str(exc).replace(str(path), source)) from None


class InStep:
    """A second file's segments taken in step with a first file's: :meth:`take` returns the rows of
    exactly the segments asked for, in that order, reading on only as far as they go.

    A segment the file lacks, or holds in another order, raises :class:`InputError`: the file is
    then scanned on (only its keys kept) to tell the two apart.
    """

    def __init__(self, chunks: Iterator[SegmentChunk], source: str, first: str, fix: str):
        self._chunks = chunks
        self._source, self._first, self._fix = source, first, fix
        self._chunk: Optional[SegmentChunk] = None
        self._pos = 0  # the next segment of self._chunk
        self._passed: set = set()

    def _current(self) -> Optional[SegmentChunk]:
        while self._chunk is None or self._pos == len(self._chunk.labels):
            self._chunk, self._pos = next(self._chunks, None), 0
            if self._chunk is None:
                return None
        return self._chunk

    def take(self, labels: Sequence) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """(the rows of the segments ``labels``, in that order; int64[S+1] their pointers; int64[S]
        each segment's first row in the file)."""
        parts, sizes, rows = [], [], []
        for label in labels:
            chunk = self._current()
            if chunk is None or chunk.labels[self._pos] != label:
                self._refuse(label, chunk)
            a, b = chunk.seg_ptr[self._pos], chunk.seg_ptr[self._pos + 1]
            if parts and parts[-1][0] is chunk and parts[-1][2] == a:  # contiguous with the last: one slice
                parts[-1][2] = b
            else:
                parts.append([chunk, a, b])
            sizes.append(b - a)
            rows.append(chunk.row0 + a)
            self._passed.add(label)
            self._pos += 1
        tables = [c.table.slice(a, b - a) for c, a, b in parts]
        ptr = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=ptr[1:])
        if not tables:
            raise InputError(f"{self._source}: no segments asked for; expected at least one")
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()
        return table, ptr, np.array(rows, np.int64)

    def finish(self) -> None:
        """Raise if the file holds a segment that the first file did not ask for."""
        chunk = self._current()
        if chunk is not None:
            label = chunk.labels[self._pos]
            raise InputError(f"{self._source}: segment {label!r} (row {chunk.row0 + int(chunk.seg_ptr[self._pos])}) "
                             f"is not in {self._first}; expected the same segments as {self._first}")

    def _refuse(self, label: object, chunk: Optional[SegmentChunk]) -> None:
        """The error for a segment not next in the file: missing, or out of order."""
        if chunk is None:
            here = "the file ends"
        else:
            here = f"its next segment is {chunk.labels[self._pos]!r}, row {chunk.row0 + int(chunk.seg_ptr[self._pos])}"
        later = label in self._passed
        while not later and chunk is not None:  # the rest of the file: is the segment there, further on?
            later = label in chunk.labels[self._pos:]
            chunk, self._pos = next(self._chunks, None), 0
        if later:
            raise InputError(f"{self._source}: segment {label!r} of {self._first} is not where {self._first}'s order "
                             f"puts it ({here}); expected the segments in the same order as {self._first}: {self._fix}")
        raise InputError(f"{self._source}: no segment {label!r} ({here}); expected every segment of {self._first}, "
                         "with at least one row")
