"""Apache Spark adapters: score a Spark DataFrame with the same kernels, Arrow batches in and out.

Per-row scores: each row is numbered with its position in the input as the single-machine job
reads it (:func:`_numbered`: files in name order, rows in file order), the rows are
repartitioned by segment and sorted within partitions, so a segment's rows are contiguous in one
partition and in input order; ``mapInArrow`` then streams each partition's record batches through
:func:`kbest_bleu.batch.stream.score_batches`, which regroups segments cut by Spark's
``maxRecordsPerBatch`` exactly as on one machine. A segment whose rows are not consecutive in the
input is refused with the single-machine job's message (:func:`_check_runs`), not grouped.

Row order of the output: the input's (Spark lists a dataset's files by size, so its own order
is not the names'). The dataset written by :func:`score_parquet_spark` keeps that order in its
part files' name order (``part-00000`` first), zstd-compressed by default, with
``_kbest_bleu.json`` beside them: the signatures, options and segment key that the single-machine
job stores in its parquet metadata, the row order, and the job summary (docs/spark.md).
Segment-level outputs (oracle, 1-best, summed statistics) use ``groupBy(segment).applyInArrow``.
Requires the ``spark`` extra (``pip install '.[spark]'``).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Iterator, Optional, Sequence
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from ..arrays import one_array, to_numpy
from ..bleu import sentence_scores
from ..config import BleuConfig
from ..counting.threads import set_threads
from ..encode import check_contiguous, key_labels, run_starts
from ..errors import InputError, install_extra
from ..files.output import atomic_output, check_output, open_log
from ..files.references import Columns
from ..stats import ngram_stats, segment_argmax
from .stream import COMPRESSIONS, Summary, Tally, job_config, output_schema, score_batches, score_columns

__all__ = ["META_FILE", "score_dataframe", "score_parquet_spark", "segment_summary"]

META_FILE = "_kbest_bleu.json"  # beside the part files; Spark and Arrow skip names starting with "_"
ROW = "__kbest_row"  # the row's number in the input, from 0 (_numbered)
FILE, ID, PIECE, SHIFT = "__kbest_file", "__kbest_id", "__kbest_piece", "__kbest_shift"  # _numbered's own
TALLY = "__kbest_tally"  # the partition's pickled Tally on its last row, null elsewhere
ROW_ORDER = "input files in name order, rows in file order within a file; part files in name order"
INPUT = "Spark input"  # where _check_runs's error is, rows counted through the input (_input_error)
# Spark's names of the parquet codecs (lz4: Arrow's LZ4_RAW, which Spark calls lz4_raw)
_SPARK_CODEC = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4_raw", "gzip": "gzip", "brotli": "brotli",
                "none": "none"}


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql.pandas.types import from_arrow_schema
    except ImportError:
        raise InputError(f"the Spark engine needs pyspark >= 4: {install_extra('spark')}") from None
    return from_arrow_schema


def _scored(df, cfg: BleuConfig, columns: Columns, stats: bool, smoothings: Sequence, metrics: Sequence):
    """The scored rows, numbered with ROW (:func:`_numbered`), one partition per group of segments,
    plus the TALLY column (binary) holding each partition's :class:`Tally` on its last row."""
    from_arrow_schema = _require_pyspark()
    for name in [columns.hypothesis, columns.references, *columns.segment]:
        if name not in df.columns:
            raise InputError(f"Spark input: column {name!r} not found; columns are {', '.join(df.columns)}")
    numbered = _numbered(df)
    grouped = numbered.repartition(*columns.segment).sortWithinPartitions(*columns.segment, ROW)
    out_schema = output_schema(_arrow_schema(numbered.schema), cfg, stats, smoothings, metrics)
    out_schema = out_schema.append(pa.field(TALLY, pa.binary()))

    def score_partition(batches):
        _task_threads()
        tally = Tally(cfg)
        held = None  # the previous batch, sent once it is known not to be the last
        for out in score_batches(batches, cfg, columns=columns, stats=stats, smoothings=smoothings,
                                 metrics=metrics, tally=tally, source="spark partition"):
            _check_runs(out, columns.segment)  # whole segments, each in input order
            if held is not None:
                yield _with_tally(held, None)
            held = out
        if held is not None:
            yield _with_tally(held, pickle.dumps(tally))

    return grouped.mapInArrow(score_partition, from_arrow_schema(out_schema))


