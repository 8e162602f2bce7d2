"""Apache Spark adapters: score a Spark DataFrame with the same kernels, Arrow batches in and out.

Per-row scores: the rows get their input position (``monotonically_increasing_id``), are
repartitioned by segment and sorted within partitions, so a segment's rows are contiguous in one
partition; ``mapInArrow`` then streams each partition's record batches through
:func:`kbest_bleu.batch.stream.score_batches`, which regroups segments cut by Spark's
``maxRecordsPerBatch`` exactly as on one machine. Segment-level outputs (oracle, 1-best, summed
statistics) use ``groupBy(segment).applyInArrow``. Requires ``pip install 'kbest-bleu[spark]'``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from ..bleu import sentence_scores
from ..config import BleuConfig
from ..errors import InputError
from ..stats import ngram_stats, segment_argmax
from .output import atomic_output, check_output
from .references import Columns
from .stream import output_schema, score_batches, score_columns

__all__ = ["score_dataframe", "score_parquet_spark", "segment_summary"]

ROW = "__kbest_row"


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql.pandas.types import from_arrow_schema
    except ImportError:
        raise InputError("the Spark engine needs pyspark >= 4: pip install 'kbest-bleu[spark]'") from None
    return from_arrow_schema


def score_dataframe(df, config: Optional[BleuConfig] = None, columns: Columns = Columns(), stats: bool = False,
                    smoothings: Sequence = (), metrics: Sequence = ()):
    """A Spark DataFrame with every input column plus ``bleu`` (plus ``bleu_s<n>`` per extra
    smoothing, and statistics with ``stats``), rows in input order. Same kernels and same output
    schema as :func:`kbest_bleu.batch.parquet.score_parquet`."""
    from pyspark.sql import functions as F
    from_arrow_schema = _require_pyspark()
    cfg = config or BleuConfig()
    for name in [columns.hypothesis, columns.references, *columns.segment]:
        if name not in df.columns:
            raise InputError(f"Spark input: column {name!r} not found; columns are {', '.join(df.columns)}")
    tagged = df.withColumn(ROW, F.monotonically_increasing_id())
    grouped = tagged.repartition(*columns.segment).sortWithinPartitions(*columns.segment, ROW)
    arrow_in = _arrow_schema(tagged.schema)
    out_schema = output_schema(arrow_in, cfg, stats, smoothings, metrics)

    def score_partition(batches):
        yield from score_batches(batches, cfg, columns=columns, stats=stats, smoothings=smoothings, metrics=metrics,
                                 source="spark partition")

    scored = grouped.mapInArrow(score_partition, from_arrow_schema(out_schema))
    return scored.orderBy(ROW).drop(ROW)


def segment_summary(df, config: Optional[BleuConfig] = None, columns: Columns = Columns()):
    """One row per segment: its key column(s), ``n`` (hypotheses), ``oracle_bleu`` and
    ``oracle_index`` (position of the best sentence BLEU within the segment's rows in input
    order), ``one_best_index`` (highest ``columns.score``, else 0) and the summed statistics
    m1..mN, t1..tN, hyp_len, ref_len. Runs ``groupBy(segment).applyInArrow``."""
    from pyspark.sql import functions as F
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
        table = table.sort_by(ROW)
        ptr = np.array([0, table.num_rows], np.int64)
        st = ngram_stats(table[columns.hypothesis], table[columns.references], np.zeros(table.num_rows, np.int64),
                         cfg)
        bleu = sentence_scores(st, cfg)
        best = int(segment_argmax(bleu, ptr)[0])
        one = 0 if columns.score is None else int(segment_argmax(table[columns.score].to_numpy(), ptr)[0])
        total = st.sum()
        values = ([table[c][0].as_py() for c in columns.segment]
                  + [table.num_rows, float(bleu[best]), best, one]
                  + [int(x) for x in total.matches[0, :n]] + [int(x) for x in total.totals[0, :n]]
                  + [int(total.hyp_len[0]), int(total.ref_len[0])])
        return pa.table({f.name: [v] for f, v in zip(schema.fields, values)})

    tagged = df.withColumn(ROW, F.monotonically_increasing_id())
    return tagged.groupBy(*columns.segment).applyInArrow(summarize, schema)


def _arrow_schema(spark_schema) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(spark_schema)


def score_parquet_spark(in_path: str, out_path: str, config: Optional[BleuConfig] = None, *,
                        columns: Columns = Columns(), stats: bool = False, smoothings: Sequence = (),
                        metrics: Sequence = (),
                        master: str = "local[*]", batch_rows: int = 10000, spark=None) -> int:
    """Score a parquet file or dataset directory into a parquet dataset directory with Spark.

    The dataset is written to a temporary directory beside ``out_path`` and renamed on success, so
    a failed job leaves no partial output. Returns the number of rows written.
    """
    _require_pyspark()
    src, dst = Path(in_path), Path(out_path)
    if not src.exists():
        raise InputError(f"{src}: no such file or directory; expected a parquet file or dataset directory")
    check_output(dst, [src], "-o", directory=True)
    score_columns(config or BleuConfig(), smoothings)  # bad options fail before Spark starts
    own = spark is None
    if own:
        from pyspark.sql import SparkSession
        os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
        spark = (SparkSession.builder.master(master).appName("kbest-bleu")
                 .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows)).getOrCreate())
    try:
        with atomic_output(dst, [src], "-o", directory=True) as tmp:
            out = score_dataframe(spark.read.parquet(str(src)), config, columns, stats, smoothings, metrics)
            try:
                out.write.parquet(str(tmp))
            except Exception as exc:  # a Java + Python traceback around the workers' InputError
                raise _input_error(exc, src, config, columns, stats, smoothings, metrics) from None
            return spark.read.parquet(str(tmp)).count()
    finally:
        if own:
            spark.stop()


def _input_error(exc: Exception, src: Path, config: Optional[BleuConfig], columns: Columns, stats: bool,
                 smoothings: Sequence, metrics: Sequence) -> Exception:
    """The single-machine job's message for a bad row found by a Spark worker, or ``exc`` itself
    when the failure was not bad input. Workers see partitions, not the input's row numbers, so
    a single input file is checked again locally (only on this failure path), which names the
    row in the input; for a dataset directory the worker's message is given as it is."""
    found = re.search(r"InputError: (.+)", str(exc))
    if found is None:
        return exc
    if src.is_file():
        from .parquet import score_parquet
        try:
            score_parquet(src, None, config, columns=columns, stats=stats, smoothings=smoothings, metrics=metrics)
        except InputError as local:
            return local
    return InputError(f"{src}: {found.group(1).strip()} (row numbers count from the start of a Spark partition)")
