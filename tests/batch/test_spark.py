"""The Spark engine: a real local[2] session with Python workers, against the single-machine job."""

import contextlib
import json
import os
import re
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb
from kbest_bleu.files.temporaries import TEMP_MARK
from kbest_bleu.batch import Columns, score_table
from kbest_bleu.errors import InputError


@pytest.fixture(scope="module")
def spark():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        if os.environ.get("KBEST_BLEU_REQUIRE_SPARK"):
            pytest.fail("pyspark is required under CI (KBEST_BLEU_REQUIRE_SPARK=1) but is not installed")
        pytest.skip("pyspark not installed (pip install '.[spark]')")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


@pytest.mark.exhaustive  # ~55 s on local[2]; the dataset job's test below runs by default
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


@pytest.mark.exhaustive
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


@pytest.mark.exhaustive  # a Spark session of its own (~15 s): CI runs it
def test_score_dataframe_counts_on_the_tasks_cpus(spark, pooled):
    """Through score_dataframe's own partition function: a metric that reports the kernels'
    thread count where it runs, beside the counting, sees spark.task.cpus (1), not one thread per
    core (2 here: local[2] runs two tasks at once, which would run 2 x 2 threads on 2 cores).
    Called outside a task, the setting changes nothing."""
    from kbest_bleu.batch.spark import _task_threads, score_dataframe
    from kbest_bleu.counting.threads import thread_count
    from kbest_bleu.metrics.base import SegmentMetric

    class ThreadProbe(SegmentMetric):  # a Metric whose column is the thread count where it counts
        name = "threads_seen"

        def input_columns(self):
            return []

        def output_fields(self, stats):
            return [pa.field("threads_seen", pa.int64())]

        def signature(self):
            return "threads-probe"

        def statistics(self, hypotheses, references, seg_ptr, table):
            from kbest_bleu.counting.threads import thread_count
            return [thread_count()] * len(hypotheses)

        def compute(self, statistics, stats):
            return [pa.array(statistics, pa.int64())]

    path, t = pooled
    out = score_dataframe(spark.read.parquet(str(path)), columns=COLS, metrics=[ThreadProbe()]).toArrow()
    cpus = int(spark.conf.get("spark.task.cpus", "1"))
    assert cpus < 2 and out.num_rows == t.num_rows and set(out["threads_seen"].to_pylist()) == {cpus}
    before = thread_count()
    _task_threads()  # on the driver: no task
    assert thread_count() == before


def test_cli_engine_spark_writes_a_dataset_atomically(spark, pooled, tmp_path):
    from kbest_bleu.batch.parquet import score_parquet
    from kbest_bleu.batch.spark import META_FILE, score_parquet_spark
    from kbest_bleu.cli import main
    path, t = pooled
    t = t.slice(0, 20000)  # three language pairs' first segments: every check, a fifth of the time
    path = tmp_path / "head.parquet"
    pq.write_table(t, path)
    out = tmp_path / "out"
    cfg = kb.BleuConfig(tokenize="13a")
    summary = score_parquet_spark(str(path), str(out), cfg, columns=COLS, spark=spark)
    local_out = tmp_path / "local.parquet"
    local = score_parquet(path, local_out, cfg, columns=COLS)
    got = pq.read_table(out)  # part files in name order = row order
    want = pq.read_table(local_out)
    assert got["bleu"].to_pylist() == want["bleu"].to_pylist()
    assert got.column_names == want.column_names
    # the same summary as the local job: exact sums, so exact scores
    assert (summary.rows, summary.segments) == (local.rows, local.segments) and summary.rows == t.num_rows
    assert summary.one_best == local.one_best and summary.oracle == local.oracle
    assert summary.mean_bleu == pytest.approx(local.mean_bleu, rel=1e-12)  # float sums in another order
    assert summary.signature == local.signature and "|nrefs:" in summary.signature
    # the local job's key-value metadata, as strings, beside the part files; zstd by default
    meta = json.loads((out / META_FILE).read_text())
    local_meta = pq.read_schema(local_out).metadata
    for key in (b"kbest_bleu.signature", b"kbest_bleu.options", b"kbest_bleu.segment"):
        assert meta[key.decode()] == local_meta[key].decode(), key
    assert meta["summary"]["oracle"]["score"] == local.oracle.score and "name order" in meta["row_order"]
    parts = sorted(out.glob("part-*.parquet"))
    assert parts and {_codecs(p) for p in parts} == {"ZSTD"}
    assert [p for p in os.listdir(tmp_path) if TEMP_MARK in p] == []
    # an existing output directory is refused before any work (exit 2, nothing written)
    assert main(["score", str(path), "-o", str(out), "--engine", "spark", "--seg-col", "lp,segment_id"]) == 2


