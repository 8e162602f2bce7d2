"""The Spark engine: a real local[2] session with Python workers, against the single-machine job."""

import os
import sys

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb
from kbest_bleu.batch.output import TEMP_MARK
from kbest_bleu.batch import Columns, score_table


@pytest.fixture(scope="module")
def spark():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        if os.environ.get("KBEST_BLEU_REQUIRE_SPARK"):
            pytest.fail("pyspark is required under CI (KBEST_BLEU_REQUIRE_SPARK=1) but is not installed")
        pytest.skip("pyspark not installed (pip install 'kbest-bleu[spark]')")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")  # workers import this tree
    try:
        session = (SparkSession.builder.master("local[2]").appName("kbest-bleu-tests")
                   .config("spark.sql.execution.arrow.maxRecordsPerBatch", "997")  # not a multiple of any K
                   .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
    except Exception as exc:  # no Java, no ports, ...
        if os.environ.get("KBEST_BLEU_REQUIRE_SPARK"):
            pytest.fail(f"Spark could not start under CI: {exc}")
        pytest.skip(f"Spark could not start: {exc}")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def pooled(shared_data, tmp_path_factory):
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet",
                      columns=["lp", "segment_id", "system", "hypothesis", "references"],
                      filters=[("lp", "in", ["cs-en", "ja-en"])])
    t = t.take(pc.sort_indices(t, [("lp", "ascending"), ("segment_id", "ascending"), ("system", "ascending")]))
    path = tmp_path_factory.mktemp("spark") / "in.parquet"
    pq.write_table(t, path, row_group_size=4000)
    return path, t


COLS = Columns(segment=("lp", "segment_id"))


def test_spark_scores_equal_the_single_machine_job_row_for_row(spark, pooled):
    from kbest_bleu.batch.spark import score_dataframe
    path, t = pooled
    sizes = np.unique([f"{a}{b}" for a, b in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist())],
                      return_counts=True)[1]
    assert sizes.min() != sizes.max() and all(997 % k for k in set(sizes.tolist()))  # variable K, cuts inside
    cfg = kb.BleuConfig(tokenize="13a", smoothing=7)
    got = score_dataframe(spark.read.parquet(str(path)), cfg, COLS, stats=True, smoothings="0,5").toArrow()
    want = score_table(t, cfg, columns=COLS, stats=True, smoothings="0,5")
    assert "bleu_s0" in want.column_names and "bleu_s5" in want.column_names
    assert got.num_rows == want.num_rows == t.num_rows
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name


def test_segment_summary_matches_kbest_bleu(spark, pooled):
    from kbest_bleu.batch.spark import segment_summary
    path, t = pooled
    summary = segment_summary(spark.read.parquet(str(path)), columns=COLS).toArrow()
    summary = summary.take(pc.sort_indices(summary, [("lp", "ascending"), ("segment_id", "ascending")]))
    seg = [f"{a}|{b}" for a, b in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist())]
    stats = kb.ngram_stats(t["hypothesis"], t["references"], seg)
    ptr = np.r_[0, np.flatnonzero(np.array(seg[1:]) != np.array(seg[:-1])) + 1, len(seg)]
    bleu = kb.sentence_scores(stats)
    per_seg = stats.sum_by(ptr)
    assert summary.num_rows == len(ptr) - 1
    assert summary["m1"].to_pylist() == per_seg.matches[:, 0].tolist()
    assert summary["ref_len"].to_pylist() == per_seg.ref_len.tolist()
    assert summary["oracle_bleu"].to_pylist() == [bleu[a:b].max() for a, b in zip(ptr[:-1], ptr[1:])]
    assert summary["oracle_index"].to_pylist() == [int(np.argmax(bleu[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]


def test_cli_engine_spark_writes_a_dataset_atomically(spark, pooled, tmp_path):
    from kbest_bleu.batch.spark import score_parquet_spark
    from kbest_bleu.cli import main
    path, t = pooled
    out = tmp_path / "out"
    assert score_parquet_spark(str(path), str(out), columns=COLS, spark=spark) == t.num_rows
    got = pq.read_table(out)  # part files in name order = row order
    want = score_table(t, columns=COLS)
    assert got["bleu"].to_pylist() == want["bleu"].to_pylist()
    assert [p for p in os.listdir(tmp_path) if TEMP_MARK in p] == []
    # an existing output directory is refused before any work (exit 2, nothing written)
    assert main(["score", str(path), "-o", str(out), "--engine", "spark", "--seg-col", "lp,segment_id"]) == 2
