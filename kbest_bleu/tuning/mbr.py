"""Minimum Bayes risk / consensus selection inside K-best lists.

The K x K sentence-BLEU matrix of a segment takes each hypothesis in turn as the single
(pseudo-)reference of all the others; one numba kernel computes every pair's statistics
(:func:`kbest_bleu.stats.pair_stats`), the smoothing is the usual vectorized scoring. Work is
done in chunks of whole segments so memory stays bounded for K = 1,000.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import settings
from ..bleu import sentence_scores
from ..config import BleuConfig
from ..encode import hypotheses_array, segment_pointers
from ..errors import InputError
from ..stats import BleuStats, counting_args, pair_stats
from ..tokenize import prepare, split_ids

__all__ = ["aggregate_bleu", "mbr_matrix", "mbr_select", "pairwise_bleu"]


def _pair_bleu(hyps, seg_ptr: np.ndarray, cfg: BleuConfig) -> tuple[np.ndarray, np.ndarray]:
    """Sentence BLEU of every (hypothesis, pseudo-reference) pair of each segment: float64[P] and
    the pair pointers out_ptr int64[S+1] (layout of :func:`~kbest_bleu.stats.pair_stats`)."""
    ids, ptr, _ = split_ids(*prepare(hyps, cfg.tokenize, cfg.lowercase))
    sizes = np.diff(seg_ptr)
    out_ptr = np.r_[0, np.cumsum(sizes * sizes)].astype(np.int64)
    return sentence_scores(pair_stats(ids, ptr, seg_ptr, cfg), cfg), out_ptr


def mbr_matrix(hypotheses: Any, config: Optional[BleuConfig] = None, **options: Any) -> np.ndarray:
    """float64[K, K]: entry [i, j] is the sentence BLEU of hypothesis i with hypothesis j as its
    only reference (one segment's list)."""
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    k = len(hyps)
    bleu, _ = _pair_bleu(hyps, np.array([0, k], np.int64), cfg)
    return bleu.reshape(k, k).T.copy()


def pairwise_bleu(hypotheses: Any, seg_ptr: Any, config: Optional[BleuConfig] = None,
                  **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every segment's K x K sentence-BLEU matrix, candidate-major: (scores float64[P], pair_ptr
    int64[S+1]); entry i * K + j of segment s's block is the BLEU of candidate i with candidate j as
    its only reference (sacrebleu's ``sentence_score(candidate_i, [candidate_j])`` under the
    config). Memory: P = sum K^2 floats (the caller asked for the matrices)."""
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = np.asarray(seg_ptr, np.int64)
    bleu, out_ptr = _pair_bleu(hyps, seg_ptr, cfg)
    sizes = np.diff(seg_ptr)
    # the pair statistics are reference-major (j * K + i): transpose each block
    k = np.repeat(sizes, sizes * sizes)
    offset = np.arange(len(bleu)) - np.repeat(out_ptr[:-1], sizes * sizes)
    ref, cand = offset // np.maximum(k, 1), offset % np.maximum(k, 1)
    scores = np.empty_like(bleu)
    scores[np.repeat(out_ptr[:-1], sizes * sizes) + cand * k + ref] = bleu
    return scores, out_ptr


def mbr_select(hypotheses: Any, segments: Any = None, probabilities: Optional[np.ndarray] = None,
               config: Optional[BleuConfig] = None, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """MBR choice per segment: the hypothesis with the highest expected BLEU against the others,
    u_i = sum_j p_j BLEU(i | j), p uniform within the segment or given (e.g. a per-segment
    softmax of model scores, :func:`kbest_bleu.tuning.segment_softmax`).

    Returns (rows int64[S], expected utility float64[H]).
    """
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = segment_pointers(segments, len(hyps))
    sizes = np.diff(seg_ptr)
    p = np.repeat(1.0 / np.maximum(sizes, 1), sizes) if probabilities is None else np.asarray(probabilities, float)
    if p.shape != (len(hyps),) or not (np.isfinite(p) & (p >= 0)).all():
        raise InputError(f"mbr_select: probabilities: expected {len(hyps)} finite non-negative numbers (one per "
                         f"hypothesis), found shape {p.shape}")
    utility = np.zeros(len(hyps))
    start = 0
    while start < len(sizes):  # chunks of whole segments with at most MAX_PAIRS_PER_CHUNK pairs
        stop = start + max(1, int(np.searchsorted(np.cumsum(sizes[start:] ** 2), settings.MAX_PAIRS_PER_CHUNK, "right")))
        a, b = seg_ptr[start], seg_ptr[stop]
        local = seg_ptr[start:stop + 1] - a
        bleu, out_ptr = _pair_bleu(hyps.slice(a, b - a), local, cfg)
        k = np.repeat(sizes[start:stop], sizes[start:stop] ** 2)
        offset = np.arange(len(bleu)) - np.repeat(out_ptr[:-1], sizes[start:stop] ** 2)
        first = np.repeat(local[:-1], sizes[start:stop] ** 2)
        i, j = first + offset % k, first + offset // k
        utility[a:b] = np.bincount(i, weights=p[a:b][j] * bleu, minlength=b - a)
        start = stop
    labels = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((-utility, labels))
    return order[seg_ptr[:-1]], utility


def aggregate_bleu(hypotheses: Any, segments: Any = None, probabilities: Optional[np.ndarray] = None,
                   config: Optional[BleuConfig] = None, **options: Any) -> np.ndarray:
    """Expected BLEU against the aggregated pseudo-reference (DeNero, Chiang & Knight 2009, "Fast
    consensus decoding", section 3): float64[H], linear in K instead of K^2.

    The pseudo-references of a segment are its hypotheses with weights p (uniform, or
    ``probabilities``, normalized within the segment). Their n-gram counts are averaged once,
    E[c(g)] = sum_j p_j c_j(g), and so is their length, E[r] = sum_j p_j r_j; each hypothesis is
    then scored with the usual sentence BLEU (smoothing and preset of ``config``) from clipped
    matches min(c_i(g), E[c(g)]) (fractional), its own n-gram totals and length, and reference
    length E[r]. N-grams are exact ids (token ids paired order by order), never hashes.
    """
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = segment_pointers(segments, len(hyps))
    n_rows, sizes = len(hyps), np.diff(seg_ptr)
    p = np.repeat(1.0 / np.maximum(sizes, 1), sizes) if probabilities is None else np.asarray(probabilities, float)
    if p.shape != (n_rows,) or not (np.isfinite(p) & (p >= 0)).all():
        raise InputError(f"aggregate_bleu: probabilities: expected {n_rows} finite non-negative numbers (one per "
                         f"hypothesis), found shape {p.shape}")
    seg_of = np.repeat(np.arange(len(sizes)), sizes)
    total = np.bincount(seg_of, weights=p, minlength=len(sizes))
    p = p / np.where(total > 0, total, 1.0)[seg_of]
    ids, ptr, _ = split_ids(*prepare(hyps, cfg.tokenize, cfg.lowercase))
    lengths = np.diff(ptr)
    n_orders = counting_args(cfg)[0]
    matches = np.zeros((n_rows, n_orders))
    totals = np.zeros((n_rows, n_orders))
    row_of_token = np.repeat(np.arange(n_rows), lengths)
    n_tok, vocab = len(ids), int(ids.max()) + 1 if len(ids) else 1
    gram = ids.astype(np.int64)  # gram[t]: id of the n-gram starting at token t, -1 past its row's end
    for n in range(1, n_orders + 1):
        if n > 1:  # extend each (n-1)-gram by the token n-1 places on, in the same row: an exact pair
            last = np.arange(n_tok) + n - 1
            ok = (gram >= 0) & (last < n_tok)
            ok[ok] &= row_of_token[last[ok]] == row_of_token[ok]
            pair = gram[ok] * vocab + ids[last[ok]]
            gram = np.full(n_tok, -1, np.int64)
            _, gram[ok] = np.unique(pair, return_inverse=True)
        totals[:, n - 1] = np.maximum(lengths - n + 1, 0)
        valid = np.flatnonzero(gram >= 0)
        if not len(valid):
            continue
        # (row, n-gram) counts, then each segment's expected count of each n-gram
        width = int(gram[valid].max()) + 1
        uniq_rg, count = np.unique(row_of_token[valid] * width + gram[valid], return_counts=True)
        r_of, g_of = np.divmod(uniq_rg, width)
        _, sg_index = np.unique(seg_of[r_of] * width + g_of, return_inverse=True)
        expected = np.bincount(sg_index, weights=p[r_of] * count)
        matches[:, n - 1] = np.bincount(r_of, weights=np.minimum(count, expected[sg_index]), minlength=n_rows)
    ref_len = np.bincount(seg_of, weights=p * lengths, minlength=len(sizes))[seg_of]
    return sentence_scores(BleuStats(matches, totals, lengths.astype(np.float64), ref_len), cfg)
