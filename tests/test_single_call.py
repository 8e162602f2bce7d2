"""The single-call path (kb.sentence_bleu, kb.SentenceScorer): equal to sacrebleu's
sentence_score, and bit for bit equal to the bulk path (score_kbest)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

import kbest_bleu as kb
from kbest_bleu.bleu import SentenceScorer

# tiny vocabulary where clipping, repeats and the 13a/zh/intl rules all happen
WORDS = ["a", "b", "a.", "1,5", "x-", "3-", "&amp;", "<skipped>", "Ab", "É", "中", ",", "$", "\u3000"]
SENTENCE = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join)
SMOOTH = {0: "none", 1: "floor", 2: "add-k", 3: "exp"}


@settings(max_examples=80, deadline=None)
@given(hyp=SENTENCE, refs=st.lists(SENTENCE, min_size=1, max_size=3),
       tokenize=st.sampled_from(["none", "13a", "intl", "char", "zh"]), lowercase=st.booleans(),
       smoothing=st.sampled_from(sorted(SMOOTH)))
def test_single_call_equals_sacrebleu_and_bulk_path(hyp, refs, tokenize, lowercase, smoothing):
    opts = dict(tokenize=tokenize, lowercase=lowercase, smoothing=smoothing)
    got = kb.sentence_bleu(hyp, refs, **opts)
    want = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method=SMOOTH[smoothing],
                effective_order=True).sentence_score(hyp, refs).score / 100
    assert got == pytest.approx(want, rel=1e-13, abs=1e-15)
    assert got == kb.score_kbest([hyp], [refs], **opts)[0]  # same bits as the vectorized path
    assert SentenceScorer(refs, **opts)(hyp) == got


@settings(max_examples=40, deadline=None)
@given(hyp=SENTENCE, refs=st.lists(SENTENCE, max_size=3), options=st.sampled_from([
    dict(compat="nltk", smoothing=7), dict(compat="nltk", smoothing=1), dict(compat="moses"),
    dict(compat="mteval", tokenize="13a"), dict(smoothing=5), dict(weights=(0.7, 0.3), max_order=2),
    dict(effective_order=False, smoothing=0), dict(ref_length="shortest", smoothing=2)]))
def test_other_presets_equal_bulk_path(hyp, refs, options):
    assert kb.sentence_bleu(hyp, refs, **options) == kb.score_kbest([hyp], [refs], **options)[0]


def test_scorer_reuses_references_and_scores_many():
    refs = ["the cat sat on the mat .", "there is a cat on the mat"]
    hyps = ["the cat sat on a mat", "a cat on the mat", "", "the the the"]
    scorer = kb.bleu.SentenceScorer(refs, tokenize="13a")
    one = [scorer(h) for h in hyps]
    sb = BLEU(tokenize="13a", effective_order=True)
    assert one == pytest.approx([sb.sentence_score(h, refs).score / 100 for h in hyps], rel=1e-13, abs=1e-15)
    assert scorer.scores(hyps).tolist() == one
    v = scorer.vector("the cat sat on a mat")  # m_1..m_5, l_1..l_5, c, r
    assert v.tolist() == [6, 3, 2, 1, 0, 6, 5, 4, 3, 2, 6, 7]


def test_zero_references_and_empty_hypothesis():
    assert kb.sentence_bleu("a b", []) == 0.0
    assert kb.sentence_bleu("", ["a"]) == 0.0
    assert SentenceScorer([], compat="moses")("a") == kb.score_kbest(["a"], [[]], compat="moses")[0]


@pytest.mark.parametrize("call, match", [
    (lambda: kb.sentence_bleu(3, ["a"]), r"hypothesis: expected a string, found int"),
    (lambda: kb.sentence_bleu("a", ["a", None]), r"references\[1\]: expected a string, found NoneType"),
    (lambda: SentenceScorer(["a"], smoothing=9), "smoothing"),
    (lambda: kb.sentence_bleu("a", ["a"], colour="red"), "unknown option"),
])
def test_bad_input_raises_input_error(call, match):
    with pytest.raises(kb.InputError, match=match):
        call()


def test_options_with_unhashable_values():
    assert kb.sentence_bleu("a b c", ["a b d"], max_order=2, weights=[0.5, 0.5]) == pytest.approx(
        BLEU(tokenize="none", effective_order=True, max_ngram_order=2).sentence_score("a b c", ["a b d"]).score / 100,
        rel=1e-13)
    assert np.isfinite(kb.sentence_bleu("a", "a"))
