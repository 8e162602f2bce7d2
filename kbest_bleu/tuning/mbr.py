"""Minimum Bayes risk / consensus selection inside K-best lists.

The K x K sentence-BLEU matrix of a segment takes each hypothesis in turn as the single
(pseudo-)reference of all the others, the K x R matrix each of R separate pseudo-references; one
numba kernel computes every pair's statistics (:func:`kbest_bleu.stats.pair_stats`, only the K x R
pairs), the smoothing is the usual vectorized scoring. Work is done in chunks of whole segments so
memory stays bounded for K = 1,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from .. import settings
from ..bleu import score_rows
from ..config import BleuConfig
from ..encode import hypotheses_array, segment_pointers
from ..errors import InputError
from ..stats import BleuStats, check_group_pointers, counting_args, pair_stats
from ..tokenize import prepare, split_ids

__all__ = ["aggregate_bleu", "mbr_matrix", "mbr_select", "pairwise_bleu"]


def _pair_bleu(hyps, seg_ptr: np.ndarray, cfg: BleuConfig, refs: Any = None,
               ref_ptr: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """Sentence BLEU of every (candidate, pseudo-reference) pair of each segment: float64[P] and
    the pair pointers out_ptr int64[S+1], reference-major within a segment (entry j * K + i:
    candidate i against pseudo-reference j, :func:`~kbest_bleu.stats.pair_stats`). The
    pseudo-references are the candidates, or ``refs`` (an Arrow array of the candidates' type)
    in segments ``ref_ptr``: only their K x R pairs are counted."""
    k = np.diff(seg_ptr)
    rows, rows_ref_ptr = hyps, None
    if refs is not None:  # one token vocabulary: the samples' rows after the candidates'
        rows, rows_ref_ptr = pa.concat_arrays([hyps, refs]), len(hyps) + ref_ptr
    ids, ptr, _ = split_ids(*prepare(rows, cfg.tokenize, cfg.lowercase_rule))
    out_ptr = np.r_[0, np.cumsum(k * (k if refs is None else np.diff(ref_ptr)))].astype(np.int64)
    return score_rows(pair_stats(ids, ptr, seg_ptr, cfg, ref_ptr=rows_ref_ptr), cfg, "sentence"), out_ptr


@dataclass
class _Sets:
    """Candidates and pseudo-references as one set per segment (the aggregate's expected counts):
    segment s holds its K_s candidates, then its R_s pseudo-references unless they are the
    candidates."""

    rows: Any  # the strings, segment by segment
    ptr: np.ndarray  # int64[S+1] their segments
    cand: np.ndarray  # int64[H] each candidate's place in ``rows``
    ref: np.ndarray  # int64[R] each pseudo-reference's
    r: np.ndarray  # int64[S] pseudo-references per segment


def _sets(hyps, seg_ptr: np.ndarray, refs: Any, ref_ptr: Optional[np.ndarray]) -> _Sets:
    """The candidates alone when ``refs`` (an Arrow array of their type) is None, else both sets,
    segment by segment."""
    k = np.diff(seg_ptr)
    if refs is None:
        rows = np.arange(len(hyps), dtype=np.int64)
        return _Sets(hyps, seg_ptr, rows, rows, k)
    r = np.diff(ref_ptr)
    ptr = np.zeros(len(k) + 1, np.int64)
    np.cumsum(k + r, out=ptr[1:])
    cand = ptr[:-1].repeat(k) + np.arange(len(hyps)) - seg_ptr[:-1].repeat(k)
    ref = (ptr[:-1] + k).repeat(r) + np.arange(len(refs)) - ref_ptr[:-1].repeat(r)
    take = np.empty(ptr[-1], np.int64)
    take[cand], take[ref] = np.arange(len(hyps)), len(hyps) + np.arange(len(refs))
    return _Sets(pa.concat_arrays([hyps, refs]).take(pa.array(take)), ptr, cand, ref, r)


def _pseudo_pointers(pseudo_references: Any, pseudo_segments: Any, seg_ptr: np.ndarray, labels: Any,
                     ids: bool, where: str) -> Optional[np.ndarray]:
    """The pseudo-references' segment pointers, their segments paired with the candidates' in order
    (``ids``: ``pseudo_segments`` are segment ids, checked equal to ``labels``; else pointers)."""
    if pseudo_references is None:
        if pseudo_segments is not None:
            raise InputError(f"{where}: pseudo_segments given without pseudo_references; pass both, or neither to use "
                             "the candidates as their own pseudo-references")
        return None
    n_refs, n_seg = len(pseudo_references), len(seg_ptr) - 1
    if pseudo_segments is None:
        if n_seg != 1:
            raise InputError(f"{where}: pseudo_segments: expected the pseudo-references' segments (the candidates form "
                             f"{n_seg} segments); None means one segment")
        return np.array([0, n_refs], np.int64)
    ptr = segment_pointers(pseudo_segments, n_refs) if ids else np.asarray(pseudo_segments, np.int64)
    if not ids and (ptr.ndim != 1 or len(ptr) < 1 or ptr[0] != 0 or ptr[-1] != n_refs or (np.diff(ptr) < 0).any()):
        raise InputError(f"{where}: pseudo_segments: expected non-decreasing pointers from 0 to {n_refs}")
    if len(ptr) - 1 != n_seg:
        raise InputError(f"{where}: the pseudo-references form {len(ptr) - 1} segments, the candidates {n_seg}; "
                         "expected one set of pseudo-references per segment, in the candidates' order")
    if ids and labels is not None:
        found = np.asarray(pseudo_segments)[ptr[:-1]].tolist()
        if found != labels:
            i = next(i for i, (x, y) in enumerate(zip(labels, found)) if x != y)
            raise InputError(f"{where}: pseudo_segments: segment {i} of the candidates is {labels[i]!r}, of the "
                             f"pseudo-references {found[i]!r}; expected the same segments in the same order")
    return ptr


def _one_segment_or(segments: Any, n: int) -> np.ndarray:
    """Segment pointers int64[S+1] of ``segments``; None: all ``n`` rows one segment (as chrF's MBR
    reads it: one candidate per segment would select every row, scored against itself)."""
    return np.array([0, n], np.int64) if segments is None else segment_pointers(segments, n)


def _weights(p: Optional[np.ndarray], sizes: np.ndarray, where: str) -> np.ndarray:
    """Each pseudo-reference's weight: ``p``, checked and normalized to sum 1 within its segment
    (an expectation, whatever scale the caller's weights have), or uniform. A segment with
    pseudo-references whose weights are all 0 has no expected utility (refused, as chrF's
    aggregate refuses it: utilities of 0 would pick its first row silently)."""
    n = int(sizes.sum())
    w = np.repeat(1.0 / np.maximum(sizes, 1), sizes) if p is None else np.asarray(p, float)
    if w.shape != (n,) or not (np.isfinite(w) & (w >= 0)).all():
        raise InputError(f"{where}: probabilities: expected {n} finite non-negative numbers (one per "
                         f"pseudo-reference), found shape {w.shape}")
    totals = np.bincount(np.repeat(np.arange(len(sizes)), sizes), w, minlength=len(sizes))
    empty = (sizes > 0) & ~(totals > 0)
    if empty.any():
        raise InputError(f"{where}: probabilities: segment {int(np.flatnonzero(empty)[0])} has pseudo-references but "
                         "their weights are all 0; expected a positive weight in every segment")
    return w if p is None else w / np.repeat(np.where(totals > 0, totals, 1.0), sizes)


def _pseudo(hyps, segments: Any, seg_ptr: np.ndarray, pseudo_references: Any, pseudo_segments: Any,
            where: str) -> tuple[Any, Optional[np.ndarray]]:
    """The pseudo-references as an Arrow array of the candidates' type and their segment
    pointers, their segments given as ids like the candidates'; (None, None) without them."""
    refs = _pseudo_array(pseudo_references, hyps)
    labels = None if refs is None or segments is None else np.asarray(segments)[seg_ptr[:-1]].tolist()
    return refs, _pseudo_pointers(refs, pseudo_segments, seg_ptr, labels, True, where)


def _pseudo_array(pseudo_references: Any, hyps) -> Any:
    """The pseudo-references as an Arrow array of the candidates' type (one array with them for
    the tokenizer), or None."""
    if pseudo_references is None:
        return None
    refs = hypotheses_array(pseudo_references)
    return refs if refs.type == hyps.type else refs.cast(hyps.type)


def mbr_matrix(hypotheses: Any, config: Optional[BleuConfig] = None, **options: Any) -> np.ndarray:
    """float64[K, K]: entry [i, j] is the sentence BLEU of hypothesis i with hypothesis j as its
    only reference (one segment's list)."""
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    k = len(hyps)
    bleu, _ = _pair_bleu(hyps, np.array([0, k], np.int64), cfg)
    return bleu.reshape(k, k).T.copy()


def pairwise_bleu(hypotheses: Any, seg_ptr: Any, config: Optional[BleuConfig] = None, *,
                  pseudo_references: Any = None, pseudo_ptr: Any = None,
                  **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every segment's K x R sentence-BLEU matrix, candidate-major: (scores float64[P], pair_ptr
    int64[S+1]); entry i * R + j of segment s's block is the BLEU of candidate i with
    pseudo-reference j as its only reference (sacrebleu's ``sentence_score(candidate_i,
    [pseudo_reference_j])`` under the config). The pseudo-references are the candidates (R = K)
    unless ``pseudo_references`` are given, with their segment pointers ``pseudo_ptr`` (None: one
    segment). Memory: the P = sum K x R floats returned (the caller asked for the matrices), and
    while counting, the statistics of those K x R pairs (:func:`kbest_bleu.stats.pair_stats`
    counts only them, each pseudo-reference's n-grams once)."""
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = check_group_pointers(seg_ptr, len(hyps))  # the kernel's rows also hold the samples
    refs = _pseudo_array(pseudo_references, hyps)
    ref_ptr = _pseudo_pointers(refs, pseudo_ptr, seg_ptr, None, False, "pairwise_bleu")
    bleu, pair_ptr = _pair_bleu(hyps, seg_ptr, cfg, refs, ref_ptr)
    # the pair kernel's blocks are reference-major (entry j * K + i), the result candidate-major
    k = np.diff(seg_ptr)
    r = k if refs is None else np.diff(ref_ptr)
    seg = np.repeat(np.arange(len(k)), k * r)
    cand, ref = np.divmod(np.arange(pair_ptr[-1]) - pair_ptr[:-1][seg], r[seg])
    return bleu[pair_ptr[:-1][seg] + ref * k[seg] + cand], pair_ptr


def mbr_select(hypotheses: Any, segments: Any = None, probabilities: Optional[np.ndarray] = None,
               config: Optional[BleuConfig] = None, *, pseudo_references: Any = None, pseudo_segments: Any = None,
               **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """MBR choice per segment: the hypothesis with the highest expected BLEU against the
    pseudo-references, u_i = sum_j p_j BLEU(i | j), p uniform within the segment or given (e.g. a
    per-segment softmax of model scores, :func:`kbest_bleu.tuning.segment_softmax`; normalized
    within the segment). ``segments``: H segment ids, None: one segment.

    The pseudo-references are the segment's hypotheses, or ``pseudo_references`` (a separate
    sample set) with their segment ids ``pseudo_segments`` (the same segments in the same order;
    None: one segment); ``probabilities`` are then one per pseudo-reference.

    Returns (rows int64[S], expected utility float64[H]).
    """
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = _one_segment_or(segments, len(hyps))
    refs, ref_ptr = _pseudo(hyps, segments, seg_ptr, pseudo_references, pseudo_segments, "mbr_select")
    if refs is None:
        ref_ptr = seg_ptr
    k, r = np.diff(seg_ptr), np.diff(ref_ptr)
    p = _weights(probabilities, r, "mbr_select")
    utility = np.zeros(len(hyps))
    start = 0
    while start < len(k):  # chunks of whole segments with at most MAX_PAIRS_PER_CHUNK pairs
        stop = start + max(1, int(np.searchsorted(np.cumsum(k[start:] * r[start:]), settings.MAX_PAIRS_PER_CHUNK,
                                                  "right")))
        a, b, ra, rb = seg_ptr[start], seg_ptr[stop], ref_ptr[start], ref_ptr[stop]
        local = seg_ptr[start:stop + 1] - a
        sep = () if refs is None else (refs.slice(ra, rb - ra), ref_ptr[start:stop + 1] - ra)
        bleu, out_ptr = _pair_bleu(hyps.slice(a, b - a), local, cfg, *sep)
        kr = k[start:stop] * r[start:stop]
        offset = np.arange(len(bleu)) - np.repeat(out_ptr[:-1], kr)  # j * K + i within the segment
        j, i = np.divmod(offset, np.repeat(k[start:stop], kr))
        i += np.repeat(local[:-1], kr)
        j += np.repeat(ref_ptr[start:stop] - ra, kr)
        utility[a:b] = np.bincount(i, weights=p[ra:rb][j] * bleu, minlength=b - a)
        start = stop
    labels = np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr))
    order = np.lexsort((-utility, labels))
    return order[seg_ptr[:-1]], utility


def aggregate_bleu(hypotheses: Any, segments: Any = None, probabilities: Optional[np.ndarray] = None,
                   config: Optional[BleuConfig] = None, *, pseudo_references: Any = None, pseudo_segments: Any = None,
                   **options: Any) -> np.ndarray:
    """Expected BLEU against the aggregated pseudo-reference (DeNero, Chiang & Knight 2009, "Fast
    consensus decoding", section 3): float64[H], linear in K instead of K^2.

    The pseudo-references of a segment are its hypotheses, or ``pseudo_references`` with their
    segment ids ``pseudo_segments`` (as :func:`mbr_select`), with weights p (uniform, or
    ``probabilities``, one per pseudo-reference, normalized within the segment). Their n-gram
    counts are averaged once, E[c(g)] = sum_j p_j c_j(g), and so is their length, E[r] = sum_j p_j
    r_j; each hypothesis is then scored with the usual sentence BLEU (smoothing and preset of
    ``config``) from clipped matches min(c_i(g), E[c(g)]) (fractional), its own n-gram totals and
    length, and reference length E[r]. N-grams are exact ids (token ids paired order by order),
    never hashes.
    """
    cfg = BleuConfig.make(config, **options)
    hyps = hypotheses_array(hypotheses)
    seg_ptr = _one_segment_or(segments, len(hyps))
    sets = _sets(hyps, seg_ptr, *_pseudo(hyps, segments, seg_ptr, pseudo_references, pseudo_segments,
                                         "aggregate_bleu"))
    n_rows, sizes = len(sets.rows), np.diff(sets.ptr)
    p = np.zeros(n_rows)
    p[sets.ref] = _weights(probabilities, sets.r, "aggregate_bleu")  # candidates apart weigh nothing
    seg_of = np.repeat(np.arange(len(sizes)), sizes)
    ids, ptr, _ = split_ids(*prepare(sets.rows, cfg.tokenize, cfg.lowercase_rule))
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
    return score_rows(BleuStats(matches, totals, lengths.astype(np.float64), ref_len), cfg, "sentence")[sets.cand]
