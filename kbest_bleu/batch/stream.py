"""Batch jobs: score K-best tables as streams of Arrow record batches.

Memory is bounded by the batch size: batches are regrouped so that a segment's rows are never
scored in pieces (the rows of the last, possibly unfinished segment of a batch wait for the
next batch), and output batches leave in input order. See DESIGN.md section 2.
"""

from __future__ import annotations

import json
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from ..arrays import one_array, to_numpy
from ..config import BleuConfig
from ..counting.threads import set_threads, thread_count
from ..encode import (
    check_contiguous,
    check_segment_keys,
    hypotheses_array,
    is_id_lists,
    key_labels,
    references_array,
    run_starts,
    segment_references,
)
from ..errors import InputError
from ..files.references import META_SEGMENT, Columns, ReferenceTable, require_columns
from ..metrics.base import Counting, Metric
from ..metrics.bleu import Bleu, score_columns
from .summary import MetricSummary, Summary, Tally

__all__ = ["COMPRESSIONS", "META_SEGMENT", "MetricSummary", "SegmentChunk", "Summary", "Tally", "is_id_lists",
           "job_config", "job_metrics", "model_scores", "output_schema", "produced_ahead", "score_batches",
           "score_columns", "score_table", "whole_segments"]

COMPRESSIONS = ("zstd", "snappy", "lz4", "gzip", "brotli", "none")
META_SIGNATURE = b"kbest_bleu.signature"
META_OPTIONS = b"kbest_bleu.options"
# the JSON list of the segment key columns, so that our outputs score again by path alone


def job_metrics(config: BleuConfig, smoothings: Sequence = (), metrics: Sequence[Metric] = (), bleu: bool = True,
                engine: str = "kernels") -> list[Metric]:
    """Every metric a job scores, in output order: BLEU under ``config`` (one column per extra
    smoothing, :func:`~kbest_bleu.metrics.bleu.score_columns`) unless ``bleu`` is False, then ``metrics``."""
    if not bleu:
        if not metrics:
            raise InputError("metrics: expected at least one metric to score, found none (BLEU left out and no other)")
        if smoothings:
            raise InputError(f"extra smoothings {smoothings!r}: they are BLEU columns; add bleu to the metrics "
                             "(--metric bleu,...) or leave --also-smoothing out")
        return list(metrics)
    return [Bleu(config, smoothings, engine), *metrics]


def output_schema(schema: pa.Schema, config: BleuConfig, stats: bool, smoothings: Sequence = (),
                  metrics: Sequence[Metric] = (), bleu: bool = True) -> pa.Schema:
    """Input schema + each metric's columns (:meth:`Metric.output_fields`; first BLEU's:
    ``bleu``, one column per extra smoothing, with ``stats`` its statistics, unless ``bleu`` is
    False), with signatures and options as metadata: ``kbest_bleu.signature`` is the signature of
    ``bleu``, ``kbest_bleu.signature.<column>`` that of every other scored column
    (:meth:`Metric.signatures`); ``kbest_bleu.options`` BLEU's options."""
    return _output_schema(schema, job_metrics(config, smoothings, metrics, bleu), stats)


def _output_schema(schema: pa.Schema, metrics: Sequence[Metric], stats: bool) -> pa.Schema:
    fields = []
    for metric in metrics:
        own = metric.output_fields(stats)
        if metric.name not in [f.name for f in own]:  # the summary reads the metric's main column
            raise InputError(f"metric {metric.name!r}: its columns {[f.name for f in own]} lack its main column "
                             f"{metric.name!r}; a Metric names its main output column as itself")
        fields += own
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise InputError(f"output columns: a name appears twice in {names}; ask for each metric once")
    for f in fields:
        if schema.get_field_index(f.name) >= 0:
            raise InputError(f"output column {f.name!r} already exists in the input; rename or drop it first")
    meta = dict(schema.metadata or {})
    for metric in metrics:
        for column, signature in metric.signatures().items():
            key = META_SIGNATURE if column == "bleu" else META_SIGNATURE + b"." + column.encode()
            meta[key] = signature.encode()
        if isinstance(metric, Bleu):
            meta[META_OPTIONS] = json.dumps(dict(metric.config.__dict__)).encode()
    return pa.schema(list(schema) + fields, metadata=meta)


