"""Smoothings 0-7 and the presets against the slow per-row references."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reference import moses_bleu_plus_1, paper_bleu, smoothing6_bleu
from reference import stats as ref_stats

import kbest_bleu as kb

sentence = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=10)
pairs = st.lists(st.tuples(sentence, st.lists(sentence, min_size=1, max_size=3)), min_size=1, max_size=8)


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("method", range(8))
@pytest.mark.parametrize("effective", [True, False])
@given(data=pairs)
def test_paper_smoothings_match_reference(method, effective, data):
    hyps = [" ".join(h) for h, _ in data]
    refs = [[" ".join(r) for r in rs] for _, rs in data]
    got = kb.score_kbest(hyps, refs, smoothing=method, effective_order=effective)
    for i, (h, rs) in enumerate(data):
        m, t, c, r = ref_stats(h, rs, 5)
        want = paper_bleu(method, m, t, c, r, effective=effective)
        assert _close(got[i], want), (method, h, rs, got[i], want)
        assert np.isfinite(got[i]) and got[i] >= 0


@given(data=pairs, smooth_bp=st.booleans(), s=st.sampled_from([0.5, 1.0, 2.0]))
def test_moses_bleu_plus_1_matches_transliteration(data, smooth_bp, s):
    hyps = [" ".join(h) for h, _ in data]
    refs = [[" ".join(r) for r in rs] for _, rs in data]
    got = kb.score_kbest(hyps, refs, compat="moses", smooth_bp=smooth_bp, add_k=s)
    for i, (h, rs) in enumerate(data):
        m, t, c, r = ref_stats(h, rs, 4)
        assert _close(got[i], moses_bleu_plus_1(m, t, c, r, s, smooth_bp))


def test_custom_weights_and_orders():
    h, r = "a b c d e f", ["a b c d x f"]
    m, t, c, rl = ref_stats(h.split(), [r[0].split()], 3)
    got = kb.sentence_bleu(h, r, max_order=2, weights=(0.8, 0.2), smoothing=0)
    assert _close(got, math.exp(0.8 * math.log(m[0] / t[0]) + 0.2 * math.log(m[1] / t[1])))
    # order 8 on a long exact match is 1
    s = "one two three four five six seven eight nine ten"
    assert _close(kb.sentence_bleu(s, [s], max_order=8), 1.0)


def test_tiny_precisions_whose_product_underflows():
    # 16 orders, 15 of them floored at eps = 1e-30: the product of the precisions (1e-450)
    # underflows float64, the geometric mean (about 1e-28) does not.
    h = " ".join(f"w{i}" for i in range(20))
    r = " ".join(f"w{i}" for i in reversed(range(20)))
    got = kb.sentence_bleu(h, [r], max_order=16, smoothing=1, epsilon=1e-30)
    m, t, c, rl = ref_stats(h.split(), [r.split()], 17)
    want = paper_bleu(1, m, t, c, rl, N=16, eps=1e-30)
    assert 0 < want < 1e-20 and math.isclose(got, want, rel_tol=1e-9)  # relative: the values are tiny


def test_corpus_and_document_level():
    hyps = ["a b c d", "a b x", "q"]
    refs = [["a b c d"], ["a b c"], ["r s"]]
    st_ = kb.ngram_stats(hyps, refs)
    res = kb.corpus_score(st_)
    # by hand: rows (m | t) = (4 3 2 1 | 4 3 2 1), (2 1 0 0 | 3 2 1 0), (0 0 0 0 | 1 0 0 0)
    m = [6, 4, 2, 1]
    t = [8, 5, 3, 1]
    want = math.exp(sum(math.log(m[n] / t[n]) for n in range(4)) / 4) * math.exp(1 - 9 / 8)
    assert _close(res.score, want) and res.hyp_len == 8 and res.ref_len == 9
    assert "eff:no" in res.signature
    sent = kb.sentence_scores(st_)
    lens = st_.ref_len
    assert _close(kb.document_score(st_), float((lens * sent).sum() / lens.sum()))
    per_doc = kb.document_score(st_, groups=[0, 2, 2, 3])
    assert _close(per_doc[0], float((lens[:2] * sent[:2]).sum() / lens[:2].sum()))
    assert per_doc[1] == 0.0 and _close(per_doc[2], sent[2])


def test_signature_names_every_option():
    sig = kb.BleuConfig(smoothing="floor", epsilon=0.2, ref_length="shortest", lowercase=True).signature()
    for part in ("compat:sacrebleu", "smooth:floor(eps=0.2)", "order:4", "eff:yes", "reflen:shortest",
                 "tok:13a", "case:lc", f"version:{kb.__version__}"):
        assert part in sig
    assert "smooth:bleu+1(s=1,bp=smoothed)" in kb.BleuConfig(compat="moses", smooth_bp=True).signature()
    assert "smooth:4(K=5)" in kb.BleuConfig(compat="nltk", smoothing=4).signature()


@pytest.mark.parametrize("bad, match", [
    (dict(compat="bleurt"), "compat: expected one of"),
    (dict(compat="mteval", smoothing=5), "supports 0, 3"),
    (dict(smoothing="add-one"), "smoothing"),
    (dict(max_order=0), "max_order"),
    (dict(weights=(0.5, 0.5)), "4 non-negative weights"),
    (dict(compat="nltk", effective_order=True), "only the 'sacrebleu' preset"),
    (dict(ref_length="longest"), "ref_length"),
    (dict(smoothingg=3), "unknown option"),
])
def test_bad_options_are_explained(bad, match):
    with pytest.raises(kb.InputError, match=match):
        kb.sentence_bleu("a b", ["a b"], **bad)


@pytest.mark.parametrize("order", [1, 2])
def test_nltk_method6_below_trigrams_is_refused_as_nltk_fails(order):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    with pytest.raises(IndexError):  # NLTK's method6 reads p_3, whatever the input
        sentence_bleu([["b", "a"]], ["a", "b"], (1 / order,) * order, SmoothingFunction().method6)
    with pytest.raises(kb.InputError, match="max_order >= 3"):
        kb.sentence_bleu("a b", ["b a"], compat="nltk", smoothing=6, max_order=order)


def test_all_smoothings_of_nltk_below_trigrams_leave_method6_out():
    from kbest_bleu.metrics.bleu import score_columns
    names = [name for name, _ in score_columns(kb.BleuConfig(compat="nltk", max_order=2), "all")]
    assert names == ["bleu"] + [f"bleu_s{s}" for s in (0, 1, 2, 3, 4, 5, 7)]
    assert "bleu_s6" in dict(score_columns(kb.BleuConfig(compat="nltk"), "all"))


@pytest.mark.parametrize("hyp, ref, options", [("b b a a a a", "a", dict(smoothing=7, k=1e-300)),
                                               ("b b a a a a", "a", dict(smoothing=4, k=1e-300)),
                                               ("b b b", "b b b b c a", dict(compat="nltk", smoothing=7,
                                                                             weights=(1e6, 1, 1, 1)))])
def test_a_score_that_overflows_is_an_error_not_inf(hyp, ref, options, recwarn):
    """Smoothings 4-7 can make precisions above 1 (K below ln c, NLTK's averages): with extreme
    parameters or weights the score overflows, where NLTK's math.exp raises OverflowError. One
    InputError naming the row, no numpy warning, never inf or NaN (the token-id path returned inf)."""
    with pytest.raises(kb.InputError, match=r"row 0 scores (inf|nan)"):
        kb.sentence_bleu(hyp, [ref], tokenize="none", **options)
    assert not recwarn.list
    # the paper's parameters on the same sentence: a number
    assert np.isfinite(kb.sentence_bleu(hyp, [ref], tokenize="none", smoothing=options["smoothing"]))


SMOOTHING6 = ("literal", "raw-prior", "from-bigram", "floor")


@pytest.mark.parametrize("variant", SMOOTHING6)
@settings(max_examples=60)
@given(data=pairs)
def test_smoothing6_variants_match_reference(variant, data):
    hyps = [" ".join(h) for h, _ in data]
    refs = [[" ".join(r) for r in rs] for _, rs in data]
    got = kb.score_kbest(hyps, refs, smoothing=6, smoothing6_variant=variant)
    for i, (h, rs) in enumerate(data):
        m, t, c, r = ref_stats(h, rs, 4)
        assert _close(got[i], smoothing6_bleu(m, t, c, r, variant)), (variant, h, rs)


def _geo(*p):
    return float(math.prod(p)) ** 0.25


def test_smoothing6_variants_hand_derived():
    from fractions import Fraction as F
    # "a b c d e f" vs "a b x d e f": m = 5, 3, 1, 0 of l = 6, 5, 4, 3; alpha = 5, no brevity penalty
    p1, p2 = F(5, 6), F(3, 5)
    p3 = (1 + 5 * p2 ** 2 / p1) / (4 + 5)            # Eq. 10-11: 79/225
    want = {"literal": _geo(p1, p2, p3, 5 * (p3 ** 2 / p2) / (3 + 5)),
            "raw-prior": _geo(p1, p2, p3, 5 * (F(1, 4) ** 2 / p2) / (3 + 5)),  # prior from raw p_3 = 1/4
            "floor": _geo(p1, p2, p3, 5 * (p3 ** 2 / p2) / (3 + 5))}  # nothing to floor
    q2 = (3 + 5 * p1 ** 2) / (5 + 5)                   # from-bigram: p0_2 = p_1^2 / p_0, p_0 = 1
    q3 = (1 + 5 * q2 ** 2 / p1) / (4 + 5)
    want["from-bigram"] = _geo(p1, q2, q3, 5 * (q3 ** 2 / q2) / (3 + 5))
    for variant, w in want.items():
        got = kb.sentence_bleu("a b c d e f", ["a b x d e f"], smoothing=6, smoothing6_variant=variant)
        assert _close(got, w), variant
    # no bigram match, 3 of 6 unigrams: literal 0 (p0_3 = 0^2 / p_1); floor p_2 = 0.1 / 5
    h, r = "a b c d e f", ["a x b y c z"]
    assert kb.sentence_bleu(h, r, smoothing=6) == 0.0
    f1, f2 = F(1, 2), F(1, 10) / 5
    f3 = 5 * (f2 ** 2 / f1) / (4 + 5)
    assert _close(kb.sentence_bleu(h, r, smoothing=6, smoothing6_variant="floor"),
                  _geo(f1, f2, f3, 5 * (f3 ** 2 / f2) / (3 + 5)))


def test_smoothing6_variant_validated_and_signed():
    with pytest.raises(kb.InputError, match="smoothing6_variant: expected one of literal"):
        kb.BleuConfig(smoothing6_variant="nope")
    with pytest.raises(kb.InputError, match="only the 'sacrebleu' preset"):
        kb.BleuConfig(compat="nltk", smoothing=6, smoothing6_variant="floor")
    assert "smooth:6(alpha=5)|" in kb.BleuConfig(smoothing=6).signature()
    assert "smooth:6(alpha=5,from-bigram)|" in kb.BleuConfig(smoothing=6, smoothing6_variant="from-bigram").signature()
    assert "smooth:floor(eps=0.1)|" in kb.BleuConfig(smoothing=1, smoothing6_variant="floor").signature()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), method=st.sampled_from([0, 1, 2, 3]), effective=st.booleans())
def test_the_single_call_scorer_equals_the_vectorized_one_bit_for_bit(data, method, effective):
    """smoothing.sacrebleu_sentence_one (SentenceScorer's scalar path) gives sacrebleu_bleu's
    float exactly, or None where the product of precisions underflows."""
    from kbest_bleu.smoothing import sacrebleu_bleu, sacrebleu_sentence_one
    n = 4
    c = data.draw(st.integers(0, 30))
    totals = [max(0, c - k) for k in range(n)]
    matches = [data.draw(st.integers(0, t)) for t in totals]
    r = data.draw(st.integers(0, 30))
    cfg = kb.BleuConfig(smoothing=method, effective_order=effective)
    m = np.array([matches + [0]], np.int64)
    t = np.array([totals + [0]], np.int64)
    want = float(sacrebleu_bleu(m.astype(float), t.astype(float), np.array([c], float), np.array([r], float), cfg,
                                cfg.effective("sentence"))[0][0])
    v = np.array(matches + [0] + totals + [0] + [c, r], np.int64)
    got = sacrebleu_sentence_one(v, cfg)
    assert got is None or got == want


def test_a_row_scores_alike_alone_and_in_a_batch_with_per_order_weights():
    """Per-order weights (and NLTK's per-row reweighting) sum w_n log p_n order by order: a row's
    score does not depend on the rows beside it nor on the arrays' layout (einsum's summation
    order did, by the last bit)."""
    from kbest_bleu import smoothing as S
    from kbest_bleu.token_ids import token_bleu
    h = [[0, 2, 4, 3, 0, 3, 1, 1, 2, 4, 4], [2, 3, 1, 1, 1, 1, 4, 1]]
    r = [[0, 0, 3, 1, 4, 2, 4, 2, 3, 4], [2, 2, 1, 2, 2, 2]]
    for options in (dict(weights=(.1, .2, .3, .4), smoothing=1), dict(compat="nltk", smoothing=1, auto_reweigh=True)):
        both = token_bleu(h, r, **options)
        assert [token_bleu(h[i:i + 1], r[i:i + 1], **options)[0] for i in range(2)] == both.tolist()
    stats = kb.ngram_stats(["a b c d e", "a b x d"], [["a b c d f"], ["a b c d"]])
    cfg = kb.BleuConfig(weights=(.1, .2, .3, .4), smoothing=1)
    m, t = (np.asarray(x, np.float64) for x in (stats.matches, stats.totals))
    c, rr = stats.hyp_len.astype(np.float64), stats.ref_len.astype(np.float64)
    f = S.sacrebleu_bleu(np.asfortranarray(m), np.asfortranarray(t), c, rr, cfg, True)[0]
    c_order = S.sacrebleu_bleu(np.ascontiguousarray(m), np.ascontiguousarray(t), c, rr, cfg, True)[0]
    assert c_order.tolist() == f.tolist()


_words = st.lists(st.sampled_from("abc"), max_size=6)  # tiny vocabulary: overlaps; rows shorter than n


@settings(max_examples=300, deadline=None)
@given(corpus=st.lists(st.tuples(_words, st.lists(_words.filter(bool), min_size=1, max_size=2)), min_size=1,
                       max_size=5), method=st.integers(0, 4), reweigh=st.booleans(), explicit=st.booleans())
def test_nltk_corpus_and_sentence_bleu_equal_nltk(corpus, method, reweigh, explicit):
    """NLTK's corpus_bleu adds each sentence's denominator max(1, l_n): a sentence shorter than n
    adds 1 to order n (two sentences matching themselves scored 1.0 here, 0.7071 in NLTK, until
    smoothing.corpus_totals). auto_reweigh applies to weights given as (0.25,) * 4 too, as in NLTK."""
    import warnings

    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
    hyps, refs = [h for h, _ in corpus], [r for _, r in corpus]
    options = dict(smoothing_function=getattr(SmoothingFunction(), f"method{method}"), auto_reweigh=reweigh,
                   **({"weights": (0.25,) * 4} if explicit else {}))
    ours = dict(compat="nltk", smoothing=method, auto_reweigh=reweigh, **({"weights": (0.25,) * 4} if explicit else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns of orders without matches
        want = corpus_bleu(refs, hyps, **options)
        want_first = sentence_bleu(refs[0], hyps[0], **options)
    got = kb.corpus_bleu(hyps, refs, references_layout="rows", **ours).score
    assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
    got_first = kb.sentence_bleu(" ".join(hyps[0]), [" ".join(r) for r in refs[0]], tokenize="none", **ours)
    assert got_first == pytest.approx(want_first, rel=1e-12, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(pair=st.tuples(_words, st.lists(_words.filter(bool), min_size=1, max_size=2)), method=st.integers(0, 7))
@example(pair=(["a", "b", "c"], [["a", "b", "c"]]), method=6)
def test_nltk_one_row_corpus_is_the_sentence_score(pair, method):
    """corpus -sl scores each line through corpus_score: under NLTK's smoothing 6 (which reads the
    raw n-gram counts) the max(1, l_n) of the corpus sums made 'the cat sat' 0.955 instead of 1."""
    hyp, refs = pair
    stats = kb.ngram_stats([" ".join(hyp)], [[" ".join(r) for r in refs]], None, kb.BleuConfig(tokenize="none",
                                                                                              max_order=5))
    cfg = kb.BleuConfig(compat="nltk", smoothing=method, tokenize="none")
    if method == 6 and stats.matches[0, 2] == 0:
        return  # NLTK asserts there; the preset scores 0 at both levels
    assert kb.corpus_score(stats, cfg).score == kb.sentence_scores(stats, cfg)[0]
