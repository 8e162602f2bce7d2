"""Parquet in, parquet out: the streaming ``kbest-bleu score`` job over :func:`~kbest_bleu.batch.stream.score_batches`,
with the output written atomically (:mod:`kbest_bleu.batch.output`)."""

from __future__ import annotations

import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import arrow_compute as pc
from .. import settings
from ..arrays import to_numpy
from ..config import BleuConfig
from ..counting import numpy_engine_suits
from ..counting.threads import thread_count
from ..encode import check_segment_keys, check_utf8
from ..errors import InputError
from ..files.output import atomic_output, check_finite, check_output
from ..files.inputs import register_input
from ..files.readers import seekable, unreadable
from ..files.references import Columns, ReferenceTable, require_columns
from ..metrics.base import Metric
from .stream import (COMPRESSIONS, Summary, Tally, is_id_lists, job_config, output_schema, score_batches,
                     score_columns)

__all__ = ["Progress", "check_schema", "open_parquet", "read_parquet_table", "score_parquet"]

# Scoring memory follows the text scored, not the row count: tokenizing and counting take
# ~100-300 bytes per input byte (most with -t char, one token per character). A batch holds at
# most BATCH_BYTES of hypothesis text (rows capped by bytes); a longer segment is still scored
# whole (a segment is never split). A row whose hypothesis and references together pass
# MAX_ROW_BYTES is refused: at -t char it alone would take gigabytes (both in kbest_bleu.settings).


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


def open_parquet(path: Path, dictionary_column: Optional[str] = None) -> tuple[pq.ParquetFile, pa.Schema]:
    """The parquet file and its declared Arrow schema. ``dictionary_column`` is read
    dictionary-encoded when it is a list of strings: references repeat on every row of a
    segment, so decoding each distinct string once is several times faster, and their equality
    check compares indices."""
    register_input(path)  # never an output of the running command (files.output)
    if not seekable(path):  # parquet is read with seeks; opening a pipe twice would wait for ever
        raise unreadable(path, "parquet", OSError("not seekable"))
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
    except (pa.ArrowInvalid, OSError) as exc:  # a named pipe is said so (Arrow: "lseek failed")
        raise unreadable(path, "parquet", exc, None, "expected a complete parquet file (a truncated or corrupt file "
                         "cannot be scored)") from None


