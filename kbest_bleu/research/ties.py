"""Kendall variants that count ties, and the tie threshold optimized per test set.

Definitions follow google-research/mt-metrics-eval (``stats.KendallVariants``,
``stats.KendallWithTiesOpt``, ``tau_optimization.tau_optimization``), which implements Deutsch,
Foster & Freitag (2023), "Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and
Tie Calibration" (arXiv 2305.14324). Over the pairs of items of a group, with human scores h and
metric scores m and a metric tie threshold epsilon (a pair is a metric tie when |m_i - m_j| <= eps):

- C concordant, D discordant (neither side tied), T_h tied in h only, T_m tied in m only, T_hm
  tied in both; N = C + D + T_h + T_m + T_hm;
- ``acc23`` = (C + T_hm) / N (pairwise accuracy with ties, Deutsch et al. Eq. 4);
  ``23`` = (C + T_hm - D - T_h - T_m) / N = 2 acc23 - 1; ``b`` = tau-b; ``c`` = tau-c (epsilon 0).

Scores come as matrices float64[S, I] (systems x items, mt-metrics-eval's packed vectors reshaped;
NaN = missing). ``average_by`` groups the cells: "none" (one group), "item" (each item's systems:
the WMT23-24 segment level), "sys" (each system's items); the statistic is the plain mean over
groups with at least one pair (``stats.AverageCorrelation``). Missing cells: a cell takes part only
where both the human and the metric score are present (``tau_optimization``'s filter; the
meta-evaluation commands reject a missing metric score on a rated cell before calling).

Tie calibration (``tau_optimization``): the candidate thresholds are 0 and every pair's |m_i - m_j|;
the chosen epsilon maximizes the mean over groups, the smallest one among equal maxima. Here all
pairs are enumerated once (numpy, vectorized), sorted by |m_i - m_j|, and the mean for every
threshold is a cumulative sum of each pair's change when it becomes a tie: O(P log P) for P pairs
instead of recounting per threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from ..errors import InputError

__all__ = ["GROUPINGS", "KENDALL_VARIANTS", "MAX_PAIRS", "Pairs", "TauStats", "TieCalibration", "as_matrix",
           "kendall_stats", "kendall_variants", "kendall_with_ties_opt", "optimize_tie_threshold", "pair_set",
           "preference_pairs"]

GROUPINGS = ("none", "item", "sys")
KENDALL_VARIANTS = ("b", "c", "23", "acc23")
MAX_PAIRS = 20_000_000  # ~13 bytes a pair held, plus the sort's temporaries
_BLOCK = 2_000_000  # pairs built per step (bounds temporaries)
_TIE_TOL = 1e-12  # thresholds whose means differ by less are equal (float sums of 1/N terms)


def as_matrix(values: Sequence, num_sys: int) -> np.ndarray:
    """mt-metrics-eval's packed vector (``num_sys`` consecutive rows, None = missing) as float64[S, I]
    with NaN for missing values."""
    v = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    if num_sys < 1 or v.size % num_sys:
        raise InputError(f"as_matrix: {v.size} values do not split into {num_sys} systems; expected a multiple")
    return v.reshape(num_sys, -1)


def _matrix(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.size == 0:
        raise InputError(f"{name}: expected a non-empty matrix float[systems, items], found shape {a.shape}")
    if np.isinf(a).any():
        raise InputError(f"{name}: infinite score at {np.argwhere(np.isinf(a))[0].tolist()}; expected finite or NaN")
    return a


def _grouped(a: np.ndarray, average_by: str) -> np.ndarray:
    """Rows = groups: 'none' one row, 'sys' as is, 'item' transposed (mtme ``_Reshape``)."""
    if average_by not in GROUPINGS:
        raise InputError(f"average_by: expected one of {', '.join(GROUPINGS)}, found {average_by!r}")
    return a.reshape(1, -1) if average_by == "none" else (a if average_by == "sys" else a.T)


@dataclass(frozen=True)
class Pairs:
    """Every compared pair of a test set, for one or more metrics.

    ``group`` int64[P]: the pair's group (0..G-1); ``human_sign`` int8[P]: sign(h_i - h_j);
    ``metric_diff`` float64[M, P]: m_i - m_j for each metric; ``pairs_per_group`` int64[G];
    ``first``/``second`` int64[P]: the two cells (indices into the grouped, flattened matrix, or
    -1 for pairs given directly); ``n_cells`` the size of that matrix.
    """

    group: np.ndarray
    human_sign: np.ndarray
    metric_diff: np.ndarray
    pairs_per_group: np.ndarray
    first: np.ndarray
    second: np.ndarray
    n_cells: int

    @property
    def weights(self) -> np.ndarray:
        """float64[P]: 1 / (pairs of the pair's group x groups with pairs): the mean over groups of
        per-group shares is the sum of these weights over the pairs counted."""
        n_groups = int((self.pairs_per_group > 0).sum())
        return 1.0 / (self.pairs_per_group[self.group] * float(n_groups))


def _index_blocks(n: int, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(i, j) with i < j over n items, row-major, in blocks of about _BLOCK / rows pairs."""
    per = max(1, _BLOCK // max(rows, 1))
    i = 0
    while i < n - 1:
        # rows i..k-1 hold sum (n-1-r) pairs; take as many whole rows as fit
        k, total = i, 0
        while k < n - 1 and (total == 0 or total + (n - 1 - k) <= per):
            total += n - 1 - k
            k += 1
        lengths = n - 1 - np.arange(i, k)
        first = np.repeat(np.arange(i, k), lengths)
        offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
        second = np.arange(total) - offsets + first + 1
        yield first, second
        i = k


def pair_set(human, metrics: Sequence, average_by: str = "item", *, sample_rate: float = 1.0,
             seed: Optional[int] = None, max_pairs: int = MAX_PAIRS) -> Pairs:
    """Enumerate the pairs of items within each group (vectorized numpy).

    ``human`` float[S, I] (NaN = missing); ``metrics`` a sequence of M matrices float[S, I]. A cell
    is used where the human score and every metric score are present. ``sample_rate`` < 1 keeps each
    pair with that probability (``tau_optimization``'s sampling; seeded, numpy's PCG64), for
    groupings with more than ``max_pairs`` pairs.
    """
    h = _matrix(human, "human")
    ms = [_matrix(m, f"metric {k}") for k, m in enumerate(metrics)]
    if not ms or any(m.shape != h.shape for m in ms):
        raise InputError(f"pair_set: expected metric matrices shaped like human {h.shape}, "
                         f"found {[m.shape for m in ms]}")
    if not 0 < sample_rate <= 1:
        raise InputError(f"sample_rate: expected a value in (0, 1], found {sample_rate}")
    hg = _grouped(h, average_by)
    mg = np.stack([_grouped(m, average_by) for m in ms])
    valid = ~np.isnan(hg) & ~np.isnan(mg).any(axis=0)
    per_group = valid.sum(axis=1).astype(np.int64)
    total = int((per_group * (per_group - 1) // 2).sum())
    if total == 0:
        raise InputError("pair_set: no group has two items with both human and metric scores; "
                         "check the grouping (average_by) and the missing values")
    if total * sample_rate > max_pairs:
        raise InputError(f"pair_set: {total:,} pairs with average_by={average_by!r} exceed max_pairs={max_pairs:,}; "
                         f"use average_by='item', a sample_rate below {max_pairs / total:.3g}, or raise max_pairs")
    rng = np.random.default_rng(seed) if sample_rate < 1 else None
    g_count, n = hg.shape
    # compact each group's valid cells to the front, keeping the cell's index in the grouped matrix
    order = np.argsort(~valid, axis=1, kind="stable")
    cells = order + (np.arange(g_count) * n)[:, None]
    hc = np.take_along_axis(hg, order, axis=1)
    mc = np.take_along_axis(mg, np.broadcast_to(order, mg.shape), axis=2)
    out = {k: [] for k in ("group", "hs", "md", "first", "second")}
    width = int(per_group.max())
    for first, second in _index_blocks(width, g_count):
        # pairs (first, second) exist in group g when second < per_group[g]
        keep = second[None, :] < per_group[:, None]
        if rng is not None:
            keep &= rng.random(keep.shape) < sample_rate
        g_idx, p_idx = np.nonzero(keep)
        a, b = first[p_idx], second[p_idx]
        out["group"].append(g_idx)
        out["hs"].append(np.sign(hc[g_idx, a] - hc[g_idx, b]).astype(np.int8))
        out["md"].append(mc[:, g_idx, a] - mc[:, g_idx, b])
        out["first"].append(cells[g_idx, a])
        out["second"].append(cells[g_idx, b])
    group = np.concatenate(out["group"]).astype(np.int64)
    # group-major order, as mtme enumerates (blocks run over item pairs first)
    o = np.argsort(group, kind="stable")
    group = group[o]
    pairs = Pairs(group, np.concatenate(out["hs"])[o], np.concatenate(out["md"], axis=1)[:, o],
                  np.bincount(group, minlength=g_count).astype(np.int64), np.concatenate(out["first"])[o],
                  np.concatenate(out["second"])[o], int(hg.size))
    if pairs.group.size == 0:
        raise InputError(f"pair_set: sample_rate={sample_rate} kept no pair; raise it")
    return pairs


def preference_pairs(group_keys, better, worse) -> Pairs:
    """Pairs from human preferences without human ties (WMT relative rankings as ``*_rr_pairs``):
    ``group_keys`` int[P] (e.g. one key per source segment), ``better``/``worse`` float[M, P] or
    float[P]: metric scores of the preferred and of the other translation."""
    keys = np.asarray(group_keys)
    b = np.atleast_2d(np.asarray(better, dtype=np.float64))
    w = np.atleast_2d(np.asarray(worse, dtype=np.float64))
    if keys.ndim != 1 or b.shape != w.shape or b.shape[1] != keys.size or keys.size == 0:
        raise InputError(f"preference_pairs: expected keys[P] and scores[M, P] of equal P > 0, found {keys.shape}, "
                         f"{b.shape}, {w.shape}")
    if not (np.isfinite(b).all() and np.isfinite(w).all()):
        raise InputError("preference_pairs: a metric score is NaN or infinite; score every judged translation")
    _, group = np.unique(keys, return_inverse=True)
    order = np.argsort(group, kind="stable")
    group = group[order].astype(np.int64)
    none = np.full(keys.size, -1, np.int64)
    return Pairs(group, np.ones(keys.size, np.int8), (b - w)[:, order], np.bincount(group).astype(np.int64),
                 none, none, 0)


@dataclass(frozen=True)
class TauStats:
    """Per-group sufficient statistics, int64[G] each (``tau_optimization.TauSufficientStats``)."""

    con: np.ndarray
    dis: np.ndarray
    ties_human: np.ndarray
    ties_metric: np.ndarray
    ties_both: np.ndarray

    @property
    def num_pairs(self) -> np.ndarray:
        return self.con + self.dis + self.ties_human + self.ties_metric + self.ties_both


def kendall_stats(pairs: Pairs, epsilon: float = 0.0, metric: int = 0) -> TauStats:
    """C, D, T_h, T_m, T_hm per group; a metric tie is |m_i - m_j| <= ``epsilon``."""
    if not epsilon >= 0:
        raise InputError(f"epsilon: expected a non-negative threshold, found {epsilon}")
    d = pairs.metric_diff[metric]
    mtie = np.abs(d) <= epsilon
    htie = pairs.human_sign == 0
    agree = np.sign(d).astype(np.int8) == pairs.human_sign
    g, size = pairs.group, pairs.pairs_per_group.size

    def count(mask):
        return np.bincount(g[mask], minlength=size).astype(np.int64)

    return TauStats(count(~mtie & ~htie & agree), count(~mtie & ~htie & ~agree), count(~mtie & htie),
                    count(mtie & ~htie), count(mtie & htie))


def _variant_values(st: TauStats, variant: str, sizes=None, classes=None) -> np.ndarray:
    """float64[G] of one variant; NaN where tau-b/c are undefined (all pairs tied on one side)."""
    tot = st.num_pairs.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == "acc23":
            return (st.con + st.ties_both) / tot
        if variant == "23":
            return (st.con + st.ties_both - st.dis - st.ties_human - st.ties_metric) / tot
        xtie = (st.ties_metric + st.ties_both).astype(np.float64)
        ytie = (st.ties_human + st.ties_both).astype(np.float64)
        undefined = (xtie == tot) | (ytie == tot)
        if variant == "b":
            v = (st.con - st.dis) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
        else:  # c: Stuart's tau-c over the group's n items and min(distinct values) classes
            v = 2 * (st.con - st.dis) / (sizes.astype(np.float64) ** 2 * (classes - 1) / classes)
        return np.where(undefined, np.nan, v)


def _distinct(a: np.ndarray) -> np.ndarray:
    """Distinct non-NaN values per row of a float matrix, int64[G]."""
    s = np.sort(a, axis=1)
    new = np.ones_like(s, dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    return (new & ~np.isnan(s)).sum(axis=1)


def _average(values: np.ndarray, has_pairs: np.ndarray, replace_nans_with_zeros: bool) -> float:
    v = values[has_pairs]
    v = np.nan_to_num(v, nan=0.0) if replace_nans_with_zeros else v[~np.isnan(v)]
    return float(v.mean()) if v.size else 0.0  # mtme: nothing to average gives 0


def kendall_variants(human, metric, variant: str = "acc23", *, epsilon: float = 0.0, average_by: str = "none",
                     replace_nans_with_zeros: bool = False, max_pairs: int = MAX_PAIRS) -> float:
    """Kendall variant ``b``, ``c``, ``23`` or ``acc23`` of float[S, I] matrices, averaged over the
    groups of ``average_by`` (mt-metrics-eval ``Correlation.KendallVariants``). Groups where tau-b/c
    are undefined are left out of the mean (or count 0 with ``replace_nans_with_zeros``)."""
    if variant not in KENDALL_VARIANTS:
        raise InputError(f"variant: expected one of {', '.join(KENDALL_VARIANTS)}, found {variant!r}")
    if variant == "c" and epsilon > 0:
        raise InputError("variant 'c' with epsilon > 0: tau-c's classes are undefined with a tie threshold; use 'b'")
    pairs = pair_set(human, [metric], average_by, max_pairs=max_pairs)
    st = kendall_stats(pairs, epsilon)
    sizes = classes = None
    if variant == "c":
        h, m = _grouped(_matrix(human, "human"), average_by), _grouped(_matrix(metric, "metric"), average_by)
        valid = ~np.isnan(h) & ~np.isnan(m)
        sizes = valid.sum(axis=1)
        classes = np.minimum(_distinct(np.where(valid, h, np.nan)), _distinct(np.where(valid, m, np.nan)))
    return _average(_variant_values(st, variant, sizes, classes), pairs.pairs_per_group > 0, replace_nans_with_zeros)


@dataclass(frozen=True)
class TieCalibration:
    """Tie calibration result (``tau_optimization.TauOptimizationResult``): the statistic at the
    chosen threshold, the threshold, and the whole curve (thresholds float64[T] ascending from 0,
    values float64[T] the mean over groups at each)."""

    value: float
    epsilon: float
    thresholds: np.ndarray
    values: np.ndarray


def optimize_tie_threshold(pairs: Pairs, metric: int = 0, variant: str = "acc23") -> TieCalibration:
    """Tie calibration over a :class:`Pairs` set: the threshold maximizing the mean over groups of
    ``acc23`` (or ``23``, the same maximizer since 23 = 2 acc23 - 1)."""
    if variant not in ("acc23", "23"):
        raise InputError(f"variant: tie calibration supports 'acc23' and '23', found {variant!r}")
    d = np.abs(pairs.metric_diff[metric])
    hs = pairs.human_sign
    w = pairs.weights
    agree = np.sign(pairs.metric_diff[metric]).astype(np.int8) == hs
    correct0 = np.where(hs == 0, d == 0, agree)
    base = float(w[correct0].sum())
    # becoming a tie: a human tie turns correct, a correctly ordered pair turns wrong
    delta = np.where(d == 0, 0.0, np.where(hs == 0, w, np.where(agree, -w, 0.0)))
    order = np.argsort(d, kind="stable")
    ds = d[order]
    curve = base + np.cumsum(delta[order])
    last = np.r_[np.flatnonzero(ds[1:] != ds[:-1]), ds.size - 1]
    thresholds, values = ds[last], curve[last]
    if thresholds[0] != 0:
        thresholds, values = np.r_[0.0, thresholds], np.r_[base, values]
    best = int(np.flatnonzero(values >= values.max() - _TIE_TOL)[0])
    eps = float(thresholds[best])
    value = _average(_variant_values(kendall_stats(pairs, eps, metric), "acc23"), pairs.pairs_per_group > 0, False)
    if variant == "23":
        return TieCalibration(2 * value - 1, eps, thresholds, 2 * values - 1)
    return TieCalibration(value, eps, thresholds, values)


def kendall_with_ties_opt(human, metric, variant: str = "acc23", *, average_by: str = "item",
                          sample_rate: float = 1.0, seed: Optional[int] = None,
                          max_pairs: int = MAX_PAIRS) -> TieCalibration:
    """``acc23`` (or ``23``) of float[S, I] matrices with the metric's tie threshold optimized on
    them (mt-metrics-eval ``KendallWithTiesOpt``), averaged over ``average_by`` groups. Exact over
    all pairs by default; ``sample_rate`` < 1 searches on a seeded sample of pairs, as mtme does."""
    return optimize_tie_threshold(pair_set(human, [metric], average_by, sample_rate=sample_rate, seed=seed,
                                           max_pairs=max_pairs), 0, variant)
