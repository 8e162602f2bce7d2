"""kbest_bleu.tuning.mbr with a separate pseudo-reference set: each candidate's expected BLEU
against its segment's samples equals sacrebleu's sentence BLEU per pair, the aggregate equals a
Counter transcription of DeNero et al.'s expected counts, and mismatched segments are refused."""

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from kbest_bleu import settings
from kbest_bleu.errors import InputError
from kbest_bleu.tuning.mbr import aggregate_bleu, mbr_select, pairwise_bleu

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: the slow oracles
import reference as R  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "."]


def _sets(seed):
    rng = np.random.default_rng(seed)
    cands, c_seg, refs, r_seg = [], [], [], []
    for s in ["x", "y", "z"]:
        for _ in range(int(rng.integers(1, 5))):
            cands.append(" ".join(rng.choice(WORDS, int(rng.integers(1, 8)))))
            c_seg.append(s)
        for _ in range(int(rng.integers(1, 6))):
            refs.append(" ".join(rng.choice(WORDS, int(rng.integers(1, 8)))))
            r_seg.append(s)
    return cands, c_seg, refs, r_seg, rng.random(len(refs))


@pytest.mark.parametrize("seed", range(4))
def test_expected_bleu_against_a_separate_set_equals_sacrebleu_per_pair(seed):
    cands, c_seg, refs, r_seg, w = _sets(seed)
    bleu = BLEU(tokenize="none", effective_order=True)
    rows, utility = mbr_select(cands, c_seg, w, tokenize="none", pseudo_references=refs, pseudo_segments=r_seg)
    total = {s: sum(w[j] for j in range(len(refs)) if r_seg[j] == s) for s in set(r_seg)}  # an expectation
    want = [sum(w[j] / total[s] * bleu.sentence_score(h, [refs[j]]).score / 100 for j in range(len(refs))
                if r_seg[j] == s) for h, s in zip(cands, c_seg)]
    assert np.allclose(utility, want, rtol=0, atol=1e-12)
    for s, row in zip(["x", "y", "z"], rows):
        mine = [i for i, x in enumerate(c_seg) if x == s]
        assert row == max(mine, key=lambda i: (round(want[i], 12), -i))
    ptr = np.r_[0, np.cumsum([c_seg.count(s) for s in "xyz"])]
    r_ptr = np.r_[0, np.cumsum([r_seg.count(s) for s in "xyz"])]
    scores, pair_ptr = pairwise_bleu(cands, ptr, tokenize="none", pseudo_references=refs, pseudo_ptr=r_ptr)
    for s in range(3):
        block = scores[pair_ptr[s]:pair_ptr[s + 1]].reshape(ptr[s + 1] - ptr[s], r_ptr[s + 1] - r_ptr[s])
        for i in range(block.shape[0]):
            for j in range(block.shape[1]):
                assert block[i, j] == pytest.approx(
                    bleu.sentence_score(cands[ptr[s] + i], [refs[r_ptr[s] + j]]).score / 100, abs=1e-12)


@pytest.mark.parametrize("max_pairs", [1, 5, 4_000_000])
def test_empty_sets_and_strings_in_small_pair_groups_equal_sacrebleu_per_pair(monkeypatch, max_pairs):
    """Segments without candidates or without samples (pointers), empty strings, and pair groups
    cut after every segment (MAX_PAIRS_PER_CHUNK = 1), after some, or never; the candidates as
    their own pseudo-references too."""
    monkeypatch.setattr(settings, "MAX_PAIRS_PER_CHUNK", max_pairs)
    cands = [["the cat sat", "", "a mat"], [], ["the dog", "the dog", "on a mat ."], ["cat"]]
    samples = [["the cat sat on a mat", "", "a cat"], ["the"], [], ["the cat", "cat cat", "dog", "."]]
    bleu = BLEU(tokenize="none", effective_order=True)
    flat_c, flat_s = sum(cands, []), sum(samples, [])
    c_ptr = np.r_[0, np.cumsum([len(c) for c in cands])]
    s_ptr = np.r_[0, np.cumsum([len(x) for x in samples])]
    for refs, r_ptr, sets in ((flat_s, s_ptr, samples), (None, None, cands)):
        scores, pair_ptr = pairwise_bleu(flat_c, c_ptr, tokenize="none", pseudo_references=refs, pseudo_ptr=r_ptr)
        want = [bleu.sentence_score(h, [r]).score / 100 for cs, rs in zip(cands, sets) for h in cs for r in rs]
        assert np.allclose(scores, want, rtol=0, atol=1e-12)
        assert pair_ptr.tolist() == np.r_[0, np.cumsum([len(c) * len(r) for c, r in zip(cands, sets)])].tolist()
    # with segment ids, a segment has candidates and samples
    both = [s for s in range(len(cands)) if cands[s] and samples[s]]
    _, utility = mbr_select([h for s in both for h in cands[s]], [s for s in both for _ in cands[s]],
                            tokenize="none", pseudo_references=[r for s in both for r in samples[s]],
                            pseudo_segments=[s for s in both for _ in samples[s]])
    want = [np.mean([bleu.sentence_score(h, [r]).score / 100 for r in samples[s]]) for s in both for h in cands[s]]
    assert np.allclose(utility, want, rtol=0, atol=1e-12)


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


