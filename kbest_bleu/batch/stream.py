"""Batch jobs: score K-best tables as streams of Arrow record batches, parquet in, parquet out.

Memory is bounded by the batch size: batches are regrouped so that a segment's rows are never
scored in pieces (the rows of the last, possibly unfinished segment of a batch wait for the
next batch), and output batches leave in input order. See DESIGN section 2.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .bleu import BleuResult, corpus_score, sentence_scores, stats_order
from .config import BLEU_PLUS_1, BleuConfig, allowed_smoothings
from .encode import (check_contiguous, hypotheses_array, key_labels, references_array, run_starts,
                     segment_references)
from .errors import InputError
from .stats import BleuStats, segment_argmax, segment_stats

COMPRESSIONS = ("zstd", "snappy", "lz4", "gzip", "brotli", "none")
META_SIGNATURE = b"kbest_bleu.signature"
META_OPTIONS = b"kbest_bleu.options"


@dataclass(frozen=True)
class Columns:
    """Column names of a K-best table (README, "Parquet schema").

    hypothesis : string column of hypotheses
    references : list<string> column, the references of the row's segment (ignored when the
        references come from a separate table or text files)
    segment : one or more columns whose values identify a segment; a segment's rows are contiguous
    score : optional model-score column; the summary's 1-best is then its argmax per segment
    """

    hypothesis: str = "hypothesis"
    references: str = "references"
    segment: tuple = ("segment_id",)
    score: Optional[str] = None


class ReferenceTable:
    """References kept apart from the hypotheses, keyed by segment: ``{key: [ref, ...]}``."""

    def __init__(self, keys: list, references: pa.Array, source: str):
        self.index = {k: i for i, k in enumerate(keys)}
        if len(self.index) != len(keys):
            raise InputError(f"{source}: a segment appears twice in the reference table; expected one row per segment")
        self.references = references_array(references)
        self.source = source

    @classmethod
    def from_table(cls, table: pa.Table, columns: Columns, source: str) -> "ReferenceTable":
        _require(table.schema, list(columns.segment) + [columns.references], source)
        keys = [table[c].combine_chunks() for c in columns.segment]
        return cls(key_labels(keys, np.arange(table.num_rows)), table[columns.references].combine_chunks(), source)

    @classmethod
    def from_text_files(cls, paths: Sequence[str]) -> "ReferenceTable":
        """One file per reference stream; line i holds the reference of segment i (0-based)."""
        streams = [read_lines(p) for p in paths]
        lengths = {len(s) for s in streams}
        if len(lengths) > 1:
            found = ", ".join(f"{p}: {len(s)} lines" for p, s in zip(paths, streams))
            raise InputError(f"reference files: expected the same number of lines in every file, found {found}")
        refs = pa.array([list(r) for r in zip(*streams)], pa.list_(pa.string()))
        return cls(list(range(len(refs))), refs, " + ".join(map(str, paths)))

    def lookup(self, labels: list, where: str) -> pa.Array:
        idx = [self.index.get(k, -1) for k in labels]
        if -1 in idx:
            missing = labels[idx.index(-1)]
            raise InputError(f"{where}: segment {missing!r} has no references in {self.source}; expected every "
                             "segment id of the hypotheses to appear in the reference table (0-based line "
                             "numbers for text files)")
        return self.references.take(pa.array(idx, pa.int64()))


def read_lines(path: "str | os.PathLike") -> list:
    """Lines of a UTF-8 text file (split on \\n only, as line-based MT tools do)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line} is not valid UTF-8 (byte {data[exc.start]:#04x} at offset "
                         f"{exc.start}); re-encode the file as UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _require(schema: pa.Schema, names: Iterable[str], source: str) -> None:
    for name in names:
        if schema.get_field_index(name) < 0:
            raise InputError(f"{source}: column {name!r} not found; columns are {', '.join(schema.names)} "
                             "(choose the column with the matching option, e.g. --hyp-col/--ref-col/--seg-col)")


@dataclass
class Tally:
    """Running totals for the end-of-job summary (sums of statistics, never rows)."""

    config: BleuConfig
    rows: int = 0
    segments: int = 0
    bleu_sum: float = 0.0
    one_best: Optional[BleuStats] = None
    oracle: Optional[BleuStats] = None

    def add(self, stats: BleuStats, bleu: np.ndarray, seg_ptr: np.ndarray, model_score: Optional[np.ndarray]) -> None:
        self.rows += len(bleu)
        self.segments += len(seg_ptr) - 1
        self.bleu_sum += float(bleu.sum())
        first = seg_ptr[:-1] if model_score is None else segment_argmax(model_score, seg_ptr)
        self.one_best = _accumulate(self.one_best, stats[first])
        self.oracle = _accumulate(self.oracle, stats[segment_argmax(bleu, seg_ptr)])

    def summary(self, seconds: float) -> "Summary":
        empty = BleuStats(np.zeros((1, self.config.max_order + 1), np.int64), np.zeros((1, self.config.max_order + 1),
                          np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64))
        return Summary(self.rows, self.segments, self.bleu_sum / self.rows if self.rows else 0.0,
                       corpus_score(self.one_best or empty, self.config),
                       corpus_score(self.oracle or empty, self.config), self.config.signature("sentence"), seconds)


def _accumulate(total: Optional[BleuStats], part: BleuStats) -> BleuStats:
    return part.sum() if total is None else BleuStats.concat([total, part.sum()]).sum()


@dataclass(frozen=True)
class Summary:
    """What a batch job reports at the end (0-1 scores; printed as sacrebleu-style 0-100)."""

    rows: int
    segments: int
    mean_bleu: float
    one_best: BleuResult
    oracle: BleuResult
    signature: str
    seconds: float

    def __str__(self) -> str:
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        return (f"rows {self.rows:,}  segments {self.segments:,}  time {self.seconds:.2f} s ({rate:,.0f} rows/s)\n"
                f"mean sentence BLEU   {100 * self.mean_bleu:6.2f}\n"
                f"1-best corpus BLEU   {100 * self.one_best.score:6.2f}  ({self.one_best.signature})\n"
                f"oracle corpus BLEU   {100 * self.oracle.score:6.2f}\n"
                f"sentence signature   {self.signature}")

    def to_dict(self) -> dict:
        return {"rows": self.rows, "segments": self.segments, "mean_bleu": self.mean_bleu,
                "one_best": self.one_best.to_dict(), "oracle": self.oracle.to_dict(),
                "signature": self.signature, "seconds": self.seconds}


def score_columns(config: BleuConfig, smoothings: Sequence = ()) -> list[tuple[str, BleuConfig]]:
    """(column name, config) of every sentence-BLEU column: ``bleu`` under ``config``, then one
    ``bleu_s<n>`` per entry of ``smoothings`` (Chen & Cherry number or sacrebleu name; "all" = every
    smoothing of the preset; ``bleu_plus1`` for moses's bleu+1) under the same preset and options.
    ``smoothings`` may be one comma-separated string. The statistics are counted once for all."""
    if isinstance(smoothings, str):
        smoothings = [x.strip() for x in smoothings.split(",") if x.strip()]
    wanted = []
    for s in smoothings:
        wanted += allowed_smoothings(config.compat) if s == "all" else [s]
    out = [("bleu", config)]
    for s in wanted:
        try:
            cfg = BleuConfig.make(config, smoothing=s)
        except InputError as exc:
            raise InputError(f"extra smoothing {s!r}: {exc}") from None
        name = "bleu_plus1" if cfg.smoothing == BLEU_PLUS_1 else f"bleu_s{cfg.smoothing}"
        if name not in dict(out):
            out.append((name, cfg))
    return out


def output_schema(schema: pa.Schema, config: BleuConfig, stats: bool, smoothings: Sequence = ()) -> pa.Schema:
    """Input schema + ``bleu`` (+ one column per extra smoothing, see :func:`score_columns`)
    (+ statistics columns), with signatures and options as metadata: ``kbest_bleu.signature`` is
    the signature of ``bleu``, ``kbest_bleu.signature.<column>`` that of each extra column."""
    scored = score_columns(config, smoothings)
    fields = [pa.field(name, pa.float64()) for name, _ in scored]
    if stats:
        n = config.max_order
        fields += [pa.field(f"{kind}{i}", pa.int32()) for kind in ("m", "t") for i in range(1, n + 1)]
        fields += [pa.field("hyp_len", pa.int32()), pa.field("ref_len", pa.int32())]
    for f in fields:
        if schema.get_field_index(f.name) >= 0:
            raise InputError(f"output column {f.name!r} already exists in the input; rename or drop it first")
    meta = dict(schema.metadata or {})
    meta[META_SIGNATURE] = config.signature("sentence").encode()
    for name, cfg in scored[1:]:
        meta[META_SIGNATURE + b"." + name.encode()] = cfg.signature("sentence").encode()
    meta[META_OPTIONS] = json.dumps({k: v for k, v in config.__dict__.items()}).encode()
    return pa.schema(list(schema) + fields, metadata=meta)


def _score_chunk(chunk: pa.Table, starts: np.ndarray, labels: list, row0: int, scored: list, columns: Columns,
                 references: Optional[ReferenceTable], with_stats: bool, schema: pa.Schema, tally: Optional[Tally],
                 source: str) -> pa.RecordBatch:
    """Score a table of whole segments (``starts``: first row of each) into one output batch;
    ``scored``: the BLEU columns (:func:`score_columns`), the first one's config drives the rest."""
    cfg = scored[0][1]
    n = chunk.num_rows
    seg_ptr = np.append(starts, n)
    where = f"{source}, rows {row0}-{row0 + n - 1}"
    hyps = chunk[columns.hypothesis].combine_chunks()
    if not (pa.types.is_string(hyps.type) or pa.types.is_large_string(hyps.type)):
        raise InputError(f"{source}: column {columns.hypothesis!r} has Arrow type {hyps.type}; expected string")
    try:
        hyps = hypotheses_array(hyps, row0)
        if references is None:
            refs = segment_references(references_array(chunk[columns.references].combine_chunks(), row0),
                                      seg_ptr, n, row0)
        else:
            refs = references.lookup(labels, where)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    no_refs = np.flatnonzero(pc.list_value_length(refs).to_numpy(zero_copy_only=False) == 0)
    if no_refs.size:
        raise InputError(f"{source}: segment {labels[no_refs[0]]!r} (row {row0 + int(starts[no_refs[0]])}) has no "
                         "references; expected at least one per segment in a batch job (an empty string '' is a "
                         "valid, empty reference)")
    order = max(stats_order(c) for _, c in scored)
    stats = segment_stats(hyps, refs, seg_ptr, order, cfg.ref_length, cfg.tokenize, cfg.lowercase)
    bleu = sentence_scores(stats, cfg)
    if tally is not None:
        score = None
        if columns.score is not None:
            score = chunk[columns.score].combine_chunks().to_numpy(zero_copy_only=False).astype(np.float64)
        tally.add(stats, bleu, seg_ptr, score)
    arrays = [_as_type(chunk[c].combine_chunks(), f.type) for c, f in zip(chunk.column_names, schema)]
    arrays.append(pa.array(bleu))
    arrays += [pa.array(sentence_scores(stats, c)) for _, c in scored[1:]]
    if with_stats:
        n_ord = cfg.max_order
        arrays += [pa.array(stats.matches[:, i]) for i in range(n_ord)]
        arrays += [pa.array(stats.totals[:, i]) for i in range(n_ord)]
        arrays += [pa.array(stats.hyp_len), pa.array(stats.ref_len)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _as_type(arr: pa.Array, declared: pa.DataType) -> pa.Array:
    """A column read with another type than the input declares (dictionary-encoded) cast back."""
    return arr if arr.type == declared else arr.cast(declared)


def score_batches(batches: Iterable[pa.RecordBatch], config: Optional[BleuConfig] = None, *,
                  columns: Columns = Columns(), references: Optional[ReferenceTable] = None, stats: bool = False,
                  smoothings: Sequence = (), tally: Optional[Tally] = None, source: str = "input",
                  schema: Optional[pa.Schema] = None) -> Iterator[pa.RecordBatch]:
    """Score a stream of record batches; yields output batches (input columns + ``bleu``, plus
    ``bleu_s<n>`` for each extra smoothing in ``smoothings`` (:func:`score_columns`) and the
    statistics with ``stats``).

    Segments may be cut anywhere by the batch boundaries: the rows of the last segment of a batch
    are held back until the segment is complete. A segment whose rows are not contiguous raises
    :class:`InputError`. Output rows are in input order. Memory: one batch plus one segment.
    ``schema``: the declared input schema, when the batches were read with other column types
    (references as dictionary-encoded strings); the output keeps the declared types.
    """
    cfg = config or BleuConfig()
    scored = score_columns(cfg, smoothings)
    out_schema = None
    pending: Optional[pa.Table] = None  # rows of the segment still open at the end of the last batch
    seen: set = set()
    row0 = 0
    for batch in batches:
        if out_schema is None:
            names = [columns.hypothesis] + list(columns.segment) + ([columns.score] if columns.score else [])
            _require(batch.schema, names + ([columns.references] if references is None else []), source)
            in_schema = batch.schema
            out_schema = output_schema(schema or in_schema, cfg, stats, smoothings)
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch], in_schema)
        if pending is not None:
            table = pa.concat_tables([pending, table])
        keys = [table[c].combine_chunks() for c in columns.segment]
        for c, k in zip(columns.segment, keys):
            if k.null_count:
                raise InputError(f"{source}: column {c!r} is null at row "
                                 f"{row0 + int(np.flatnonzero(k.is_null().to_numpy(zero_copy_only=False))[0])}; "
                                 "expected a segment id on every row")
        starts = run_starts(keys)
        last = int(starts[-1])
        if last > 0:  # rows before the last run form whole segments
            done = starts[:-1]
            labels = key_labels(keys, done)
            check_contiguous(labels, seen, done + row0, source)
            yield _score_chunk(table.slice(0, last), done, labels, row0, scored, columns, references, stats,
                               out_schema, tally, source)
            row0 += last
        pending = table.slice(last)
    if pending is not None and pending.num_rows:
        keys = [pending[c].combine_chunks() for c in columns.segment]
        starts = np.zeros(1, np.int64)
        labels = key_labels(keys, starts)
        check_contiguous(labels, seen, starts + row0, source)
        yield _score_chunk(pending, starts, labels, row0, scored, columns, references, stats, out_schema, tally,
                           source)


def score_table(table: pa.Table, config: Optional[BleuConfig] = None, **kwargs: Any) -> pa.Table:
    """:func:`score_batches` on an in-memory ``pyarrow.Table``; returns the scored table."""
    out = list(score_batches(table.to_batches(), config, **kwargs))
    if not out:
        return output_schema(table.schema, config or BleuConfig(), kwargs.get("stats", False),
                             kwargs.get("smoothings", ())).empty_table()
    return pa.Table.from_batches(out)


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
                  smoothings: Sequence = (), batch_size: int = 65536, quiet: bool = True, compression: str = "zstd",
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
            out_schema = output_schema(declared, cfg, stats, smoothings)
            direct = pf.schema_arrow != declared and _parquet_types_suffice(out_schema)
            try:
                batches = _read_batches(pf, batch_size)
                # Arrow encodes a batch on one thread: writing batch i on a background thread
                # while batch i+1 is read and scored keeps both cores busy. At most one batch
                # waits; a write error surfaces at the next batch or at the end.
                with ThreadPoolExecutor(1) as background:
                    written = None
                    for out in score_batches(_guard_reads(batches, src), cfg, columns=columns,
                                             references=references, stats=stats, smoothings=smoothings, tally=tally,
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
