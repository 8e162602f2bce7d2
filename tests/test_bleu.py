"""The public API: input forms, one-off and bulk calls, and bad input."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sacrebleu.metrics import BLEU

import kbest_bleu as kb

HYPS = ["the cat sat on the mat", "a cat sat on the mat", "the dog", "the cat"]
SEG = [7, 7, 3, 3]
REFS = [["the cat sat on a mat", "there is a cat on the mat"], ["the dog barked"]]


def test_one_call_equals_sacrebleu_sentence_bleu():
    want = BLEU(tokenize="none", effective_order=True).sentence_score(HYPS[0], REFS[0]).score / 100
    assert kb.sentence_bleu(HYPS[0], REFS[0]) == pytest.approx(want, abs=1e-12)
    assert kb.sentence_bleu("a b", "a b c") == pytest.approx(
        BLEU(tokenize="none", effective_order=True).sentence_score("a b", ["a b c"]).score / 100, abs=1e-12)


@pytest.mark.parametrize("convert", [
    lambda h, s, r: (h, s, r),
    lambda h, s, r: (np.array(h, dtype=object), np.array(s), r),
    lambda h, s, r: (pd.Series(h), pd.Series(s), pd.Series(r)),
    lambda h, s, r: (pa.array(h), pa.array(s), pa.array(r)),
    lambda h, s, r: (pa.chunked_array([h[:1], h[1:]], pa.large_string()), pa.array(s, pa.int64()), pa.array(r)),
])
def test_input_forms_agree(convert):
    want = np.array([kb.sentence_bleu(h, REFS[i // 2]) for i, h in enumerate(HYPS)])
    h, s, r = convert(HYPS, SEG, REFS)
    got = kb.score_kbest(h, r, s)
    assert np.allclose(got, want, rtol=0, atol=1e-15)
    # references repeated on every row give the same result
    per_row = [REFS[i // 2] for i in range(4)]
    assert np.array_equal(kb.score_kbest(HYPS, per_row, SEG), got)


def test_corpus_bleu_matches_sacrebleu_and_prints_like_it():
    res = kb.corpus_bleu(HYPS, [REFS[i // 2] + [""] * (i // 2) for i in range(4)])
    refs = [REFS[i // 2] for i in range(4)]
    streams = [[r[j] if j < len(r) else "" for r in refs] for j in range(2)]
    sb = BLEU(tokenize="none").corpus_score(HYPS, streams)
    assert res.score == pytest.approx(sb.score / 100, abs=1e-12)
    assert str(res).startswith(f"BLEU = {sb.score:.2f} ")


def test_zero_references_and_empty_strings_are_valid():
    s = kb.ngram_stats(["a b", "", "c"], [[], [""], ["c"]])
    assert s.ref_len.tolist() == [0, 0, 1] and s.matches[:, 0].tolist() == [0, 0, 1]
    assert kb.sentence_scores(s).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("call, match", [
    (lambda: kb.score_kbest(["a", None], [["a"], ["b"]]), "hypotheses: row 1 is null"),
    (lambda: kb.score_kbest(["a", "b"], [["a"], [None]]), "references: entry 1 holds a null reference"),
    (lambda: kb.score_kbest([1, 2], [["a"], ["b"]]), "expected strings"),
    (lambda: kb.score_kbest(["a", "b", "c"], [["a"], ["b"]], [0, 1, 0]), "segment 0 are not contiguous"),
    (lambda: kb.score_kbest(["a", "b"], [["a"], ["b"], ["c"]]), r"per segment \(2\) or per hypothesis row"),
    (lambda: kb.score_kbest(["a", "b"], [["a"]], [0]), r"one segment id per hypothesis \(2\)"),
    (lambda: kb.score_kbest(["a", "b", "c"], [["x"], ["y"], ["x"]], [0, 0, 1]), "row 1 has references different"),
    (lambda: kb.score_kbest(["a"], [["a"]], tokenize="moses"), "tokenize"),
    (lambda: kb.score_kbest(["a\ud800"], [["a"]]), "lone surrogate"),
])
def test_bad_input_is_explained(call, match):
    with pytest.raises(kb.InputError, match=match):
        call()


@pytest.mark.parametrize("smoothing", ["exp", "floor", "add-k", "none"])
def test_no_match_at_all_reports_sacrebleus_zero_precisions(smoothing):
    """sacrebleu stops before smoothing when nothing matches: its precisions read 0 (ours read the
    smoothed values, 12.5/12.5/0/0 here, the score and BP the same)."""
    from sacrebleu.metrics import BLEU
    hyps, refs = ["dog dog", "foo bar"], ["the cat sat", "baz qux"]
    want = BLEU(smooth_method=smoothing).corpus_score(hyps, [refs])
    got = kb.corpus_bleu(hyps, [[r] for r in refs], smoothing=smoothing)
    assert [100 * p for p in got.precisions] == want.precisions == [0.0] * 4
    assert 100 * got.score == want.score and got.bp == pytest.approx(want.bp, rel=1e-15)
