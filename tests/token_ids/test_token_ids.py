"""Token-id BLEU (kbest_bleu.token_ids): the statistics against the slow Counter reference on tiny
id ranges (clipping and overlaps), the scores against the text path scoring the same ids written
as tokens and against NLTK on integer lists; padding, input forms, groups, pairwise and
self-BLEU, the reusable scorer, bad input."""

import contextlib
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu

import kbest_bleu.token_ids as T
import kbest_bleu.token_ids._inputs as _inputs
from kbest_bleu import settings
from kbest_bleu.bleu import corpus_bleu, corpus_score, score_kbest
from kbest_bleu.config import BleuConfig
from kbest_bleu.errors import InputError
from kbest_bleu.stats import ngram_stats
from kbest_bleu.token_ids import (
    TokenBleuScorer,
    pairwise_token_bleu,
    segment_token_stats,
    self_token_bleu,
    token_bleu,
    token_ngram_stats,
    token_rows,
)

sys.path.insert(0, str(Path(__file__).parent.parent))
import reference as R  # noqa: E402

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
PAD = -7


def _text(row):
    return " ".join(str(int(t)) for t in row)


def _stats_rows(st_):
    return [(list(map(int, st_.matches[i])), list(map(int, st_.totals[i])), int(st_.hyp_len[i]),
             int(st_.ref_len[i])) for i in range(len(st_))]


@contextlib.contextmanager
def _mode(direct: bool):
    """The kernels' direct id table (small non-negative ids) or the hashed one (any ids)."""
    before = T._DIRECT_IDS, T._DIRECT_PER_ID
    T._DIRECT_IDS, T._DIRECT_PER_ID = (1 << 16, 8) if direct else (0, 0)
    try:
        yield
    finally:
        T._DIRECT_IDS, T._DIRECT_PER_ID = before


# --- statistics against the Counter reference ------------------------------------------------

ROW = st.lists(st.integers(0, 3), max_size=10)
TABLE = st.integers(1, 4).flatmap(lambda g: st.tuples(
    st.just(g),
    st.integers(1, 4).flatmap(lambda s: st.tuples(
        st.lists(ROW, min_size=g * s, max_size=g * s),
        st.lists(st.lists(ROW, max_size=3), min_size=s, max_size=s)))))


@pytest.mark.jit_free
@given(TABLE, st.sampled_from(["closest", "shortest", "average"]), st.booleans(),
       st.sampled_from([0, 1 << 40, I64_MIN, I64_MAX - 3, -2]))
