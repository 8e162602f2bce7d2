"""`metaeval mqm` values against an independent computation: sacrebleu 2.6.0 sentence and corpus
BLEU, scipy's Kendall tau-b / Pearson / Spearman, on a slice of the WMT22 zh-en MQM data."""

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import scipy.stats

from kbest_bleu.research.metaeval import SMOOTHING_ROWS, mqm_table

sacrebleu = pytest.importorskip("sacrebleu")


def _ours_sentence(t, smoothing):
    from kbest_bleu import BleuConfig, ngram_stats, sentence_scores
    cfg = BleuConfig(tokenize="13a", smoothing=smoothing)
    return sentence_scores(ngram_stats(t["hypothesis"], t["references"], None, cfg), cfg)


def test_mqm_table_matches_sacrebleu_and_scipy(shared_data):
    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet")
    t = t.filter(pc.invert(t["is_reference"]))
    systems = sorted(set(t["system"].to_pylist()))[:8]  # DLUT and NiuTrans have no MQM rating
    t = t.filter(pc.and_(pc.is_in(t["system"], pc.cast(systems, t["system"].type)), pc.less(t["segment_id"], 250)))
    ours = {r[0]: r[1:] for r in mqm_table(t)}
    rows = t.select(["system", "hypothesis", "references", "human_mqm"]).to_pylist()
    hum = np.array([np.nan if r["human_mqm"] is None else r["human_mqm"] for r in rows])
    rated = ~np.isnan(hum)
    assert 500 < rated.sum() < len(rows)  # a real mix of rated and unrated items
    # system level: the systems with ratings (an unrated system has no human score)
    by_system = {s: [i for i, r in enumerate(rows) if r["system"] == s] for s in systems}
    by_system = {s: ix for s, ix in by_system.items() if rated[ix].any()}
    assert len(by_system) == 6
    human_sys = [hum[ix][rated[ix]].mean() for ix in by_system.values()]
    for row, method in ((0, "none"), (1, "floor"), (3, "exp")):
        metric = sacrebleu.BLEU(smooth_method=method, smooth_value=0.1 if method == "floor" else None,
                                effective_order=True)
        sent = [metric.sentence_score(r["hypothesis"], r["references"]) for r in rows]
        bleu = np.array([s.score / 100 for s in sent])
        tau_b, r_seg, r_sys, rho_sys = ours[row]
        # the sentence scores agree within 7e-16, but mathematically equal scores that differ in the last
        # bit in one tool and not the other make or break ties (here up to 8 of ~170k tied pairs):
        # tau-b moves by up to 2e-5
        assert np.abs(bleu - _ours_sentence(t, row)).max() < 1e-15
        assert tau_b == pytest.approx(scipy.stats.kendalltau(bleu[rated], hum[rated]).statistic, abs=5e-5)
        assert r_seg == pytest.approx(scipy.stats.pearsonr(bleu[rated], hum[rated]).statistic, abs=1e-9)
        # system score: Eq. 13, reference-length-weighted mean of sentence BLEU
        ref_len = np.array([s.ref_len for s in sent], float)
        doc = [np.dot(ref_len[ix], bleu[ix]) / ref_len[ix].sum() for ix in by_system.values()]
        assert r_sys == pytest.approx(scipy.stats.pearsonr(doc, human_sys).statistic, abs=1e-9)
        assert rho_sys == pytest.approx(scipy.stats.spearmanr(doc, human_sys).statistic, abs=1e-9)
    corpus = [sacrebleu.corpus_bleu([rows[i]["hypothesis"] for i in ix],
                                    [list(r) for r in zip(*(rows[i]["references"] for i in ix))]).score / 100
              for ix in by_system.values()]
    assert np.isnan(ours["crp"][0]) and SMOOTHING_ROWS[0] == "crp"
    assert ours["crp"][2:] == pytest.approx((scipy.stats.pearsonr(corpus, human_sys).statistic,
                                             scipy.stats.spearmanr(corpus, human_sys).statistic), abs=1e-9)
