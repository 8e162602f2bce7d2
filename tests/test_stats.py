"""The statistics kernel against the slow Counter reference, plus invariants."""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import stats as ref_stats

import kbest_bleu as kb
from kbest_bleu.arrays import read_only
from kbest_bleu.counting import _kernels as kernels
from kbest_bleu.counting import codes
from kbest_bleu.encode import encode
from kbest_bleu.stats import counting_args, pair_stats, text_kernel_stats

# tiny vocabulary: repeated and overlapping n-grams everywhere; "ab" shares a prefix with "a",
# "é" and "\u4e2d" are multi-byte, and duplicate hypotheses are frequent
WORDS = ["a", "b", "c", "ab", "é", "\u4e2d"]
sentence = st.lists(st.sampled_from(WORDS), max_size=12)
segment = st.tuples(st.lists(sentence, min_size=1, max_size=5), st.lists(sentence, max_size=4))
SEPARATORS = [" ", "  ", "\t", "\u3000", " \n "]  # Python whitespace, ASCII and wide


def _flatten(segments, sep=" "):
    hyps, refs, seg = [], [], []
    for s, (hs, rs) in enumerate(segments):
        hyps += [sep.join(h) for h in hs]
        seg += [s] * len(hs)
        refs.append([sep.join(r) for r in rs])
    return hyps, refs, seg


def _assert_equals_reference(got, segments, max_order, policy):
    row = 0
    for hs, rs in segments:
        for h in hs:
            m, t, c, r = ref_stats(h, rs, max_order + 1, policy)
            assert got.matches[row].tolist() == m
            assert got.totals[row].tolist() == t
            assert (got.hyp_len[row], got.ref_len[row]) == (c, r)
            row += 1


@pytest.mark.jit_free
@given(st.lists(segment, min_size=1, max_size=6), st.integers(1, 8),
       st.sampled_from(["closest", "shortest", "average"]), st.sampled_from(SEPARATORS))
def test_kernel_equals_counter_reference(segments, max_order, policy, sep):
    """Both kernels: text (strings, segment-local vocabulary) and ids (pre-tokenized lists)."""
    hyps, refs, seg = _flatten(segments, sep)
    text = kb.ngram_stats(hyps, refs, seg, max_order=max_order, ref_length=policy)
    _assert_equals_reference(text, segments, max_order, policy)
    tokens = kb.ngram_stats([list(h) for hs, _ in segments for h in hs], [[list(r) for r in rs] for _, rs in segments],
                            seg, max_order=max_order, ref_length=policy)
    _assert_equals_reference(tokens, segments, max_order, policy)


@pytest.mark.jit_free
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 4), st.integers(0, 3))
def test_thread_runs_and_sliced_inputs_do_not_change_statistics(segments, n_threads, skip):
    """Segments cut into 1-4 runs of about equal tokens (more runs than threads included), and
    Arrow arrays whose offsets do not start at 0, give the reference statistics."""
    hyps, refs, seg = _flatten(segments)
    seg_ptr = np.r_[0, np.cumsum([len(hs) for hs, _ in segments])].astype(np.int64)
    sliced = pa.array(["x y"] * skip + hyps)[skip:]
    flat_refs = pa.array(["x"] * skip + [r for rs in refs for r in rs])[skip:]
    ref_ptr = np.r_[0, np.cumsum([len(rs) for _, rs in segments])].astype(np.int64)
    m, t, c, r = text_kernel_stats(sliced, flat_refs, seg_ptr, ref_ptr, 5, codes.REF_CLOSEST, codes.RULES_NONE,
                                   n_threads)
    _assert_equals_reference(kb.BleuStats(m, t, c, r), segments, 4, "closest")
    enc = encode(sliced, pa.array(refs, pa.list_(pa.string())), seg_ptr, "none")
    arrays = (read_only(a) for a in (enc.tok, enc.hyp_ptr, enc.ref_tok, enc.ref_ptr, enc.seg_hyp_ptr,
                                     enc.seg_ref_ptr))  # as stats_from_encoded passes them
    m, t, c, r = kernels._ngram_stats(*arrays, 5, codes.REF_CLOSEST, n_threads)
    _assert_equals_reference(kb.BleuStats(m, t, c, r), segments, 4, "closest")


@given(st.lists(st.integers(0, 50), max_size=12), st.integers(0, 1000), st.integers(1, 6))
def test_thread_chunks_cover_the_segments_in_runs_of_about_equal_work(work, start, n_threads):
    work_ptr = start + np.r_[0, np.cumsum(work)].astype(np.int64)
    cut = kernels._thread_chunks(work_ptr, n_threads)
    n_seg = len(work)
    assert cut[0] == 0 and cut[-1] == n_seg and (np.diff(cut) >= 0).all()
    assert len(cut) - 1 == max(1, min(n_seg, n_threads))
    # no run does more than its share plus one segment
    share = sum(work) / (len(cut) - 1)
    for a, b in zip(cut[:-1], cut[1:]):
        assert work_ptr[b] - work_ptr[a] <= share + max(work, default=0)


