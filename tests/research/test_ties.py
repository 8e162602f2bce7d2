"""Kendall variants with ties and tie calibration (kbest_bleu.research.ties).

Oracles: the inputs and expected values of google-research/mt-metrics-eval's own unit tests
(mt_metrics_eval/stats_test.py, tau_optimization_test.py; transcribed, cited per test), scipy's
kendalltau where a variant coincides (b, c), and a slow pair-by-pair transcription of
tau_optimization's definition (below) on random data with ties."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from kbest_bleu.errors import InputError
from kbest_bleu.research.ties import (as_matrix, kendall_variants, kendall_with_ties_opt, optimize_tie_threshold,
                                      pair_set, preference_pairs)

# --- slow references: every pair, every threshold ---------------------------------------------


def _rows(h, m, average_by):
    h, m = np.asarray(h, float), np.asarray(m, float)
    if average_by == "none":
        return [(h.ravel(), m.ravel())]
    if average_by == "item":
        h, m = h.T, m.T
    return list(zip(h, m))


def _stats(hs, ms, eps):
    """(C, D, T_h, T_m, T_hm) over all pairs of one group, cells with a NaN dropped."""
    cells = [(a, b) for a, b in zip(hs, ms) if not (math.isnan(a) or math.isnan(b))]
    c = d = th = tm = thm = 0
    for (h1, m1), (h2, m2) in itertools.combinations(cells, 2):
        htie, mtie = h1 == h2, abs(m1 - m2) <= eps
        if htie and mtie:
            thm += 1
        elif htie:
            th += 1
        elif mtie:
            tm += 1
        elif (h1 - h2) * (m1 - m2) > 0:
            c += 1
        else:
            d += 1
    return c, d, th, tm, thm


def slow_acc23(h, m, eps, average_by):
    vals = []
    for hs, ms in _rows(h, m, average_by):
        c, d, th, tm, thm = _stats(hs, ms, eps)
        n = c + d + th + tm + thm
        if n:
            vals.append((c + thm) / n)
    return sum(vals) / len(vals)


def slow_opt(h, m, average_by):
    """tau_optimization: candidates 0 and every pair's |m_i - m_j|; first maximum."""
    diffs = {0.0}
    for hs, ms in _rows(h, m, average_by):
        cells = [b for a, b in zip(hs, ms) if not (math.isnan(a) or math.isnan(b))]
        diffs.update(abs(x - y) for x, y in itertools.combinations(cells, 2))
    thresholds = sorted(diffs)
    values = [slow_acc23(h, m, t, average_by) for t in thresholds]
    best = max(values)
    i = next(i for i, v in enumerate(values) if v >= best - 1e-12)
    return thresholds[i], values[i], thresholds, values


# --- mt-metrics-eval's unit tests, transcribed -------------------------------------------------


def test_stats_test_kendall_variants():
    # stats_test.py CorrelationTest.testKendallVariants
    g, m = as_matrix([1, 2, 2, 3, 4], 1), as_matrix([2, 1, 1.5, 5, 3], 1)
    assert kendall_variants(g, m, "b") == pytest.approx(0.316227766)
    assert kendall_variants(g, m, "c") == pytest.approx(0.32, abs=1e-15)
    assert kendall_variants(g, m, "23") == pytest.approx(0.2, abs=1e-15)
    assert kendall_variants(g, m, "acc23") == pytest.approx(0.6, abs=1e-15)
    assert kendall_variants(g, m, "acc23", epsilon=2) == pytest.approx(0.4, abs=1e-15)
    # stats_test.py CorrelationTest.testKendallWithTiesOpt
    assert kendall_with_ties_opt(g, m, average_by="none").value == pytest.approx(0.7, abs=1e-15)