def _codecs(part) -> str:
    md = pq.ParquetFile(part).metadata
    return ",".join(sorted({md.row_group(g).column(c).compression for g in range(md.num_row_groups)
                            for c in range(md.num_columns)}))


def test_spark_row_order_follows_file_names_and_compression_option(spark, tmp_path):
    """Spark packs a dataset's files by size (the large b.parquet read first); the output follows
    the names: the small a.parquet's rows first."""
    from kbest_bleu.batch.spark import score_parquet_spark
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(30)]
    def part(first, n_seg):
        seg = np.repeat(np.arange(first, first + n_seg), 7)
        hyps = [" ".join(rng.choice(words, 6)) for _ in seg]
        return pa.table({"segment_id": seg, "hypothesis": hyps, "references": [[f"w{s % 30} w1 w2 w3"] for s in seg]})
    data = tmp_path / "in"
    data.mkdir()
    small, large = part(1000, 3), part(0, 400)  # the small file's name sorts first, its ids last
    pq.write_table(small, data / "a.parquet")
    pq.write_table(large, data / "b.parquet")
    out = tmp_path / "out"
    summary = score_parquet_spark(str(data), str(out), kb.BleuConfig(), compression="snappy", spark=spark)
    got = pq.read_table(out)
    both = pa.concat_tables([small, large])
    assert got["segment_id"].to_pylist() == both["segment_id"].to_pylist()
    assert got["hypothesis"].to_pylist() == both["hypothesis"].to_pylist()
    assert got["bleu"].to_pylist() == score_table(both)["bleu"].to_pylist()
    assert summary.rows == both.num_rows and summary.segments == 403
    assert {_codecs(p) for p in out.glob("part-*.parquet")} == {"SNAPPY"}


def test_spark_scores_token_id_columns_as_token_bleu(spark, tmp_path):
    """Token ids (issue 35): list<int64> hypotheses and list<list<int64>> references through the
    Spark engine (the default config, as --engine spark passes it) score as token_bleu in this
    process and as the text path on the ids written as tokens; the signature says tok:none."""
    from kbest_bleu.batch.spark import META_FILE, score_parquet_spark
    from kbest_bleu.token_ids import token_bleu
    rng = np.random.default_rng(35)
    big = np.array([-(1 << 63), (1 << 63) - 1, -5, 1 << 40])  # any int64 is an id
    hyps, refs, seg = [], [], []
    for s in range(60):
        entry = [rng.integers(0, 12, rng.integers(0, 15)).tolist() for _ in range(rng.integers(1, 4))]
        entry[0] += big[rng.integers(0, 4, 2)].tolist()
        for _ in range(rng.integers(1, 6)):  # K varies per segment
            h = rng.choice(entry[0], rng.integers(0, 20)).tolist() if entry[0] else []
            hyps.append(h + rng.integers(0, 12, rng.integers(0, 3)).tolist())
            refs.append(entry)
            seg.append(s)
    table = pa.table({"segment_id": seg, "hypothesis": pa.array(hyps, pa.list_(pa.int64())),
                      "references": pa.array(refs, pa.list_(pa.list_(pa.int64())))})
    pq.write_table(table, tmp_path / "ids.parquet")
    out = tmp_path / "out"
    summary = score_parquet_spark(str(tmp_path / "ids.parquet"), str(out), kb.BleuConfig(), stats=True, spark=spark)
    got = pq.read_table(out)
    assert got["segment_id"].to_pylist() == seg and got["hypothesis"].to_pylist() == hyps
    want = token_bleu(hyps, refs)
    assert np.array_equal(got["bleu"].to_numpy(), want) and 0 < want.mean() < 1
    text = kb.score_kbest([" ".join(f"t{t}" for t in h) for h in hyps],
                          [[" ".join(f"t{t}" for t in r) for r in e] for e in refs], seg, tokenize="none")
    assert np.array_equal(got["bleu"].to_numpy(), text)
    assert summary.rows == len(hyps) and summary.segments == 60
    assert "tok:none" in json.loads((out / META_FILE).read_text())["kbest_bleu.signature"]