def test_many_short_references():
    """More trie nodes touched by one hypothesis than the longest reference has n-grams."""
    refs = list("abcdefghij")
    got = kb.ngram_stats(["a b c d e f g h i j"], [refs], max_order=4)
    assert got.matches[0].tolist() == ref_stats(list("abcdefghij"), [[x] for x in refs], 5)[0]


@pytest.mark.jit_free
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
    """NUMBA_DISABLE_JIT=1 runs the same kernel code as Python and must give the same stats
    (text kernel with and without the 13a rules, id kernel on token lists)."""
    code = ("import kbest_bleu as kb, json; print(json.dumps([kb.ngram_stats(*a, **k).to_moses().tolist() "
            "for a, k in ARGS]))")
    args = [((["a b a b c", "c c", "", "a b a b c"], [["a b c a b", "b a"], []], [0, 0, 1, 1]), {}),
            ((["a, b. 3-4 (x)", "a , b ."], [["a , b . 3 - 4 ( x )"]], [0, 0]), {"tokenize": "13a"}),
            (([["a", "b", "a"], ["c"]], [[["a", "b"]]], [0, 0]), {})]
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code.replace("ARGS", repr(args))], env=env, capture_output=True,
                         text=True, check=True)
    jit = [kb.ngram_stats(*a, **k).to_moses().tolist() for a, k in args]
    assert json.loads(out.stdout) == jit


@given(st.lists(st.one_of(st.floats(allow_nan=True), st.sampled_from([0.0, 1.0])), min_size=1, max_size=30),
       st.randoms())
def test_segment_argmax_equals_slow_reference(values, rnd):
    from kbest_bleu.stats import segment_argmax
    cuts = sorted({0, len(values)} | {rnd.randrange(1, len(values) + 1) for _ in range(3)})
    ptr = np.array(cuts, np.int64)
    want = []
    for a, b in zip(ptr[:-1], ptr[1:]):
        key = [(-np.inf if np.isnan(v) else v) for v in values[a:b]]
        want.append(a + key.index(max(key)))  # first row of the largest (NaN counts as -inf)
    assert segment_argmax(np.array(values), ptr).tolist() == want


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


@pytest.mark.jit_free
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


# a K x R group for the pair kernel: its hypotheses and its references (0..4 each, empty strings
# and duplicates frequent)
pair_group = st.tuples(st.lists(sentence, max_size=4), st.lists(sentence, max_size=4))


def _rows(sentences, ids):
    """(token ids, row pointers) of ``sentences`` (lists of words) under the id map ``ids``."""
    tok = np.array([ids.setdefault(w, len(ids)) for s in sentences for w in s], np.int32)
    return tok, np.r_[0, np.cumsum([len(s) for s in sentences])].astype(np.int64)


@pytest.mark.jit_free
@given(st.lists(pair_group, min_size=1, max_size=5), st.integers(1, 6), st.booleans())
def test_rectangular_pair_stats_equal_the_reference_and_the_square_kernels_rows(groups, max_order, refs_first):
    """pair_stats with ref_ptr (the references' rows apart from the hypotheses', after or before
    them) gives each hypothesis against each reference of its group, reference-major, as the
    Counter reference does, and as the square kernel's rows of the same pairs in the union."""
    cfg = kb.BleuConfig.make(max_order=max_order)
    n_orders = counting_args(cfg)[0]
    hyps = [h for hs, _ in groups for h in hs]
    refs = [r for _, rs in groups for r in rs]
    group_ptr = np.r_[0, np.cumsum([len(hs) for hs, _ in groups])].astype(np.int64)
    ref_ptr = np.r_[0, np.cumsum([len(rs) for _, rs in groups])].astype(np.int64)
    if refs_first:
        tok, row_ptr = _rows(refs + hyps, {})
        group_ptr = group_ptr + len(refs)
    else:
        tok, row_ptr = _rows(hyps + refs, {})
        ref_ptr = ref_ptr + len(hyps)
    got = pair_stats(tok, row_ptr, group_ptr, cfg, ref_ptr=ref_ptr)
    union = [s for hs, rs in groups for s in hs + rs]
    square = pair_stats(*_rows(union, {}), np.r_[0, np.cumsum([len(h) + len(r) for h, r in groups])], cfg)
    row = square_start = 0
    for hs, rs in groups:
        size = len(hs) + len(rs)
        for j, r in enumerate(rs):
            for i, h in enumerate(hs):
                m, t, c, rl = ref_stats(h, [r], n_orders)
                kept = square_start + (len(hs) + j) * size + i  # reference len(hs) + j of the union, hypothesis i
                for stats_row, stats in ((row, got), (kept, square)):
                    assert stats.matches[stats_row].tolist() == m and stats.totals[stats_row].tolist() == t
                    assert (stats.hyp_len[stats_row], stats.ref_len[stats_row]) == (c, rl)
                row += 1
        square_start += size * size
    assert row == len(got.matches)


