"""Batch jobs: score K-best tables as streams of Arrow record batches.

Memory is bounded by the batch size: batches are regrouped so that a segment's rows are never
scored in pieces (the rows of the last, possibly unfinished segment of a batch wait for the
next batch), and output batches leave in input order. See DESIGN.md section 2.
"""

from __future__ import annotations

import json
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from ..arrays import from_numpy, one_array, to_numpy
from ..bleu import sentence_scores
from ..config import BLEU_PLUS_1, BleuConfig, allowed_smoothings
from ..counting.threads import set_threads, thread_count
from ..encode import (
    check_contiguous,
    check_segment_keys,
    hypotheses_array,
    key_labels,
    references_array,
    run_starts,
    segment_references,
)
from ..errors import InputError
from ..files.references import META_SEGMENT, Columns, ReferenceTable, require_columns
from ..metrics.base import Metric
from ..stats import BleuStats, counts_in_parallel, segment_counter
from .summary import MetricSummary, Summary, Tally

__all__ = ["COMPRESSIONS", "META_SEGMENT", "MetricSummary", "Summary", "Tally", "is_id_lists", "output_schema",
           "produced_ahead", "score_batches", "score_columns", "score_table"]

COMPRESSIONS = ("zstd", "snappy", "lz4", "gzip", "brotli", "none")
META_SIGNATURE = b"kbest_bleu.signature"
META_OPTIONS = b"kbest_bleu.options"
# the JSON list of the segment key columns, so that our outputs score again by path alone


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


def output_schema(schema: pa.Schema, config: BleuConfig, stats: bool, smoothings: Sequence = (),
                  metrics: Sequence[Metric] = (), bleu: bool = True) -> pa.Schema:
    """Input schema + ``bleu`` (+ one column per extra smoothing, see :func:`score_columns`)
    (+ statistics columns) (+ each metric's columns, :meth:`Metric.output_fields`), with signatures
    and options as metadata: ``kbest_bleu.signature`` is the signature of ``bleu``,
    ``kbest_bleu.signature.<column>`` that of each extra BLEU column and of each metric.
    ``bleu=False``: the metrics' columns alone (no BLEU column, statistics or signature)."""
    scored = _bleu_columns(config, smoothings, bleu, metrics)
    fields = [pa.field(name, pa.float64()) for name, _ in scored]
    if stats and bleu:
        n = config.max_order
        fields += [pa.field(f"{kind}{i}", pa.int32()) for kind in ("m", "t") for i in range(1, n + 1)]
        fields += [pa.field("hyp_len", pa.int32()), pa.field("ref_len", pa.int32())]
    for metric in metrics:
        fields += metric.output_fields(stats)
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise InputError(f"output columns: a name appears twice in {names}; ask for each metric once")
    for f in fields:
        if schema.get_field_index(f.name) >= 0:
            raise InputError(f"output column {f.name!r} already exists in the input; rename or drop it first")
    meta = dict(schema.metadata or {})
    if bleu:
        meta[META_SIGNATURE] = config.signature("sentence").encode()
    for name, cfg in scored[1:]:
        meta[META_SIGNATURE + b"." + name.encode()] = cfg.signature("sentence").encode()
    for metric in metrics:
        meta[META_SIGNATURE + b"." + metric.name.encode()] = metric.signature().encode()
    if bleu:
        meta[META_OPTIONS] = json.dumps({k: v for k, v in config.__dict__.items()}).encode()
    return pa.schema(list(schema) + fields, metadata=meta)


def _bleu_columns(config: BleuConfig, smoothings: Sequence, bleu: bool, metrics: Sequence[Metric]) -> list:
    """:func:`score_columns`, or none for a job without BLEU (which must have other metrics)."""
    if bleu:
        return score_columns(config, smoothings)
    if not metrics:
        raise InputError("metrics: expected at least one metric to score, found none (BLEU left out and no other)")
    if smoothings:
        raise InputError(f"extra smoothings {smoothings!r}: they are BLEU columns; add bleu to the metrics "
                         "(--metric bleu,...) or leave --also-smoothing out")
    return []


