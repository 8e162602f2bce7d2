"""Significance and confidence over sufficient statistics, vectorized over resamples.

Paired bootstrap resampling (Koehn 2004) and approximate randomization (Riezler & Maxwell
2005) with sacrebleu 2.6.0's semantics: the same random draws for the same seed
(``numpy.random.default_rng(seed)``: ``choice`` for bootstrap, ``integers(2)`` for AR), the same
p-value ((c + 1) / (R + 1)) and the same 95% interval (sacrebleu ``estimate_ci``). Each
resample's corpus statistics are one row of a matrix product, and all resamples are scored in
one vectorized call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..bleu import score_rows
from ..config import BleuConfig
from ..errors import InputError
from ..smoothing import corpus_totals
from ..stats import BleuStats

__all__ = ["DEFAULT_SEED", "PairedResult", "approximate_randomization", "bootstrap_ci", "estimate_ci",
           "paired_bootstrap"]

DEFAULT_SEED = 12345  # sacrebleu's SACREBLEU_SEED default


@dataclass(frozen=True)
class PairedResult:
    """score: the system's corpus BLEU; p_value; mean and ci: bootstrap mean and 95% half-width
    (NaN when not computed). 0-1 scale."""

    score: float
    p_value: float
    mean: float = float("nan")
    ci: float = float("nan")


def _matrix(stats: BleuStats, cfg: BleuConfig) -> np.ndarray:
    """Per-segment statistics float64[n, 2(N+1)+2], the totals as corpus BLEU adds them
    (:func:`corpus_totals`); statistics that are not finite (hand-built float ones) are refused:
    a NaN reference length would make the brevity penalty 1."""
    m = np.column_stack([stats.matches, corpus_totals(stats.totals, cfg), stats.hyp_len, stats.ref_len]
                        ).astype(np.float64)
    if not np.isfinite(m).all():
        row = int(np.flatnonzero(~np.isfinite(m).all(1))[0])
        raise InputError(f"paired test: the statistics of row {row} are not finite (NaN or inf); expected counts, "
                         "as kbest_bleu.ngram_stats gives them")
    return m


def _check_samples(n_samples: int) -> int:
    """``n_samples`` as a positive int (0 resamples give no distribution: sacrebleu's CLI reads 0
    as its default, the CLI here too; the functions need a number)."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise InputError(f"n_samples: expected a positive number of resamples (e.g. 1000), found {n_samples!r}")
    return int(n_samples)


def _rows(sums: np.ndarray, n_orders: int) -> BleuStats:
    """Resampled corpus statistics (float64[R, 2(N+1)+2] of integers) as a BleuStats."""
    return BleuStats(sums[:, :n_orders], sums[:, n_orders:2 * n_orders], sums[:, -2], sums[:, -1])


def _corpus_bleu_rows(sums: np.ndarray, n_orders: int, cfg: BleuConfig) -> np.ndarray:
    return score_rows(_rows(sums, n_orders), cfg, "corpus")


def _resample_counts(rng: np.random.Generator, n: int, n_samples: int) -> np.ndarray:
    """How often each segment is drawn in each bootstrap resample: int64[R, n] (sacrebleu's draws)."""
    idx = rng.choice(n, size=(n_samples, n), replace=True)
    flat = (idx + (np.arange(n_samples) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=n_samples * n).reshape(n_samples, n)


def estimate_ci(scores: np.ndarray) -> tuple[float, float]:
    """Mean and 95% half-width from the 2.5th and 97.5th percentile order statistics (sacrebleu)."""
    s = np.sort(scores)
    lo = len(s) // 40
    return float(s.mean()), float(0.5 * (s[len(s) - lo - 1] - s[lo]))


def _p_value(null: np.ndarray, observed: float) -> float:
    return float(((null > observed).sum() + 1) / (len(null) + 1))


def _check_pair(baseline: BleuStats, system: BleuStats) -> None:
    if len(baseline) != len(system) or baseline.max_order != system.max_order:
        raise InputError(f"paired test: expected statistics of the same segments (rows and max order), found "
                         f"{len(baseline)} x {baseline.max_order} and {len(system)} x {system.max_order}")


def bootstrap_ci(stats: BleuStats, config: Optional[BleuConfig] = None, n_samples: int = 1000,
                 seed: Optional[int] = DEFAULT_SEED) -> tuple[float, float]:
    """Bootstrap mean and 95% confidence half-width of corpus BLEU (rows = segments)."""
    cfg = config or BleuConfig()
    counts = _resample_counts(np.random.default_rng(seed), len(stats), _check_samples(n_samples))
    return estimate_ci(_corpus_bleu_rows(counts @ _matrix(stats, cfg), stats.matches.shape[1], cfg))


def paired_bootstrap(baseline: BleuStats, system: BleuStats, config: Optional[BleuConfig] = None,
                     n_samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> PairedResult:
    """Paired bootstrap resampling (sacrebleu ``--paired-bs``): p-value of the observed corpus
    BLEU difference against the mean-centred distribution of resampled differences."""
    _check_pair(baseline, system)
    cfg = config or BleuConfig()
    n_ord = baseline.matches.shape[1]
    counts = _resample_counts(np.random.default_rng(seed), len(baseline), _check_samples(n_samples))
    bl = _corpus_bleu_rows(counts @ _matrix(baseline, cfg), n_ord, cfg)
    sy = _corpus_bleu_rows(counts @ _matrix(system, cfg), n_ord, cfg)
    score_bl, score_sy = _corpus_bleu_rows(np.stack([_matrix(baseline, cfg).sum(0), _matrix(system, cfg).sum(0)]),
                                           n_ord, cfg)
    diffs = np.abs(sy - bl)
    mean, ci = estimate_ci(sy)
    return PairedResult(float(score_sy), _p_value(diffs - diffs.mean(), abs(score_bl - score_sy)), mean, ci)


def approximate_randomization(baseline: BleuStats, system: BleuStats, config: Optional[BleuConfig] = None,
                              n_samples: int = 10000, seed: Optional[int] = DEFAULT_SEED) -> PairedResult:
    """Approximate randomization (sacrebleu ``--paired-ar``, multeval): swap each segment's two
    outputs with probability 1/2; p-value of the observed |difference| under the shuffles."""
    _check_pair(baseline, system)
    cfg = config or BleuConfig()
    n_ord = baseline.matches.shape[1]
    rng = np.random.default_rng(seed)
    swap = rng.integers(2, size=(_check_samples(n_samples), len(baseline)), dtype=bool).astype(np.float64)
    a, b = _matrix(baseline, cfg), _matrix(system, cfg)
    shuf_a = swap @ a + (1.0 - swap) @ b
    shuf_b = (1.0 - swap) @ a + swap @ b
    null = np.abs(_corpus_bleu_rows(shuf_a, n_ord, cfg) - _corpus_bleu_rows(shuf_b, n_ord, cfg))
    score_a, score_b = _corpus_bleu_rows(np.stack([a.sum(0), b.sum(0)]), n_ord, cfg)
    return PairedResult(float(score_b), _p_value(null, abs(score_a - score_b)))
