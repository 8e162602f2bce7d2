"""Parquet in, parquet out: the streaming ``kbest-bleu score`` job over :func:`~kbest_bleu.batch.stream.score_batches`,
with the output written atomically (temporary name, renamed on success)."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..config import BleuConfig
from ..errors import InputError
from ..metrics.base import Metric
from .references import Columns, ReferenceTable
from .stream import COMPRESSIONS, Summary, Tally, output_schema, score_batches, score_columns

__all__ = ["Progress", "score_parquet"]


class Progress:
    """Rows and rows/s on one terminal line (stderr); silent when not a TTY or when quiet."""

    def __init__(self, total: Optional[int], quiet: bool = False, stream=sys.stderr):
        self.on = not quiet and stream.isatty()
        self.total, self.stream, self.rows, self.t0, self.last = total, stream, 0, time.perf_counter(), 0.0

    def update(self, rows: int) -> None:
        self.rows += rows
        now = time.perf_counter()
        if self.on and (now - self.last > 0.2 or (self.total and self.rows >= self.total)):
            self.last = now
            of = f"/{self.total:,}" if self.total else ""
            rate = self.rows / max(now - self.t0, 1e-9)
            self.stream.write(f"\r{self.rows:,}{of} rows  {rate:,.0f} rows/s")
            self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\n")


def _open_parquet(path: Path, dictionary_column: Optional[str] = None) -> tuple[pq.ParquetFile, pa.Schema]:
    """The parquet file and its declared Arrow schema. ``dictionary_column`` is read
    dictionary-encoded when it is a list of strings: references repeat on every row of a
    segment, so decoding each distinct string once is several times faster, and their equality
    check compares indices."""
    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        if dictionary_column is None or schema.get_field_index(dictionary_column) < 0:
            return pf, schema
        t = schema.field(dictionary_column).type
        if not ((pa.types.is_list(t) or pa.types.is_large_list(t)) and
                (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))):
            return pf, schema
        leaves = [c.path for c in (pf.schema.column(i) for i in range(len(pf.schema)))
                  if c.path.startswith(dictionary_column + ".")]
        return pq.ParquetFile(path, read_dictionary=leaves), schema
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; expected a parquet K-best table") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable parquet file ({exc}); expected a complete parquet file "
                         "(a truncated or corrupt file cannot be scored)") from None


def score_parquet(in_path: "str | os.PathLike", out_path: "Optional[str | os.PathLike]", config: Optional[BleuConfig] = None, *,
                  columns: Columns = Columns(), references: Optional[ReferenceTable] = None, stats: bool = False,
                  smoothings: Sequence = (), metrics: Sequence[Metric] = (), batch_size: int = 65536,
                  quiet: bool = True, compression: str = "zstd",
                  on_batch: Optional[Callable[[int], None]] = None) -> Summary:
    """Score a parquet K-best file into a new parquet file, streaming batch by batch; the output
    columns are those of :func:`score_batches`.

    The output is written to a temporary file beside ``out_path`` and renamed only when the job
    succeeds: a failed or interrupted job leaves no output file behind. ``out_path=None`` scores
    without writing (the summary only). ``compression``: parquet codec (zstd, snappy, lz4, none).
    """
    cfg = config or BleuConfig()
    src = Path(in_path)
    if batch_size < 1:
        raise InputError(f"batch size: expected a positive number of rows, found {batch_size}")
    if compression not in COMPRESSIONS:
        raise InputError(f"compression: expected one of {', '.join(COMPRESSIONS)}, found {compression!r}")
    score_columns(cfg, smoothings)  # bad options fail before any file is opened
    if out_path is None:
        dst, tmp, sink = None, None, open(os.devnull, "wb")
    else:
        dst = Path(out_path)
        if dst.exists() and src.exists() and os.path.samefile(src, dst):
            raise InputError(f"{dst}: the output path is the input file; write the scores to a new file")
        tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    pf, declared = _open_parquet(src, columns.references if references is None else None)
    if dst is not None:
        try:
            sink = open(tmp, "wb")
        except OSError as exc:
            raise InputError(f"{dst}: cannot write the output here ({exc.strerror}); choose a writable path") from None
    tally = Tally(cfg)
    progress = Progress(pf.metadata.num_rows, quiet)
    t0 = time.perf_counter()
    ok = False
    try:
        with sink:
            writer = None
            # Dictionary-read references can be written as they are when parquet's own types
            # give the declared schema back without a stored Arrow schema (no decoding, and no
            # re-encoding by the writer); otherwise they are cast back to the declared type.
            out_schema = output_schema(declared, cfg, stats, smoothings, metrics)
            direct = pf.schema_arrow != declared and _parquet_types_suffice(out_schema)
            try:
                batches = _read_batches(pf, batch_size)
                # Arrow encodes a batch on one thread: writing batch i on a background thread
                # while batch i+1 is read and scored keeps both cores busy. At most one batch
                # waits; a write error surfaces at the next batch or at the end.
                with ThreadPoolExecutor(1) as background:
                    written = None
                    for out in score_batches(_guard_reads(batches, src), cfg, columns=columns,
                                             references=references, stats=stats, smoothings=smoothings, metrics=metrics, tally=tally,
                                             source=str(src), schema=None if direct else declared):
                        if writer is None:
                            writer = _writer(sink, out.schema, compression, store_schema=not direct)
                        if written is not None:
                            written.result()
                        written = background.submit(writer.write_batch, out)
                        progress.update(out.num_rows)
                        if on_batch:
                            on_batch(out.num_rows)
                    if written is not None:
                        written.result()
                if writer is None:  # empty input: an empty table with the output schema
                    writer = _writer(sink, out_schema, compression)
            finally:
                if writer is not None:
                    writer.close()
        if dst is not None:
            os.replace(tmp, dst)
        ok = True
    finally:
        progress.close()
        if not ok and tmp is not None and tmp.exists():
            tmp.unlink()
    return tally.summary(time.perf_counter() - t0)


def _read_batches(pf: pq.ParquetFile, batch_size: int) -> Iterator[pa.RecordBatch]:
    """Record batches of about ``batch_size`` rows, read one row group at a time: Arrow cannot
    read a dictionary-encoded nested column across two row groups' dictionaries into one
    batch. Batches of small row groups are joined here (concatenation unifies dictionaries)."""
    held: list = []
    rows = 0
    for group in range(pf.metadata.num_row_groups):
        for batch in pf.iter_batches(batch_size=batch_size, row_groups=[group]):
            held.append(batch)
            rows += batch.num_rows
            if rows >= batch_size:
                yield from _joined(held)
                held, rows = [], 0
    if held:
        yield from _joined(held)


def _joined(batches: list) -> list:
    return batches if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks().to_batches()


def _leaf_columns(name: str, t: pa.DataType) -> Iterator[tuple[str, pa.DataType]]:
    """(parquet column path, Arrow type) of the leaf columns of one field (compliant list naming)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _leaf_columns(f"{name}.list.element", t.value_type)
    elif pa.types.is_map(t):
        yield from _leaf_columns(f"{name}.key_value.key", t.key_type)
        yield from _leaf_columns(f"{name}.key_value.value", t.item_type)
    elif pa.types.is_struct(t):
        for f in t:
            yield from _leaf_columns(f"{name}.{f.name}", f.type)
    else:
        yield name, t.value_type if pa.types.is_dictionary(t) else t