def score_parquet(in_path: "str | os.PathLike", out_path: "Optional[str | os.PathLike]", config: Optional[BleuConfig] = None, *,
                  columns: Columns = Columns(), references: Optional[ReferenceTable] = None, stats: bool = False,
                  smoothings: Sequence = (), metrics: Sequence[Metric] = (), batch_size: int = 65536,
                  batch_bytes: Optional[int] = None, quiet: bool = True, compression: str = "zstd",
                  on_batch: Optional[Callable[[int], None]] = None, engine: Optional[str] = None,
                  bleu: bool = True) -> Summary:
    """Score a parquet K-best file into a new parquet file, streaming batch by batch; the output
    columns are those of :func:`score_batches`.

    The output goes through :func:`~kbest_bleu.batch.output.atomic_output`: a temporary file
    beside ``out_path``, renamed only when the job succeeds (a failed or interrupted job leaves
    the previous file, or none), a device or FIFO written directly, the input refused as output.
    The schema is checked before any row is read (also for a file of 0 rows); each batch is
    checked for NaN segment ids and invalid UTF-8 (file, row, byte offset). ``out_path=None``
    scores without writing (the summary only). ``compression``: parquet codec (zstd, snappy,
    lz4, none). Memory is bounded by bytes: a batch holds at most ``batch_size`` rows and at most
    ``batch_bytes`` bytes of hypothesis text (a segment longer than that is still scored whole);
    a row with more than :data:`~kbest_bleu.settings.MAX_ROW_BYTES` of hypothesis and reference text is refused.
    ``engine``: "kernels" (numba), "numpy" (no numba: for small jobs, the same numbers), or None
    to choose from the text bytes the file's metadata declares and whether the kernels are
    compiled yet (:func:`~kbest_bleu.stats.numpy_engine_suits`; never with ``metrics``, which use
    kernels). ``bleu=False``: only the columns of ``metrics`` (``--metric meteor``), no BLEU counted.
    The summary's ``seconds``: wall time from the input opened to the output closed.
    """
    cfg = config or BleuConfig()
    if engine not in (None, "kernels", "numpy"):
        raise InputError(f"engine: expected 'kernels', 'numpy' or None (choose by size), found {engine!r}")
    src = Path(in_path)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch size: expected a positive number of rows, found {batch_size!r}")
    batch_bytes = settings.BATCH_BYTES if batch_bytes is None else batch_bytes
    if isinstance(batch_bytes, bool) or not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise InputError(f"batch bytes: expected a positive number of bytes, found {batch_bytes!r}")
    if compression not in COMPRESSIONS:
        raise InputError(f"compression: expected one of {', '.join(COMPRESSIONS)}, found {compression!r}")
    score_columns(cfg, smoothings)  # bad options fail before any file is opened
    if out_path is not None:
        check_output(out_path, [src])  # before the job runs, not after
    pf, declared = open_parquet(src, columns.references if references is None else None)
    check_schema(declared, columns, references is None, str(src), metrics)
    ids = is_id_lists(declared.field(columns.hypothesis).type)
    cfg = job_config(cfg, declared, columns)
    if ids:
        engine = "kernels"
    if engine is None:
        n_bytes = _text_bytes_declared(pf, columns, references is None)
        numpy = not metrics and numpy_engine_suits([c for _, c in score_columns(cfg, smoothings)], n_bytes)
        engine = "numpy" if numpy else "kernels"
        if numpy and n_bytes >= settings.NUMPY_ENGINE_BYTES:
            logging.getLogger("kbest_bleu").info(
                "the scoring kernels are not compiled yet (a first run): this job runs on the numpy engine "
                "instead of compiling for ~12 s; 'kbest-bleu warmup' compiles them once, for faster big jobs")
    tally = Tally(cfg, bleu=bleu)
    t0 = time.perf_counter()
    if out_path is None:
        with open(os.devnull, "wb") as sink:
            _write_scores(pf, declared, sink, cfg, columns, references, stats, smoothings, metrics,
                          (batch_size, batch_bytes), quiet, compression, on_batch, tally, src, engine, bleu)
    else:
        with atomic_output(out_path, [src]) as tmp, open(tmp, "wb") as sink:
            _write_scores(pf, declared, sink, cfg, columns, references, stats, smoothings, metrics,
                          (batch_size, batch_bytes), quiet, compression, on_batch, tally, src, engine, bleu)
    return tally.summary(time.perf_counter() - t0)


