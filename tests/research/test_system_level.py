"""System-level pairwise accuracy and soft pairwise accuracy (kbest_bleu.research.system_level).

Oracles: mt-metrics-eval's stats_test.py (Agreement) and the worked example in the docstring of
mt_metrics_eval/pce.py (compute_pairwise_p_values), pce_test.py (determinism), and slow loops over
permutations / pairs written here."""

import itertools

import numpy as np
import pytest

from kbest_bleu.errors import InputError
from kbest_bleu.research.system_level import (global_pairwise_accuracy, pairwise_accuracy, pairwise_p_values,
                                              permutation_signs, soft_pairwise_accuracy)


def test_agreement_from_mtme_stats_test():
    # stats_test.py CorrelationFunctionsTest.testAgreement: 5 of 10 pairs agree
    assert pairwise_accuracy([1, 2, 3, 3, 4], [1, 1, 2, 1, 2]) == (0.5, 10)


def test_pairwise_accuracy_skips_unrated_systems_and_pools_groups():
    h, m = [3.0, np.nan, 1.0, 2.0], [0.9, 0.0, 0.1, 0.5]
    assert pairwise_accuracy(h, m) == (1.0, 3)
    # two language pairs: (3 of 3) + (0 of 1) agreements over 4 pairs, not the mean 0.5 of accuracies
    assert global_pairwise_accuracy([(h, m), ([1.0, 2.0], [2.0, 1.0])]) == (0.75, 4)


def test_pce_docstring_example():
    # pce.py compute_pairwise_p_values docstring: systems A and B over 5 segments, 10 given sign
    # vectors (2m - 1); null deltas -0.6 0.6 0.6 -0.6 1.8 -0.6 3.0 0.6 0.6 -1.8 against the
    # observed 3.0: p = 1/10
    scores = np.array([[0.8, 0.9, 0.7, 1.0, 0.6], [0.2, 0.3, 0.1, 0.4, 0.0]])
    signs = np.array([[1, 1, -1, -1, -1], [1, -1, 1, -1, 1], [1, -1, 1, 1, -1], [-1, 1, -1, -1, 1],
                      [1, 1, 1, -1, 1], [-1, 1, -1, 1, -1], [1, 1, 1, 1, 1], [1, -1, 1, -1, 1],
                      [1, 1, -1, -1, 1], [-1, 1, -1, -1, -1]], dtype=float)
    null = signs @ (scores[0] - scores[1])
    assert null == pytest.approx([-0.6, 0.6, 0.6, -0.6, 1.8, -0.6, 3.0, 0.6, 0.6, -1.8])
    p = pairwise_p_values(scores, signs=signs)
    assert p[0, 1] == pytest.approx(0.1)
    assert np.isnan(p[1, 0]) and np.isnan(p[0, 0])


def test_p_values_deterministic_and_seeded():
    # pce_test.py test_pairwise_p_values_are_deterministic; another seed draws other flips
    scores = np.random.default_rng(0).random((10, 100))
    a, b = pairwise_p_values(scores), pairwise_p_values(scores)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(np.nan_to_num(a), np.nan_to_num(pairwise_p_values(scores, seed=5)))


def _slow_spa(h, m, signs):
    def p(x):
        out = {}
        for i, j in itertools.combinations(range(x.shape[0]), 2):
            observed = sum(x[i]) - sum(x[j])
            out[i, j] = sum(sum(s * (a - b) for s, a, b in zip(row, x[i], x[j])) >= observed for row in signs) / len(signs)
        return out
    ph, pm = p(h), p(m)
    return 1 - sum(abs(ph[k] - pm[k]) for k in ph) / len(ph)


def test_soft_pairwise_accuracy_equals_slow_loops():
    rng = np.random.default_rng(3)
    h = rng.integers(0, 4, (4, 12)).astype(float)
    m = h + rng.normal(0, 1.5, h.shape)
    signs = permutation_signs(12, 200, 4)
    assert soft_pairwise_accuracy(h, m, k=200, seed=4) == pytest.approx(_slow_spa(h, m, signs), abs=1e-12)
    assert soft_pairwise_accuracy(h, h) == 1.0


def test_soft_pairwise_accuracy_drops_unrated_systems_and_items():
    rng = np.random.default_rng(4)
    h = rng.random((4, 10))
    m = rng.random((4, 10))
    h2 = h.copy()
    h2[3] = np.nan  # an unrated system
    h2[1, 7] = np.nan  # an item one system lacks
    keep = [i for i in range(10) if i != 7]
    want = soft_pairwise_accuracy(h[:3][:, keep], m[:3][:, keep])
    assert soft_pairwise_accuracy(h2, m) == want


def test_bad_inputs():
    with pytest.raises(InputError, match="two systems"):
        pairwise_accuracy([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(InputError, match="NaN"):
        pairwise_accuracy([1.0, 2.0], [1.0, np.nan])
    with pytest.raises(InputError, match="rated cell"):
        soft_pairwise_accuracy([[1.0, 2.0], [2.0, 1.0]], [[1.0, np.nan], [2.0, 1.0]])
    with pytest.raises(InputError, match="one shape"):
        soft_pairwise_accuracy([[1.0, 2.0]], [[1.0, 2.0, 3.0]])
    with pytest.raises(InputError, match="complete"):
        pairwise_p_values([[1.0, np.nan], [1.0, 2.0]])
