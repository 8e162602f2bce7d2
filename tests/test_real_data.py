"""Checks against gold values produced by the original tools on real MT data (../shared/data)."""

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb


def test_moses_extractor_gold_statistics(shared_data):
    t = pq.read_table(shared_data / "moses_mert_nbest.parquet")
    seg = pc.add(pc.multiply(t["iteration"], 1000), t["segment_id"])
    stats = kb.ngram_stats(t["hypothesis"], t["references"], seg, tokenize="none")
    gold = np.array(t["gold_bleu_stats_moses"].to_pylist())
    assert gold.shape == (5000, 9)
    assert np.array_equal(stats.to_moses(), gold)


MULTEVAL = {  # data/README.md: hyp n-grams l1..l4, matches m1..m4, r, and the corpus BLEU golds
    ("multeval_example_test2010", "baseline.opt0"): ([67461, 64972, 62490, 60022], [37387, 16324, 7929, 4013], 62774, 0.185389),
    ("multeval_set1_zhen_4ref", "run0"): ([37451, 36094, 34737, 33384], [28063, 14583, 7704, 4119], 38803, 0.290996),
    # set2: multeval counts 38420 unigrams, Python's str.split 38421 (U+00A0 splits in Python);
    # we follow Python, as sacrebleu --tokenize none does (one more n-gram of every order).
    ("multeval_set2", "run0"): ([38421, 36422, 34423, 32427], [21271, 10184, 5665, 3281], 38049, 0.225323),
}


@pytest.mark.parametrize("key", MULTEVAL)
def test_multeval_corpus_statistics(shared_data, key):
    t = pq.read_table(shared_data / "multeval.parquet",
                      filters=[("dataset", "=", key[0]), ("system", "=", key[1])])
    totals, matches, ref_len, bleu = MULTEVAL[key]
    res_stats = kb.ngram_stats(t["hypothesis"], t["references"], tokenize="none").sum()
    assert res_stats.matches[0, :4].tolist() == matches
    assert int(res_stats.ref_len[0]) == ref_len
    assert res_stats.totals[0, :4].tolist() == totals
    assert kb.corpus_score(res_stats, tokenize="none").score == pytest.approx(bleu, abs=5e-7)
    # multi-bleu.perl (Moses) gives the same unsmoothed value (18.54, 29.10): the moses preset's corpus
    # BLEU is not its sentence-level BLEU+1 (which gave 0.185404 on the first)
    moses = kb.corpus_score(res_stats, compat="moses", tokenize="none")
    assert moses.score == pytest.approx(bleu, abs=5e-7) and "smooth:none" in moses.signature
    # the preset's own tokenization is Moses': whitespace, as multi-bleu.perl on this tokenized text
    # (under 13a, the sacrebleu default, the first gave 0.186673)
    obvious = kb.corpus_bleu(t["hypothesis"].to_pylist(), t["references"].to_pylist(), compat="moses")
    assert obvious.score == pytest.approx(bleu, abs=5e-7) and "tok:none" in obvious.signature


def test_mteval_preset_equals_the_script_by_default(shared_data):
    """WMT22 zh-en Online-B against refA and refB: mteval-v13a.pl with no option (it lowercases)
    printed 0.349536120382512 in BLEU-sys.scr (2026-11-27); with -c the preset's case-kept value,
    sacrebleu's corpus BLEU. Until then the preset kept case by default (0.333162)."""
    import sacrebleu

    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet", filters=[("system", "=", "Online-B")]).sort_by(
        "segment_id")
    hyps, refs = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    assert kb.corpus_bleu(hyps, refs, compat="mteval").score == pytest.approx(0.349536120382512, abs=1e-14)
    kept = kb.corpus_bleu(hyps, refs, compat="mteval", lowercase=False).score
    assert kept == pytest.approx(sacrebleu.corpus_bleu(hyps, [list(r) for r in zip(*refs)]).score / 100, abs=1e-14)