def _write_scores(pf: pq.ParquetFile, declared: pa.Schema, sink: Any, cfg: BleuConfig, columns: Columns,
                  references: Optional[ReferenceTable], stats: bool, smoothings: Sequence, metrics: Sequence[Metric],
                  batch_limits: tuple, quiet: bool, compression: str, on_batch: Optional[Callable[[int], None]],
                  tally: Tally, src: Path, engine: str, bleu: bool = True) -> None:
    """The streaming loop of :func:`score_parquet`: read, score and write each batch.
    ``batch_limits``: (rows, bytes) per batch."""
    progress = Progress(pf.metadata.num_rows, quiet)
    writer = None
    # Dictionary-read references can be written as they are when parquet's own types
    # give the declared schema back without a stored Arrow schema (no decoding, and no
    # re-encoding by the writer); otherwise they are cast back to the declared type.
    out_schema = output_schema(declared, cfg, stats, smoothings, metrics, bleu)
    direct = pf.schema_arrow != declared and _parquet_types_suffice(out_schema)
    try:
        scored = [columns.hypothesis] + ([columns.references] if references is None else [])
        batches = _checked(_guard_reads(_read_batches(pf, *batch_limits), src), columns, src, scored)
        batches = _bounded(batches, columns, references is None, batch_limits[1], src)
        # With more than one thread, chunk i+2 is read, checked and prepared (its text tokenized,
        # references gathered) on one background thread, chunk i+1 counted on another (on this
        # one with metrics or token lists, whose parallel kernels launch here: score_batches),
        # chunk i scored on this one and batch i-1 written on a fourth: Arrow decodes, prepares
        # and encodes releasing the GIL, and the kernels' segment runs take the cores left. At
        # most one chunk waits at each stage; a read or write error surfaces at the next chunk
        # or at the end. With one thread (--threads 1), everything runs inline.
        overlap = engine == "kernels" and thread_count() > 1  # numpy engine jobs run inline: small, or a first run
        added = [f.name for f in out_schema if declared.get_field_index(f.name) < 0]  # what the job computes
        row0 = 0
        with ThreadPoolExecutor(1) as reader, ThreadPoolExecutor(1) as background:
            written = None
            for out in score_batches(batches, cfg, columns=columns, references=references, stats=stats,
                                     smoothings=smoothings, metrics=metrics, tally=tally, source=str(src),
                                     schema=None if direct else declared, engine=engine,
                                     ahead=reader if overlap else None, bleu=bleu):
                if writer is None:
                    writer = _writer(sink, out.schema, compression, store_schema=not direct, free_text=scored)
                if written is not None:
                    written.result()
                check_finite(out, added, str(src), row0)  # never a NaN or inf written (files.output)
                row0 += out.num_rows
                written = background.submit(writer.write_batch, out) if overlap else writer.write_batch(out)
                progress.update(out.num_rows)
                if on_batch:
                    on_batch(out.num_rows)
            if written is not None:
                written.result()
        if writer is None:  # empty input: an empty table with the output schema
            writer = _writer(sink, out_schema, compression, free_text=scored)
    finally:
        progress.close()
        if writer is not None:
            writer.close()


def _text_bytes_declared(pf: pq.ParquetFile, columns: Columns, with_references: bool) -> int:
    """Uncompressed bytes of the hypothesis (and reference) columns, from the file's metadata."""
    names = {columns.hypothesis} | ({columns.references} if with_references else set())
    meta = pf.metadata
    return sum(group.column(j).total_uncompressed_size for group in map(meta.row_group, range(meta.num_row_groups))
               for j in range(group.num_columns) if group.column(j).path_in_schema.split(".")[0] in names)


def check_schema(schema: pa.Schema, columns: Columns, with_references: bool, source: str,
                 metrics: Sequence[Metric] = ()) -> None:
    """Raise :class:`InputError` unless the input schema has the job's columns with usable types:
    checked from the schema alone, so a file of 0 rows is held to the same rules."""
    names = [columns.hypothesis, *columns.segment] + ([columns.score] if columns.score else [])
    names += [c for m in metrics for c in m.input_columns()]
    require_columns(schema, names + ([columns.references] if with_references else []), source, columns.references)
    hyp = schema.field(columns.hypothesis).type
    if not (pa.types.is_string(hyp) or pa.types.is_large_string(hyp) or is_id_lists(hyp)):
        raise InputError(f"{source}: column {columns.hypothesis!r} has Arrow type {hyp}; expected string, or "
                         "list<int> of token ids (choose the hypothesis column with --hyp-col)")
    if is_id_lists(hyp) and metrics:
        raise InputError(f"{source}: token-id columns are scored with BLEU only; drop "
                         f"{', '.join(m.name for m in metrics)} from --metric")
    for name in columns.segment:
        t = schema.field(name).type
        if pa.types.is_nested(t) or not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
                                         or pa.types.is_floating(t) or pa.types.is_temporal(t)
                                         or pa.types.is_dictionary(t) or pa.types.is_boolean(t)):
            raise InputError(f"{source}: segment column {name!r} has Arrow type {t}; expected scalar ids (integers "
                             "or strings); choose the columns with --seg-col (several combine: --seg-col a,b)")
    if columns.score:
        t = schema.field(columns.score).type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise InputError(f"{source}: score column {columns.score!r} has Arrow type {t}; expected numbers (the "
                             "decoder's model score); choose a numeric column with --score-col")
    if with_references:
        t = schema.field(columns.references).type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t)):
            raise InputError(f"{source}: column {columns.references!r} has Arrow type {t}; expected a list of "
                             "reference strings per row (choose it with --ref-col, or give the references "
                             "apart with --ref-table/--ref-file)")


