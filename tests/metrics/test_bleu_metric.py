"""BLEU as a Metric (kbest_bleu.metrics.bleu) and the one loop of the batch job: every metric
counted and computed through the same interface, the summary's corpus scores from summed
statistics checked against sacrebleu on the bundled real sample."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb
from kbest_bleu.batch.stream import Tally, job_metrics, score_table
from kbest_bleu.errors import InputError
from kbest_bleu.files.references import Columns
from kbest_bleu.metrics.base import REGISTRY, Metric, load_metric

sacrebleu = pytest.importorskip("sacrebleu")

SAMPLE = pq.read_table(kb.__path__[0] + "/data/moses_100best_sample.parquet",
                       columns=["iteration", "segment_id", "hypothesis", "model_score", "references"]).slice(0, 1200)
COLUMNS = Columns(segment=("iteration", "segment_id"), score="model_score")


def _segments(t: pa.Table) -> np.ndarray:
    keys = np.asarray(t["iteration"]) * 10_000 + np.asarray(t["segment_id"])
    return np.append(np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]), len(keys))


def test_every_registered_metric_is_a_metric():
    assert "bleu" in REGISTRY
    for name in ("bleu", "chrf", "meteor"):
        assert isinstance(load_metric(name), Metric), name
    with pytest.raises(InputError, match="extra smoothing 'nine'"):
        load_metric("bleu", smoothings="nine")
    with pytest.raises(InputError, match="engine"):
        load_metric("bleu", engine="gpu")


def test_bleu_metric_columns_are_sacrebleu_sentence_scores():
    t = SAMPLE.slice(0, 300)
    ptr = _segments(t)
    refs = t["references"].combine_chunks().take(pa.array(ptr[:-1]))
    metric = load_metric("bleu", smoothings="floor,add-k", tokenize="13a")
    bleu, floor, add_k = (c.to_numpy() for c in metric.score_segments(t["hypothesis"].combine_chunks(), refs, ptr))
    hyps, per_row = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    for method, got in (("exp", bleu), ("floor", floor), ("add-k", add_k)):
        want = [sacrebleu.BLEU(smooth_method=method, effective_order=True).sentence_score(h, r).score / 100
                for h, r in zip(hyps, per_row)]
        assert np.abs(got - want).max() < 1e-12, method


def test_summary_corpus_scores_are_sacrebleus_on_the_chosen_rows():
    chrf_pp = load_metric("chrf", word_order=2)
    tally = Tally(kb.BleuConfig())
    out = score_table(SAMPLE, columns=COLUMNS, metrics=[chrf_pp], tally=tally)
    s = tally.summary(1.0)
    ptr = _segments(SAMPLE)
    hyps, refs = SAMPLE["hypothesis"].to_pylist(), SAMPLE["references"].to_pylist()
    model = SAMPLE["model_score"].to_numpy()
    one_best = [a + int(np.argmax(model[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]
    sentence = out["chrf"].to_numpy()
    oracle = [a + int(np.argmax(sentence[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]
    bleu_oracle = [a + int(np.argmax(out["bleu"].to_numpy()[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]

    def corpus(metric, rows):
        streams = [[refs[i][k] for i in rows] for k in range(len(refs[0]))]
        return metric.corpus_score([hyps[i] for i in rows], streams).score / 100

    chrf = sacrebleu.CHRF(word_order=2)
    assert s.metrics["chrf"].corpus_one_best == pytest.approx(corpus(chrf, one_best), abs=1e-12)
    assert s.metrics["chrf"].corpus_oracle == pytest.approx(corpus(chrf, oracle), abs=1e-12)
    assert s.metrics["chrf"].mean == pytest.approx(sentence.mean(), abs=1e-12)
    assert s.one_best.score == pytest.approx(corpus(sacrebleu.BLEU(), one_best), abs=1e-12)
    assert s.oracle.score == pytest.approx(corpus(sacrebleu.BLEU(), bleu_oracle), abs=1e-12)
    assert "1-best corpus chrf" in str(s)


def test_tallies_of_parts_merge_to_the_whole():
    """Spark tallies each partition apart and merges them on the driver."""
    metrics = [load_metric("chrf")]
    whole = Tally(kb.BleuConfig())
    score_table(SAMPLE, columns=COLUMNS, metrics=metrics, tally=whole)
    cut = int(_segments(SAMPLE)[5])
    merged = Tally(kb.BleuConfig())
    for part in (SAMPLE.slice(0, cut), SAMPLE.slice(cut)):
        tally = Tally(kb.BleuConfig())
        score_table(part, columns=COLUMNS, metrics=metrics, tally=tally)
        merged.merge(tally)
    a, b = whole.summary(1.0), merged.summary(1.0)
    assert (a.one_best, a.oracle, a.rows, a.segments) == (b.one_best, b.oracle, b.rows, b.segments)
    assert a.metrics["chrf"].corpus_one_best == b.metrics["chrf"].corpus_one_best
    assert a.metrics["chrf"].mean == pytest.approx(b.metrics["chrf"].mean, abs=1e-15)


def test_job_metrics_order_and_refusals():
    chrf = load_metric("chrf")
    names = [m.name for m in job_metrics(kb.BleuConfig(), "3", [chrf])]
    assert names == ["bleu", "chrf"]
    assert job_metrics(kb.BleuConfig(), (), [chrf], bleu=False) == [chrf]
    with pytest.raises(InputError, match="at least one metric"):
        job_metrics(kb.BleuConfig(), (), [], bleu=False)
    with pytest.raises(InputError, match="extra smoothings"):
        job_metrics(kb.BleuConfig(), "3", [chrf], bleu=False)


def test_which_countings_run_ahead():
    """Text and token ids count on plain threads (a batch job counts the next chunk ahead, as
    before BLEU became a Metric); pre-tokenized lists launch numba's parallel encoder."""
    seg_ptr = np.array([0, 2])
    text = load_metric("bleu").counter(pa.array(["a b", "a"]), pa.array([["a b"]]), seg_ptr, None)
    lists = load_metric("bleu").counter(pa.array([["a", "b"], ["a"]]), pa.array([[["a", "b"]]]), seg_ptr, None)
    ids = load_metric("bleu", tokenize="none").counter(pa.array([[1, 2], [1]]), pa.array([[[1, 2]], [[1, 2]]]),
                                                       seg_ptr, None)
    assert (text.parallel, lists.parallel, ids.parallel) == (False, True, False)
    assert np.array_equal(load_metric("bleu").compute(text.run(), False)[0].to_numpy(),
                          load_metric("bleu", tokenize="none").compute(ids.run(), False)[0].to_numpy())


def test_a_metric_must_name_its_main_column_as_itself():
    from kbest_bleu.metrics.base import SegmentMetric

    class Renamed(SegmentMetric):
        name = "m"

        def input_columns(self):
            return []

        def output_fields(self, stats):
            return [pa.field("m_score", pa.float64())]

    with pytest.raises(InputError, match="lack its main column 'm'"):
        score_table(SAMPLE.slice(0, 10), columns=COLUMNS, metrics=[Renamed()])
