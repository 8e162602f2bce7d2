"""Per-step tuning objectives over :class:`~kbest_bleu.tuning.lists.KbestLists`, vectorized over
segments: expected BLEU and its gradient (seed paper section 3.2), kbmira background BLEU, hope/fear."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import InputError
from ..stats import segment_argmax
from .lists import KbestLists, moses_matrix

__all__ = ["background_bleu", "expected_bleu", "hope_fear_model", "moses_matrix", "segment_softmax"]


def segment_softmax(scores: np.ndarray, seg_ptr: np.ndarray) -> np.ndarray:
    """Per-segment softmax of ``scores`` (log-sum-exp stable): float64[H]. A difference from the
    segment's maximum beyond float64 (scores near -1e308 and 1e308) is -inf, whose exp is the
    limit 0: numpy's overflow warning is not raised."""
    starts = seg_ptr[:-1]
    sizes = np.diff(seg_ptr)
    with np.errstate(over="ignore"):
        z = np.exp(scores - np.repeat(np.maximum.reduceat(scores, starts), sizes))
    return z / np.repeat(np.add.reduceat(z, starts), sizes)


def expected_bleu(kb: KbestLists, w: np.ndarray, bleu: np.ndarray, lam: float = 10.0,
                  segments: Optional[np.ndarray] = None) -> tuple[float, np.ndarray]:
    """The seed paper's objective (section 3.2) and its exact gradient:

    L(w) = lam ||w||^2 - sum_i len(R_i) E_P[BLEU_i],   P(h | i) = softmax_h(w . f_h),
    dL/dw = 2 lam w - sum_i len(R_i) sum_h P(h|i) (BLEU_h - E_P[BLEU_i]) f_h.

    ``bleu``: sentence BLEU of every hypothesis (any smoothing: it does not depend on w).
    ``segments``: optional bool[S] mask, the sum runs over these segments only (minibatches).
    """
    w = np.asarray(w, np.float64)
    p = segment_softmax(kb.model_scores(w), kb.seg_ptr)
    starts, sizes = kb.seg_ptr[:-1], np.diff(kb.seg_ptr)
    expected = np.add.reduceat(p * bleu, starts)
    weight = kb.ref_len if segments is None else np.where(segments, kb.ref_len, 0.0)
    coef = np.repeat(weight, sizes) * p * (bleu - np.repeat(expected, sizes))
    with np.errstate(over="ignore", invalid="ignore"):  # said below, in one line
        # the regularizer may overflow to inf (a huge weight on a feature that is 0 everywhere): the loss is
        # then inf, while the gradient, all that training reads, stays finite; lam 0 adds nothing (not 0 x inf)
        loss = (lam * (w @ w) if lam else 0.0) - (weight * expected).sum()
        grad = 2 * lam * w - kb.features.T @ coef
    if not np.isfinite(grad).all():
        raise InputError(f"expected BLEU: the gradient overflows float64 (lam {lam:.3g}, weights up to "
                         f"{np.abs(w).max():.3g}); use a smaller lam (--lam) or smaller weights")
    return float(loss), grad


def background_bleu(kb: KbestLists, bg: np.ndarray) -> np.ndarray:
    """Moses kbmira background BLEU of every hypothesis: BLEU(stats + bg) x reference length."""
    n = kb.stats.max_order
    bg = np.asarray(bg, np.float64)
    if bg.shape != (2 * n + 1,) or not np.isfinite(bg).all():
        raise InputError(f"background_bleu: bg: expected {2 * n + 1} finite statistics (m1 t1 ... m{n} t{n} "
                         f"reflen), found shape {bg.shape}")
    from ._kernels import _background_bleu  # numba loads with the first use, not with the package

    return _background_bleu(moses_matrix(kb.stats), bg, n)


def hope_fear_model(kb: KbestLists, w: np.ndarray, bg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of hope (model + bgBLEU), fear (model - bgBLEU) and model 1-best per segment."""
    score = kb.model_scores(w)
    bleu = background_bleu(kb, bg)
    return (segment_argmax(score + bleu, kb.seg_ptr), segment_argmax(score - bleu, kb.seg_ptr),
            segment_argmax(score, kb.seg_ptr))
