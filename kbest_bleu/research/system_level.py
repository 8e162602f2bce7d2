"""System-level meta-evaluation: pairwise accuracy and soft pairwise accuracy.

- Pairwise accuracy (Kocmi et al. 2021, "To Ship or Not to Ship", arXiv 2107.10821): the share of
  system pairs that the metric orders as humans do, sign(m_i - m_j) == sign(h_i - h_j)
  (mt-metrics-eval ``stats.Agreement``); over several language pairs, agreements and pairs are
  summed before dividing (``CompareMetricsWithGlobalAccuracy``).
- Soft pairwise accuracy (Thompson, Mathur, Deutsch & Khayrallah 2024, "Improving Statistical
  Significance in Human Evaluation of Automatic Metrics via Soft Pairwise Accuracy", WMT; mtme
  ``pce.py``): for every system pair (i, j) a paired permutation test over the segments gives
  p_ij, the share of sign flips under which sum(x_i - x_j) is at least the observed difference;
  SPA = 1 - mean over i < j of |p_ij(human) - p_ij(metric)|.

The permutations are drawn as ``pce.compute_pairwise_p_values`` draws them (numpy's PCG64 seeded
with ``seed``, default 4; float32 uniforms rounded to 0/1), the same flips for human and metric
and for every pair, so a seed gives the same p-values run to run; sums are taken in float64 (mtme
sums in float32, which can flip a comparison that float64 resolves).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InputError

__all__ = ["complete_items", "global_pairwise_accuracy", "pairwise_accuracy", "pairwise_p_values", "permutation_signs",
           "soft_pairwise_accuracy", "spa_from_p_values"]


def pairwise_accuracy(human, metric) -> tuple[float, int]:
    """(accuracy, system pairs) of float[S] system scores; systems without a human score (NaN) are
    left out. A pair tied in both counts as agreement, as mtme's ``Agreement`` does."""
    agree, pairs = _agreement(human, metric)
    if pairs == 0:
        raise InputError("pairwise_accuracy: expected at least two systems with a human score")
    return agree / pairs, pairs


def _agreement(human, metric) -> tuple[int, int]:
    h, m = np.asarray(human, np.float64), np.asarray(metric, np.float64)
    if h.shape != m.shape or h.ndim != 1:
        raise InputError(f"pairwise_accuracy: expected two vectors float[S] of equal length, found {h.shape}, {m.shape}")
    keep = ~np.isnan(h)
    if np.isnan(m[keep]).any():
        raise InputError("pairwise_accuracy: a metric system score is NaN where the human score is set")
    h, m = h[keep], m[keep]
    i, j = np.triu_indices(h.size, 1)
    return int((np.sign(h[i] - h[j]) == np.sign(m[i] - m[j])).sum()), int(i.size)


def global_pairwise_accuracy(groups: Sequence[tuple]) -> tuple[float, int]:
    """Pairwise accuracy over several language pairs: ``groups`` of (human float[S], metric
    float[S]); agreements and pairs summed over the groups, then divided."""
    agree = pairs = 0
    for h, m in groups:
        a, p = _agreement(h, m)
        agree, pairs = agree + a, pairs + p
    if pairs == 0:
        raise InputError("global_pairwise_accuracy: no group has two systems with a human score")
    return agree / pairs, pairs


def complete_items(human, *metrics) -> tuple[np.ndarray, np.ndarray]:
    """Systems with any human score and the items every such system has a human score for: (rows
    bool[S], columns bool[I]) of float[S, I] matrices; SPA needs a complete system x item block."""
    h = np.asarray(human, np.float64)
    rows = ~np.isnan(h).all(axis=1)
    cols = ~np.isnan(h[rows]).any(axis=0)
    for m in metrics:
        if np.isnan(np.asarray(m, np.float64)[np.ix_(rows, cols)]).any():
            raise InputError("soft pairwise accuracy: a metric score is NaN on a rated cell; score every translation")
    return rows, cols


def permutation_signs(n_items: int, k: int = 1000, seed: int = 4) -> np.ndarray:
    """float64[k, n_items] of +-1: the sign flips of ``pce.compute_pairwise_p_values``."""
    if k < 1 or n_items < 1:
        raise InputError(f"permutations: expected k >= 1 and at least one item, found k={k}, items={n_items}")
    u = np.random.default_rng(seed).random(size=(k, n_items), dtype=np.float32)
    return np.rint(u).astype(np.float64) * 2.0 - 1.0


def pairwise_p_values(seg_scores, k: int = 1000, seed: int = 4, signs=None) -> np.ndarray:
    """float64[S, S]: entry (i, j), i < j, is the share of the ``k`` sign-flip permutations in which
    sum(x_i - x_j) over the permuted segments is >= the observed sum (paired permutation test that
    system i is better than j); NaN on and below the diagonal. ``seg_scores`` float[S, I], complete."""
    x = np.asarray(seg_scores, np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or np.isnan(x).any():
        raise InputError(f"pairwise_p_values: expected a complete matrix float[S>=2, I], found shape {x.shape}"
                         + (" with NaN" if x.ndim == 2 and np.isnan(x).any() else ""))
    s = permutation_signs(x.shape[1], k, seed) if signs is None else signs
    return _p_values(x, s)


def _p_values(x: np.ndarray, signs: np.ndarray) -> np.ndarray:
    partial = signs @ x.T  # [k, S]: each system's signed sum under each permutation
    total = x.sum(axis=1)
    i, j = np.triu_indices(x.shape[0], 1)
    null = partial[:, i] - partial[:, j]
    out = np.full((x.shape[0], x.shape[0]), np.nan)
    out[i, j] = (null >= (total[i] - total[j])).mean(axis=0)
    return out


def soft_pairwise_accuracy(human, metric, k: int = 1000, seed: int = 4) -> float:
    """SPA of segment scores float[S, I] (systems x items): 1 - mean |p_human - p_metric| over the
    system pairs. Systems without human scores are dropped, then items not rated for every
    remaining system (mtme reshapes after dropping Nones, which assumes exactly that)."""
    h, m = np.asarray(human, np.float64), np.asarray(metric, np.float64)
    if h.shape != m.shape or h.ndim != 2:
        raise InputError(f"soft_pairwise_accuracy: expected two matrices float[S, I] of one shape, found {h.shape}, "
                         f"{m.shape}")
    rows, cols = complete_items(h, m)
    if rows.sum() < 2 or cols.sum() < 1:
        raise InputError("soft_pairwise_accuracy: expected at least two systems rated on a common item")
    h, m = h[np.ix_(rows, cols)], m[np.ix_(rows, cols)]
    signs = permutation_signs(h.shape[1], k, seed)
    return spa_from_p_values(_p_values(h, signs), _p_values(m, signs))


def spa_from_p_values(human_p: np.ndarray, metric_p: np.ndarray) -> float:
    """1 - mean |human_p - metric_p| over the upper triangle (mtme ``compute_one_minus_pce``)."""
    i, j = np.triu_indices(human_p.shape[0], 1)
    return float(1.0 - np.abs(human_p[i, j] - metric_p[i, j]).mean())
