"""Tuners on fixed K-best lists: k-best batch MIRA, PRO, expected-BLEU training. The BLEU
statistics are computed once; every step only recomputes model scores w.f."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..bleu import sentence_scores
from ..config import BleuConfig
from ..errors import InputError
from .lists import KbestLists, moses_matrix
from .objectives import expected_bleu

__all__ = ["TuneResult", "tune_expected_bleu", "tune_mira", "tune_pro"]


@dataclass(frozen=True)
class TuneResult:
    """weights: the tuned weights; bleu: 1-best corpus BLEU on the tuning lists with them;
    history: 1-best corpus BLEU after each epoch/iteration (MIRA: of the averaged weights)."""

    weights: np.ndarray
    bleu: float
    history: list


def tune_mira(kb: KbestLists, w0: np.ndarray, c: float = 0.01, decay: float = 0.999, epochs: int = 60,
              seed: int = 0, config: Optional[BleuConfig] = None) -> TuneResult:
    """k-best batch MIRA (Cherry & Foster 2012) with Moses kbmira defaults: C = 0.01, background
    BLEU decay 0.999, 60 epochs, averaged weights, the best epoch kept."""
    from ._kernels import _mira_epoch  # numba loads with the first use, not with the package

    cfg = config or BleuConfig()
    w = kb.check_weights(w0, "w0").copy()
    w_sum, n_sum = np.zeros_like(w), np.zeros(1, np.int64)
    bg = np.ones(2 * kb.stats.max_order + 1)
    m = moses_matrix(kb.stats)
    rng = np.random.default_rng(seed)
    best_w, best, history = w.copy(), -1.0, []
    for _ in range(epochs):
        _mira_epoch(kb.features, m, kb.seg_ptr, rng.permutation(len(kb.seg_ptr) - 1), w, w_sum, n_sum, bg, c, decay,
                    kb.stats.max_order)
        avg = w_sum / n_sum[0]
        score = kb.corpus_bleu(kb.one_best(avg), cfg)
        history.append(score)
        if score > best:
            best, best_w = score, avg.copy()
    return TuneResult(best_w, best, history)


def tune_pro(kb: KbestLists, w0: np.ndarray, samples: int = 5000, keep: int = 50, min_diff: float = 0.05,
             seed: int = 0, config: Optional[BleuConfig] = None, interpolate: float = 1.0) -> TuneResult:
    """PRO (Hopkins & May 2011): per segment sample ``samples`` pairs, keep the ``keep`` with the
    largest BLEU+1 difference above ``min_diff``, fit a logistic regression without bias on
    feature differences (Newton's method). Between decoding runs Moses interpolates the result
    with the previous weights (``interpolate=0.1``); on fixed lists the default keeps it whole."""
    cfg = config or BleuConfig()
    w0 = kb.check_weights(w0, "w0")
    bleu = sentence_scores(kb.stats, compat="moses")
    rng = np.random.default_rng(seed)
    sizes = np.diff(kb.seg_ptr)
    seg = np.repeat(np.arange(len(sizes)), samples)
    i = kb.seg_ptr[seg] + (rng.random(len(seg)) * sizes[seg]).astype(np.int64)
    j = kb.seg_ptr[seg] + (rng.random(len(seg)) * sizes[seg]).astype(np.int64)
    diff = np.abs(bleu[i] - bleu[j])
    ok = diff > min_diff
    seg, i, j, diff = seg[ok], i[ok], j[ok], diff[ok]
    order = np.lexsort((-diff, seg))  # per segment, largest difference first
    seg, i, j = seg[order], i[order], j[order]
    rank = np.arange(len(seg)) - np.searchsorted(seg, seg)
    take = rank < keep
    i, j = i[take], j[take]
    if len(i) == 0:
        raise InputError("PRO: no hypothesis pair differs by more than min_diff in BLEU+1; nothing to learn from")
    sign = np.where(bleu[i] > bleu[j], 1.0, -1.0)
    x = np.concatenate([(kb.features[i] - kb.features[j]) * sign[:, None],
                        (kb.features[j] - kb.features[i]) * sign[:, None]])
    y = np.r_[np.ones(len(i)), np.zeros(len(i))]
    w_new = _logistic_regression(x, y)
    w = interpolate * w_new + (1 - interpolate) * np.asarray(w0, np.float64)
    score = kb.corpus_bleu(kb.one_best(w), cfg)
    return TuneResult(w, score, [score])


def _logistic_regression(x: np.ndarray, y: np.ndarray, l2: float = 1e-6, iters: int = 50) -> np.ndarray:
    """Weights of a logistic regression without bias (Newton / IRLS with a tiny L2 for stability)."""
    w = np.zeros(x.shape[1])
    if not w.size:  # a table without features: nothing to weigh (MIRA and expected BLEU return [] too)
        return w
    for _ in range(iters):
        with np.errstate(over="ignore"):  # a large margin: exp overflows to inf and p is 0, as it should be
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def tune_expected_bleu(lists: Sequence[KbestLists], w0: np.ndarray, lam: float = 10.0, epochs: int = 20,
                       batch: int = 16, lr: float = 0.05, seed: int = 0,
                       config: Optional[BleuConfig] = None) -> TuneResult:
    """Expected-BLEU training (seed paper section 3.2): minimize lam ||w||^2 - sum_i len(R_i)
    E_P[BLEU_i] by stochastic gradient descent over minibatches of segments (Adam step sizes),
    with the MERT-like outer loop: at outer iteration t the K-best lists of iterations 1..t are
    merged (de-duplicated) and training continues from the current weights."""
    cfg = config or BleuConfig()
    if not lists:
        raise InputError("tune_expected_bleu: expected at least one KbestLists, found none")
    w = lists[0].check_weights(w0, "w0").copy()
    rng = np.random.default_rng(seed)
    history = []
    pool = None
    for kb_t in lists:
        pool = kb_t if pool is None else pool.merge(kb_t)
        bleu = sentence_scores(pool.stats, cfg)
        mom, vel, step = np.zeros_like(w), np.zeros_like(w), 0
        n_seg = len(pool.seg_ptr) - 1
        if not np.isfinite(lam * n_seg):  # a minibatch's share, lam * len(part) / n_seg, is made from it
            raise InputError(f"lam: {lam:g} x {n_seg} segments overflows float64; use a smaller lam (--lam)")
        for _ in range(epochs):
            for part in np.array_split(rng.permutation(n_seg), max(1, n_seg // batch)):
                mask = np.zeros(n_seg, bool)
                mask[part] = True
                _, g = expected_bleu(pool, w, bleu, lam * len(part) / n_seg, mask)
                # per reference token: the step size does not depend on the batch (a batch without
                # reference tokens, empty references, has only the regularizer's gradient: not / 0)
                g /= max(int(pool.ref_len[part].sum()), 1)
                step += 1
                mom = 0.9 * mom + 0.1 * g
                vel = 0.999 * vel + 0.001 * g * g
                w -= lr * (mom / (1 - 0.9 ** step)) / (np.sqrt(vel / (1 - 0.999 ** step)) + 1e-8)
        history.append(pool.corpus_bleu(pool.one_best(w), cfg))
    return TuneResult(w, history[-1], history)