def test_stats_equal_reference(table, ref_length, direct, offset):
    g, (hyps, refs) = table
    hyps = [[t + offset for t in h] for h in hyps]
    refs = [[[t + offset for t in r] for r in e] for e in refs]
    with _mode(direct):
        got = token_ngram_stats(hyps, refs, groups=g, ref_length=ref_length)
    want = [R.stats(h, refs[i // g], got.max_order + 1, ref_length) for i, h in enumerate(hyps)]
    assert _stats_rows(got) == [(m, t, c, r) for m, t, c, r in want]


@pytest.mark.jit_free
@given(st.integers(1, 4).flatmap(lambda g: st.tuples(st.just(g), st.lists(ROW, min_size=g, max_size=3 * g))))
def test_group_statistics_equal_reference(table):
    """Pairwise rows: hypothesis i against hypothesis j alone; self rows: i against the others."""
    g, hyps = table
    hyps = hyps[:len(hyps) // g * g]
    cfg = BleuConfig(tokenize="none")
    pairs, _ = T._group_stats(hyps, g, None, cfg, pairs=True)
    rest, _ = T._group_stats(hyps, g, None, cfg, pairs=False)
    n = cfg.max_order
    for k in range(len(hyps) // g):
        for i in range(g):
            h = hyps[k * g + i]
            m, t, c, r = R.stats(h, [x for j, x in enumerate(hyps[k * g:(k + 1) * g]) if j != i], n)
            assert (list(rest.matches[k * g + i, :n]), int(rest.ref_len[k * g + i])) == (m, r)
            for j in range(g):
                m, t, c, r = R.stats(h, [hyps[k * g + j]], n)
                row = k * g * g + j * g + i
                assert (list(pairs.matches[row, :n]), list(pairs.totals[row, :n]), int(pairs.ref_len[row])) == (
                    m, t, r)


@pytest.mark.jit_free
@given(st.lists(st.integers(0, 2), min_size=59, max_size=69), st.integers(1, 3), st.booleans(), st.data())
def test_one_reference_at_the_position_set_limit_equals_reference(ref, g, direct, data):
    """A segment of one reference of up to 64 ids is matched on position sets (the 64 bits of one
    word, the sign bit too; by id with the direct table, by local id with the hashed one), a longer one on
    the trie: both equal the Counter reference on either side of the limit, with three ids
    (every n-gram repeats, clipping everywhere)."""
    hyps = data.draw(st.lists(st.lists(st.integers(0, 3), max_size=70), min_size=g, max_size=g))
    cut = data.draw(st.sampled_from([0, 1, 63, 64, 65, len(ref)]))
    with _mode(direct):
        got = token_ngram_stats(hyps, [[ref[:cut]]], groups=g, max_order=5)
    want = [R.stats(h, [ref[:cut]], got.max_order + 1) for h in hyps]
    assert _stats_rows(got) == [(m, t, c, r) for m, t, c, r in want]


@pytest.mark.parametrize("length", [62, 63, 64, 65])
@pytest.mark.parametrize("max_order", [3, 6, 9])
def test_repeated_ids_at_the_position_set_limit_equal_reference(length, max_order):
    """Every position of the reference in the sets (one id repeated, two alternating) on either
    side of the 64-id limit: the word's top (sign) bit, and an n-gram running past the reference's end;
    counted to orders 4, 7 and 10 (one, two and three blocks of four orders)."""
    hyps = [[1] * 70, [1] * length, [1, 2] * 35, [2, 1] * 33, [], [5, 1, 1]]
    for ref, direct in itertools.product(([1] * length, ([1, 2] * 40)[:length], [2] + [1] * (length - 1)),
                                         (True, False)):
        with _mode(direct):
            got = token_ngram_stats(hyps, [[ref]], groups=len(hyps), max_order=max_order)
        want = [R.stats(h, [ref], got.max_order + 1) for h in hyps]
        assert _stats_rows(got) == [(m, t, c, r) for m, t, c, r in want]


def test_long_rows_and_many_threads(monkeypatch):
    """Runs handed to a thread pool equal one run on the calling thread; long rows, repeated ids."""
    rng = np.random.default_rng(5)
    hyp = rng.integers(0, 50, (40, 300))
    ref = np.where(rng.random((40, 300)) < 0.7, hyp, rng.integers(0, 50, (40, 300)))
    one = token_ngram_stats(hyp, ref)
    monkeypatch.setattr(settings, "TOKEN_PARALLEL_IDS", 0)

    @contextlib.contextmanager
    def three(_n):
        yield 3
    monkeypatch.setattr(T, "threads_for", three)
    many = token_ngram_stats(hyp, ref)
    assert _stats_rows(many) == _stats_rows(one)
    want = [R.stats(list(hyp[i]), [list(ref[i])], 5) for i in (0, 17, 39)]
    assert [_stats_rows(one)[i] for i in (0, 17, 39)] == [tuple(w) for w in want]


# --- scores: the text path and NLTK -----------------------------------------------------------

PRESETS = ([dict(compat="sacrebleu", smoothing=s) for s in range(8)]
           + [dict(compat="nltk", smoothing=s) for s in range(8)] + [dict(compat="nltk", auto_reweigh=True)]
           + [dict(compat="mteval", smoothing=s) for s in (0, 3)]
           + [dict(compat="moses"), dict(compat="moses", smooth_bp=True, add_k=0.5)]
           + [dict(compat="sacrebleu", max_order=2, weights=(0.3, 0.7)), dict(ref_length="shortest"),
              dict(compat="moses", ref_length="average"), dict(compat="sacrebleu", smoothing=6,
                                                               smoothing6_variant="from-bigram")])


def _random_table(seed, n_seg=12, g=3):
    rng = np.random.default_rng(seed)
    hyps = [list(rng.integers(-3, 6, rng.integers(0, 9))) for _ in range(n_seg * g)]
    refs = [[list(rng.integers(-3, 6, rng.integers(0, 9))) for _ in range(rng.integers(1, 4))]
            for _ in range(n_seg)]
    return hyps, refs, g


@pytest.mark.parametrize("options", PRESETS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_scores_equal_text_path(options):
    hyps, refs, g = _random_table(1)
    got = token_bleu(hyps, refs, groups=g, **options)
    seg = np.repeat(np.arange(len(refs)), g)
    want = score_kbest([_text(h) for h in hyps], [[_text(r) for r in e] for e in refs], seg, tokenize="none",
                       **options)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all() and got.dtype == np.float64
    got32 = token_bleu(hyps, refs, groups=g, dtype=np.float32, **options)
    assert got32.dtype == np.float32 and np.array_equal(got32, want.astype(np.float32))


@pytest.mark.parametrize("method", range(8))
def test_nltk_preset_equals_nltk_on_integer_lists(method):
    rng = np.random.default_rng(method)
    fn = getattr(SmoothingFunction(), f"method{method}")
    hyps, refs = [], []
    for _ in range(30):
        ref = [int(t) for t in rng.integers(0, 8, rng.integers(4, 14))]
        hyp = [t if rng.random() < 0.7 else int(rng.integers(0, 8)) for t in ref[:int(rng.integers(4, len(ref) + 1))]]
        hyps.append(hyp)
        refs.append([ref, [int(t) for t in rng.integers(0, 8, rng.integers(4, 10))]])
    want = []
    for h, r in zip(hyps, refs):
        try:
            want.append(nltk_sentence_bleu(r, h, smoothing_function=fn))
        except (AssertionError, ZeroDivisionError):  # method 6 asserts without a trigram match
            want.append(math.nan)
    got = token_bleu(hyps, refs, compat="nltk", smoothing=method)
    ok = ~np.isnan(want)
    assert ok.sum() >= 10
    np.testing.assert_allclose(got[ok], np.array(want)[ok], rtol=1e-12, atol=1e-300)


def test_corpus_score_of_token_stats_equals_text_corpus_bleu():
    hyps, refs, _ = _random_table(2, n_seg=20, g=1)
    refs = [e[0] for e in refs]
    got = corpus_score(token_ngram_stats(hyps, refs), tokenize="none")
    want = corpus_bleu([_text(h) for h in hyps], [[_text(r)] for r in refs], tokenize="none")
    assert (got.score, got.precisions, got.hyp_len, got.ref_len) == (want.score, want.precisions, want.hyp_len,
                                                                     want.ref_len)
    assert got.signature == want.signature


def test_moses_example_by_hand():
    """BLEU+1 of [5 6 9] against [5 6 7 8]: p = 3/4, 2/3, 1/2, 1/1, BP = exp(1 - 4/3)."""
    got = token_bleu([[5, 6, 7, 8, 0], [5, 6, 9, 0, 0]], [[5, 6, 7, 8]], pad_id=0, groups=2, compat="moses")
    assert got[0] == 1.0
    assert got[1] == pytest.approx((0.75 * 2 / 3 * 0.5) ** 0.25 * math.exp(1 - 4 / 3), rel=1e-14)


# --- padding and ids -----------------------------------------------------------------------------

@given(st.lists(st.lists(st.integers(0, 3), max_size=8), min_size=1, max_size=6), st.data())
def test_pad_anywhere_is_dropped(rows, data):
    """Trailing, leading and inner pad ids: each row scores as its other ids."""
    width = max(map(len, rows)) + 3
    padded = np.full((len(rows), width), PAD, np.int64)
    for i, r in enumerate(rows):
        where = sorted(data.draw(st.lists(st.integers(0, width - 1), min_size=len(r), max_size=len(r),
                                          unique=True)))
        padded[i, where] = r
    ref = [rows[(i + 1) % len(rows)] for i in range(len(rows))]
    ref_padded = np.full((len(rows), width), PAD, np.int64)
    for i, r in enumerate(ref):
        ref_padded[i, :len(r)] = r
    want = token_ngram_stats(rows, ref)
    assert _stats_rows(token_ngram_stats(padded, ref_padded, pad_id=PAD)) == _stats_rows(want)
    ids, ptr = token_rows(padded, PAD)
    assert [list(ids[ptr[i]:ptr[i + 1]]) for i in range(len(rows))] == rows


@pytest.mark.jit_free
@given(st.integers(1, 3), st.integers(0, 4), st.integers(0, 6), st.sampled_from(["int8", "int64", "uint64"]),
       st.sampled_from(["int8", "int64", "uint64"]), st.booleans(), st.sampled_from([None, 0, 1, 3]), st.data())
def test_reward_shape_in_one_call_equals_the_forms_apart(g, n_refs, width, dtype, ref_dtype, grouped, per_entry, data):
    """2-D hypotheses and 2-D references (one per row or group) or 3-D ones (``per_entry`` each,
    an all-pad one absent) with a pad id take one kernel call (``_inputs.batch_inputs``): the same
    CSR rows, segment table and reference id range as ``rows``, ``reference_rows`` and
    ``segment_table`` make apart, with pad ids anywhere, rows all padding, ids at the dtype's
    limits, uint64 read as int64."""
    g = g if grouped else 1

    def values(dt):
        return [int(np.iinfo(dt).min), int(np.iinfo(dt).max), 0, 1, 2]

    def array(shape, dt):
        size = int(np.prod(shape))
        return np.array(data.draw(st.lists(st.sampled_from(values(dt)), min_size=size, max_size=size)),
                        dt).reshape(shape)
    hyp = array((n_refs * g, width), dtype)
    ref = array((n_refs, width) if per_entry is None else (n_refs, per_entry, width), ref_dtype)
    pad = data.draw(st.sampled_from(values(dtype) + values(ref_dtype)))
    hyp_rows, ref_rows, segs, ref_range = _inputs.batch_inputs(hyp, ref, pad, g if grouped else None)
    want_hyp = token_rows(hyp, pad)
    ids, ptr, entry_ptr = _inputs.reference_rows(ref, pad)
    want_segs = _inputs.segment_table(len(hyp), entry_ptr, g if grouped else None, None, "")
    for got, want in zip((*hyp_rows, *ref_rows, segs), (*want_hyp, ids, ptr, want_segs)):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    # the range comes from the one call (the forms apart, which a pad outside a dtype takes, leave it to the counting)
    one_call = all(np.iinfo(d).min <= pad <= np.iinfo(d).max for d in (dtype, ref_dtype))
    assert ref_range == ((int(ids.min()), int(ids.max())) if ids.size and one_call else None)


def test_no_pad_id_counts_every_id_and_out_of_range_pad():
    x = np.array([[1, 2, 0, 0]], np.uint8)
    assert list(token_rows(x)[0]) == [1, 2, 0, 0]
    assert list(token_rows(x, pad_id=0)[0]) == [1, 2]
    assert list(token_rows(x, pad_id=-100)[0]) == [1, 2, 0, 0]  # no uint8 is -100


def test_ids_near_int64_limits_and_uint64():
    hyp = np.array([[I64_MAX, I64_MIN, 5, I64_MAX]], np.int64)
    ref = np.array([[I64_MIN, 5, I64_MAX, 1]], np.int64)
    st_ = token_ngram_stats(hyp, ref)
    assert list(st_.matches[0, :4]) == [3, 2, 1, 0]  # (MIN 5 MAX) is the one common trigram
    u = hyp.view(np.uint64)  # the same bits as uint64: the same equalities
    assert _stats_rows(token_ngram_stats(u, ref.view(np.uint64))) == _stats_rows(st_)
    assert list(token_rows(u, pad_id=(1 << 64) - 1)[0]) == [I64_MAX, I64_MIN, 5, I64_MAX]
    assert list(token_rows(np.array([[1, -1]], np.int64).view(np.uint64), pad_id=(1 << 64) - 1)[0]) == [1]
    # 2**64 - 1 is a uint64's pad only: beside signed ids it occurs nowhere (it dropped every -1)
    for signed in (np.array([[1, -1]], np.int8), [[1, -1]], pa.array([[1, -1]], pa.list_(pa.int32()))):
        assert list(token_rows(signed, pad_id=(1 << 64) - 1)[0]) == [1, -1]
    assert list(token_rows(pa.array([[1, (1 << 64) - 1]], pa.list_(pa.uint64())), pad_id=(1 << 64) - 1)[0]) == [1]
    # an empty float32 row (torch.tensor([])) beside int64 rows made them float64: 2**62 + 1 read as 2**62
    for empty in (np.array([], np.float32), np.array([], np.uint64)):
        assert token_rows([np.array([(1 << 62) + 1, 5]), empty], pad_id=0)[0].tolist() == [(1 << 62) + 1, 5]


@pytest.mark.parametrize("dtype", [">i8", ">u8", ">i4", ">u4", ">i2"])
def test_big_endian_ids_are_read_by_value(dtype):
    """Bytes in the other order were read as other ids (a '>u8' 1 as 2**56) or failed in numba."""
    hyp, ref = np.array([[1, 2, 3, 4, 0]], dtype), np.array([[1, 2, 3, 0, 0]], dtype)
    native = hyp.astype(hyp.dtype.newbyteorder("=")), ref.astype(ref.dtype.newbyteorder("="))
    assert list(token_rows(hyp)[0]) == [1, 2, 3, 4, 0]
    for pad in (None, 0):
        np.testing.assert_array_equal(token_bleu(hyp, ref, pad_id=pad), token_bleu(*native, pad_id=pad))
    assert token_bleu(hyp[:, :3], ref[:, :3])[0] == 1.0


def test_empty_rows_and_batches():
    got = token_bleu([[], [1, 2]], [[], [1, 2]])
    assert got[1] == 1.0 and np.isfinite(got).all()
    assert token_bleu(np.zeros((0, 5), np.int64), np.zeros((0, 5), np.int64)).shape == (0,)
    assert token_bleu([], []).shape == (0,)
    assert token_bleu(np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64)).tolist() == [0.0, 0.0]


# --- input forms --------------------------------------------------------------------------------

class DLPackOnly:
    """A tensor-like object with only __dlpack__/__dlpack_device__ (as a CPU torch tensor exposes)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayOnly:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class GPUTensor:
    """A tensor on another device: DLPack export fails and there is no __array__."""

    def __dlpack__(self, **kwargs):
        raise BufferError("device memory")

    def __dlpack_device__(self):
        return (2, 0)


def _forms(rows, pad):
    width = max(map(len, rows)) + 1
    a = np.full((len(rows), width), pad, np.int32)
    for i, r in enumerate(rows):
        a[i, :len(r)] = r
    return {
        "int32": a, "int64": a.astype(np.int64), "fortran": np.asfortranarray(a), "dlpack": DLPackOnly(a),
        "array": ArrayOnly(a), "lists": [list(r) for r in rows], "tuples": tuple(tuple(r) for r in rows),
        "numpy_rows": [np.array(r, np.int16) for r in rows], "object": np.array([np.array(r) for r in rows] + [None],
                                                                                dtype=object)[:-1],
        "arrow32": pa.array(rows, pa.list_(pa.int32())), "arrow64_large": pa.array(rows, pa.large_list(pa.int64())),
        "arrow_chunked": pa.chunked_array([pa.array(rows[:1], pa.list_(pa.int64())),
                                           pa.array(rows[1:], pa.list_(pa.int64()))]),
        "arrow_sliced": pa.array([[9, 9]] + rows, pa.list_(pa.int64())).slice(1),
    }


def test_every_input_form_scores_alike():
    rows = [[1, 2, 3, 4], [2, 3], [4, 4, 4, 1, 2]]
    refs = [[1, 2, 3], [2, 3, 4], [4, 4, 1, 2]]
    want = token_bleu(rows, refs, compat="moses")
    ref_forms = _forms(refs, PAD)
    for name, form in _forms(rows, PAD).items():
        for ref_name in ("lists", "int64", "arrow32", "dlpack"):
            got = token_bleu(form, ref_forms[ref_name], pad_id=PAD, compat="moses")
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {ref_name}")
    strided = np.full((3, 12), PAD, np.int64)
    strided[0, :8:2], strided[1, :4:2], strided[2, :10:2] = rows
    np.testing.assert_array_equal(token_bleu(DLPackOnly(strided[:, ::2]), refs, pad_id=PAD, compat="moses"), want)


def test_reference_forms_several_per_entry():
    hyps = [[1, 2, 3, 4], [5, 6]]
    nested = [[[1, 2, 3, 4], [9]], [[5, 6, 7]]]
    want = token_bleu(hyps, nested)
    dense = np.full((2, 2, 5), PAD, np.int64)  # the second entry's second reference is all pad: absent
    dense[0, 0, :4], dense[0, 1, :1], dense[1, 0, :3] = [1, 2, 3, 4], [9], [5, 6, 7]
    np.testing.assert_array_equal(token_bleu(hyps, dense, pad_id=PAD), want)
    assert token_ngram_stats(hyps, dense, pad_id=PAD).ref_len.tolist() == [4, 3]
    np.testing.assert_array_equal(token_bleu(hyps, pa.array(nested, pa.list_(pa.list_(pa.int64())))), want)
    np.testing.assert_array_equal(token_bleu(hyps, [np.array(e[0])[None] if len(e) == 1 else
                                                    [np.array(x) for x in e] for e in nested]), want)
    # an all-pad reference is absent in every form (lists and Arrow read it as a reference of length 0,
    # so the brevity penalty of a short hypothesis was 1; sacrebleu: 0.26359714 against the other alone)
    short, text = [[1, 2, 3]], score_kbest(["1 2 3"], [["1 2 3 4 5 6 7"]], tokenize="none")
    entry = [[1, 2, 3, 4, 5, 6, 7], [PAD] * 7]
    for form in (np.array([entry]), [entry], pa.array([entry]), [np.array(entry)], [[np.array(r) for r in entry]]):
        np.testing.assert_array_equal(token_bleu(short, form, pad_id=PAD), text)
    # a reference given empty is a reference of length 0, as "" in the text path
    np.testing.assert_array_equal(token_bleu(short, [[[1, 2, 3, 4, 5, 6, 7], []]], pad_id=PAD),
                                  score_kbest(["1 2 3"], [["1 2 3 4 5 6 7", ""]], tokenize="none"))
    # no reference at all: scored as the text path scores it
    none = token_bleu([[1, 2]], [[]], compat="moses")
    assert none.tolist() == score_kbest(["1 2"], [[]], tokenize="none", compat="moses").tolist()


def test_groups_sizes_and_pointers():
    hyps = [[1, 2, 3], [1, 2], [3, 4], [4], [4, 5, 6]]
    refs = [[1, 2, 3], [4, 5, 6]]
    ptr = [0, 2, 5]
    got = token_bleu(hyps, refs, groups=ptr)
    want = token_bleu(hyps, [refs[0], refs[0], refs[1], refs[1], refs[1]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(token_bleu(hyps[:4], refs, groups=2), want[:4])
    np.testing.assert_array_equal(token_bleu(hyps, refs, groups=np.array(ptr, np.uint8)), want)
    # pointers that are not integers were truncated ([0, 2.9, 5] read as [0, 2, 5]) or raised numpy's errors
    for bad in ([0, 2.9, 5], np.array([0.0, 2, 5]), ["0", "2", "5"], [0, 1 << 70, 5], [True, True]):
        with pytest.raises(InputError, match="row pointers"):
            token_bleu(hyps, refs, groups=bad)
    for bad in (None, "0 2 5", [0, 1.5, 5]):
        with pytest.raises(InputError, match="group pointers"):
            segment_token_stats(hyps, refs, bad)


def test_segment_stats_as_the_batch_job_counts():
    """Arrow columns, references per segment or repeated per row, several configs sharing a count."""
    hyps, refs, g = _random_table(6, n_seg=5, g=3)
    seg_ptr = np.arange(0, 16, 3)
    configs = (BleuConfig(tokenize="none"), BleuConfig(compat="nltk", smoothing=5, max_order=2, tokenize="none"))
    want = ngram_stats([_text(h) for h in hyps], [[_text(r) for r in e] for e in refs], np.repeat(np.arange(5), 3),
                       configs[0].make(configs[0], max_order=4))
    hyp_col = pa.array(hyps, pa.list_(pa.int32()))
    per_seg = pa.array(refs, pa.list_(pa.list_(pa.int64())))
    per_row = pa.array([refs[i // g] for i in range(len(hyps))], pa.list_(pa.list_(pa.int32())))
    for ref_col in (per_seg, per_row):
        got = segment_token_stats(hyp_col, ref_col, seg_ptr, *configs)
        assert got.max_order == 4 and _stats_rows(got) == _stats_rows(want)
    changed = [refs[i // g] for i in range(len(hyps))]
    changed[7] = changed[7][:-1] + [changed[7][-1] + [9]]
    with pytest.raises(InputError, match="row 107 has references different from row 106"):
        segment_token_stats(hyp_col, changed, seg_ptr, row_offset=100)


# --- scorer, pairwise, self-BLEU ----------------------------------------------------------------

def test_scorer_keeps_its_references_when_the_callers_array_changes():
    """The scorer viewed a C-contiguous int64 array: changed afterwards, it scored against the new
    ids, or past its id table (a segmentation fault)."""
    refs = np.array([[1, 2, 3, 4]])
    scorer = TokenBleuScorer(refs, compat="moses")
    refs[0] = 10 ** 9
    assert scorer(np.array([[1, 2, 3, 4]]))[0] == 1.0
    assert scorer(np.array([[10 ** 9] * 4]))[0] == token_bleu([[10 ** 9] * 4], [[1, 2, 3, 4]], compat="moses")[0]


def test_scorer_equals_token_bleu():
    hyps, refs, g = _random_table(3, n_seg=6, g=2)
    scorer = TokenBleuScorer(refs, compat="moses")
    assert len(scorer) == 6
    np.testing.assert_array_equal(scorer(hyps, groups=g), token_bleu(hyps, refs, groups=g, compat="moses"))
    idx = np.array([5, 0, 0, 2])
    got = scorer(hyps[:4], index=idx)
    np.testing.assert_array_equal(got, token_bleu(hyps[:4], [refs[i] for i in idx], compat="moses"))
    assert _stats_rows(scorer.stats(hyps[:4], index=idx)) == _stats_rows(
        token_ngram_stats(hyps[:4], [refs[i] for i in idx]))
    assert TokenBleuScorer(refs, dtype=np.float32)(hyps[:6]).dtype == np.float32


def test_scorer_with_many_references_scores_a_small_batch_on_the_calling_thread(monkeypatch):
    """A scorer holding many references (36,000 ids, small non-negative: the direct id table)
    scores a small batch against some of them (index=) as token_bleu does on those references
    alone, and on the calling thread: the choice counts the ids the batch's segments read, not
    every reference the scorer holds."""
    rng = np.random.default_rng(7)
    refs = rng.integers(1, 40, (3000, 12))
    idx = rng.integers(0, 3000, 8)
    hyps = np.where(rng.random((8, 12)) < 0.6, refs[idx], rng.integers(1, 40, (8, 12)))
    hyps[:, -3:] = 0  # right padding
    scorer = TokenBleuScorer(refs, pad_id=0, compat="moses")
    monkeypatch.setattr(T, "_pool", lambda n: pytest.fail("a batch of 96 ids went to the thread pool"))
    got = scorer(hyps, index=idx)
    np.testing.assert_array_equal(got, token_bleu(hyps, refs[idx], pad_id=0, compat="moses"))
    stats = scorer.stats(hyps, index=idx)
    want = [R.stats(list(hyps[i, :9]), [list(refs[idx[i]])], 5) for i in range(8)]
    assert _stats_rows(stats) == [tuple(w) for w in want]


def test_pairwise_and_self_bleu_equal_token_bleu():
    hyps, _, _ = _random_table(4, n_seg=1, g=8)
    hyps = [h for h in hyps]
    got = pairwise_token_bleu(hyps, groups=4, compat="moses")
    assert got.shape == (2, 4, 4)
    for k in range(2):
        for i in range(4):
            for j in range(4):
                assert got[k, i, j] == token_bleu([hyps[4 * k + i]], [hyps[4 * k + j]], compat="moses")[0]
    ragged = pairwise_token_bleu(hyps, groups=[0, 3, 8], compat="moses")
    assert [m.shape for m in ragged] == [(3, 3), (5, 5)]
    assert ragged[1][4, 0] == token_bleu([hyps[7]], [hyps[3]], compat="moses")[0]
    sb = self_token_bleu(hyps, groups=4)
    for i in range(8):
        k = i // 4
        others = [hyps[4 * k + j] for j in range(4) if 4 * k + j != i]
        assert sb[i] == token_bleu([hyps[i]], [others])[0]


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: token_bleu(np.ones((2, 3), np.float32), [[1], [2]]),
    lambda: token_bleu(np.ones((2, 3), bool), [[1], [2]]),
    lambda: token_bleu([[1, 2.5]], [[1]]),
    lambda: token_bleu([["a"]], [[1]]),
    lambda: token_bleu([[1 << 64]], [[1]]),
    lambda: token_bleu([np.array([1, 2]), [(1 << 64) - 1]], [[1], [1]]),  # a list beside arrays: read as -1
    lambda: token_bleu([[1]], [[1.0]]),
    lambda: token_bleu(np.ones((2, 3, 4), np.int64), [[1], [2]]),
    lambda: token_bleu([[1]], [[1], [2]]),
    lambda: token_bleu([[1], [2], [3]], [[1]], groups=2),
    lambda: token_bleu([[1], [2]], [[1]], groups=[0, 1]),
    lambda: token_bleu([[1]], [[1]], pad_id=1.5),
    lambda: token_bleu([[1]], [[1]], pad_id=True),
    lambda: token_bleu([[1]], [[1]], tokenize="13a"),
    lambda: token_bleu([[1]], [[1]], lowercase=True),
    lambda: token_bleu([[1]], [[1]], dtype=np.int32),
    lambda: token_bleu([[1]], [[1]], config="moses"),
    lambda: token_bleu(pa.array([[1], None], pa.list_(pa.int64())), [[1], [1]]),
    lambda: token_bleu(pa.array([[1, None]], pa.list_(pa.int64())), [[1]]),
    lambda: token_bleu(pa.array(["a"]), [[1]]),
    lambda: token_bleu(GPUTensor(), [[1]]),
    lambda: token_bleu("1 2 3", [[1]]),
    lambda: token_bleu([[1]], {"a": 1}),
    lambda: TokenBleuScorer([[1]])([[1]], index=[3]),
    lambda: pairwise_token_bleu([[1]], groups=None),
    lambda: token_bleu([[1]], [[1]], dtype="nope"),  # (numpy's float64 dtype equals None: it was taken)
    lambda: token_bleu(pa.table({"a": [[1]]}), [[1]]),  # an Arrow table, not its column
    lambda: token_bleu([[1]], pa.scalar([1, 2])),
    lambda: token_bleu([[1, 1, 0, 0, 0, 0]], [[0]], smoothing=7, k=1e-300),  # overflows: no inf score
])
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError) as exc:
        call()
    assert "\n" not in str(exc.value)


def test_hypotheses_are_checked_before_references():
    """The one-call path read the references before a 3-D array of hypotheses was refused: a
    reference that could not be read was named instead (as before it, the hypotheses come first)."""
    with pytest.raises(InputError, match="hypotheses: expected a 2-D array"):
        token_bleu(np.zeros((1, 2, 4), np.int64), GPUTensor(), pad_id=0)
    with pytest.raises(InputError, match="references: could not read the GPUTensor"):
        token_bleu(np.zeros((1, 4), np.int64), GPUTensor(), pad_id=0)


def test_config_object_is_read_as_tokens():
    cfg = BleuConfig(compat="moses")  # tokenize 13a by default: ids need none, the signature says so
    assert T._config(cfg, {}).tokenize == "none"
    np.testing.assert_array_equal(token_bleu([[1, 2]], [[1, 2, 3]], config=cfg),
                                  token_bleu([[1, 2]], [[1, 2, 3]], compat="moses"))


def test_zero_entries_or_zero_references_in_a_3d_array():
    """A (entries, 0, length) array is entries without references (scored as the text path scores
    a hypothesis without any); (0, R, length) is no entry at all."""
    got = token_ngram_stats([[1, 2, 3], [4]], np.zeros((2, 0, 5), np.int64), pad_id=0)
    assert _stats_rows(got) == [R.stats(h, [], got.max_order + 1) for h in ([1, 2, 3], [4])]
    assert len(token_ngram_stats(np.zeros((0, 4), np.int64), np.zeros((0, 3, 4), np.int64), pad_id=0)) == 0