@dataclass
class _Chunk:
    """A table of whole segments, checked and prepared for counting (:func:`_prepare_chunk`)."""

    table: pa.Table
    seg_ptr: np.ndarray  # int64[S+1] row pointers of the segments
    row0: int  # the table's first row in the stream
    n_refs: np.ndarray  # int[S]
    model_score: Optional[np.ndarray]  # float64[H], the scores that pick each segment's 1-best, or None
    countings: list  # per metric, the counting left to do (:meth:`Metric.counter`)
    inputs: list  # the input columns, of the types the output declares
    schema: pa.Schema  # the output's

    @property
    def parallel(self) -> bool:
        """Whether any metric's counting launches parallel kernels (:class:`Counting`)."""
        return any(c.parallel for c in self.countings)

    def count(self) -> list:
        """Every metric's statistics, in the order of the metrics."""
        return [c.run() for c in self.countings]


def _prepare_chunk(whole: SegmentChunk, metrics: Sequence[Metric], columns: Columns,
                   references: Optional[ReferenceTable], schema: pa.Schema, source: str, engine: str,
                   tallied: bool) -> _Chunk:
    """Check a table of whole segments (:func:`whole_segments`) and prepare each metric's counting
    (:meth:`Metric.counter`). No parallel kernel runs here (it may run beside the kernels)."""
    chunk, seg_ptr, labels, row0 = whole.table, whole.seg_ptr, whole.labels, whole.row0
    where = f"rows {row0}-{row0 + chunk.num_rows - 1}"  # of ``source``, which the errors below are prefixed with
    hyps = one_array(chunk[columns.hypothesis])
    ids = is_id_lists(hyps.type)
    try:
        if ids:
            refs, n_refs = _id_references(chunk, seg_ptr, metrics, columns, references)
        elif pa.types.is_string(hyps.type) or pa.types.is_large_string(hyps.type):
            hyps = hypotheses_array(hyps, row0)
            refs, n_refs = _text_references(chunk, seg_ptr, labels, row0, columns, references, where, engine)
        else:
            raise InputError(f"column {columns.hypothesis!r} has Arrow type {hyps.type}; expected string")
        no_refs = np.flatnonzero(n_refs == 0)
        if no_refs.size:
            empty = "list of ids []" if ids else "string ''"
            raise InputError(f"segment {labels[no_refs[0]]!r} (row {row0 + int(seg_ptr[no_refs[0]])}) has no "
                             f"references; expected at least one per segment in a batch job (an empty {empty} is a "
                             "valid, empty reference)")
        model_score = model_scores(chunk, columns.score, row0) if tallied else None
        countings = [_counting(m.counter(hyps, refs, seg_ptr, chunk, row0), source) for m in metrics]
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    inputs = [_as_type(one_array(chunk[c]), f.type) for c, f in zip(chunk.column_names, schema)]
    return _Chunk(chunk, seg_ptr, row0, n_refs, model_score, countings, inputs, schema)


def model_scores(table: pa.Table, column: Optional[str], row0: int = 0,
                 option: str = "--score-col") -> Optional[np.ndarray]:
    """The model scores float64[H] of ``column`` (None: no column): numbers, finite in every row.
    A null, NaN or infinite score would choose among the hypotheses by accident (the score job's
    1-best, ``mbr``'s weights); ``row0`` numbers the rows in messages, ``option`` names the column's
    option."""
    if column is None:
        return None
    values = one_array(table[column])
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        raise InputError(f"{option} {column}: has Arrow type {values.type}; expected numeric model scores")
    score = to_numpy(values).astype(np.float64)  # nulls read as NaN
    bad = np.flatnonzero(~np.isfinite(score))
    if bad.size:
        raise InputError(f"column {column!r}, row {row0 + int(bad[0])}: the model score is "
                         f"{values[int(bad[0])].as_py()!r}; expected a finite number in every row (the model scores "
                         f"choose among the hypotheses); fix the column or leave {option} out")
    return score


def _text_references(chunk: pa.Table, seg_ptr: np.ndarray, labels: list, row0: int, columns: Columns,
                     references: Optional[ReferenceTable], where: str, engine: str) -> tuple:
    """(list<string> [S] each segment's references, int[S] their numbers) for text hypotheses;
    ``engine``: the job's (the numpy engine gathers references without kernels)."""
    if references is None:
        refs = segment_references(references_array(one_array(chunk[columns.references]), row0),
                                  seg_ptr, chunk.num_rows, row0, engine)
    else:
        refs = references.lookup(labels, where)
    return refs, to_numpy(pc.list_value_length(refs))