def _numbered(df):
    """``df`` with ROW: each row's number in the input, from 0, in the order pyarrow reads a
    dataset (``pyarrow.parquet.read_table``: files in name order, rows in file order), that is
    the single-machine job's order on the same rows in one file.

    Spark numbers the rows of each scan partition apart (``monotonically_increasing_id``:
    partition << 33 + row in it) and packs files into partitions by size, its own order; so one
    small job counts the rows of every (file, partition) piece (reading no column), the driver
    orders the pieces by file name (decoded: Spark gives URIs, ``x%20y.parquet`` for
    ``x y.parquet``), then partition (a file's splits are in partition order), and each piece's
    numbers are shifted to follow the pieces before it (a broadcast join). A DataFrame not read
    from files (one empty name) is numbered in partition order. ``df`` is computed twice: cache it
    when it is costly, or not the same each time."""
    from pyspark.sql import functions as F
    tagged = (df.withColumn(FILE, F.input_file_name()).withColumn(ID, F.monotonically_increasing_id())
              .withColumn(PIECE, F.shiftright(ID, 33)))
    pieces = tagged.groupBy(FILE, PIECE).agg(F.min(ID), F.count(F.lit(1))).collect()
    shifts, start = [], 0
    for file, piece, first, rows in sorted(pieces, key=lambda p: (unquote(p[0]), p[1])):
        shifts.append((file, piece, start - first))
        start += rows
    shift = df.sparkSession.createDataFrame(shifts, f"{FILE} string, {PIECE} long, {SHIFT} long")
    return (tagged.join(F.broadcast(shift), [FILE, PIECE]).withColumn(ROW, F.col(ID) + F.col(SHIFT))
            .drop(FILE, PIECE, ID, SHIFT))


def _check_runs(rows: "pa.RecordBatch | pa.Table", segment: Sequence[str]) -> None:
    """Raise the single-machine job's error (:func:`~kbest_bleu.encode.check_contiguous`) when a
    segment's rows are not consecutive in the input: grouping by segment would join its runs.
    ``rows``: whole segments, each sorted by ROW; a jump of ROW inside a segment is the gap."""
    keys = [one_array(rows[c]) for c in segment]
    order = to_numpy(rows[ROW])
    inside = np.ones(len(order), bool)  # rows that continue a segment (not its first)
    inside[run_starts(keys)] = False
    gap = np.flatnonzero(inside[1:] & (np.diff(order) != 1)) + 1
    if gap.size:
        label = key_labels(keys, gap[:1])[0]
        check_contiguous([label], {label}, order[gap[:1]], INPUT)


def _task_threads() -> None:
    """In a Spark task: the kernels' threads set to the CPUs Spark gave the task
    (``spark.task.cpus``, 1 by default). An executor runs a task on each of its cores at once;
    kernels starting a thread per core in each task would run cores x cores threads. Arrow's CPU
    pool follows, as with ``--threads``. The first task of a Python worker sizes its numba pool
    (numba not imported yet); later tasks of the worker set their count within it. Outside a
    task (no TaskContext), nothing changes."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is not None:
        pa.set_cpu_count(set_threads(max(1, int(ctx.cpus()))))  # Arrow's pool too, as --threads


def _with_tally(batch: pa.RecordBatch, tally: Optional[bytes]) -> pa.RecordBatch:
    values = [None] * batch.num_rows
    if tally is not None:
        values[-1] = tally
    return batch.append_column(TALLY, pa.array(values, pa.binary()))


def _job_config(df, cfg: BleuConfig, columns: Columns) -> BleuConfig:
    """``cfg``, or for token-id hypotheses (list<int>) ``cfg`` under tokenize='none'
    (:func:`kbest_bleu.token_ids.token_config`: ids are tokens already), as the single-machine
    job scores them; decided on the driver, from the schema."""
    if columns.hypothesis not in df.columns:
        return cfg
    return job_config(cfg, _arrow_schema(df.select(columns.hypothesis).schema), columns)


def score_dataframe(df, config: Optional[BleuConfig] = None, columns: Columns = Columns(), stats: bool = False,
                    smoothings: Sequence = (), metrics: Sequence = ()):
    """A Spark DataFrame with every input column plus ``bleu`` (plus ``bleu_s<n>`` per extra
    smoothing, and statistics with ``stats``). Same kernels and same output schema as
    :func:`kbest_bleu.batch.parquet.score_parquet`. Rows in input order: by input file name,
    then by position in the file (:func:`_numbered`, which runs a small Spark job now). A segment
    whose rows are not contiguous fails the job with the single-machine job's error."""
    scored = _scored(df, _job_config(df, config or BleuConfig(), columns), columns, stats, smoothings, metrics)
    return scored.orderBy(ROW).drop(ROW, TALLY)


