"""Numba kernels of the tuning loops (private; validated by the public functions of
:mod:`kbest_bleu.tuning`): Moses kbmira background BLEU, the MIRA epoch, the greedy corpus oracle.

Both loops score candidates one at a time between sequential updates, so BLEU is a scalar
kernel here (:func:`_log_bleu_of_sum`, shared by both) rather than the vectorized
:mod:`kbest_bleu.smoothing`; a test holds the two equal.
Rows are statistics in Moses order, float64[H, 2N+1] (m1 t1 ... mN tN reflen).
"""

import numpy as np
from numba import prange

from ..jit import njit


@njit()
def _log_bleu_of_sum(a, b, n):
    """log of unsmoothed BLEU of the statistics ``a + b`` (Moses order), the one BLEU of the
    tuning loops: mean of log p_n over N orders plus min(0, 1 - r / c) (Papineni et al. 2002,
    section 2.3); -inf when an order has no n-gram or no match. A sum of two rows, so that
    neither loop allocates one per candidate. Equal to :func:`kbest_bleu.bleu.corpus_score`
    under the moses/none preset (tested)."""
    s = 0.0
    for j in range(n):
        m, t = a[2 * j] + b[2 * j], a[2 * j + 1] + b[2 * j + 1]
        if m <= 0 or t <= 0:
            return -np.inf
        s += np.log(m) - np.log(t)
    s /= n
    c, r = a[1] + b[1], a[2 * n] + b[2 * n]
    if c < r:
        s += 1.0 - r / c
    return s


@njit()
def _background_bleu_row(stats9, bg, n):
    """Moses kbmira sentenceLevelBackgroundBleu: BLEU(stats + bg) x (reference length of the sum)."""
    return np.exp(_log_bleu_of_sum(stats9, bg, n)) * (stats9[2 * n] + bg[2 * n])


@njit(parallel=True, nogil=True)
def _background_bleu(stats9, bg, n):
    """_background_bleu_row of every row: float64[H]."""
    out = np.empty(stats9.shape[0])
    for h in prange(stats9.shape[0]):
        out[h] = _background_bleu_row(stats9[h], bg, n)
    return out


@njit()
def _mira_epoch(features, stats9, seg_ptr, order, w, w_sum, n_sum, bg, c_max, decay, n):
    """One epoch of k-best batch MIRA (Cherry & Foster 2012; hope, fear and update as Moses
    kbmira), in place.

    For each segment (in ``order``): hope = argmax(model + bgBLEU), fear = argmax(model -
    bgBLEU), model = argmax(model); if the hope/fear margin is violated, w += eta (f_hope -
    f_fear) with eta = min(C, loss / ||f_hope - f_fear||^2); bg = decay * (bg + stats of the
    model's choice) after every segment (Chiang et al. 2008's pseudo-document of 1-best
    translations; kbmira instead adds the hope's statistics, bg = decay * bg + stats, and only
    where hope and fear differ: docs/tuning.md); w_sum accumulates w after every segment for
    the averaged weights (kbmira averages over its updates).
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
                v = _log_bleu_of_sum(total, stats9[h], n)
                if v > best_v + 1e-12:
                    best_v, best = v, h
            if best != choice[s]:
                changed = True
                choice[s] = best
            total += stats9[choice[s]]
        if not changed:
            break
