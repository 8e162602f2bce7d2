"""Permutation tests between metrics and significance clusters (kbest_bleu.research.permutation).

Oracles: mt-metrics-eval's stats_test.py (PermutationSigDiffTest, PairwisePermutationSigDiffTest:
inputs and expected properties transcribed; there, the p-value is for metric2 beating metric1, here
for the first metric argument), scipy for the statistics, and exact p-values by enumerating every
swap pattern on tiny inputs (the Monte Carlo p must fall within 4 standard errors)."""

import itertools

import numpy as np
import pytest
import scipy.stats

from kbest_bleu.errors import InputError
from kbest_bleu.research.permutation import (assign_ranks, grouped_pearson, pairwise_permutation_test,
                                             score_permutation_test, significance_clusters, spa_permutation_test,
                                             statistic)
from kbest_bleu.research.ties import as_matrix, kendall_variants, kendall_with_ties_opt, pair_set

# stats_test.py PermutationSigDiffTest
GOLD, M1, M2 = [1, 2, 3, 4, 5, 5, 7, 8], [1, 2, 3, 3, 7, 3, 5, 5], [2, 1, 2, 6, 8, 8, 7, 6]
G, A, B = as_matrix(GOLD, 4), as_matrix(M1, 4), as_matrix(M2, 4)


def _groups(avg):
    if avg == "none":
        return [(GOLD, M1, M2)]
    g, a, b = (np.array(v, float).reshape(4, 2) for v in (GOLD, M1, M2))
    if avg == "item":
        g, a, b = g.T, a.T, b.T
    return list(zip(g, a, b))


@pytest.mark.parametrize("avg", ["none", "sys", "item"])
def test_pearson_test_from_mtme(avg):
    # testPearsonNoAvgNoEarlyStop / testPearsonSysNoEarlyStop / testPearsonItemNoEarlyStop
    rows = _groups(avg)
    def mean_r(k):  # groups with a constant side have no r: left out, as mtme does
        return np.mean([scipy.stats.pearsonr(r[k], r[0])[0] for r in rows if np.std(r[k]) > 0 and np.std(r[0]) > 0])
    delta = mean_r(2) - mean_r(1)
    r = score_permutation_test(G, B, A, statistic("pearson", G, average_by=avg), k=1000, seed=1)
    assert r.p_value > 0 and r.k == 1000 and r.delta == pytest.approx(delta, abs=1e-12)
    assert (r.null >= r.delta).sum() / 1000 == r.p_value


def test_early_stop_from_mtme():
    # testPearsonNoAvgWithEarlyStop: block_size 50, early_max 0.2 stops before 1000
    r = score_permutation_test(G, B, A, statistic("pearson", G), k=1000, seed=1, block_size=50, early_max=0.2)
    assert r.p_value > 0 and r.k < 1000 and r.k % 50 == 0 and r.null.size == r.k
    assert (r.null >= r.delta).sum() / r.k == r.p_value


@pytest.mark.parametrize("name,variant", [("tau_b", "b"), ("23", "23"), ("acc23", "acc23")])
def test_kendall_tests_from_mtme(name, variant):
    # testKendallItemWithEarlyStop, testKendallVariants23, testKendallVariantsAcc23 (k=10, item);
    # z-scoring keeps the order, so at epsilon 0 the delta is the raw scores' delta
    r = score_permutation_test(G, B, A, statistic(name, G, average_by="item"), k=10, seed=1, block_size=10)
    want = kendall_variants(G, B, variant, average_by="item") - kendall_variants(G, A, variant, average_by="item")
    if variant == "b":
        want = np.mean([scipy.stats.kendalltau(g, b)[0] for g, _, b in _groups("item")]) - \
            np.mean([scipy.stats.kendalltau(g, a)[0] for g, a, _ in _groups("item")])
    assert r.p_value > 0 and r.k == 10 and r.delta == pytest.approx(want, abs=1e-12)


def test_tau_optimization_test_from_mtme():
    # testTauOptimization: PERM-BOTH re-optimizing the threshold on each resample
    r = score_permutation_test(G, B, A, statistic("acc23_opt", G, average_by="item"), k=10, seed=1)
    want = kendall_with_ties_opt(G, B).value - kendall_with_ties_opt(G, A).value
    assert r.p_value > 0 and r.k == 10 and r.delta == pytest.approx(want, abs=1e-12)