def test_spark_log_is_never_an_input(tmp_path):
    """The Python API's spark_log (appended to) is refused when it is the input, before Spark
    starts, and '-' is refused (it would create a file named '-')."""
    pytest.importorskip("pyspark")
    from kbest_bleu.batch.spark import score_parquet_spark
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["a b"], "references": [["a b"]]}), src)
    before = src.read_bytes()
    for log in (src, "-"):
        with pytest.raises(InputError, match="--spark-log"):
            score_parquet_spark(str(src), str(tmp_path / "out"), spark_log=str(log))
    with pytest.raises(InputError, match="spark_log: a session passed in"):  # refused before the session is used
        score_parquet_spark(str(src), str(tmp_path / "out"), spark=object(), spark_log=str(tmp_path / "log"))
    assert not (tmp_path / "log").exists()
    assert src.read_bytes() == before and not (tmp_path / "out").exists() and not (tmp_path / "-").exists()


def _kbest_rows(n_segments: int, seed: int) -> pa.Table:
    """A K-best table of ``n_segments`` segments of 3-12 random hypotheses, with a model score."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(12)]
    seg = np.repeat(np.arange(n_segments), rng.integers(3, 13, n_segments))
    return pa.table({"segment_id": seg, "hypothesis": [" ".join(rng.choice(words, 6)) for _ in seg],
                     "references": [[f"w{s % 12} w1 w2 w3 w4 w5"] for s in seg],
                     "model_score": rng.normal(size=len(seg))})


@pytest.fixture
def named_dataset(tmp_path):
    """Three files whose names Spark gives percent-encoded ('x y' as 'x%20y', which sorts after
    'x!'): in name order x y, x!, x+, and segments 10 and 33 cut between two files. x! is the
    largest (Spark reads it first) and is cut into row groups of 7 rows, to be split across scan
    partitions. Segment 10's first row (in x y) is a perfect hypothesis, its second the model's
    best; its rows in x! are not. Returns the directory and the same rows as one local file."""
    t = _kbest_rows(40, 7)
    seg = t["segment_id"].to_numpy()
    ten = int(np.flatnonzero(seg == 10)[0])
    hyps = t["hypothesis"].to_pylist()
    hyps[ten], scores = "w10 w1 w2 w3 w4 w5", t["model_score"].to_numpy().copy()
    scores[ten + 1] = 100.0
    t = t.set_column(1, "hypothesis", pa.array(hyps)).set_column(3, "model_score", pa.array(scores))
    cut1, cut2 = ten + 2, int(np.flatnonzero(seg == 33)[0]) + 1
    data = tmp_path / "in"
    data.mkdir()
    pq.write_table(t.slice(0, cut1), data / "x y.parquet")
    pq.write_table(t.slice(cut1, cut2 - cut1), data / "x!.parquet", row_group_size=7)
    pq.write_table(t.slice(cut2), data / "x+.parquet")
    whole = pq.read_table(data)  # pyarrow reads a dataset's files in name order
    assert whole.equals(t) and (data / "x!.parquet").stat().st_size > (data / "x y.parquet").stat().st_size
    pq.write_table(whole, tmp_path / "whole.parquet")
    return data, tmp_path / "whole.parquet"


@contextlib.contextmanager
def _small_splits(spark):
    """Scan partitions of ~2 KB: a file split over several partitions, several files in one."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    before = [spark.conf.get(k) for k in keys]
    for k in keys:
        spark.conf.set(k, "2048")
    try:
        yield
    finally:
        for k, v in zip(keys, before):
            spark.conf.set(k, v)