def test_moses_corpus_bleu_of_extractor_statistics(shared_data):
    """Moses' tuning objective (BleuScorer::calculateScore) of each iteration's 1-best lists, from
    Moses' own extractor statistics, against the preset's corpus BLEU of the package's statistics."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    import reference as R

    t = pq.read_table(shared_data / "moses_mert_nbest.parquet").filter(pc.equal(pc.field("rank"), 0))
    stats = kb.ngram_stats(t["hypothesis"], t["references"], tokenize="none")
    gold = np.array(t["gold_bleu_stats_moses"].to_pylist())
    iteration = np.array(t["iteration"])
    for it in np.unique(iteration):
        rows = np.flatnonzero(iteration == it)
        got = kb.corpus_score(stats[rows], compat="moses").score
        assert got == pytest.approx(R.moses_corpus_bleu(gold[rows].sum(0).tolist()), rel=1e-13)


def _real_sample(shared_data, n_per_source=1300, seed=0):
    """Real hypotheses with 1, 2 and 4 references from four corpora, seeded."""
    rng = np.random.default_rng(seed)
    hyps, refs = [], []
    for name in ("wmt22_news_systems.parquet", "wmt12_segments.parquet", "multeval.parquet",
                 "joshua_bn_en_kbest.parquet"):
        t = pq.read_table(shared_data / name, columns=["hypothesis", "references"])
        idx = rng.choice(t.num_rows, size=min(n_per_source, t.num_rows), replace=False)
        sub = t.take(idx)
        hyps += sub["hypothesis"].to_pylist()
        refs += sub["references"].to_pylist()
    return hyps, refs


@pytest.fixture(scope="module")
def real_sample(shared_data):
    hyps, refs = _real_sample(shared_data)
    assert len(hyps) >= 5000 and {len(r) for r in refs} >= {1, 2, 4}
    return hyps, refs


@pytest.mark.parametrize("method", ["none", "floor", "add-k", "exp"])
@pytest.mark.parametrize("effective", [True, False])
def test_sacrebleu_sentence_scores_on_real_data(real_sample, method, effective):
    from sacrebleu.metrics import BLEU
    hyps, refs = real_sample
    bleu = BLEU(tokenize="none", smooth_method=method, effective_order=effective)
    want = np.array([bleu.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs)])
    got = kb.score_kbest(hyps, refs, smoothing=method, effective_order=effective, tokenize="none")
    bad = np.flatnonzero(np.abs(got - want) > 1e-9)
    assert bad.size == 0, [(hyps[i], refs[i], got[i], want[i]) for i in bad[:3]]


@pytest.mark.parametrize("method", ["none", "floor", "add-k", "exp"])
@pytest.mark.parametrize("effective", [True, False])
def test_sacrebleu_corpus_score_on_real_data(shared_data, method, effective):
    from sacrebleu.metrics import BLEU
    t = pq.read_table(shared_data / "multeval.parquet", filters=[("dataset", "=", "multeval_set1_zhen_4ref"),
                                                                 ("system", "=", "run1")])
    hyps, refs = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    want = BLEU(tokenize="none", smooth_method=method, effective_order=effective).corpus_score(
        hyps, [list(s) for s in zip(*refs)]).score / 100
    got = kb.corpus_bleu(hyps, refs, smoothing=method, effective_order=effective, tokenize="none").score
    assert abs(got - want) <= 1e-9


@pytest.mark.parametrize("method", range(8))
def test_nltk_sentence_bleu_on_real_data(real_sample, method):
    import warnings

    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    hyps, refs = real_sample
    fn = getattr(SmoothingFunction(), f"method{method}")
    want, rows = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (h, r) in enumerate(zip(hyps, refs)):
            try:
                want.append(sentence_bleu([x.split() for x in r], h.split(), smoothing_function=fn))
                rows.append(i)
            except (AssertionError, ZeroDivisionError):  # method6 without a trigram match
                assert method == 6
    got = kb.score_kbest(hyps, refs, compat="nltk", smoothing=method, tokenize="none")[rows]
    assert len(rows) >= (5000 if method != 6 else 2000)
    bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-9, atol=1e-12))
    assert bad.size == 0, [(hyps[rows[i]], got[i], want[i]) for i in bad[:3]]


@pytest.mark.parametrize("method", range(5))
def test_nltk_corpus_bleu_on_real_data(real_sample, method):
    """corpus_bleu under compat="nltk" against NLTK's corpus_bleu on 2,000 real segments (methods
    5-7 read the last sentence's counts in NLTK: docs/presets.md)."""
    import warnings

    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu
    hyps, refs = (x[:2000] for x in real_sample)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = corpus_bleu([[x.split() for x in r] for r in refs], [h.split() for h in hyps],
                           smoothing_function=getattr(SmoothingFunction(), f"method{method}"))
    got = kb.corpus_bleu(hyps, refs, compat="nltk", smoothing=method, tokenize="none").score
    assert got == pytest.approx(want, rel=1e-12)