def _id_references(chunk: pa.Table, seg_ptr: np.ndarray, metrics: Sequence[Metric], columns: Columns,
                   references: Optional[ReferenceTable]) -> tuple:
    """(list<list<int>> [H] each row's references, int[S] their numbers per segment) for token-id
    hypotheses, which BLEU alone scores (:func:`kbest_bleu.token_ids.segment_token_stats`
    validates the rows when it counts)."""
    if references is not None or columns.references not in chunk.column_names:
        raise InputError("token-id hypotheses take their references from a list<list<int>> column of the table "
                         "(--ref-col), not from a reference table or text file")
    if any(not isinstance(m, Bleu) for m in metrics):
        raise InputError("token-id columns are scored with BLEU only; drop the other metrics from --metric")
    refs = one_array(chunk[columns.references])
    if not ((pa.types.is_list(refs.type) or pa.types.is_large_list(refs.type)) and is_id_lists(refs.type.value_type)):
        raise InputError(f"column {columns.references!r} has Arrow type {refs.type}; token-id hypotheses need "
                         "list<list<int>> references (each row's references as lists of ids)")
    n_refs = to_numpy(pc.list_value_length(refs)).astype(np.int64)[seg_ptr[:-1]] if len(refs) else np.zeros(0, np.int64)
    return refs, n_refs


def _counting(counting: Counting, source: str) -> Counting:
    """``counting`` whose errors (raised when it runs, possibly on another thread) name ``source``."""
    def run() -> object:
        try:
            return counting.run()
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
    return Counting(run, counting.parallel)


def _score_chunk(chunk: _Chunk, statistics: list, metrics: Sequence[Metric], with_stats: bool,
                 tally: Optional[Tally]) -> pa.RecordBatch:
    """Score a prepared chunk from its metrics' statistics (:meth:`Metric.compute`, one loop for
    every metric, BLEU included: DESIGN.md section 6) into one output batch."""
    arrays = list(chunk.inputs)
    scored = []  # (metric, statistics, its main column) for the tally
    for metric, st in zip(metrics, statistics):
        out = metric.compute(st, with_stats)
        arrays += out
        if tally is not None:  # the summary: the metric's main column, named as the metric (_output_schema)
            names = [f.name for f in metric.output_fields(with_stats)]
            scored.append((metric, st, to_numpy(out[names.index(metric.name)])))
    if tally is not None:
        tally.add(chunk.seg_ptr, chunk.model_score, chunk.n_refs, scored)
    return pa.RecordBatch.from_arrays(arrays, schema=chunk.schema)


def _as_type(arr: pa.Array, declared: pa.DataType) -> pa.Array:
    """A column read with another type than the input declares (dictionary-encoded) cast back."""
    return arr if arr.type == declared else pc.cast(arr, declared)


def produced_ahead(items: Iterator[Any], pool: Executor) -> Iterator[Any]:
    """``items`` in order, each next one produced on ``pool`` (one thread) while the caller uses
    the current one; an exception raised producing an item is raised here, in its place."""
    done = object()
    coming = pool.submit(next, items, done)
    while True:
        item = coming.result()
        if item is done:
            return
        coming = pool.submit(next, items, done)
        yield item