def test_spark_row_order_and_first_rows_follow_decoded_file_names(spark, named_dataset, tmp_path):
    """Spark names files by URI ('x%20y.parquet'): the output order and each segment's first row
    (the 1-best without a score column) follow the decoded names, as the local job on the same
    rows read in name order."""
    from kbest_bleu.batch.parquet import score_parquet
    from kbest_bleu.batch.spark import score_parquet_spark
    data, whole = named_dataset
    with _small_splits(spark):
        assert spark.read.parquet(str(data)).rdd.getNumPartitions() > 3
        summary = score_parquet_spark(str(data), str(tmp_path / "out"), spark=spark)
    local = score_parquet(whole, tmp_path / "local.parquet")
    got, want = pq.read_table(tmp_path / "out"), pq.read_table(tmp_path / "local.parquet")
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    assert summary.one_best == local.one_best and summary.oracle == local.oracle and summary.rows == local.rows


def test_segment_summary_indices_follow_input_order_across_files(spark, named_dataset, tmp_path):
    """oracle_index and one_best_index count the segment's rows in input order, also for a
    segment cut between two files that Spark reads in the other order (one scan partition: x! the
    largest, read first; then small splits); checked against the local job's scored rows (files
    read in name order)."""
    from kbest_bleu.batch.parquet import score_parquet
    from kbest_bleu.batch.spark import segment_summary
    data, whole = named_dataset
    score_parquet(whole, tmp_path / "local.parquet")
    local = pq.read_table(tmp_path / "local.parquet")
    seg = local["segment_id"].to_numpy()
    ptr = np.r_[0, np.flatnonzero(seg[1:] != seg[:-1]) + 1, len(seg)]
    bleu, score = local["bleu"].to_numpy(), local["model_score"].to_numpy()
    for layout in (contextlib.nullcontext(), _small_splits(spark)):
        with layout:
            summary = segment_summary(spark.read.parquet(str(data)), columns=Columns(score="model_score")).toArrow()
        summary = summary.sort_by("segment_id")
        assert summary["n"].to_pylist() == np.diff(ptr).tolist()
        assert summary["oracle_index"].to_pylist() == [int(np.argmax(bleu[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]
        assert summary["one_best_index"].to_pylist() == [int(np.argmax(score[a:b]))
                                                         for a, b in zip(ptr[:-1], ptr[1:])]
        assert summary["oracle_index"][10].as_py() == 0 and summary["one_best_index"][10].as_py() == 1


def test_spark_refuses_a_segment_in_two_runs_as_the_local_job(spark, tmp_path):
    """A segment whose rows are not contiguous (segment 3 starts again after segments 4-6, in the
    second file) is refused by the local job; Spark, grouping by segment, joined the two runs
    silently. Now refused with the local job's message on the same rows, its row number counted
    through the dataset's files in name order; segment_summary fails the same way."""
    from kbest_bleu.batch.parquet import score_parquet
    from kbest_bleu.batch.spark import score_parquet_spark, segment_summary
    t = _kbest_rows(12, 3)
    seg = t["segment_id"].to_numpy()
    three, four, seven = (int(np.flatnonzero(seg == s)[0]) for s in (3, 4, 7))
    t = pa.concat_tables([t.slice(0, three + 1), t.slice(four, seven - four), t.slice(three + 1, four - three - 1),
                          t.slice(seven)])
    data = tmp_path / "in"
    data.mkdir()
    pq.write_table(t.slice(0, four), data / "a.parquet")
    pq.write_table(t.slice(four), data / "b.parquet")
    pq.write_table(pq.read_table(data), tmp_path / "whole.parquet")
    with pytest.raises(InputError, match=r"segment 3 are not contiguous \(they start again at row \d+ ") as local:
        score_parquet(tmp_path / "whole.parquet", None)
    with pytest.raises(InputError) as got:
        score_parquet_spark(str(data), str(tmp_path / "out"), spark=spark)
    assert str(got.value) == (str(local.value).replace(str(tmp_path / "whole.parquet"), str(data))
                              + " (rows counted from 0 through the files in name order)")
    assert not (tmp_path / "out").exists()
    said = str(local.value).split(": ", 1)[1]
    with pytest.raises(Exception, match=re.escape(f"InputError: Spark input: {said[:120]}")):
        segment_summary(spark.read.parquet(str(data))).collect()
