"""Correlation statistics for metric meta-evaluation: Kendall tau over human pairwise preferences
(the seed paper's and WMT12's variants), Kendall tau-b (O(n log n), numba merge sort), Pearson,
Spearman. Pure functions over float64 arrays."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..jit import njit

__all__ = ["TAU_VARIANTS", "cell", "kendall_tau_b", "kendall_tau_pairs", "pearson", "rankdata", "spearman"]

TAU_VARIANTS = ("seed", "wmt12")


def kendall_tau_pairs(better: np.ndarray, worse: np.ndarray, variant: str = "seed") -> float:
    """Segment-level Kendall tau from human pairwise preferences (human ties already removed).

    ``better[i]``, ``worse[i]``: metric scores of the hypothesis humans preferred and of the other
    one, float[P]. Concordant: better > worse; discordant: better < worse. Metric ties count half
    concordant, half discordant in the seed paper (Chen & Cherry 2014, section 4; WMT13-14), and
    as discordant in the WMT12 official variant. tau = (C - D) / (C + D).
    """
    if variant not in TAU_VARIANTS:
        raise InputError(f"variant: expected one of {', '.join(TAU_VARIANTS)}, found {variant!r}")
    better, worse = np.asarray(better, float), np.asarray(worse, float)
    if better.shape != worse.shape or better.size == 0:
        raise InputError(f"kendall_tau_pairs: expected two equally long non-empty arrays, found {better.shape}, {worse.shape}")
    conc = float((better > worse).sum())
    disc = float((better < worse).sum())
    ties = better.size - conc - disc
    if variant == "seed":
        conc, disc = conc + ties / 2, disc + ties / 2
    else:
        disc += ties
    return (conc - disc) / (conc + disc)


def _values(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` as float64[n]; an :class:`InputError` for another shape or a NaN (an unrated item
    would otherwise get a rank of its own, or turn a correlation into a plausible-looking number)."""
    x = np.asarray(x, np.float64)
    if x.ndim != 1:
        raise InputError(f"{name}: expected a 1-d array of scores, found shape {x.shape}")
    if np.isnan(x).any():
        raise InputError(f"{name}: NaN in the input; drop unrated items first")
    return x


def _pair(x: np.ndarray, y: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``x``, ``y`` as float64[n] arrays of equal length without NaN (:func:`_values`)."""
    x, y = _values(x, name), _values(y, name)
    if x.shape != y.shape:
        raise InputError(f"{name}: expected two arrays of equal length, found {x.size} and {y.size} values")
    return x, y


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (ties in either variable adjusted), O(n log n); NaN when undefined."""
    x, y = _pair(x, y, "kendall_tau_b")
    if x.size < 2:
        return float("nan")
    order = np.lexsort((y, x))
    return float(_kendall_tau_b(x[order], y[order]))


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties get their average rank (as scipy.stats.rankdata 'average'); float64[n]
    of a float[n] without NaN."""
    x = _values(x, "rankdata")
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.r_[0, np.flatnonzero(np.diff(xs)) + 1]
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of 1-based ranks starts+1 .. ends
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two float[n] arrays without NaN; NaN when undefined (a constant array)."""
    x, y = _pair(x, y, "pearson")
    if x.size < 2:
        return float("nan")
    xc, yc = _centered(x), _centered(y)
    den = np.sqrt((xc * xc).sum() * (yc * yc).sum())
    return float((xc * yc).sum() / den) if den > 0 else float("nan")


def _centered(v: np.ndarray) -> np.ndarray:
    """v - mean(v), first scaled to a maximum of 1 where its squares would overflow or underflow
    (a metric column times 1e300 gave r = 0: inf / inf); r does not depend on the scale."""
    big = float(np.abs(v).max())
    if big > 1e150 or 0 < big < 1e-150:
        v = v / big
    return v - v.mean()


def cell(value: object, spec: str = ".3f") -> str:
    """A table cell: a float with ``spec``, NaN (a correlation that is undefined: a constant
    column, no data) as an em dash, anything else as ``str``."""
    if isinstance(value, float):
        return "—" if value != value else format(value, spec)
    return str(value)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks (as scipy.stats.spearmanr)."""
    x, y = _pair(x, y, "spearman")
    return pearson(rankdata(x), rankdata(y))


@njit()
def _tie_pairs(sorted_values):
    """sum over runs of equal values of t(t-1)/2 (``sorted_values`` sorted)."""
    total = 0
    run = 1
    for i in range(1, sorted_values.shape[0] + 1):
        if i < sorted_values.shape[0] and sorted_values[i] == sorted_values[i - 1]:
            run += 1
        else:
            total += run * (run - 1) // 2
            run = 1
    return total


@njit()
def _merge_sort_swaps(y):
    """Sort y (float64[n], in place) bottom-up and return the number of inversions."""
    n = y.shape[0]
    buf = np.empty_like(y)
    swaps = 0
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if y[j] < y[i]:
                    buf[k] = y[j]
                    swaps += mid - i
                    j += 1
                else:
                    buf[k] = y[i]
                    i += 1
                k += 1
            while i < mid:
                buf[k] = y[i]
                i += 1
                k += 1
            while j < hi:
                buf[k] = y[j]
                j += 1
                k += 1
        y[:] = buf
        width *= 2
    return swaps


@njit()
def _kendall_tau_b(xs, ys):
    """Kendall's tau-b in O(n log n) (Knight 1966) of pairs sorted by (x, y): float64[n] each,
    no NaN. ``ys`` is sorted in place (merge sort counting the discordant pairs)."""
    n = xs.shape[0]
    n0 = n * (n - 1) // 2
    n1 = _tie_pairs(xs)
    n3 = 0  # pairs tied in both x and y
    run = 1
    for i in range(1, n + 1):
        if i < n and xs[i] == xs[i - 1] and ys[i] == ys[i - 1]:
            run += 1
        else:
            n3 += run * (run - 1) // 2
            run = 1
    swaps = _merge_sort_swaps(ys)
    n2 = _tie_pairs(ys)
    denom = np.sqrt(float(n0 - n1) * float(n0 - n2))
    if denom == 0:
        return np.nan
    return (n0 - n1 - n2 + n3 - 2 * swaps) / denom
