"""Smoothed BLEU from sufficient statistics: pure, vectorized numpy over all rows at once.

Notation (Chen & Cherry 2014, "A Systematic Comparison of Smoothing Techniques for
Sentence-Level BLEU", section 2): per row, m_n clipped matches, l_n hypothesis n-grams,
c hypothesis length, r reference length, N the max order,
BLEU = BP * exp(sum_n w_n log p_n).

Each compatibility preset is one function ``(m, l, c, r, cfg, eff) -> (bleu, p, bp)`` in
:data:`PRESETS`; they share the paper's smoothings (:func:`paper_precisions`) and differ only
where the paper is silent (README, "Compatibility presets"). Arrays: m, l float64[H, N+1] (order N+1 is read
by smoothings 5 and 7), c, r float64[H]; outputs bleu, bp float64[H], p float64[H, N].
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Callable, Optional

import numpy as np

from .config import BleuConfig
from .errors import InputError

__all__ = ["PRESETS", "corpus_totals", "moses_bleu", "moses_corpus_bleu", "mteval_bleu", "nltk_bleu", "paper_precisions",
           "sacrebleu_bleu", "sacrebleu_sentence_one"]


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0 where den == 0 (an undefined precision never contributes).

    A plain division with the undefined quotients zeroed afterwards: a masked ufunc
    (``where=``) is about twice as slow. The result keeps the memory layout of the inputs
    (statistics are column-major).
    """
    den = np.asarray(den)
    if den.min(initial=1.0) > 0:  # every quotient defined (add-k counts): no mask, no error state (~2 us)
        return np.divide(num, den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.divide(num, den, dtype=np.float64)
    np.copyto(q, 0.0, where=~(den > 0))
    return q


@lru_cache(maxsize=64)
def _weights(cfg: BleuConfig) -> np.ndarray:
    """The order weights float64[N] of ``cfg`` (read-only: one array per config, made once)."""
    n = cfg.max_order
    w = np.full(n, 1.0 / n) if cfg.weights is None else np.array(cfg.weights, dtype=float)
    w.setflags(write=False)
    return w


def _weighted_log_sum(p: np.ndarray, include: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum over included orders of w_n log p_n per row: float64[H] (-inf when an included p_n is 0)."""
    wi = np.where(include, w, 0.0)
    with np.errstate(divide="ignore"):
        logp = np.log(p, out=np.zeros_like(p), where=wi > 0)
    # order by order, left to right (as a Python sum): a row's bits do not depend on the arrays'
    # layout or on the rows beside it (einsum's summation order did, by the last bit)
    s = wi[:, 0] * logp[:, 0]
    for n in range(1, p.shape[1]):
        s = s + wi[:, n] * logp[:, n]
    return s


def _geometric(p: np.ndarray, include: Optional[np.ndarray], w: np.ndarray, renormalize: bool) -> np.ndarray:
    """exp(sum over included orders of w_n log p_n); 0 when an included p_n is 0. ``include``
    bool[H, N], or None: every order (mteval, Moses; the product then skips the masks, ~8 numpy
    calls of a small batch's scoring).

    With ``renormalize`` the sum is divided by the total weight of the included orders and
    multiplied by the total of all weights (sacrebleu's effective order divides the sum of log
    precisions by the number of orders kept; weights not summing to 1 then keep their scale, so a
    hypothesis with every order scores the same with and without effective order). An included
    zero precision gives log 0 = -inf and exp(-inf) = 0; excluded orders contribute nothing.

    With uniform weights (the default) the sum is w log(prod_n p_n): one logarithm per row
    instead of one per order, which is most of the cost of sentence BLEU. Rows whose product
    falls below the smallest normal number (a zero precision, or an underflow with very small
    precisions) take the sum of logarithms, so no precision is lost to the product.
    """
    if w.ndim > 1 or len(set(w.tolist())) > 1:  # per-row (NLTK's auto_reweigh) or per-order weights
        include = np.ones(p.shape, bool) if include is None else include
        s, total = _weighted_log_sum(p, include, w), np.where(include, w, 0.0).sum(1)
    else:
        if include is None:
            prod = p.prod(axis=1)  # left to right along each row, as the loop below (a product is not pairwise)
            k = float(p.shape[1])
        else:
            prod = np.ones(p.shape[0])
            k = np.zeros(p.shape[0])
            for n in range(p.shape[1]):
                prod *= np.where(include[:, n], p[:, n], 1.0)
                k += include[:, n]
        small = (prod < _TINY).nonzero()[0]
        if small.size:  # skipped when empty: ~10 numpy calls, a fifth of a small batch's scoring
            with np.errstate(divide="ignore"):
                s = w[0] * np.log(prod)
            s[small] = _weighted_log_sum(p[small], np.ones((small.size, p.shape[1]), bool) if include is None
                                         else include[small], w)
        else:  # no zero product: log needs no error state
            s = w[0] * np.log(prod)
        total = w[0] * k
    if not renormalize:
        return np.exp(s)
    # the included orders' weights scaled up to the weights' total W: with every order included,
    # the same as without effective order, whatever W (1 for the default weights: nothing to scale)
    w_total = float(w.sum())  # 1-D: per-row weights are NLTK's, which does not renormalize
    return np.exp(_div(s * w_total if abs(w_total - 1.0) > 1e-12 else s, total))


def _nist_geometric(zero: np.ndarray, base) -> np.ndarray:
    """1 / invcnt, where invcnt starts at 1 and is multiplied by ``base`` at each zero-match order
    (``zero`` bool[H, N]; base a number or float64[H]): the NIST geometric sequence of section 2.3
    (base 2, exact powers of two) and section 2.4 (base K / ln c).

    Column by column: the statistics are column-major, and a running product over 4 columns is
    much cheaper than a cumulative sum along rows.
    """
    out = np.empty(zero.shape, order="F")
    invcnt = np.ones(zero.shape[0])
    for n in range(zero.shape[1]):
        invcnt = np.where(zero[:, n], invcnt * base, invcnt)
        out[:, n] = 1.0 / invcnt
    return out


def _cascade(q0: np.ndarray, cur: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Smoothing 5 recurrence: q_n = (q_{n-1} + cur_n + nxt_n) / 3 with q_0 given (section 2.5)."""
    out = np.empty_like(cur)
    prev = q0
    for n in range(cur.shape[1]):
        prev = out[:, n] = (prev + cur[:, n] + nxt[:, n]) / 3.0
    return out


def _interpolated(mm: np.ndarray, ll: np.ndarray, cfg: BleuConfig) -> np.ndarray:
    """Smoothing 6 (section 2.6, Gao & He 2013): p_n = (m_n + alpha p0_n) / (l_n + alpha) with
    p0_n = p_{n-1}^2 / p_{n-2} (0 where p_{n-2} = 0), in the reading ``cfg.smoothing6_variant``:

    literal: from n = 3 on, p_{n-1} the already smoothed value (Eq. 11 as printed), p_1, p_2 raw;
    raw-prior: the prior from the unsmoothed p_{n-1}, p_{n-2};
    from-bigram: from n = 2 on with p_0 = 1 (so p0_2 = p_1^2 and p_2 is smoothed too);
    floor: zero m_1, m_2 replaced by epsilon first (smoothing 1), so p_2 = 0 no longer zeroes
    every higher order. docs/metaeval.md ("Smoothing 6") measures each against the paper.
    """
    variant = cfg.smoothing6_variant
    if variant == "floor":
        mm = mm.copy()
        low = mm[:, :2]
        mm[:, :2] = np.where((low == 0) & (ll[:, :2] > 0), cfg.epsilon, low)
    raw = _div(mm, ll)
    p = raw.copy()
    for j in range(1 if variant == "from-bigram" else 2, mm.shape[1]):
        src = raw if variant == "raw-prior" else p
        before = src[:, j - 2] if j >= 2 else 1.0
        p0 = _div(src[:, j - 1] ** 2, np.broadcast_to(before, src[:, j - 1].shape))
        p[:, j] = (mm[:, j] + cfg.alpha * p0) / (ll[:, j] + cfg.alpha)
    return p


def paper_precisions(method: int, m: np.ndarray, l: np.ndarray, c: np.ndarray, cfg: BleuConfig
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Chen & Cherry smoothings 0-7 as the paper defines them, on counts.

    Returns p float64[H, N] and ``present`` bool[H, N]: whether order n has hypothesis n-grams
    (after add-k's pseudo-counts), which effective order uses to drop orders.
    """
    n = cfg.max_order
    mm, ll = m[:, :n], l[:, :n]
    present = ll > 0
    zero = (mm == 0) & present
    if method == 0:
        return _div(mm, ll), present
    if method == 1:  # 2.1: m'_n = eps where m_n = 0
        return _div(np.where(zero, cfg.epsilon, mm), ll), present
    if method == 2:  # 2.2: add k to m_n and l_n from n = 2 on (Lin & Och 2004)
        add = np.r_[0.0, np.full(n - 1, cfg.add_k)]
        return _div(mm + add, ll + add), (ll + add) > 0
    if method == 3:  # 2.3: NIST geometric sequence, invcnt *= 2 per zero order
        return _div(np.where(zero, _nist_geometric(zero, 2.0), mm), ll), present
    if method in (4, 7):  # 2.4: invcnt *= K / ln(c) per zero order (inf when c = 1: m' = 0)
        with np.errstate(divide="ignore"):
            base = cfg.k / np.log(c)
        m4 = np.where(zero, _nist_geometric(zero, base), mm)
        if method == 4:
            return _div(m4, ll), present
        # 2.7: smoothing 5 on the smoothing-4 counts, with the raw m_{N+1}
        return _div(_cascade(m4[:, 0] + 1.0, m4, np.c_[m4[:, 1:], m[:, n]]), ll), present
    if method == 5:  # 2.5: m'_0 = m_1 + 1; m'_n = (m'_{n-1} + m_n + m_{n+1}) / 3
        return _div(_cascade(mm[:, 0] + 1.0, mm, m[:, 1:n + 1]), ll), present
    if method == 6:
        return _interpolated(mm, ll, cfg), present
    raise ValueError(f"smoothing {method!r}")


def _brevity_penalty(c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """BP = exp(min(0, 1 - r/c)) (Papineni et al. 2002, section 2.2.2); when c = 0, 0 for r > 0
    (1 - r/0 = -inf) and 1 for r = 0 (fmin drops the NaN of 0/0)."""
    # lengths are >= 0, so no zero is no empty hypothesis: no error state (~1.5 us); counting the
    # non-zeros is a third of the cost of a min reduction
    if np.count_nonzero(c) == c.size:
        return np.exp(np.fmin(1.0 - r / c, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(np.fmin(1.0 - r / c, 0.0))


def sacrebleu_bleu(m, l, c, r, cfg: BleuConfig, eff: bool):
    """sacrebleu 2.6.0 ``BLEU.compute_bleu`` for methods 0-3; 4-7 per the paper.

    No match of any order gives 0 (sacrebleu's early stop). With effective order, orders with
    no hypothesis n-grams are dropped and the remaining weights renormalized.
    """
    p, present = paper_precisions(cfg.smoothing, m, l, c, cfg)
    include = present if eff else None
    bleu = _geometric(p, include, _weights(cfg), renormalize=eff)
    bp = _brevity_penalty(c, r)
    matched = m[:, :cfg.max_order].sum(1) > 0
    if not matched.all():  # sacrebleu stops before smoothing: its precisions are reported as 0
        p = np.where(matched[:, None], p, 0.0)
    return np.where(matched, bp * bleu, 0.0), p, bp


def nltk_bleu(m, l, c, r, cfg: BleuConfig, eff: bool):  # noqa: ARG001 (the presets share one signature)
    """NLTK 3.10.4 ``sentence_bleu`` with ``SmoothingFunction().method0-7``, bug for bug.

    p_n = m_n / max(1, l_n); orders with p_n <= 0 after smoothing are skipped without
    renormalizing; no unigram match gives 0. Where NLTK's method6 asserts (no trigram match),
    the score is 0 (the interpolation has no trigram evidence to start from); below 3 orders, where
    NLTK always fails, the config is refused (:class:`~kbest_bleu.config.BleuConfig`).
    """
    n, method = cfg.max_order, cfg.smoothing
    mm, den = m[:, :n], np.maximum(l[:, :n], 1.0)
    p = mm / den
    zero = mm == 0
    if method == 0:
        p = np.where(zero, sys.float_info.min, p)
    elif method == 1:
        p = np.where(zero, (mm + cfg.epsilon) / den, p)
    elif method == 2:
        p[:, 1:] = (mm[:, 1:] + 1.0) / (den[:, 1:] + 1.0)
    elif method == 3:
        p = np.where(zero, 1.0 / (2.0 ** np.cumsum(zero, axis=1) * den), p)
    if method in (4, 7):  # one 2^k * K / ln(c) per zero order, only when c > 1
        with np.errstate(divide="ignore"):
            factor = (cfg.k / np.log(c))[:, None]
            smoothed = 1.0 / (2.0 ** np.cumsum(zero, axis=1) * factor) / den
        p = np.where(zero & (c[:, None] > 1), smoothed, p)
    if method in (5, 7):  # averages precisions, NLTK reads the 5-gram precision as p_{N+1}
        if m.shape[1] < 5:
            raise InputError("nltk methods 5 and 7 read the 5-gram precision whatever the order; "
                             "compute the statistics with max_order >= 4")
        p5 = m[:, 4] / np.maximum(l[:, 4], 1.0)
        p = _cascade(p[:, 0] + 1.0, p, np.c_[p[:, 1:], p5])
    if method == 6:
        for j in range(2, n):
            p0 = _div(p[:, j - 1] ** 2, p[:, j - 2])
            p[:, j] = (mm[:, j] + cfg.alpha * p0) / (l[:, j] + cfg.alpha)
    w = _weights(cfg)
    # NLTK reweighs the uniform 4-gram weights (its default, or the same given): weights == (0.25,) * 4
    if cfg.auto_reweigh and n == 4 and (cfg.weights is None or tuple(cfg.weights) == (0.25,) * 4):
        short = (c < 4)[:, None]
        w = np.where(short, np.where(np.arange(n) < c[:, None], _div(1.0, c)[:, None], 0.0), w)
    bleu = _geometric(p, p > 0, w, renormalize=False)
    bp = _brevity_penalty(c, r)
    scored = m[:, 0] > 0
    if method == 6 and n >= 3:
        scored &= m[:, 2] > 0
    return np.where(scored, bp * bleu, 0.0), p, bp


def mteval_bleu(m, l, c, r, cfg: BleuConfig, eff: bool):  # noqa: ARG001 (the presets share one signature)
    """mteval-v13a.pl ``bleu_score`` (smoothing 3) and ``--no-smoothing`` (smoothing 0).

    Orders without hypothesis n-grams contribute log 1 = 0 but still count in the divisor N;
    the geometric smoothing applies from unigrams on; BP = exp(min(0, 1 - r/c)), 0 when c = 0.
    """
    n = cfg.max_order
    p, present = paper_precisions(3, m, l, c, cfg)
    p = np.where(present, p, 1.0)
    bleu = _geometric(p, None, _weights(cfg), renormalize=False)
    if cfg.smoothing == 0:
        bleu = np.where(m[:, n - 1] > 0, bleu, 0.0)
    bp = np.where(c > 0, _brevity_penalty(c, r), 0.0)
    return bp * bleu, p, bp


def moses_bleu(m, l, c, r, cfg: BleuConfig, eff: bool):  # noqa: ARG001 (the presets share one signature)
    """Moses ``mert/BleuScorer.cpp`` ``smoothedSentenceBleu`` ("BLEU+1").

    p_n = (m_n + s) / (l_n + s) for every order including unigrams; with ``smooth_bp`` the
    reference length becomes r + s. BP = exp(min(0, 1 - r/c)); when c = 0 Moses computes
    1 - r/0, which is -inf (BP 0) for r > 0 and NaN (BP 1, the comparison fails) for r = 0.
    """
    return _moses(m, l, c, r, cfg, cfg.add_k, cfg.smooth_bp)


def moses_corpus_bleu(m, l, c, r, cfg: BleuConfig, eff: bool):  # noqa: ARG001 (the presets share one signature)
    """Moses' corpus BLEU: ``mert/BleuScorer.cpp`` ``calculateScore`` (the tuning objective) and
    ``multi-bleu.perl``, unsmoothed: BLEU+1 is Moses' sentence-level score only. 0 when an order
    has no match; BP = exp(min(0, 1 - r/c)). (Moses sums the logarithms in single precision; this
    is the double-precision value of the same formula.)"""
    return _moses(m, l, c, r, cfg, 0.0, False)


def _moses(m, l, c, r, cfg: BleuConfig, s: float, smooth_bp: bool):
    """Moses' BLEU with s added to every order's counts (and to r with ``smooth_bp``): BLEU+1 for
    s = 1, the unsmoothed corpus score for s = 0 (0 when an order has no match: log 0)."""
    n = cfg.max_order
    num, den = m[:, :n] + s, l[:, :n] + s
    # with s > 0 every denominator is >= s: a plain division, without _div's check (one numpy call less)
    p = num / den if s > 0 else _div(num, den)
    bleu = _geometric(p, None, _weights(cfg), renormalize=False)
    bp = _brevity_penalty(c, r + s if smooth_bp else r)
    return bp * bleu, p, bp


def corpus_totals(totals: np.ndarray, cfg: BleuConfig) -> np.ndarray:
    """The n-gram totals of each row that corpus BLEU under ``cfg``'s preset adds up: l_n, except
    under NLTK, whose ``corpus_bleu`` adds each sentence's precision denominator max(1, l_n)
    (``modified_precision``), so a sentence shorter than n adds 1 to order n. Not for NLTK's
    smoothing 6, which reads the raw counts l_n (a one-row corpus stays the sentence's score; NLTK's
    corpus method 6 reads the last sentence's counts: docs/presets.md). Same shape and dtype."""
    if cfg.compat != "nltk" or cfg.smoothing == 6:
        return totals
    return np.maximum(totals, 1).astype(totals.dtype, copy=False)


PRESETS: dict[str, Callable] = {"sacrebleu": sacrebleu_bleu, "nltk": nltk_bleu, "mteval": mteval_bleu,
                                "moses": moses_bleu}


_TINY = np.finfo(np.float64).tiny


def sacrebleu_sentence_one(v: np.ndarray, cfg: BleuConfig) -> Optional[float]:
    """:func:`kbest_bleu.smoothing.sacrebleu_bleu` of one row, sentence level, smoothings 0-3 and
    uniform weights, on Python floats (numpy's per-call overhead on one-row arrays costs ~100 us).

    ``v``: int64[2 * n_orders + 2], the statistics m_1..m_N', l_1..l_N', c, r of one row (the
    single-call kernel's layout). The operations are
    the vectorized ones in the same order (``np.log``/``np.exp`` included), so the score is
    bit-for-bit that of :func:`sacrebleu_bleu` (tests check it). None when the product of the
    precisions underflows (the caller takes the vectorized path).
    """
    n, n_orders = cfg.max_order, (len(v) - 2) // 2
    m, l = v[:n].tolist(), v[n_orders:n_orders + n].tolist()
    c, r = float(v[-2]), float(v[-1])
    if sum(m) == 0:  # sacrebleu's early stop
        return 0.0
    eff, method = cfg.effective("sentence"), cfg.smoothing
    prod, kept, invcnt, log_zero = 1.0, 0.0, 1.0, False
    for i in range(n):
        mi, li = float(m[i]), float(l[i])
        if method == 2 and i > 0:  # Chen & Cherry 2.2: add k from order 2 on
            mi, li = mi + cfg.add_k, li + cfg.add_k
        elif mi == 0 and li > 0 and method in (1, 3):  # 2.1 epsilon, 2.3 NIST geometric sequence
            if method == 1:
                mi = cfg.epsilon
            else:
                invcnt *= 2.0
                mi = 1.0 / invcnt
        if eff and not li > 0:  # effective order drops orders without hypothesis n-grams
            continue
        p = mi / li if li > 0 else 0.0
        prod *= p
        kept += 1.0
        log_zero |= p == 0.0
    w = 1.0 / n
    if log_zero:  # the vectorized path's sum of logs: an included zero precision gives -inf
        s = -np.inf
    elif prod < _TINY:  # underflow: the vectorized path sums the logarithms instead
        return None
    else:
        s = w * float(np.log(prod))
    total = w * kept
    bleu = float(np.exp((s / total if total > 0 else 0.0) if eff else s))
    bp = (0.0 if r > 0 else 1.0) if c == 0 else float(np.exp(min(1.0 - r / c, 0.0)))
    return bp * bleu
