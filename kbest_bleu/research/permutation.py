"""Permutation tests between two metrics' correlations with the same human scores, and WMT-style
significance clusters over many metrics.

Definitions follow google-research/mt-metrics-eval (``stats.PermutationSigDiff``,
``stats.PairwisePermutationSigDiff``, ``data.AssignRanks``):

- :func:`score_permutation_test` is PERM-BOTH (Deutsch, Dror & Roth 2021, arXiv 2104.00054): both
  metrics are z-scored over the rated cells, and each resample swaps the two metrics' scores of
  each rated cell with probability 1/2 before the statistic is recomputed for both hybrids.
- :func:`pairwise_permutation_test` swaps the outcome (correct or not) of each compared pair
  between the two metrics, each metric at its own tie threshold (the WMT23-24 segment-level test,
  ``perm_test='pairs'``). Since acc23 is a weighted sum over pairs, a resample's difference is the
  observed one minus twice the weighted sum over the swapped pairs where the metrics disagree, so
  only those pairs are drawn.
- The p-value that metric A beats metric B is the share of resamples whose difference
  stat(A') - stat(B') is at least the observed stat(A) - stat(B). Optional early stopping every
  ``block_size`` resamples when the running p-value is below ``early_min`` or above ``early_max``.
- :func:`significance_clusters`: metrics sorted by decreasing value (then name); a metric starts a
  new rank when some metric of its rank, ranked above it, beats it with p <= ``pval``.

Random draws come from numpy's PCG64 seeded with ``seed``: the same seed gives the same p-values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

import numpy as np

from ..errors import InputError
from .ties import (Pairs, _average, _grouped, _matrix, _variant_values, kendall_stats, optimize_tie_threshold,
                   pair_set)

__all__ = ["STATISTICS", "PermutationResult", "assign_ranks", "grouped_pearson", "pairwise_permutation_test",
           "score_permutation_test", "significance_clusters", "spa_permutation_test", "statistic"]

STATISTICS = ("pearson", "acc23", "23", "tau_b", "acc23_opt", "accuracy", "spa")
_BITS_BLOCK = 4_000_000  # random bits drawn per step


@dataclass(frozen=True)
class PermutationResult:
    """p_value: share of resamples with a difference >= delta (A beats B); delta: stat(A) - stat(B);
    k: resamples used; null: float64[k] the resampled differences."""

    p_value: float
    delta: float
    k: int
    null: np.ndarray


def _early_stop(hits: np.ndarray, block_size: Optional[int], early_min: float, early_max: float) -> int:
    """Resamples used: all, or the first block boundary where the running p-value leaves
    [early_min, early_max] (mtme ``PermutationSigDiffParams``)."""
    k = hits.size
    if not block_size:
        return k
    running = np.cumsum(hits)
    for i in range(block_size, k + 1, block_size):
        p = running[i - 1] / i
        if p < early_min or p > early_max:
            return i
    return k


def _check_k(k: int, block_size: Optional[int]) -> None:
    if k < 1:
        raise InputError(f"k: expected at least one resample, found {k}")
    if block_size is not None and block_size < 1:
        raise InputError(f"block_size: expected a positive number of resamples or None, found {block_size}")


def pairwise_permutation_test(pairs: Pairs, a: int = 0, b: int = 1, *, epsilon_a: Optional[float] = None,
                              epsilon_b: Optional[float] = None, k: int = 1000, seed: int = 12345,
                              block_size: Optional[int] = None, early_min: float = 0.02,
                              early_max: float = 0.5) -> PermutationResult:
    """Does metric ``a`` of ``pairs`` have a higher acc23 than metric ``b``? Each metric at its tie
    threshold (optimized when None, :func:`.ties.optimize_tie_threshold`); each resample swaps the
    outcome of each pair between the metrics with probability 1/2 (mtme ``PairwisePermutationSigDiff``;
    the ``23`` variant, 2 acc23 - 1, gives the same p-value)."""
    _check_k(k, block_size)
    eps = [optimize_tie_threshold(pairs, m).epsilon if e is None else float(e)
           for m, e in ((a, epsilon_a), (b, epsilon_b))]
    w = pairs.weights
    correct = []
    for m, e in zip((a, b), eps):
        st_mtie = np.abs(pairs.metric_diff[m]) <= e
        agree = np.sign(pairs.metric_diff[m]).astype(np.int8) == pairs.human_sign
        correct.append(np.where(pairs.human_sign == 0, st_mtie, ~st_mtie & agree))
    v = w * (correct[0].astype(np.float64) - correct[1])
    delta = float(v.sum())
    v = v[v != 0]  # pairs where the metrics agree do not move under a swap
    rng = np.random.default_rng(seed)
    swapped = np.zeros(k)
    if v.size:
        width = (v.size + 7) // 8
        step = max(1, _BITS_BLOCK // v.size)
        for s in range(0, k, step):
            n = min(step, k - s)
            bits = np.unpackbits(rng.integers(0, 256, size=(n, width), dtype=np.uint8), axis=1, count=v.size)
            swapped[s:s + n] = bits @ v
    tol = 1e-9 * float(np.abs(v).min()) if v.size else 0.0
    hits = swapped <= tol  # stat(A') - stat(B') = delta - 2 * swapped >= delta
    used = _early_stop(hits, block_size, early_min, early_max)
    return PermutationResult(float(hits[:used].mean()), delta, used, delta - 2 * swapped[:used])


def grouped_pearson(human, metric, average_by: str = "none", replace_nans_with_zeros: bool = False) -> float:
    """Pearson's r within each group of cells present in both float[S, I] matrices, averaged over
    groups with at least two cells (mtme ``AverageCorrelation(scipy.stats.pearsonr)``); a group with
    a constant side has no r and is left out (or counts 0 with ``replace_nans_with_zeros``)."""
    h = _grouped(_matrix(human, "human"), average_by)
    m = _grouped(_matrix(metric, "metric"), average_by)
    valid = ~np.isnan(h) & ~np.isnan(m)
    n = valid.sum(axis=1)
    hz, mz = np.where(valid, h, 0.0), np.where(valid, m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        hc = np.where(valid, hz - hz.sum(axis=1, keepdims=True) / n[:, None], 0.0)
        mc = np.where(valid, mz - mz.sum(axis=1, keepdims=True) / n[:, None], 0.0)
        r = (hc * mc).sum(axis=1) / np.sqrt((hc * hc).sum(axis=1) * (mc * mc).sum(axis=1))
    r = r[n >= 2]
    if r.size == 0:
        raise InputError("grouped_pearson: no group has two cells with both scores")
    r = np.nan_to_num(r, nan=0.0) if replace_nans_with_zeros else r[~np.isnan(r)]
    return float(np.clip(r.mean(), -1.0, 1.0)) if r.size else 0.0


def statistic(name: str, human, *, average_by: str = "none", epsilon: float = 0.0, spa_k: int = 1000,
              spa_seed: int = 4) -> Callable[[np.ndarray], float]:
    """A function metric float[S, I] -> float against fixed ``human`` float[S, I], for
    :func:`score_permutation_test`: ``pearson`` (grouped), ``acc23`` / ``23`` / ``tau_b`` at
    threshold ``epsilon`` (in the units of the scores it receives: z-scores inside the test),
    ``acc23_opt`` (threshold re-optimized on every call: the costly one), ``accuracy`` (system-level
    pairwise accuracy of float[1, S] or float[S] vectors), ``spa`` (soft pairwise accuracy of segment
    matrices: the human p-values computed once)."""
    h = _matrix(human, "human")
    if name == "pearson":
        return lambda m: grouped_pearson(h, m, average_by)
    if name in ("acc23", "23", "tau_b", "acc23_opt"):
        # the pairs of rated cells, enumerated once; each call only takes the metric's differences
        base = pair_set(h, [np.where(np.isnan(h), np.nan, 0.0)], average_by)
        has_pairs = base.pairs_per_group > 0

        def with_metric(m) -> Pairs:
            flat = _grouped(_matrix(m, "metric"), average_by).ravel()
            diff = flat[base.first] - flat[base.second]
            if np.isnan(diff).any():
                raise InputError("statistic: a metric score is NaN on a rated cell; score every rated translation")
            return replace(base, metric_diff=diff[None, :])

        if name == "acc23_opt":
            return lambda m: optimize_tie_threshold(with_metric(m)).value
        variant = "b" if name == "tau_b" else name
        return lambda m: _average(_variant_values(kendall_stats(with_metric(m), epsilon), variant), has_pairs, False)
    if name == "accuracy":
        from .system_level import pairwise_accuracy
        return lambda m: pairwise_accuracy(h.ravel(), np.asarray(m, np.float64).ravel())[0]
    if name == "spa":
        from .system_level import _p_values, complete_items, permutation_signs, spa_from_p_values
        rows, cols = complete_items(h)
        block = np.ix_(rows, cols)
        signs = permutation_signs(int(cols.sum()), spa_k, spa_seed)
        human_p = _p_values(h[block], signs)
        return lambda m: spa_from_p_values(human_p, _p_values(np.asarray(m, np.float64)[block], signs))
    raise InputError(f"statistic: expected one of {', '.join(STATISTICS)}, found {name!r}")


def _zscored(m: np.ndarray, rated: np.ndarray, name: str) -> np.ndarray:
    x = m[rated]
    if np.isnan(x).any():
        raise InputError(f"{name}: NaN on a rated cell; expected a score wherever the human score is set")
    sd = x.std()
    if not sd > 0:
        raise InputError(f"{name}: constant on the rated cells; a permutation test between metrics needs varying scores")
    out = np.full(m.shape, np.nan)
    out[rated] = (x - x.mean()) / sd
    return out


def score_permutation_test(human, metric_a, metric_b, stat: Callable[[np.ndarray], float], *, k: int = 1000,
                           seed: int = 12345, block_size: Optional[int] = None, early_min: float = 0.02,
                           early_max: float = 0.5) -> PermutationResult:
    """PERM-BOTH test that ``metric_a`` correlates better than ``metric_b`` (float[S, I] each, with
    ``human`` float[S, I], NaN = unrated) under ``stat`` (see :func:`statistic`): both metrics
    z-scored over the rated cells, then ``k`` resamples each swapping every rated cell's two scores
    with probability 1/2 (mtme ``PermutationSigDiff``)."""
    _check_k(k, block_size)
    h = _matrix(human, "human")
    ma, mb = _matrix(metric_a, "metric_a"), _matrix(metric_b, "metric_b")
    if not h.shape == ma.shape == mb.shape:
        raise InputError(f"score_permutation_test: expected three matrices of one shape, found {h.shape}, "
                         f"{ma.shape}, {mb.shape}")
    rated = ~np.isnan(h)
    za, zb = _zscored(ma, rated, "metric_a"), _zscored(mb, rated, "metric_b")
    delta = stat(za) - stat(zb)
    rng = np.random.default_rng(seed)
    null = np.empty(k)
    xa, xb = za[rated], zb[rated]
    ha, hb = za.copy(), zb.copy()
    for i in range(k):
        swap = rng.random(xa.size) < 0.5
        ha[rated] = np.where(swap, xb, xa)
        hb[rated] = np.where(swap, xa, xb)
        null[i] = stat(ha) - stat(hb)
    hits = null >= delta
    used = _early_stop(hits, block_size, early_min, early_max)
    return PermutationResult(float(hits[:used].mean()), float(delta), used, null[:used])


def spa_permutation_test(human, metric_a, metric_b, *, k: int = 1000, seed: int = 12345, spa_k: int = 1000,
                         spa_seed: int = 4) -> PermutationResult:
    """:func:`score_permutation_test` with ``statistic("spa", human)``, the same draws and result,
    faster: a hybrid's signed system sums are the first metric's plus those of the swapped cells'
    differences, so each resample takes one product with the sign flips instead of two. Inputs
    float[S, I], complete (see :func:`.system_level.complete_items`)."""
    from .system_level import _p_values, permutation_signs, spa_from_p_values
    _check_k(k, None)
    h = _matrix(human, "human")
    ma, mb = _matrix(metric_a, "metric_a"), _matrix(metric_b, "metric_b")
    if not h.shape == ma.shape == mb.shape or np.isnan(h).any():
        raise InputError(f"spa_permutation_test: expected three complete matrices of one shape, found {h.shape}, "
                         f"{ma.shape}, {mb.shape}")
    rated = np.ones(h.shape, bool)
    za, zb = _zscored(ma, rated, "metric_a"), _zscored(mb, rated, "metric_b")
    signs = permutation_signs(h.shape[1], spa_k, spa_seed)
    human_p = _p_values(h, signs)
    i, j = np.triu_indices(h.shape[0], 1)

    def spa(partial, total):
        p = (partial[:, i] - partial[:, j] >= total[i] - total[j]).mean(axis=0)
        return 1.0 - float(np.abs(human_p[i, j] - p).mean())

    pa_, pb_ = signs @ za.T, signs @ zb.T
    delta = spa_from_p_values(human_p, _p_values(za, signs)) - spa_from_p_values(human_p, _p_values(zb, signs))
    rng = np.random.default_rng(seed)
    d = (zb - za).ravel()
    null = np.empty(k)
    for r in range(k):
        swap = (rng.random(d.size) < 0.5).reshape(h.shape)
        moved = np.where(swap, zb - za, 0.0)  # cells where hybrid A takes B's score
        part = signs @ moved.T
        tot = moved.sum(axis=1)
        null[r] = spa(pa_ + part, za.sum(axis=1) + tot) - spa(pb_ - part, zb.sum(axis=1) - tot)
    hits = null >= delta
    return PermutationResult(float(hits.mean()), float(delta), k, null)


def _ranks(n: int, beats: Callable[[int, int], bool]) -> list:
    """mtme ``data.AssignRanks`` over n metrics sorted by decreasing value: ``beats(j, i)`` (j < i)
    is asked in order for the metrics j of the current rank only, and no further after a True."""
    ranks, current, start = [], 1, 0
    for i in range(n):
        if any(beats(j, i) for j in range(start, i)):
            current, start = current + 1, i
        ranks.append(current)
    return ranks


def assign_ranks(sig: np.ndarray, pval: float = 0.05) -> list:
    """Cluster ranks of metrics sorted by decreasing value from ``sig`` float[n, n], where sig[i, j]
    (i < j) is the p-value that metric i beats metric j (mtme ``data.AssignRanks``)."""
    return _ranks(sig.shape[0], lambda j, i: sig[j, i] <= pval)


def significance_clusters(values: dict, p_value: Callable[[str, str], float], pval: float = 0.05
                          ) -> tuple[list, np.ndarray]:
    """WMT-style ranking: ``values`` {metric: statistic}; ``p_value(a, b)`` the p-value that a beats
    b. Returns ([(metric, value, rank)] by decreasing value, then name; sig float[n, n] with the
    p-values above the diagonal). Only the tests the ranking reads are run (those within the current
    rank, until one rejects); the others are NaN in ``sig`` (each costs a permutation test)."""
    names = sorted(values, key=lambda n: (-values[n], n))
    sig = np.zeros((len(names), len(names)))
    sig[np.triu_indices(len(names), 1)] = np.nan

    def beats(j: int, i: int) -> bool:
        sig[j, i] = p_value(names[j], names[i])
        return bool(sig[j, i] <= pval)

    ranks = _ranks(len(names), beats)
    return [(n, values[n], r) for n, r in zip(names, ranks)], sig
