"""The statistics kernel against the slow Counter reference, plus invariants."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kbest_bleu as kb
from reference import stats as ref_stats

WORDS = ["a", "b", "c"]  # tiny vocabulary: repeated and overlapping n-grams everywhere
sentence = st.lists(st.sampled_from(WORDS), max_size=12)
segment = st.tuples(st.lists(sentence, min_size=1, max_size=5), st.lists(sentence, max_size=4))


def _flatten(segments):
    hyps, refs, seg = [], [], []
    for s, (hs, rs) in enumerate(segments):
        hyps += [" ".join(h) for h in hs]
        seg += [s] * len(hs)
        refs.append([" ".join(r) for r in rs])
    return hyps, refs, seg


@given(st.lists(segment, min_size=1, max_size=6), st.integers(1, 8),
       st.sampled_from(["closest", "shortest", "average"]))
def test_kernel_equals_counter_reference(segments, max_order, policy):
    hyps, refs, seg = _flatten(segments)
    got = kb.ngram_stats(hyps, refs, seg, max_order=max_order, ref_length=policy)
    row = 0
    for hs, rs in segments:
        for h in hs:
            m, t, c, r = ref_stats(h, rs, max_order + 1, policy)
            assert got.matches[row].tolist() == m
            assert got.totals[row].tolist() == t
            assert (got.hyp_len[row], got.ref_len[row]) == (c, r)
            row += 1


@given(st.lists(segment, min_size=1, max_size=5), st.randoms())
def test_invariants(segments, rnd):
    hyps, refs, seg = _flatten(segments)
    s = kb.ngram_stats(hyps, refs, seg)
    assert (s.matches <= s.totals).all() and (s.matches >= 0).all()
    # permuting hypotheses within segments permutes the rows
    perm = np.arange(len(hyps))
    start = 0
    for hs, _ in segments:
        block = list(range(start, start + len(hs)))
        rnd.shuffle(block)
        perm[start:start + len(hs)] = block
        start += len(hs)
    p = kb.ngram_stats([hyps[i] for i in perm], refs, seg)
    assert np.array_equal(p.matches, s.matches[perm]) and np.array_equal(p.ref_len, s.ref_len[perm])
    # statistics of a concatenation = concatenation of statistics
    k = len(segments) // 2
    first = sum(len(hs) for hs, _ in segments[:k])
    a = kb.ngram_stats(hyps[:first], refs[:k], seg[:first])
    b = kb.ngram_stats(hyps[first:], refs[k:], seg[first:])
    both = kb.BleuStats.concat([a, b])
    assert np.array_equal(both.matches, s.matches) and np.array_equal(both.totals, s.totals)
    # sum of sentence statistics = corpus statistics
    total = s.sum()
    assert total.matches[0].tolist() == s.matches.sum(0).tolist()
    assert int(total.ref_len[0]) == int(s.ref_len.sum())


def test_kernel_runs_as_plain_python():
    """NUMBA_DISABLE_JIT=1 runs the same kernel code as Python and must give the same stats."""
    code = ("import kbest_bleu as kb, json; s = kb.ngram_stats(['a b a b c', 'c c', ''], "
            "[['a b c a b', 'b a'], []], [0, 0, 1]); print(json.dumps(s.to_moses().tolist()))")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    jit = kb.ngram_stats(["a b a b c", "c c", ""], [["a b c a b", "b a"], []], [0, 0, 1]).to_moses().tolist()
    assert json.loads(out.stdout) == jit


def test_bleustats_operations():
    s = kb.ngram_stats(["a b c d", "a b", "x y z", "a"], [["a b c d"], ["x y"]], [0, 0, 1, 1])
    assert s.to_moses()[0].tolist() == [4, 4, 3, 3, 2, 2, 1, 1, 4]
    assert s.to_moses()[3].tolist() == [0, 1, 0, 0, 0, 0, 0, 0, 2]
    sel = s[np.array([2, 0])]
    assert sel.hyp_len.tolist() == [3, 4]
    assert len(s[1:3]) == 2 and len(s[s.hyp_len > 2]) == 2
    by_seg = s.sum_by([0, 2, 4])
    assert by_seg.matches[:, 0].tolist() == [6, 2] and by_seg.ref_len.tolist() == [8, 4]
    assert s.sum().matches.dtype == np.int64
    with pytest.raises(kb.InputError, match="non-decreasing"):
        s.sum_by([0, 3, 2, 4])
    with pytest.raises(kb.InputError, match="max orders differ"):
        kb.BleuStats.concat([s, kb.ngram_stats(["a"], [["a"]], max_order=2)])


def test_no_hash_collision_can_merge_ngrams():
    """Many distinct tokens in one segment: table probing is exercised; counts stay exact."""
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(5000)]
    ref = " ".join(rng.choice(vocab, 3000))
    hyps = [" ".join(rng.choice(vocab, 200)) for _ in range(20)]
    got = kb.ngram_stats(hyps, [[ref]], [0] * 20)
    for i, h in enumerate(hyps):
        m, t, c, r = ref_stats(h.split(), [ref.split()], 5)
        assert got.matches[i].tolist() == m