@dataclass
class _Chunk:
    """A table of whole segments, checked and prepared for counting (:func:`_prepare_chunk`)."""

    table: pa.Table
    seg_ptr: np.ndarray  # int64[S+1] row pointers of the segments
    row0: int  # the table's first row in the stream
    hyps: pa.Array
    refs: pa.Array  # list<string>, each segment's references
    n_refs: np.ndarray  # int[S]
    count: Callable[[], BleuStats]  # the counting left to do (:func:`~kbest_bleu.stats.segment_counter`)
    inputs: list  # the input columns, of the types the output declares
    schema: pa.Schema  # the output's

    @property
    def parallel(self) -> bool:
        """Whether the counting launches parallel kernels (:func:`~kbest_bleu.stats.counts_in_parallel`)."""
        return counts_in_parallel(self.hyps, self.refs)


def _prepare_chunk(chunk: pa.Table, starts: np.ndarray, labels: list, row0: int, scored: list, columns: Columns,
                   references: Optional[ReferenceTable], schema: pa.Schema, source: str, engine: str) -> _Chunk:
    """Check a table of whole segments (``starts``: first row of each) and prepare it for
    counting; ``scored``: the BLEU columns (:func:`score_columns`), the first one's config
    drives the rest. No parallel kernel runs here (it may run beside the kernels)."""
    n = chunk.num_rows
    seg_ptr = np.append(starts, n)
    where = f"rows {row0}-{row0 + n - 1}"  # of ``source``, which the errors below are prefixed with
    # a segment held back from the last batch makes two chunks: join each column once (its text
    # is copied once), then the scoring and the output use the same arrays
    chunk = chunk.combine_chunks()
    hyps = one_array(chunk[columns.hypothesis])
    if is_id_lists(hyps.type):
        return _prepare_id_chunk(chunk, hyps, seg_ptr, labels, row0, scored, columns, references, schema, source)
    if not (pa.types.is_string(hyps.type) or pa.types.is_large_string(hyps.type)):
        raise InputError(f"{source}: column {columns.hypothesis!r} has Arrow type {hyps.type}; expected string")
    try:
        hyps = hypotheses_array(hyps, row0)
        if references is None:
            refs = segment_references(references_array(one_array(chunk[columns.references]), row0),
                                      seg_ptr, n, row0, engine)
        else:
            refs = references.lookup(labels, where)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    n_refs = to_numpy(pc.list_value_length(refs))
    no_refs = np.flatnonzero(n_refs == 0)
    if no_refs.size:
        raise InputError(f"{source}: segment {labels[no_refs[0]]!r} (row {row0 + int(starts[no_refs[0]])}) has no "
                         "references; expected at least one per segment in a batch job (an empty string '' is a "
                         "valid, empty reference)")
    # no BLEU (--metric meteor): nothing to count, the metrics score the prepared segments
    count = segment_counter(hyps, refs, seg_ptr, *(c for _, c in scored), engine=engine) if scored else _nothing
    inputs = [_as_type(one_array(chunk[c]), f.type) for c, f in zip(chunk.column_names, schema)]
    return _Chunk(chunk, seg_ptr, row0, hyps, refs, n_refs, count, inputs, schema)