def test_stats_test_kendall_b_c_averaged_like_scipy():
    # stats_test.py CorrelationTest.testKendall / testKendallC (3 decimals there; scipy exact here)
    g, m = as_matrix([1, 2, 3, 4, 5, 6], 2), as_matrix([2, 1, 4, 3, 3, 7], 2)
    expected = {"b": (0.552, 0.575, 1.0), "c": (0.556, 0.611, 1.0)}
    for variant, values in expected.items():
        for avg, want in zip(("none", "sys", "item"), values):
            got = kendall_variants(g, m, variant, average_by=avg)
            assert got == pytest.approx(want, abs=5e-4)
            rows = _rows(g, m, avg)
            ref = np.mean([scipy.stats.kendalltau(a, b, variant=variant)[0] for a, b in rows])
            assert got == pytest.approx(ref, abs=1e-12)


def test_stats_test_variants_23_counts():
    # stats_test.py CorrelationFunctionsTest.testKendallVariants_23 and ..WithPositiveEpsilon
    # (KendallVariants(x, y): x is the gold side)
    x, y = as_matrix([1, 1, 1, 2, 2, 3, 4], 1), as_matrix([1, 1, 2, 2, 4, 3, 3], 1)
    n, ties_both, ties_x_only, ties_y_only, dis = 21, 1, 3, 2, 2
    con = n - dis - ties_x_only - ties_y_only - ties_both
    assert kendall_variants(x, y, "23") == (con + ties_both - dis - ties_x_only - ties_y_only) / n
    assert kendall_variants(x, y, "acc23") == (con + ties_both) / n
    assert kendall_variants(x, y, "23", epsilon=0.1) == (14 - 7) / 21
    # epsilon = 1: y ties 13 pairs, 3 of them also tied in x; 1 discordant
    ties_y, ties_both, dis = 13, 3, 1
    ties_x_only, ties_y_only = 3 - ties_both, ties_y - ties_both
    con = n - dis - ties_x_only - ties_y_only - ties_both
    assert kendall_variants(x, y, "23", epsilon=1.0) == pytest.approx(
        (con + ties_both - dis - ties_x_only - ties_y_only) / n, abs=1e-15)


def test_stats_test_ties_opt_equals_variants_at_its_epsilon():
    # stats_test.py CorrelationFunctionsTest.testKendallWithTiesOpt: the optimized value is the
    # KendallVariants value at the returned epsilon, for each grouping
    gold, metric = [1, 2, 2, 3, 3, 4], [2, 1, 1.5, 5, 3, 2]
    for num_sys, avg in ((1, "none"), (2, "sys"), (2, "item")):
        g, m = as_matrix(gold, num_sys), as_matrix(metric, num_sys)
        r = kendall_with_ties_opt(g, m, average_by=avg)
        assert r.value == pytest.approx(kendall_variants(g, m, "acc23", epsilon=r.epsilon, average_by=avg), abs=1e-15)


def test_stats_test_ties_opt_with_none():
    # stats_test.py AverageCorrelationTest.testKendallWithTiesOpt: g has a None, sys grouping
    g, m = as_matrix([1, 2, 3, 4, None, 6], 2), as_matrix([2, 1, 8, 3, 5, 6], 2)
    r = kendall_with_ties_opt(g, m, average_by="sys")
    eps, value, _, _ = slow_opt([[1, 2, 3], [4, np.nan, 6]], [[2, 1, 8], [3, 5, 6]], "sys")
    assert (r.epsilon, r.value) == (eps, pytest.approx(value, abs=1e-15))
    # by hand: row 1 (1,2,3)/(2,1,8) acc 2/3 at eps 0; row 2 (4,6)/(3,6) acc 1; mean 5/6; no tie helps
    assert r.value == pytest.approx(5 / 6, abs=1e-15) and r.epsilon == 0


def test_tau_optimization_zero_threshold_is_best():
    # tau_optimization_test.py test_zero_threshold_is_best
    r = kendall_with_ties_opt([[1, 2, 3, 4]], [[0, 2, 6, 8]], average_by="none")
    assert r.thresholds.tolist() == [0, 2, 4, 6, 8]
    assert r.values == pytest.approx([6 / 6, 4 / 6, 3 / 6, 1 / 6, 0 / 6], abs=1e-15)
    assert (r.epsilon, r.value) == (0, 1.0)