def score_batches(batches: Iterable[pa.RecordBatch], config: Optional[BleuConfig] = None, *,
                  columns: Columns = Columns(), references: Optional[ReferenceTable] = None, stats: bool = False,
                  smoothings: Sequence = (), tally: Optional[Tally] = None, source: str = "input",
                  schema: Optional[pa.Schema] = None, metrics: Sequence[Metric] = (),
                  engine: str = "kernels", ahead: Optional[Executor] = None,
                  bleu: bool = True) -> Iterator[pa.RecordBatch]:
    """Score a stream of record batches; yields output batches (input columns + ``bleu``, plus
    ``bleu_s<n>`` for each extra smoothing in ``smoothings`` (:func:`score_columns`) and the
    statistics with ``stats``, and the columns of each of ``metrics``: built
    :class:`~kbest_bleu.metrics.base.Metric` objects, e.g. ``load_metric("bleu2vec", embeddings=DIR)``).

    Segments may be cut anywhere by the batch boundaries: the rows of the last segment of a batch
    are held back until the segment is complete. A segment whose rows are not contiguous raises
    :class:`InputError`. Output rows are in input order. Memory: one batch plus one segment.
    ``schema``: the declared input schema, when the batches were read with other column types
    (references as dictionary-encoded strings); the output keeps the declared types.
    ``engine``: "kernels" (numba) or "numpy", for small jobs (:func:`kbest_bleu.stats.numpy_engine_suits`).
    ``ahead``: a one-thread executor on which the next chunk of segments is taken from
    ``batches``, checked and prepared while the current one is counted and scored (the parquet
    job's reader thread; no parallel kernel runs there); then, on the kernels engine, a chunk
    whose counting launches no parallel kernel (BLEU alone on text) is also counted on a thread
    of its own while the calling thread scores the one before (:func:`_counted`). None does
    everything on the calling thread. Every metric, BLEU included, is scored by one loop
    (:func:`job_metrics`: BLEU first, then ``metrics``).
    ``bleu=False``: no BLEU at all (nothing counted), only the columns of ``metrics``.
    """
    every = job_metrics(config or BleuConfig(), smoothings, metrics, bleu, engine)
    chunks = _prepared_chunks(batches, every, columns, references, stats, source, schema, engine, tally is not None)
    overlap = ahead is not None and engine == "kernels"
    for chunk, counted in _counted(chunks if ahead is None else produced_ahead(chunks, ahead), overlap):
        yield _score_chunk(chunk, counted, every, stats, tally)


def _counted(chunks: Iterator[_Chunk], overlap: bool) -> Iterator[tuple[_Chunk, list]]:
    """Each chunk with its statistics, in order. With ``overlap``, chunk i+1 is counted on a
    thread of its own (the kernels' thread count carried over: numba keeps one per thread)
    while the caller scores chunk i (smoothings, tallies, the output batch: Python and numpy that
    otherwise left the kernels' threads idle): the 2,000,000-row job 1.629 against 1.693 s, 8
    alternated runs each. Parallel kernels stay on the calling thread (numba's workqueue layer
    takes parallel launches from one thread at a time): a chunk whose counting launches them
    (token lists; metrics other than BLEU, :class:`Counting`) is counted there, after the one
    before it; without ``overlap`` (the numpy engine, no reader thread) every chunk is."""
    if not overlap:
        for chunk in chunks:
            yield chunk, chunk.count()
        return
    with ThreadPoolExecutor(1, initializer=set_threads, initargs=(thread_count(),)) as counter:
        held = None  # the chunk before, counting on the counting thread, not handed out yet
        while True:
            try:
                chunk = next(chunks, None)
            except Exception:  # a bad chunk: the one before it is handed out first, as inline
                if held is not None:
                    yield held[0], held[1].result()
                raise
            counting = None if chunk is None or chunk.parallel else counter.submit(chunk.count)
            if held is not None:
                yield held[0], held[1].result()
            if chunk is None:
                return
            held = (chunk, counting) if counting is not None else None
            if counting is None:  # parallel kernels: counted here, the counting thread idle
                yield chunk, chunk.count()