def segment_summary(df, config: Optional[BleuConfig] = None, columns: Columns = Columns()):
    """One row per segment: its key column(s), ``n`` (hypotheses), ``oracle_bleu`` and
    ``oracle_index`` (position of the best sentence BLEU within the segment's rows in input
    order: :func:`_numbered`), ``one_best_index`` (highest ``columns.score``, else 0) and the
    summed statistics m1..mN, t1..tN, hyp_len, ref_len. Runs ``groupBy(segment).applyInArrow``;
    a segment whose rows are not contiguous in the input fails it with the single-machine job's
    error."""
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType
    _require_pyspark()
    cfg = config or BleuConfig()
    n = cfg.max_order
    key_fields = [df.schema[c] for c in columns.segment]
    stat_names = [f"m{i}" for i in range(1, n + 1)] + [f"t{i}" for i in range(1, n + 1)] + ["hyp_len", "ref_len"]
    schema = StructType(key_fields + [StructField("n", LongType()), StructField("oracle_bleu", DoubleType()),
                                      StructField("oracle_index", LongType()), StructField("one_best_index", LongType())]
                        + [StructField(s, LongType()) for s in stat_names])

    def summarize(table: pa.Table) -> pa.Table:
        _task_threads()
        table = table.sort_by(ROW)
        _check_runs(table, columns.segment)
        ptr = np.array([0, table.num_rows], np.int64)
        st = ngram_stats(table[columns.hypothesis], table[columns.references], np.zeros(table.num_rows, np.int64),
                         cfg)
        bleu = sentence_scores(st, cfg)
        best = int(segment_argmax(bleu, ptr)[0])
        one = 0 if columns.score is None else int(segment_argmax(to_numpy(table[columns.score]), ptr)[0])
        total = st.sum()
        values = ([table[c][0].as_py() for c in columns.segment]
                  + [table.num_rows, float(bleu[best]), best, one]
                  + [int(x) for x in total.matches[0, :n]] + [int(x) for x in total.totals[0, :n]]
                  + [int(total.hyp_len[0]), int(total.ref_len[0])])
        return pa.table({f.name: [v] for f, v in zip(schema.fields, values)})

    return _numbered(df).groupBy(*columns.segment).applyInArrow(summarize, schema)


def _arrow_schema(spark_schema) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(spark_schema)


def score_parquet_spark(in_path: str, out_path: str, config: Optional[BleuConfig] = None, *,
                        columns: Columns = Columns(), stats: bool = False, smoothings: Sequence = (),
                        metrics: Sequence = (), master: str = "local[*]", batch_rows: int = 10000,
                        compression: str = "zstd", spark=None, spark_log: Optional[str] = None) -> Summary:
    """Score a parquet file or dataset directory into a parquet dataset directory with Spark.

    The dataset is written to a temporary directory beside ``out_path`` and renamed on success, so
    a failed job leaves no partial output. Part files are written with ``compression`` (as
    :func:`~kbest_bleu.batch.parquet.score_parquet`) in input order (module text); ``META_FILE``
    beside them holds the signatures, options and segment key (the local job's parquet metadata,
    as strings), the row order and the summary. Returns the job's :class:`Summary` (the scored
    rows are tallied per partition while they are scored, and summed on the driver).

    A session this call starts (``spark`` None) writes Spark's own output (its log, warnings and
    Java stack traces) to the file ``spark_log`` (appended), else to an unnamed temporary file
    whose last 40 lines go to stderr only when the job fails for a reason other than bad input
    (bad input raises :class:`~kbest_bleu.errors.InputError`, one line, as the single-machine job).
    A session passed in keeps its own log: ``spark_log`` with ``spark`` is refused.
    """
    _require_pyspark()
    cfg = config or BleuConfig()
    src, dst = Path(in_path), Path(out_path)
    if not src.exists():
        raise InputError(f"{src}: no such file or directory; expected a parquet file or dataset directory")
    if compression not in COMPRESSIONS:
        raise InputError(f"compression: expected one of {', '.join(COMPRESSIONS)}, found {compression!r}")
    check_output(dst, [src], "-o", directory=True)
    score_columns(cfg, smoothings)  # bad options fail before Spark starts (or a log file is made)
    own = spark is None
    if not own and spark_log is not None:
        raise InputError("spark_log: a session passed in as spark= writes its log where it was set up to; "
                         "leave spark_log out, or let this call start the session")
    if own:
        log = open_log(spark_log, [src], "--spark-log")  # appended to, never one of the inputs
        try:
            spark = _start_session(master, batch_rows, log.fileno())
        except BaseException:
            log.close()
            raise
    t0 = time.perf_counter()
    try:
        with atomic_output(dst, [src], "-o", directory=True) as tmp:
            df = spark.read.parquet(str(src))
            cfg = _job_config(df, cfg, columns)
            # persisted: the write (and its sort's sampling) and the tallies read the rows scored once
            scored = _scored(df, cfg, columns, stats, smoothings, metrics).persist()
            try:
                (scored.orderBy(ROW).drop(ROW, TALLY).write
                 .option("compression", _SPARK_CODEC[compression]).parquet(str(tmp)))
                tally = Tally(cfg)
                for row in scored.where(scored[TALLY].isNotNull()).select(TALLY).collect():
                    tally.merge(pickle.loads(row[0]))
            except Exception as exc:  # a Java + Python traceback around the workers' InputError
                raise _input_error(exc, src, config, columns, stats, smoothings, metrics) from None
            finally:
                scored.unpersist()
            summary = tally.summary(time.perf_counter() - t0)
            _write_meta(Path(tmp) / META_FILE, df, cfg, columns, stats, smoothings, metrics, compression, summary)
        return summary
    except Exception as exc:
        if own and not spark_log and not isinstance(exc, InputError):
            _replay_tail(log.fileno())  # a failure of Spark's own: what its log said last
        raise
    finally:
        if own:
            spark.stop()
            log.close()