def test_tau_optimization_nonzero_threshold_is_best():
    # tau_optimization_test.py test_nonzero_threshold_is_best
    r = kendall_with_ties_opt([[1, 1, 1, 4]], [[0, 2, 6, 8]], average_by="none")
    assert r.thresholds.tolist() == [0, 2, 4, 6, 8]
    assert r.values == pytest.approx([3 / 6, 3 / 6, 4 / 6, 4 / 6, 3 / 6], abs=1e-15)
    assert r.epsilon == 4 and r.value == pytest.approx(4 / 6, abs=1e-15)


def test_tau_optimization_regression_example():
    # tau_optimization_test.py test_regression_example: rows are the averaged groups (sys here);
    # None in either matrix drops the cell; an all-None row is no group
    n = None
    metric = [[0, 5, 2, 3, 2], [n, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1], [n] * 5]
    human = [[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, n, 3, 2], [n] * 5]
    r = kendall_with_ties_opt(as_matrix(sum(human, []), 5), as_matrix(sum(metric, []), 5), average_by="sys")
    assert r.thresholds.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert r.values == pytest.approx([0.4666666666666667, 0.4916666666666668, 0.38333333333333347,
                                      0.29166666666666674, 0.2666666666666667, 0.2, 0.15833333333333335,
                                      0.15833333333333335, 0.1166666666666667], abs=1e-12)
    assert r.epsilon == 1 and r.value == pytest.approx(0.4916666666666668, abs=1e-12)


def test_tau_optimization_invalid_sample_rate():
    # tau_optimization_test.py test_invalid_sample_rate
    for rate in (0.0, 1.1):
        with pytest.raises(InputError, match="sample_rate"):
            kendall_with_ties_opt([[1, 1, 1, 4]], [[0, 2, 6, 8]], average_by="none", sample_rate=rate)


def test_sample_rate_samples_pairs_reproducibly():
    # tau_optimization_test.py test_sample_rate_samples_pairs: with rate 0.5 about half the pairs'
    # diffs are candidates (plus 0); numpy's draws differ from mtme's, so: a subset, seeded
    h, m = [[1, 2, 3, 4] * 10], [[0, 2, 6, 14] * 10]
    full = kendall_with_ties_opt(h, m, average_by="none").thresholds
    a = kendall_with_ties_opt(h, m, average_by="none", sample_rate=0.5, seed=7)
    b = kendall_with_ties_opt(h, m, average_by="none", sample_rate=0.5, seed=7)
    assert set(a.thresholds) <= set(full) and a.thresholds[0] == 0
    assert a.thresholds.tolist() == b.thresholds.tolist() and a.value == b.value
    kept = pair_set(h, [m], "none", sample_rate=0.5, seed=7).group.size
    assert 0.35 * 780 < kept < 0.65 * 780  # 40 cells: 780 pairs


# --- scipy and the slow references on random data with ties --------------------------------------

small = st.integers(0, 3).map(float)


@st.composite
def matrices(draw, missing=True):
    s, i = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    cell = st.one_of(small, st.just(np.nan)) if missing else small
    h = np.array(draw(st.lists(cell, min_size=s * i, max_size=s * i))).reshape(s, i)
    m = np.array(draw(st.lists(st.integers(0, 4).map(lambda v: v / 2), min_size=s * i, max_size=s * i)))
    return h, m.reshape(s, i)


def _has_pairs(h, m, avg):
    return any(sum(1 for a, b in zip(hs, ms) if not (math.isnan(a) or math.isnan(b))) >= 2
               for hs, ms in _rows(h, m, avg))


@given(matrices(missing=False))
def test_tau_b_and_c_equal_scipy(hm):
    h, m = hm
    if h.size < 2:
        return
    for variant in ("b", "c"):
        ref = scipy.stats.kendalltau(h.ravel(), m.ravel(), variant=variant)[0]
        got = kendall_variants(h, m, variant, average_by="none")
        if math.isnan(ref):
            assert got == 0.0  # undefined for the only group: nothing to average, mtme's 0
        else:
            assert got == pytest.approx(ref, abs=1e-12)


