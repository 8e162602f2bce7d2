"""Numba kernels of the tuning loops (private; validated by the public functions of
:mod:`kbest_bleu.tuning`): Moses kbmira background BLEU, the MIRA epoch, the greedy corpus oracle.

They call each other (background BLEU inside the MIRA epoch, log corpus BLEU inside the oracle), so
they share this file: numba's on-disk cache does not notice a change in a callee in another file.
Rows are statistics in Moses order, float64[H, 2N+1] (m1 t1 ... mN tN reflen).
"""

import numpy as np
from numba import prange

from ..jit import njit


@njit()
def _background_bleu_row(stats9, bg, n):
    """Moses kbmira sentenceLevelBackgroundBleu: BLEU(stats + bg) x (reference length of the sum)."""
    s = 0.0
    for j in range(n):
        s += np.log(stats9[2 * j] + bg[2 * j]) - np.log(stats9[2 * j + 1] + bg[2 * j + 1])
    s /= n
    c, r = stats9[1] + bg[1], stats9[2 * n] + bg[2 * n]
    brevity = 1.0 - r / c
    if brevity < 0:
        s += brevity
    return np.exp(s) * r


@njit(parallel=True, nogil=True)
def _background_bleu(stats9, bg, n):
    """_background_bleu_row of every row: float64[H]."""
    out = np.empty(stats9.shape[0])
    for h in prange(stats9.shape[0]):
        out[h] = _background_bleu_row(stats9[h], bg, n)
    return out


@njit()
def _mira_epoch(features, stats9, seg_ptr, order, w, w_sum, n_sum, bg, c_max, decay, n):
    """One epoch of k-best batch MIRA (Cherry & Foster 2012, Moses kbmira), in place.

    For each segment (in ``order``): hope = argmax(model + bgBLEU), fear = argmax(model -
    bgBLEU), model = argmax(model); if the hope/fear margin is violated, w += eta (f_hope -
    f_fear) with eta = min(C, loss / ||f_hope - f_fear||^2); bg = decay * (bg + stats of the
    model's choice); w_sum accumulates w after every segment for the averaged weights.
    """
    n_feat = features.shape[1]
    for s in order:
        a, b = seg_ptr[s], seg_ptr[s + 1]
        hope, fear, best = a, a, a
        hope_v, fear_v, best_v = -np.inf, -np.inf, -np.inf
        hope_b, fear_b = 0.0, 0.0
        for h in range(a, b):
            score = 0.0
            for k in range(n_feat):
                score += w[k] * features[h, k]
            bleu = _background_bleu_row(stats9[h], bg, n)
            if score + bleu > hope_v:
                hope_v, hope, hope_b = score + bleu, h, bleu
            if score - bleu > fear_v:
                fear_v, fear, fear_b = score - bleu, h, bleu
            if score > best_v:
                best_v, best = score, h
        if hope != fear:
            margin = 0.0
            norm = 0.0
            for k in range(n_feat):
                d = features[hope, k] - features[fear, k]
                margin += w[k] * d
                norm += d * d
            loss = (hope_b - fear_b) - margin
            if loss > 0 and norm > 0:
                eta = min(c_max, loss / norm)
                for k in range(n_feat):
                    w[k] += eta * (features[hope, k] - features[fear, k])
        for k in range(bg.shape[0]):
            bg[k] = decay * (bg[k] + stats9[best, k])
        for k in range(n_feat):
            w_sum[k] += w[k]
        n_sum[0] += 1


@njit()
def _greedy_oracle(stats9, seg_ptr, choice, n, max_passes):
    """Greedy corpus-level oracle (coordinate ascent): segment after segment, pick the
    hypothesis that maximizes the (unsmoothed) corpus log BLEU of the selection; repeat
    passes until nothing changes. ``choice`` (int64[S], row per segment) is updated in place."""
    n_seg = seg_ptr.shape[0] - 1
    total = np.zeros(stats9.shape[1])
    for s in range(n_seg):
        total += stats9[choice[s]]
    for _ in range(max_passes):
        changed = False
        for s in range(n_seg):
            total -= stats9[choice[s]]
            best, best_v = choice[s], -np.inf
            for h in range(seg_ptr[s], seg_ptr[s + 1]):
                v = _log_corpus_bleu(total + stats9[h], n)
                if v > best_v + 1e-12:
                    best_v, best = v, h
            if best != choice[s]:
                changed = True
                choice[s] = best
            total += stats9[choice[s]]
        if not changed:
            break


@njit()
def _log_corpus_bleu(stats9, n):
    """log of unsmoothed corpus BLEU (-inf when an order has no match)."""
    s = 0.0
    for j in range(n):
        if stats9[2 * j] <= 0 or stats9[2 * j + 1] <= 0:
            return -np.inf
        s += np.log(stats9[2 * j]) - np.log(stats9[2 * j + 1])
    s /= n
    c, r = stats9[1], stats9[2 * n]
    if c < r:
        s += 1.0 - r / c
    return s