def _prepared_chunks(batches: Iterable[pa.RecordBatch], metrics: Sequence[Metric], columns: Columns,
                     references: Optional[ReferenceTable], stats: bool, source: str,
                     schema: Optional[pa.Schema], engine: str, tallied: bool) -> Iterator[_Chunk]:
    """The batches regrouped into tables of whole segments (:func:`whole_segments`), each checked
    and prepared (:func:`_prepare_chunk`); the arguments are :func:`score_batches`'s (``tallied``:
    a summary is made, whose 1-best the model scores pick). The columns
    and the output schema are checked on the first batch, before any row is scored."""
    out_schema: list = []  # the output's schema, from the first batch's

    def checked(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not out_schema:
                names = [columns.hypothesis] + list(columns.segment) + ([columns.score] if columns.score else [])
                names += [c for m in metrics for c in m.input_columns()]
                require_columns(batch.schema, names + ([columns.references] if references is None else []), source)
                declared = _output_schema(schema or batch.schema, metrics, stats)
                out_schema.append(declared.with_metadata({**declared.metadata,
                                                          META_SEGMENT: json.dumps(list(columns.segment)).encode()}))
            yield batch

    for whole in whole_segments(checked(batches), columns.segment, source):
        yield _prepare_chunk(whole, metrics, columns, references, out_schema[0], source, engine, tallied)


@dataclass
class SegmentChunk:
    """Whole segments (:func:`whole_segments`): ``table`` (each column one array), ``seg_ptr``
    int64[S+1] their rows, ``labels`` their keys (hashable values, tuples when composite),
    ``row0`` the table's first row in the stream."""

    table: pa.Table
    seg_ptr: np.ndarray
    labels: list
    row0: int


def whole_segments(batches: Iterable[pa.RecordBatch], segment: Sequence[str], source: str) -> Iterator[SegmentChunk]:
    """Record batches regrouped into tables of whole segments: the rows of the segment still open at
    the end of a batch wait for the next batch (a segment longer than a batch is read whole), so
    memory is one batch plus one segment. Segment keys without nulls or NaN
    (:func:`~kbest_bleu.encode.check_segment_keys`); a segment whose rows are not contiguous raises
    :class:`InputError` naming ``source``. The score job and ``kbest-bleu mbr`` read through it."""
    pending: Optional[pa.Table] = None
    seen: set = set()
    row0 = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        if pending is not None:
            table = pa.concat_tables([pending, table])
        keys = [one_array(table[c]) for c in segment]
        try:
            check_segment_keys(keys, segment, row0)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
        starts = run_starts(keys)
        last = int(starts[-1])
        if last > 0:  # rows before the last run form whole segments
            yield _whole(table.slice(0, last), keys, starts[:-1], row0, seen, source)
            row0 += last
        pending = table.slice(last)
    if pending is not None and pending.num_rows:
        yield _whole(pending, [one_array(pending[c]) for c in segment], np.zeros(1, np.int64), row0, seen, source)


def _whole(table: pa.Table, keys: list, starts: np.ndarray, row0: int, seen: set, source: str) -> SegmentChunk:
    labels = key_labels(keys, starts)
    check_contiguous(labels, seen, starts + row0, source)
    # a segment held back from the last batch makes two chunks: each column joined once (its text
    # copied once), then the scoring and the output use the same arrays
    return SegmentChunk(table.combine_chunks(), np.append(starts, table.num_rows).astype(np.int64), labels, row0)


def job_config(config: Optional[BleuConfig], schema: pa.Schema, columns: Columns) -> Optional[BleuConfig]:
    """``config``, or for token-id hypotheses (list<int>) ``config`` under tokenize='none' and no
    lowercasing (:func:`kbest_bleu.token_ids.token_config`: ids are tokens already; the signature
    says so), decided from the schema, as every job (table, parquet, Spark, export-moses) scores them."""
    if columns.hypothesis in schema.names and is_id_lists(schema.field(columns.hypothesis).type):
        from ..token_ids import token_config

        return token_config(config)
    return config


def score_table(table: Any, config: Optional[BleuConfig] = None, **kwargs: Any) -> Any:
    """:func:`score_batches` on an in-memory table; returns the scored table, of the same kind:
    a ``pyarrow.Table``, a pandas DataFrame (read through Arrow, without its index) or a polars
    DataFrame (through Arrow, zero-copy where possible)."""
    kind = type(table).__module__.split(".")[0]
    if kind == "pandas":
        table = pa.Table.from_pandas(table, preserve_index=False)
    elif kind == "polars":
        table = table.to_arrow()
    elif not isinstance(table, pa.Table):
        raise InputError(f"score_table: expected a pyarrow Table, pandas or polars DataFrame, found "
                         f"{type(table).__module__}.{type(table).__name__}; convert it with pyarrow.table(...)")
    config = job_config(config, table.schema, kwargs.get("columns", Columns()))
    out = list(score_batches(table.to_batches(), config, **kwargs))
    if out:
        scored = pa.Table.from_batches(out)
    else:
        scored = output_schema(table.schema, config or BleuConfig(), kwargs.get("stats", False),
                               kwargs.get("smoothings", ()), kwargs.get("metrics", ()),
                               kwargs.get("bleu", True)).empty_table()
    if kind == "pandas":
        return scored.to_pandas()
    if kind == "polars":
        import polars
        return polars.from_arrow(scored)
    return scored