def test_rectangular_pair_stats_refuse_pointers_outside_the_rows():
    tok, row_ptr = np.array([0, 1, 0], np.int32), np.array([0, 1, 3], np.int64)
    with pytest.raises(kb.InputError, match=r"pair_stats: ref_ptr: expected non-decreasing row numbers within 0..2"):
        pair_stats(tok, row_ptr, [0, 1], kb.BleuConfig(), ref_ptr=[1, 3])
    with pytest.raises(kb.InputError, match=r"pair_stats: group_ptr: .* as many as group_ptr"):
        pair_stats(tok, row_ptr, [1, 0], kb.BleuConfig(), ref_ptr=[1, 2])
    with pytest.raises(kb.InputError, match=r"pair_stats: ref_ptr"):
        pair_stats(tok, row_ptr, [0, 1], kb.BleuConfig(), ref_ptr=[1, 2, 2])


_ONE_ROW = """
import json
import numpy as np, pyarrow as pa
import kbest_bleu as kb
import kbest_bleu.arrays
import kbest_bleu.encode
import kbest_bleu.token_ids
from kbest_bleu.counting import _kernels as text
from kbest_bleu.token_ids import token_ngram_stats
from kbest_bleu.token_ids._inputs import kernels
hyps, refs = pa.array(["the cat sat on the mat", "a dog"]), pa.array([["the cat sat on a mat"], ["a dog"]])
kb.stats.stats_from_text(hyps, refs, np.array([0, 1, 2]), kb.BleuConfig())
token_ngram_stats([[5, 6, 7, 6, 7], [1, 2]], [[6, 7, 6, 5], [1, 2]])
count = lambda: [len(text._text_run_stats.signatures), len(kernels().token_run.signatures),
                 len(text._ngram_stats.signatures)]
enc = kb.encode.encode(pa.array([["a", "b"]]), pa.array([[["a", "b", "c"]]]), np.array([0, 1]))
kb.stats.stats_from_encoded(enc, kb.BleuConfig())
before = count()
one = [kb.stats.stats_from_text(hyps[:1], refs[:1], np.array([0, 1]), kb.BleuConfig()),
       token_ngram_stats([[5, 6, 7, 6, 7]], [[6, 7, 6, 5]])]
# read-only inputs (a scorer's references, Arrow's views) and writable ones share the kernels too
frozen = [np.array(a) for a in ([[1, 2, 3]], [[1, 2]])]
for a in frozen:
    a.setflags(write=False)
token_ngram_stats(*frozen)
kb.token_ids.TokenBleuScorer([[6, 7, 6, 5]])([[5, 6, 7, 6, 7]])
flip = lambda a: a.copy() if not a.flags.writeable else kb.arrays.read_only(a)
kb.stats.stats_from_encoded(type(enc)(*(flip(getattr(enc, f)) for f in enc.__dataclass_fields__)), kb.BleuConfig())
print(json.dumps({"new": [a - b for a, b in zip(count(), before)],
                  "stats": [[s.matches[0].tolist(), s.totals[0].tolist(), int(s.hyp_len[0]), int(s.ref_len[0])]
                            for s in one],
                  "contiguous": [s.matches.flags.c_contiguous for s in one]}))
"""


def test_a_one_row_batch_takes_the_kernels_compiled_for_many_rows():
    """A batch of one row (a job's last batch, a reward call of one completion) has the output
    layout of many (stats.kernel_rows), and read-only inputs are read as writable ones (a
    scorer's references, Arrow's zero-copy ids): neither the text kernel nor the id kernels are
    compiled a second time (a fresh process: the suite's own calls would have compiled them), the
    row is counted as the Counter reference counts it, and its arrays are contiguous."""
    out = json.loads(subprocess.run([sys.executable, "-c", _ONE_ROW], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["new"] == [0, 0, 0] and out["contiguous"] == [True, True]
    want = [ref_stats("the cat sat on the mat".split(), ["the cat sat on a mat".split()], 5),
            ref_stats([5, 6, 7, 6, 7], [[6, 7, 6, 5]], 5)]
    assert out["stats"] == [[list(m), list(t), c, r] for m, t, c, r in want]


def test_sum_by_adds_the_totals_as_the_preset_does():
    """metaeval's corpus level per system sums with sum_by: under NLTK the totals add max(1, l_n)
    per sentence, as sum(config) (and NLTK's corpus_bleu) do."""
    cfg = kb.BleuConfig(compat="nltk", tokenize="none")
    stats = kb.ngram_stats(["the cat sat on the mat", "thank you", "a b", "a b c d e"],
                           [["the cat sat on the mat"], ["thank you"], ["a b"], ["a b c d"]], None, cfg)
    ptr = np.array([0, 2, 4])
    per = stats.sum_by(ptr, cfg)
    for g in range(2):
        one = stats[int(ptr[g]):int(ptr[g + 1])].sum(cfg)
        assert np.array_equal(per.totals[g], one.totals[0]) and np.array_equal(per.matches[g], one.matches[0])
        assert kb.corpus_score(per[g], cfg).score == kb.corpus_score(stats[int(ptr[g]):int(ptr[g + 1])], cfg).score
    assert kb.corpus_score(per[0], cfg).score == pytest.approx(0.8801117367933934, rel=1e-12)  # NLTK's corpus_bleu