def _checked(batches: Iterator[pa.RecordBatch], columns: Columns, path: Path,
             scored: Sequence[str] = ()) -> Iterator[pa.RecordBatch]:
    """Each batch validated (Arrow's full validation: UTF-8 of every string column, a few ms per
    million strings) and its segment ids checked for nulls and NaN, with rows counted in the file.
    ``scored``: columns the scoring itself validates (hypotheses, references), not checked twice."""
    row0 = 0
    for batch in batches:
        try:
            for name in columns.segment:
                check_segment_keys([batch.column(name)], [name], row0)
            for name, col in zip(batch.schema.names, batch.columns):
                if name not in scored:
                    check_utf8(col, f"column {name!r}", row0)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        yield batch
        row0 += batch.num_rows


def _read_batches(pf: pq.ParquetFile, batch_size: int, batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of about ``batch_size`` rows, read one row group at a time: Arrow cannot
    read a dictionary-encoded nested column across two row groups' dictionaries into one
    batch. Batches of small row groups are joined here (concatenation unifies dictionaries).
    Rows per read are also capped by the row group's uncompressed bytes per row, so that long
    rows arrive in batches of about ``batch_bytes`` (:func:`_bounded` enforces it exactly)."""
    batch_bytes = settings.BATCH_BYTES if batch_bytes is None else batch_bytes
    held: list = []
    rows = 0
    for group in range(pf.metadata.num_row_groups):
        meta = pf.metadata.row_group(group)
        per_row = meta.total_byte_size / max(meta.num_rows, 1)
        step = max(1, min(batch_size, int(batch_bytes / per_row) if per_row else batch_size))
        for batch in pf.iter_batches(batch_size=step, row_groups=[group]):
            held.append(batch)
            rows += batch.num_rows
            if rows >= step:
                yield from _joined(held)
                held, rows = [], 0
    if held:
        yield from _joined(held)


def _bounded(batches: Iterator[pa.RecordBatch], columns: Columns, with_references: bool, batch_bytes: int,
             path: Path) -> Iterator[pa.RecordBatch]:
    """Each batch cut into slices of at most ``batch_bytes`` bytes of hypothesis text (at least one
    row each); a row whose hypothesis and references pass :data:`~kbest_bleu.settings.MAX_ROW_BYTES` raises InputError."""
    row0 = 0
    for batch in batches:
        hyp = _text_bytes(batch.column(columns.hypothesis))
        size = hyp + _text_bytes(batch.column(columns.references)) if with_references else hyp
        if size.size and size.max() > settings.MAX_ROW_BYTES:
            i = int(size.argmax())
            raise InputError(f"{path}: row {row0 + i} holds {size[i]:,} bytes of hypothesis and reference text; "
                             f"expected at most {settings.MAX_ROW_BYTES:,} (MAX_ROW_BYTES: scoring one row takes ~100-300 "
                             "bytes of memory per byte of text); split such a text into sentences or documents")
        if hyp.sum() <= batch_bytes:
            yield batch
        else:
            ends = np.cumsum(hyp)
            start = 0
            while start < batch.num_rows:
                # the last row that keeps the slice within batch_bytes, and at least one row
                base = ends[start - 1] if start else 0
                stop = max(start + 1, int(np.searchsorted(ends, base + batch_bytes, side="right")))
                yield batch.slice(start, stop - start)
                start = stop
        row0 += batch.num_rows


def _text_bytes(col: pa.Array) -> np.ndarray:
    """int64[rows]: UTF-8 bytes of text per row of a string or list-of-strings column
    (dictionary-encoded or plain; nulls count 0)."""
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        # each row's range of the child values, summed through their running total (a null
        # list's range, empty or not, counts 0)
        offsets = to_numpy(col.offsets).astype(np.int64)
        first = offsets[0]
        totals = np.zeros(offsets[-1] - first + 1, np.int64)
        np.cumsum(_text_bytes(col.values.slice(first, offsets[-1] - first)), out=totals[1:])
        sizes = totals[offsets[1:] - first] - totals[offsets[:-1] - first]
    elif pa.types.is_integer(col.type):  # token ids: their bytes
        return np.full(len(col), col.type.bit_width // 8, np.int64)
    elif pa.types.is_dictionary(col.type):
        if len(col.dictionary) == 0:
            return np.zeros(len(col), np.int64)
        sizes = _text_bytes(col.dictionary)[_nulls_as_zero(col.indices)]
    else:
        return _nulls_as_zero(pc.binary_length(col))
    return sizes if col.null_count == 0 else np.where(to_numpy(pc.is_null(col)), 0, sizes)


def _nulls_as_zero(integers: pa.Array) -> np.ndarray:
    """int64[n] of an Arrow integer array, nulls as 0 (``fill_null(0)`` makes a ``pa.scalar``,
    which imports pandas: see :mod:`kbest_bleu.arrays`)."""
    if integers.null_count == 0:
        return to_numpy(integers).astype(np.int64)
    return np.nan_to_num(to_numpy(integers), nan=0.0).astype(np.int64)


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


def _writer(sink: Any, schema: pa.Schema, compression: str, store_schema: bool = True,
            free_text: Sequence[str] = ()) -> pq.ParquetWriter:
    """Parquet writer with dictionary encoding for every leaf column but floating-point ones
    (BLEU and model scores are nearly all distinct: a dictionary costs time and space there), and
    column statistics for every column but those of ``free_text`` (the hypotheses and references:
    the minimum and maximum of free text select no row group; computing them took 2-3% of a
    2,000,000-row job's wall time, and they lengthen the file's footer).

    Without ``store_schema`` the Arrow schema is not stored (dictionary columns read back as
    plain strings) and the schema metadata is written as the file's key-value metadata.
    """
    leaves = [(f.name, path, t) for f in schema for path, t in _leaf_columns(f.name, f.type)]
    dictionary = [path for _, path, t in leaves if not pa.types.is_floating(t)]
    statistics = [path for name, path, _ in leaves if name not in free_text]
    writer = pq.ParquetWriter(sink, schema, compression=compression, use_dictionary=dictionary,
                              write_statistics=statistics, store_schema=store_schema)
    if not store_schema and schema.metadata:
        writer.add_key_value_metadata(schema.metadata)
    return writer


def _parquet_types_suffice(schema: pa.Schema) -> bool:
    """Whether a parquet file without the stored Arrow schema reads back exactly as ``schema``
    (types, nullability; no field metadata to lose)."""
    if any(f.metadata for f in schema):
        return False
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_batches([], schema=schema), sink, store_schema=False)  # no pandas import
    return pq.read_schema(pa.BufferReader(sink.getvalue())).equals(schema, check_metadata=False)


def _guard_reads(batches: Iterator[pa.RecordBatch], path: Path) -> Iterator[pa.RecordBatch]:
    """Turn Arrow read errors in the middle of a file into InputError naming the file."""
    try:
        yield from batches
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: the parquet file could not be read to the end ({exc}); it may be truncated "
                         "or corrupt") from None


def read_parquet_table(path: "str | os.PathLike", option: str = "input") -> pa.Table:
    """A whole parquet file as a table, for the commands that need all of it (convert,
    export-moses, tune); a missing, non-parquet or truncated file raises :class:`InputError`
    naming the file and ``option``."""
    pf, _ = open_parquet(Path(path))
    try:
        return pf.read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{option} {path}: the parquet file could not be read to the end ({exc}); it may be "
                         "truncated or corrupt; expected a complete parquet file") from None
