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


def test_sentence_results_are_sacrebleus_sentence_scores_with_their_parts():
    stats = kb.ngram_stats(HYPS, REFS, SEG)
    got = kb.sentence_results(stats)
    assert [r.score for r in got] == list(kb.sentence_scores(stats))
    for r, h, i in zip(got, HYPS, range(4)):
        sb = BLEU(tokenize="none", effective_order=True).sentence_score(h, REFS[i // 2])
        assert (r.score * 100, [100 * p for p in r.precisions], r.bp, r.hyp_len, r.ref_len) == (
            pytest.approx(sb.score, abs=1e-10), pytest.approx(sb.precisions, abs=1e-10), pytest.approx(sb.bp),
            sb.sys_len, sb.ref_len)
    moses = kb.sentence_results(stats, compat="moses")  # BLEU+1, where a one-row corpus is unsmoothed
    assert [r.score for r in moses] == list(kb.sentence_scores(stats, compat="moses"))


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


# ---- inputs the Python API once read wrong, or failed on without saying why -----------------------

HYPS2 = ["the cat sat on the mat today", "a dog barked loudly in the park"]
STREAM1 = ["the cat sat on a mat today", "a dog barked in a park"]
STREAM2 = ["a cat is on the mat today", "the dog barked loudly in the park"]


@pytest.mark.parametrize("form", ["arrays", "series", "2-D array"])
def test_reference_streams_as_arrays_are_refused_or_read_as_streams(form):
    """A list of numpy arrays (or Series, or a 2-D array) of H strings skipped the ambiguity check
    and was read as rows: 0.6692 where sacrebleu gives 0.8551."""
    refs = {"arrays": [np.array(STREAM1), np.array(STREAM2)], "series": [pd.Series(STREAM1), pd.Series(STREAM2)],
            "2-D array": np.array([STREAM1, STREAM2])}[form]
    with pytest.raises(kb.InputError, match="references_layout"):
        kb.corpus_bleu(HYPS2, refs)
    want = BLEU().corpus_score(HYPS2, [STREAM1, STREAM2]).score / 100
    assert kb.corpus_bleu(HYPS2, refs, references_layout="streams").score == pytest.approx(want, rel=1e-14)


def test_a_none_in_a_reference_stream_is_no_reference_as_in_sacrebleu():
    streams = [STREAM1, [STREAM2[0], None]]
    want = BLEU().corpus_score(HYPS2, streams)
    got = kb.corpus_bleu(HYPS2, streams, references_layout="streams")
    assert got.score == pytest.approx(want.score / 100, rel=1e-14) and got.ref_len == want.ref_len


def test_weights_keep_their_scale_with_effective_order():
    """Weights summing to 2 were divided by their total under effective order only: 0.4347 with it,
    0.1890 without, for a hypothesis that has every order (where the two are the same sum)."""
    h, r = HYPS2[0], [STREAM1[0]]
    on, off = (kb.sentence_bleu(h, r, weights=(0.5,) * 4, effective_order=e) for e in (True, False))
    assert on == off == kb.corpus_bleu([h], [r], weights=(0.5,) * 4).score
    assert off == pytest.approx(kb.sentence_bleu(h, r, effective_order=False) ** 2, rel=1e-14)  # w * 2: BLEU^2


def test_options_of_the_wrong_type_are_refused_whatever_was_called_before():
    """lowercase='no' lowercased; max_order=True was refused until max_order=1 had been cached."""
    for bad in (dict(lowercase="no"), dict(effective_order="no"), dict(smooth_bp=1, compat="moses")):
        with pytest.raises(kb.InputError, match="expected True or False"):
            kb.sentence_bleu("A b", ["a b"], **bad)
    assert kb.sentence_bleu("A b c d", ["a b c d"], max_order=1) == 0.75
    with pytest.raises(kb.InputError, match="max_order"):
        kb.sentence_bleu("A b c d", ["a b c d"], max_order=True)
    assert kb.sentence_bleu("A b", ["a b"], lowercase=np.True_) == 1.0
    assert kb.sentence_bleu("a b c d", ["a b c d"], weights=(1, 1, 1, 1)) == 1.0
    with pytest.raises(kb.InputError, match="weights"):  # (True,) * 4 == (1, 1, 1, 1) as a cache key
        kb.sentence_bleu("a b c d", ["a b c d"], weights=(True,) * 4)
    with pytest.raises(kb.InputError, match="epsilon"):
        kb.sentence_bleu("a b", ["a c"], smoothing="floor", epsilon=5e-324)  # eps / l_n underflowed to 0


def test_statistics_and_configs_that_cannot_be_scored_are_refused():
    stats = kb.ngram_stats(["a b c"], [["a b c"]])
    bad_stats = [kb.BleuStats(stats.matches * 3, stats.totals, stats.hyp_len, stats.ref_len),  # BLEU 2.15
                 kb.BleuStats(stats.matches * np.nan, stats.totals, stats.hyp_len, stats.ref_len),  # 0.0
                 kb.BleuStats(-stats.matches, stats.totals, stats.hyp_len, stats.ref_len)]
    for bad in bad_stats:
        for call in (kb.sentence_scores, kb.corpus_score, kb.document_score):
            with pytest.raises(kb.InputError, match="row 0"):
                call(bad)
    for call in (lambda: kb.sentence_scores([[1, 2]]), lambda: kb.corpus_score(None),  # AttributeError
                 lambda: kb.sentence_scores(stats, "nltk"), lambda: kb.sentence_scores(stats, config={"a": 1}),
                 lambda: kb.BleuStats.concat([1, 2]), lambda: kb.score_kbest(["a", "b"], [pd.Series(STREAM1)] * 2),
                 lambda: kb.score_kbest(["a b"], [["a b"]], segments=0)):
        with pytest.raises(kb.InputError) as exc:
            call()
        assert "\n" not in str(exc.value)
    assert kb.document_score(kb.ngram_stats([], []), groups=[0, 0]).tolist() == [0.0]  # numpy's casting error


def test_single_calls_on_edge_inputs():
    for call in (lambda: kb.sentence_bleu("a \ud800", ["a"]), lambda: kb.SentenceScorer(["a \udfff"])):
        with pytest.raises(kb.InputError, match="lone surrogate"):  # UnicodeEncodeError
            call()
    scorer = kb.SentenceScorer(["a b c d"])
    assert scorer.scores([]).tolist() == [] and scorer.scores(h for h in ["a b c d"]).tolist() == [1.0]
    text = ["the cat sat on the mat", "a dog"]
    want = kb.score_kbest(text, [["the cat sat on a mat"], ["a dog"]])
    for form in (pa.array(text).dictionary_encode(), pa.array(text, pa.string_view())):  # were refused
        np.testing.assert_array_equal(kb.score_kbest(form, [["the cat sat on a mat"], ["a dog"]]), want)
