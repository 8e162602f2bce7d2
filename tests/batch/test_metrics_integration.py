"""The extra metrics through the faces BLEU has: the ``score`` CLI column (``--metric``), the
parquet metadata signatures, Spark. Their values are checked against the metrics' own functions,
which tests/metrics/ checks against the original tools' gold outputs."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.batch import Columns, score_table
from kbest_bleu.cli import main
from kbest_bleu.metrics import load_metric
from test_spark import spark  # noqa: F401  (the Spark session fixture of test_spark.py)

SAMPLE = "kbest_bleu/data/moses_100best_sample.parquet"
pytest.importorskip("gensim")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Three real segments of the bundled Moses sample (300 rows)."""
    from pathlib import Path
    t = pq.read_table(Path(__file__).resolve().parents[2] / SAMPLE).slice(0, 300)
    path = tmp_path_factory.mktemp("metrics") / "in.parquet"
    pq.write_table(t, path)
    return path, t


def _segments(t):
    seg = np.array(t["segment_id"].to_pylist())
    ptr = np.r_[0, np.flatnonzero(np.diff(seg)) + 1, len(seg)].astype(np.int64)
    refs = [t["references"][int(i)].as_py() for i in ptr[:-1]]
    return seg, ptr, refs


def test_cli_adds_every_metric_column_with_its_signature(small, extensions, tmp_path):
    from kbest_bleu.metrics.bleu2vec import bleu2vec_scores
    from kbest_bleu.metrics.meteor import meteor_segments
    from kbest_bleu.metrics.parmesan import load_table, parmesan_segments
    path, t = small
    models = extensions / "bleu2vec_toy_models"
    table = extensions / "parmesan_toy_table_en.tsv"
    out = tmp_path / "out.parquet"
    assert main(["score", str(path), "-o", str(out), "-q", "-t", "none", "--seg-col", "segment_id",
                 "--metric", "bleu,bleu2vec,meteor,parmesan", "--embeddings", str(models),
                 "--paraphrases", str(table)]) == 0
    got = pq.read_table(out)
    seg, ptr, refs = _segments(t)
    hyps = t["hypothesis"].to_pylist()
    assert np.allclose(got["bleu2vec"].to_numpy(), bleu2vec_scores(hyps, refs, seg, embeddings=models),
                       rtol=1e-12, atol=0)
    assert np.array_equal(got["meteor"].to_numpy(), meteor_segments(hyps, refs, ptr).score)
    parmesan = parmesan_segments(hyps, refs, ptr, load_table(table))
    assert np.array_equal(got["parmesan"].to_numpy(), parmesan.meteor.score)
    assert got["parmesan_reference"].to_pylist() == parmesan.references.to_pylist()
    meta = got.schema.metadata
    for name in ("bleu2vec", "meteor", "parmesan"):
        assert b"kbest_bleu.signature." + name.encode() in meta, name
    assert got.column_names[:t.num_columns] == t.column_names


def test_unknown_metric_and_missing_options_exit_2(small, capsys):
    path, _ = small
    assert main(["score", str(path), "-q", "--metric", "bleu,rouge"]) == 2
    assert "--metric" in capsys.readouterr().err
    assert main(["score", str(path), "-q", "--metric", "bleu,bleu2vec"]) == 2  # no --embeddings
    assert "embeddings" in capsys.readouterr().err


@pytest.mark.exhaustive  # Spark on local[2] takes ~30 s
def test_spark_scores_metrics_like_the_single_machine_job(spark, small):  # noqa: F811
    from kbest_bleu.batch.spark import score_dataframe
    path, t = small
    meteor = load_metric("meteor")
    columns = Columns(segment=("segment_id",))
    want = score_table(t, columns=columns, metrics=[meteor])
    df = score_dataframe(spark.read.parquet(str(path)), columns=columns, metrics=[meteor])
    got = pa.Table.from_pandas(df.toPandas(), preserve_index=False)
    assert np.array_equal(got["meteor"].to_numpy(), want["meteor"].to_numpy())