def _start_session(master: str, batch_rows: int, log: int):
    """A Spark session whose JVM (started here, unless this process runs one already) writes its
    log, warnings and Java stack traces to the file descriptor ``log`` rather than to this
    process's stderr, where ~100 lines of them buried the command's one-line error: the JVM
    inherits file descriptor 2, pointed at ``log`` while it starts, and keeps it while it runs."""
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName("kbest-bleu")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows))
               .config("spark.ui.showConsoleProgress", "false"))  # no one watches a progress bar in a log
    try:
        with _stderr_to(log):
            spark = builder.getOrCreate()
    except Exception as exc:  # a bad master URL, no Java: pyspark's own error types, one line here
        said = [m for line in _log_tail(log) for m in re.findall(r"Exception in thread \"\w+\" [\w.$]*?(\w+: .+)", line)]
        reason = said[-1] if said else f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"  # the JVM's, else pyspark's
        raise InputError(f"--master {master!r}: Spark could not start ({reason[:200]}); expected a master URL such as "
                         "local[*], spark://HOST:7077 or yarn, and Java installed") from None
    # two segment partitions per core, not Spark's 200: each partition costs a Python task and
    # its Arrow round trip (363,722 rows on local[2]: ~49 s with 200, ~10 s with 4; docs/spark.md)
    spark.conf.set("spark.sql.shuffle.partitions", str(2 * spark.sparkContext.defaultParallelism))
    return spark


@contextlib.contextmanager
def _stderr_to(fd: int) -> Iterator[None]:
    """File descriptor 2 on ``fd`` while the block runs, for the processes started in it to
    inherit; this process's stderr back on 2 afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _log_tail(fd: int, lines: int = 40) -> list:
    """The last ``lines`` of Spark's log, the file descriptor ``fd`` (read with pread: the JVM
    shares the file's offset and goes on writing); none when it cannot be read."""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - 256 * lines)
        return os.pread(fd, size - start, start).decode("utf-8", "replace").splitlines()[-lines:]
    except OSError:
        return []


def _replay_tail(fd: int) -> None:
    """The end of Spark's log on stderr, before the error that ends the job."""
    tail = _log_tail(fd)
    if tail:
        sys.stderr.write(f"kbest-bleu: the last {len(tail)} lines of Spark's log:\n" + "\n".join(tail) + "\n")



def _write_meta(path: Path, df, cfg: BleuConfig, columns: Columns, stats: bool, smoothings: Sequence,
                metrics: Sequence, compression: str, summary: Summary) -> None:
    """``META_FILE``: the key-value metadata the local job writes in its parquet file, plus the
    row order, the compression and the summary (JSON, UTF-8)."""
    schema = output_schema(_arrow_schema(df.schema), cfg, stats, smoothings, metrics)
    meta = {k.decode(): v.decode() for k, v in schema.metadata.items() if k.startswith(b"kbest_bleu.")}
    meta["kbest_bleu.segment"] = json.dumps(list(columns.segment))
    meta.update({"row_order": ROW_ORDER, "compression": compression, "summary": summary.to_dict()})
    path.write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")


def _input_error(exc: Exception, src: Path, config: Optional[BleuConfig], columns: Columns, stats: bool,
                 smoothings: Sequence, metrics: Sequence) -> Exception:
    """The single-machine job's message for a bad row found by a Spark worker, or ``exc`` itself
    when the failure was not bad input. Workers see partitions, not the input's row numbers, so
    a single input file is checked again locally (only on this failure path), which names the
    row in the input; for a dataset directory the worker's message is given as it is, its rows
    counted through the input when it names them so (:func:`_check_runs`)."""
    found = re.search(r"InputError: (.+)", str(exc))
    if found is None:
        return exc
    if src.is_file():
        from .parquet import score_parquet
        try:
            score_parquet(src, None, config, columns=columns, stats=stats, smoothings=smoothings, metrics=metrics)
        except InputError as local:
            return local
    said = found.group(1).strip()
    if said.startswith(f"{INPUT}: "):
        return InputError(f"{src}: {said[len(INPUT) + 2:]} (rows counted from 0 through the files in name order)")
    return InputError(f"{src}: {said} (row numbers count from the start of a Spark partition)")