def test_pairwise_test_from_mtme():
    # PairwisePermutationSigDiffTest.testKendallVariantsAcc23
    g, a, b = (as_matrix(v, 4) for v in ([1, 3, 3, 3, 1, 2, 1, 2], [2, 4, 6, 6, 2, 6, 3, 7], [1, 5, 4, 4, 4, 3, 2, 1]))
    delta = kendall_with_ties_opt(g, b).value - kendall_with_ties_opt(g, a).value
    r = pairwise_permutation_test(pair_set(g, [b, a], "item"), 0, 1, k=10, seed=1)
    assert r.p_value > 0 and r.k == 10 and r.delta == pytest.approx(delta, abs=1e-12)
    assert (r.null >= r.delta - 1e-12).sum() == round(r.p_value * 10)


def _exact_pairwise_p(h, ma, mb, eps_a, eps_b):
    """Every way of swapping each pair's outcome between the metrics (mtme's hybrids), exactly."""
    def outcomes(m, eps):
        out = []
        for hs, ms in zip(h.T, m.T):  # item grouping
            row = []
            for (h1, m1), (h2, m2) in itertools.combinations(zip(hs, ms), 2):
                tie = abs(m1 - m2) <= eps
                row.append(tie if h1 == h2 else (not tie and (h1 - h2) * (m1 - m2) > 0))
            out.append(row)
        return out
    ca, cb = outcomes(ma, eps_a), outcomes(mb, eps_b)
    flat = [(g, p) for g, row in enumerate(ca) for p in range(len(row))]

    def acc(rows):
        return np.mean([np.mean(r) for r in rows])
    delta = acc(ca) - acc(cb)
    hits = 0
    for swaps in itertools.product((False, True), repeat=len(flat)):
        ha = [list(r) for r in ca]
        hb = [list(r) for r in cb]
        for (g, p), s in zip(flat, swaps):
            if s:
                ha[g][p], hb[g][p] = cb[g][p], ca[g][p]
        hits += acc(ha) - acc(hb) >= delta - 1e-12
    return hits / 2 ** len(flat), delta


def test_pairwise_test_matches_exact_enumeration():
    rng = np.random.default_rng(11)
    h = rng.integers(0, 3, (3, 4)).astype(float)  # 3 systems x 4 items: 12 pairs, 4096 patterns
    ma = h + rng.normal(0, 0.8, h.shape)
    mb = h + rng.normal(0, 1.2, h.shape)
    pairs = pair_set(h, [ma, mb], "item")
    r = pairwise_permutation_test(pairs, 0, 1, epsilon_a=0.3, epsilon_b=0.0, k=20000, seed=5)
    p, delta = _exact_pairwise_p(h, ma, mb, 0.3, 0.0)
    assert r.delta == pytest.approx(delta, abs=1e-12)
    assert abs(r.p_value - p) < 4 * np.sqrt(p * (1 - p) / 20000) + 1e-9


def test_score_test_matches_exact_enumeration():
    rng = np.random.default_rng(12)
    h = rng.normal(size=(1, 9))
    ma, mb = h + rng.normal(0, 1.0, h.shape), h + rng.normal(0, 1.5, h.shape)
    za, zb = ((m - m.mean()) / m.std() for m in (ma, mb))
    delta = scipy.stats.pearsonr(h[0], za[0])[0] - scipy.stats.pearsonr(h[0], zb[0])[0]
    hits = 0
    for swaps in itertools.product((False, True), repeat=9):
        s = np.array(swaps)
        x, y = np.where(s, zb[0], za[0]), np.where(s, za[0], zb[0])
        hits += scipy.stats.pearsonr(h[0], x)[0] - scipy.stats.pearsonr(h[0], y)[0] >= delta - 1e-12
    p = hits / 512
    r = score_permutation_test(h, ma, mb, statistic("pearson", h), k=5000, seed=2)
    assert r.delta == pytest.approx(delta, abs=1e-12)
    assert abs(r.p_value - p) < 4 * np.sqrt(p * (1 - p) / 5000) + 1e-9


def test_seeded_reproducibility():
    rng = np.random.default_rng(13)
    h = rng.integers(0, 4, (5, 30)).astype(float)
    ma, mb = h + rng.normal(0, 1, h.shape), h + rng.normal(0, 1.1, h.shape)
    pairs = pair_set(h, [ma, mb], "item")
    runs = [pairwise_permutation_test(pairs, k=500, seed=s).p_value for s in (3, 3, 4)]
    assert runs[0] == runs[1] and 0 < runs[0] < 1 and runs[2] != runs[0]
    stat = statistic("pearson", h, average_by="item")
    s1, s2 = (score_permutation_test(h, ma, mb, stat, k=200, seed=9).p_value for _ in range(2))
    assert s1 == s2