@pytest.mark.parametrize("seed", range(4))
def test_aggregate_against_a_separate_set_equals_expected_counts(seed):
    """Clipped matches against the samples' weighted mean n-gram counts and length, scored by
    sacrebleu's compute_bleu (effective order, as sentence BLEU)."""
    cands, c_seg, refs, r_seg, w = _sets(seed)
    got = aggregate_bleu(cands, c_seg, w, tokenize="none", pseudo_references=refs, pseudo_segments=r_seg)
    for h, s, g in zip(cands, c_seg, got):
        mine = [j for j in range(len(refs)) if r_seg[j] == s]
        p = w[mine] / w[mine].sum()
        tok = h.split()
        correct, total = [], []
        for n in range(1, 5):
            expected = Counter()
            for pj, j in zip(p, mine):
                for gram, c in _ngrams(refs[j].split(), n).items():
                    expected[gram] += pj * c
            correct.append(sum(min(c, expected[gram]) for gram, c in _ngrams(tok, n).items()))
            total.append(max(len(tok) - n + 1, 0))
        ref_len = sum(pj * len(refs[j].split()) for pj, j in zip(p, mine))
        assert g == pytest.approx(R.sacrebleu_exp_bleu(correct, total, len(tok), ref_len), abs=1e-12)


def test_mismatched_pseudo_segments_are_refused():
    with pytest.raises(InputError, match="segment 1 of the candidates is 'y', of the pseudo-references 'z'"):
        mbr_select(["a", "b"], ["x", "y"], pseudo_references=["a", "b"], pseudo_segments=["x", "z"])
    with pytest.raises(InputError, match="form 1 segments, the candidates 2"):
        aggregate_bleu(["a", "b"], ["x", "y"], pseudo_references=["a"], pseudo_segments=["x"])
    with pytest.raises(InputError, match="pseudo_segments given without pseudo_references"):
        mbr_select(["a"], [0], pseudo_segments=[0])
    with pytest.raises(InputError, match="group pointers: expected a non-decreasing integer array from 0 to 2"):
        pairwise_bleu(["a", "b"], [0, 3], pseudo_references=["a"], pseudo_ptr=[0, 1])  # row 2 would be a sample
    with pytest.raises(InputError, match="one per pseudo-reference"):
        mbr_select(["a", "b"], [0, 0], [0.5], pseudo_references=["a", "b"], pseudo_segments=[0, 0])


def test_a_segment_whose_weights_are_all_zero_is_refused():
    """Its expected utilities were 0 and its first row was selected; aggregate_chrf refused it."""
    from kbest_bleu.metrics.chrf.mbr import aggregate_chrf
    hyps, seg = ["a b", "a c", "d e", "d f"], [0, 0, 1, 1]
    for call in (lambda: mbr_select(hyps, seg, [0.0, 0.0, 0.5, 0.5]), lambda: aggregate_bleu(hyps, seg, [0, 0, 0, 1])):
        with pytest.raises(InputError, match="segment 0 has pseudo-references but their weights are all 0"):
            call()
    with pytest.raises(InputError, match="segment 0 has candidates but no pseudo-reference of positive weight"):
        aggregate_chrf(hyps, [0, 2, 4], weights=[0, 0, 0, 1])
    assert list(mbr_select(hyps, seg, [0.25, 0.0, 0.5, 0.5])[0]) == [0, 2]  # one positive weight is enough


def test_no_segments_is_one_segment_and_weights_are_normalized():
    """segments=None gave one segment per row: every row 'selected' with utility 1 against itself
    (chrF's MBR reads None as one segment, and the pseudo-references' None said so too)."""
    import sacrebleu

    hyps = ["the cat sat on the mat", "a cat sat on a mat", "the dog ran away fast"]
    want = [sum(sacrebleu.sentence_bleu(h, [r]).score / 100 for r in hyps) / 3 for h in hyps]
    rows, utility = mbr_select(hyps)
    assert rows.tolist() == [int(np.argmax(want))] and utility == pytest.approx(want, rel=1e-12)
    assert aggregate_bleu(hyps).tolist() == aggregate_bleu(hyps, [0, 0, 0]).tolist()
    # weights of any scale are an expectation: normalized within the segment, as aggregate_bleu and chrF do
    p = np.array([2.0, 1.0, 1.0])
    weighted = [sum(w * sacrebleu.sentence_bleu(h, [r]).score / 100 for w, r in zip(p / 4, hyps)) for h in hyps]
    assert mbr_select(hyps, probabilities=p)[1] == pytest.approx(weighted, rel=1e-12)