def _writer(sink: Any, schema: pa.Schema, compression: str, store_schema: bool = True) -> pq.ParquetWriter:
    """Parquet writer with dictionary encoding for every leaf column but floating-point ones
    (BLEU and model scores are nearly all distinct: a dictionary costs time and space there).

    Without ``store_schema`` the Arrow schema is not stored (dictionary columns read back as
    plain strings) and the schema metadata is written as the file's key-value metadata.
    """
    dictionary = [path for f in schema for path, t in _leaf_columns(f.name, f.type)
                  if not pa.types.is_floating(t)]
    writer = pq.ParquetWriter(sink, schema, compression=compression, use_dictionary=dictionary,
                              store_schema=store_schema)
    if not store_schema and schema.metadata:
        writer.add_key_value_metadata(schema.metadata)
    return writer


def _parquet_types_suffice(schema: pa.Schema) -> bool:
    """Whether a parquet file without the stored Arrow schema reads back exactly as ``schema``
    (types, nullability; no field metadata to lose)."""
    if any(f.metadata for f in schema):
        return False
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink, store_schema=False)
    return pq.read_schema(pa.BufferReader(sink.getvalue())).equals(schema, check_metadata=False)


def _guard_reads(batches: Iterator[pa.RecordBatch], path: Path) -> Iterator[pa.RecordBatch]:
    """Turn Arrow read errors in the middle of a file into InputError naming the file."""
    try:
        yield from batches
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: the parquet file could not be read to the end ({exc}); it may be truncated "
                         "or corrupt") from None