def test_spa_test_equals_generic_score_test():
    # the one-product shortcut gives the generic PERM-BOTH's resamples, difference for difference
    rng = np.random.default_rng(14)
    h = rng.normal(size=(5, 40))
    ma, mb = h + rng.normal(0, 1, h.shape), h + rng.normal(0, 1.3, h.shape)
    fast = spa_permutation_test(h, ma, mb, k=30, seed=6, spa_k=200)
    slow = score_permutation_test(h, ma, mb, statistic("spa", h, spa_k=200), k=30, seed=6)
    assert fast.p_value == slow.p_value and fast.delta == slow.delta
    np.testing.assert_allclose(fast.null, slow.null, atol=1e-12)


def test_grouped_pearson_equals_scipy_with_missing():
    # stats_test.py AverageCorrelationTest.testAverageByItemWithMissingEntries
    g, m = as_matrix([1, None, 3, 4, 5, 6], 2), as_matrix([2, 1, 8, 3, 5, 6], 2)
    want = (scipy.stats.pearsonr([1, 4], [2, 3])[0] + scipy.stats.pearsonr([3, 6], [8, 6])[0]) / 2
    assert grouped_pearson(g, m, "item") == pytest.approx(want, abs=1e-12)
    # testNaNHandling / testNaNHandlingWithZeros: a constant row is dropped, or counts 0
    g, m = as_matrix([1, 2, 3, 4, 5, 6], 2), as_matrix([2, 2, 2, 4, 5, 6], 2)
    assert grouped_pearson(g, m, "sys") == pytest.approx(1.0)
    assert grouped_pearson(g, m, "sys", replace_nans_with_zeros=True) == pytest.approx(0.5)


def test_assign_ranks_hand_case():
    sig = np.zeros((4, 4))
    sig[0, 1], sig[0, 2], sig[1, 2], sig[0, 3], sig[1, 3], sig[2, 3] = 0.3, 0.01, 0.2, 0.0, 0.04, 0.5
    # metric 2 is beaten by metric 0 (rank 1): new rank; metric 3 is compared only with rank 2's members
    assert assign_ranks(sig, 0.05) == [1, 1, 2, 2]
    assert assign_ranks(sig, 0.005) == [1, 1, 1, 2]


def test_significance_clusters_orders_and_ranks():
    values = {"b": 0.5, "a": 0.5, "c": 0.9, "d": 0.1}
    p = {("c", "a"): 0.01, ("c", "b"): 0.01, ("a", "b"): 0.4, ("c", "d"): 0.0, ("a", "d"): 0.3, ("b", "d"): 0.01}
    rows, sig = significance_clusters(values, lambda x, y: p[x, y])
    assert rows == [("c", 0.9, 1), ("a", 0.5, 2), ("b", 0.5, 2), ("d", 0.1, 3)]
    assert sig[1, 2] == 0.4 and sig[2, 1] == 0



def test_significance_clusters_runs_only_the_tests_the_ranks_read():
    # against assign_ranks on the full p-value matrix: same ranks, and a test is run only for a pair
    # within the current rank up to the first rejection (the rest stay NaN)
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        names = [f"m{i}" for i in range(n)]
        values = dict(zip(names, rng.permutation(n) / n))
        order = sorted(names, key=lambda x: -values[x])
        full = np.triu(rng.choice([0.0, 0.01, 0.3, 0.9], size=(n, n)), 1)
        asked = []

        def p_value(a, b, order=order, full=full, asked=asked):
            asked.append((order.index(a), order.index(b)))
            return full[order.index(a), order.index(b)]
        rows, sig = significance_clusters(values, p_value)
        assert [r[2] for r in rows] == assign_ranks(full, 0.05)
        want, start = [], 0
        for i in range(n):
            for j in range(start, i):
                want.append((j, i))
                if full[j, i] <= 0.05:
                    start = i
                    break
        assert asked == want
        done = np.zeros((n, n), bool)
        done[tuple(np.array(want, int).reshape(-1, 2).T)] = True
        assert np.array_equal(sig[done], full[done]) and np.isnan(sig[np.triu(~done, 1)]).all()

def test_bad_inputs():
    with pytest.raises(InputError, match="statistic"):
        statistic("spearman", G)
    with pytest.raises(InputError, match="constant"):
        score_permutation_test(G, A, np.ones_like(A), statistic("pearson", G))
    with pytest.raises(InputError, match="resample"):
        score_permutation_test(G, A, B, statistic("pearson", G), k=0)
    with pytest.raises(InputError, match="rated cell"):
        score_permutation_test(G, A, np.where(A > 2, np.nan, B), statistic("pearson", G))