def is_id_lists(t: pa.DataType) -> bool:
    """Whether an Arrow type holds token ids: list<int> (or large_list) of any integer width."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)


def _prepare_id_chunk(chunk: pa.Table, hyps: pa.Array, seg_ptr: np.ndarray, labels: list, row0: int, scored: list,
                      columns: Columns, references: Optional[ReferenceTable], schema: pa.Schema,
                      source: str) -> _Chunk:
    """:func:`_prepare_chunk` for token ids (hypotheses list<int>, references list<list<int>> per
    row): counted by :func:`kbest_bleu.token_ids.segment_token_stats`, which validates the rows."""
    from ..token_ids import segment_token_stats

    if references is not None or columns.references not in chunk.column_names:
        raise InputError(f"{source}: token-id hypotheses take their references from a list<list<int>> column of "
                         "the table (--ref-col), not from a reference table or text file")
    if not scored:
        raise InputError(f"{source}: token-id columns are scored with BLEU only; drop the other metrics from --metric")
    if any(cfg.tokenize != "none" or cfg.lowercase for _, cfg in scored):
        raise InputError(f"{source}: token ids are tokens already: score them with tokenize='none' and no lowercasing")
    refs = one_array(chunk[columns.references])
    if not ((pa.types.is_list(refs.type) or pa.types.is_large_list(refs.type)) and is_id_lists(refs.type.value_type)):
        raise InputError(f"{source}: column {columns.references!r} has Arrow type {refs.type}; token-id hypotheses "
                         "need list<list<int>> references (each row's references as lists of ids)")
    n_refs = to_numpy(pc.list_value_length(refs)).astype(np.int64)[seg_ptr[:-1]] if len(refs) else np.zeros(0, np.int64)
    no_refs = np.flatnonzero(n_refs == 0)
    if no_refs.size:
        raise InputError(f"{source}: segment {labels[no_refs[0]]!r} (row {row0 + int(seg_ptr[no_refs[0]])}) has no "
                         "references; expected at least one per segment in a batch job")
    configs = [cfg for _, cfg in scored]

    def count() -> BleuStats:
        try:
            return segment_token_stats(hyps, refs, seg_ptr, *configs, row_offset=row0)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
    inputs = [_as_type(one_array(chunk[c]), f.type) for c, f in zip(chunk.column_names, schema)]
    return _Chunk(chunk, seg_ptr, row0, hyps, refs, n_refs, count, inputs, schema)


def _nothing() -> None:
    return None


def _score_chunk(chunk: _Chunk, stats: Optional[BleuStats], scored: list, columns: Columns, with_stats: bool,
                 tally: Optional[Tally], metrics: Sequence[Metric] = ()) -> pa.RecordBatch:
    """Score a prepared chunk from its statistics (``stats``) into one output batch; ``metrics``:
    more metrics, each scoring the same segments (DESIGN.md section 6). ``scored`` empty: no BLEU
    (``stats`` None), the metrics' columns only."""
    arrays = list(chunk.inputs)
    bleu = None
    if scored:
        cfg = scored[0][1]
        bleu = sentence_scores(stats, cfg)
        arrays.append(from_numpy(bleu))
        arrays += [from_numpy(sentence_scores(stats, c)) for _, c in scored[1:]]
        if with_stats:
            n_ord = cfg.max_order
            arrays += [from_numpy(stats.matches[:, i]) for i in range(n_ord)]
            arrays += [from_numpy(stats.totals[:, i]) for i in range(n_ord)]
            arrays += [from_numpy(stats.hyp_len), from_numpy(stats.ref_len)]
    metric_scores = {}
    for metric in metrics:
        out = metric.score_segments(chunk.hyps, chunk.refs, chunk.seg_ptr, chunk.table, with_stats)
        if tally is not None:  # the summary's means: the metric's main column (named as the metric)
            names = [f.name for f in metric.output_fields(with_stats)]
            metric_scores[metric.name] = to_numpy(out[names.index(metric.name) if metric.name in names else 0])
            if metric.name not in tally.metric_signatures:
                tally.metric_signatures[metric.name] = metric.signature()
        arrays += out
    if tally is not None:
        score = None
        if columns.score is not None:
            score = to_numpy(chunk.table[columns.score]).astype(np.float64)
        tally.add(stats, bleu, chunk.seg_ptr, score, chunk.n_refs, metric_scores)
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
    job's reader thread; no parallel kernel runs there); then, on the kernels engine and without
    ``metrics``, each chunk of text is also counted on a thread of its own while the calling
    thread scores the one before (:func:`_counted`). None does everything on the calling thread.
    ``bleu=False``: no BLEU at all (nothing counted), only the columns of ``metrics``.
    """
    cfg = config or BleuConfig()
    scored = _bleu_columns(cfg, smoothings, bleu, metrics)
    chunks = _prepared_chunks(batches, cfg, scored, columns, references, stats, smoothings, source, schema, metrics,
                              engine)
    overlap = ahead is not None and engine == "kernels" and not metrics
    for chunk, counted in _counted(chunks if ahead is None else produced_ahead(chunks, ahead), overlap):
        yield _score_chunk(chunk, counted, scored, columns, stats, tally, metrics)


def _counted(chunks: Iterator[_Chunk], overlap: bool) -> Iterator[tuple[_Chunk, BleuStats]]:
    """Each chunk with its statistics, in order. With ``overlap``, chunk i+1 is counted on a
    thread of its own (the kernels' thread count carried over: numba keeps one per thread)
    while the caller scores chunk i (smoothings, tallies, the output batch: Python and numpy that
    otherwise left the kernels' threads idle): the 2,000,000-row job 1.629 against 1.693 s, 8
    alternated runs each. Parallel kernels stay on the calling thread (numba's workqueue layer
    takes parallel launches from one thread at a time): a chunk whose counting launches them
    (token lists) is counted there, after the one before it; without ``overlap`` (a job with
    metrics, whose kernels the calling thread launches in parallel; the numpy engine) every chunk is."""
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


def _prepared_chunks(batches: Iterable[pa.RecordBatch], cfg: BleuConfig, scored: list, columns: Columns,
                     references: Optional[ReferenceTable], stats: bool, smoothings: Sequence, source: str,
                     schema: Optional[pa.Schema], metrics: Sequence[Metric], engine: str) -> Iterator[_Chunk]:
    """The batches regrouped into tables of whole segments, each checked and prepared
    (:func:`_prepare_chunk`); the arguments are :func:`score_batches`'s."""
    out_schema = None
    pending: Optional[pa.Table] = None  # rows of the segment still open at the end of the last batch
    seen: set = set()
    row0 = 0
    for batch in batches:
        if out_schema is None:
            names = [columns.hypothesis] + list(columns.segment) + ([columns.score] if columns.score else [])
            names += [c for m in metrics for c in m.input_columns()]
            require_columns(batch.schema, names + ([columns.references] if references is None else []), source)
            in_schema = batch.schema
            out_schema = output_schema(schema or in_schema, cfg, stats, smoothings, metrics, bool(scored))
            out_schema = out_schema.with_metadata({**out_schema.metadata,
                                                   META_SEGMENT: json.dumps(list(columns.segment)).encode()})
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch], in_schema)
        if pending is not None:
            table = pa.concat_tables([pending, table])
        keys = [one_array(table[c]) for c in columns.segment]
        try:
            check_segment_keys(keys, columns.segment, row0)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
        starts = run_starts(keys)
        last = int(starts[-1])
        if last > 0:  # rows before the last run form whole segments
            done = starts[:-1]
            labels = key_labels(keys, done)
            check_contiguous(labels, seen, done + row0, source)
            yield _prepare_chunk(table.slice(0, last), done, labels, row0, scored, columns, references, out_schema,
                                 source, engine)
            row0 += last
        pending = table.slice(last)
    if pending is not None and pending.num_rows:
        keys = [one_array(pending[c]) for c in columns.segment]
        starts = np.zeros(1, np.int64)
        labels = key_labels(keys, starts)
        check_contiguous(labels, seen, starts + row0, source)
        yield _prepare_chunk(pending, starts, labels, row0, scored, columns, references, out_schema, source, engine)


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