@given(matrices(), st.sampled_from(["none", "item", "sys"]), st.sampled_from([0.0, 0.5, 1.0, 2.5]))
def test_acc23_equals_slow_reference(hm, avg, eps):
    h, m = hm
    if not _has_pairs(h, m, avg):
        with pytest.raises(InputError, match="no group"):
            kendall_variants(h, m, "acc23", average_by=avg)
        return
    assert kendall_variants(h, m, "acc23", epsilon=eps, average_by=avg) == pytest.approx(
        slow_acc23(h, m, eps, avg), abs=1e-12)
    assert kendall_variants(h, m, "23", epsilon=eps, average_by=avg) == pytest.approx(
        2 * slow_acc23(h, m, eps, avg) - 1, abs=1e-12)


@given(matrices(), st.sampled_from(["none", "item", "sys"]))
def test_tie_calibration_equals_slow_reference(hm, avg):
    h, m = hm
    if not _has_pairs(h, m, avg):
        return
    eps, value, thresholds, values = slow_opt(h, m, avg)
    r = kendall_with_ties_opt(h, m, average_by=avg)
    assert r.thresholds.tolist() == thresholds
    assert r.values == pytest.approx(values, abs=1e-12)
    assert r.epsilon == eps and r.value == pytest.approx(value, abs=1e-12)


def test_missing_human_scores_are_dropped():
    # the unrated cell (NaN) of system 0 drops its pairs only; by hand: item grouping
    h = np.array([[np.nan, 1.0, 2.0], [1.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    m = np.array([[9.0, 1.0, 3.0], [1.0, 2.0, 1.0], [2.0, 0.0, 2.0]])
    # item 0: systems 1, 2 (h 1 < 2, m 1 < 2): acc 1; item 1: h (1,1,0), m (1,2,0): pairs (0,1) human tie
    # metric not: wrong; (0,2) 1>0, 1>0 right; (1,2) right: 2/3; item 2: h (2,0,0) m (3,1,2): (0,1) right,
    # (0,2) right, (1,2) human tie, metric not: 2/3
    assert kendall_variants(h, m, "acc23", average_by="item") == pytest.approx((1 + 2 / 3 + 2 / 3) / 3, abs=1e-15)


def test_preference_pairs_accuracy_is_wmt12_tau_rescaled():
    # human ties removed: acc23 at epsilon 0 = share of pairs the metric orders strictly right;
    # metric ties count wrong, as WMT12's tau (ties discordant): acc = (tau + 1) / 2
    keys = np.array([0, 0, 0, 1, 1])
    better, worse = np.array([3.0, 2.0, 1.0, 5.0, 5.0]), np.array([1.0, 2.0, 2.0, 4.0, 1.0])
    p = preference_pairs(keys, better, worse)
    r = optimize_tie_threshold(p)
    assert r.epsilon == 0
    assert r.value == pytest.approx((1 / 3 + 2 / 2) / 2, abs=1e-15)  # per segment, then the mean


def test_bad_inputs_raise_input_error():
    h, m = [[1, 2, 3]], [[1, 2, 3]]
    with pytest.raises(InputError, match="average_by"):
        kendall_variants(h, m, average_by="doc")
    with pytest.raises(InputError, match="variant"):
        kendall_variants(h, m, "a")
    with pytest.raises(InputError, match="epsilon"):
        kendall_variants(h, m, epsilon=-1)
    with pytest.raises(InputError, match="tau-c"):
        kendall_variants(h, m, "c", epsilon=1)
    with pytest.raises(InputError, match="infinite"):
        kendall_variants(h, [[1, np.inf, 3]])
    with pytest.raises(InputError, match="shaped like"):
        kendall_variants(h, [[1, 2]])
    with pytest.raises(InputError, match="max_pairs"):
        kendall_with_ties_opt([list(range(100))], [list(range(100))], average_by="none", max_pairs=1000)
    with pytest.raises(InputError, match="multiple"):
        as_matrix([1, 2, 3], 2)
