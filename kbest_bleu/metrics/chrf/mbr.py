"""Pairwise and aggregated chrF / chrF++ for minimum Bayes risk (MBR) decoding.

Per segment, K candidates are scored against pseudo-references: the same K candidates (the usual
MBR over samples or a K-best list) or a separate set. :func:`pairwise_chrf` gives the K x R chrF of
each candidate against each pseudo-reference as its one reference, equal to sacrebleu's
``CHRF(...).sentence_score(candidate, [pseudo_reference]).score / 100``, and each candidate's
expected utility (the weighted mean of its row). :func:`aggregate_chrf` gives the linear-time
alternative of Vamvas & Sennrich (2024, "Linear-time Minimum Bayes Risk Decoding with Reference
Aggregation"): chrF against the weighted mean n-gram counts of the pseudo-references, as fastChrF's
``aggregate_chrf``.

Each distinct string of a segment is decoded and cut into n-grams once (exact segment-local ids,
:func:`~kbest_bleu.metrics.chrf._kernels.profiles`); a pair then costs one pass over the
pseudo-reference's n-grams that some other string holds, against the candidate's counts in a dense
array. Match counts are symmetric, so within one set each unordered pair is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import InputError
from ...stats import check_group_pointers
from . import _kernels, _pairs
from .params import ChrfParams, chrf_params
from .score import _check_segment_size, _first_copies, _text_buffers, _text_column

__all__ = ["PairwiseChrf", "aggregate_chrf", "pairwise_chrf"]

_CHUNK_ENTRIES = 1 << 24  # n-gram entries (8 bytes each) of the strings profiled at once


@dataclass(frozen=True)
class PairwiseChrf:
    """Pairwise chrF (0-1) of S segments.

    scores : float64[P], segment s's K_s x R_s matrix (candidates x pseudo-references, row-major)
        at scores[pair_ptr[s]:pair_ptr[s+1]]; empty when computed with ``matrix=False``.
    pair_ptr : int64[S+1], the matrices' offsets (also when ``scores`` is empty).
    shape : int64[S, 2], (K_s, R_s).
    expected : float64[H], each candidate's expected utility: sum over its segment's
        pseudo-references of weight x chrF, divided by the sum of the weights (self-pairs included
        when the candidates are their own pseudo-references).
    """

    scores: np.ndarray
    pair_ptr: np.ndarray
    shape: np.ndarray
    expected: np.ndarray

    def matrix(self, s: int) -> np.ndarray:
        """Segment s's K x R matrix (a view of :attr:`scores`)."""
        if not len(self.scores) and self.pair_ptr[-1]:
            raise InputError("chrF pairwise: the matrices were not kept; call pairwise_chrf(..., matrix=True)")
        return self.scores[self.pair_ptr[s]:self.pair_ptr[s + 1]].reshape(tuple(self.shape[s]))


@dataclass
class _Job:
    """Distinct strings of each segment, laid out segment by segment (candidates, then the
    pseudo-references unless they are the candidates), and the maps back to the rows."""

    strings: pa.Array  # the distinct strings in that layout
    str_ptr: np.ndarray  # int64[S+1]: segment s's strings
    bounds: np.ndarray  # int64[S, 4]: its candidates' and pseudo-references' string ranges
    weights: np.ndarray  # float64[n]: each distinct pseudo-reference's summed weight
    cand_str: np.ndarray  # int64[H]: each candidate row's string
    ref_str: np.ndarray  # int64[R]: each pseudo-reference row's string
    seg: np.ndarray  # int64[S+1] candidate rows
    ref_seg: np.ndarray  # int64[S+1] pseudo-reference rows
    same: bool
    repeats: bool  # some segment holds a string twice (on either side): the matrices need expanding


def _distinct(strings: pa.Array, ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of the first copy of each distinct string per segment, ascending; int64[n] each row's
    distinct index)."""
    first = _first_copies(strings, ptr)
    is_first = first == np.arange(len(first))
    return np.flatnonzero(is_first), (np.cumsum(is_first) - 1)[first]


def _job(candidates: Any, segments: Any, pseudo_references: Any, pseudo_segments: Any, weights: Any) -> _Job:
    cands = _text_column(candidates, "candidates")
    seg = check_group_pointers([0, len(cands)] if segments is None else segments, len(cands), None, "chrF segments")
    n_seg = len(seg) - 1
    same = pseudo_references is None
    if same:
        if pseudo_segments is not None:
            raise InputError("chrF: pseudo_segments given without pseudo_references; pass both, or neither to "
                             "use the candidates as their own pseudo-references")
        refs, ref_seg = cands, seg
    else:
        refs = _text_column(pseudo_references, "pseudo_references")
        ref_seg = check_group_pointers([0, len(refs)] if pseudo_segments is None else pseudo_segments, len(refs), n_seg,
                                       "chrF pseudo_segments")
    w = np.ones(len(refs)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(refs),) or not np.isfinite(w).all() or (w < 0).any():
        raise InputError(f"chrF weights: expected {len(refs)} finite numbers >= 0, one per pseudo-reference, "
                         f"found shape {w.shape}" + ("" if w.shape != (len(refs),) else " with a negative or NaN"))
    seg_of_ref = np.repeat(np.arange(n_seg), np.diff(ref_seg))
    empty = (np.diff(seg) > 0) & ~(np.bincount(seg_of_ref, w, minlength=n_seg) > 0)
    if empty.any():
        s = int(np.flatnonzero(empty)[0])
        raise InputError(f"chrF: segment {s} has candidates but no pseudo-reference of positive weight; expected "
                         "at least one per segment")
    c_rows, c_of = _distinct(cands, seg)
    r_rows, r_of = (c_rows, c_of) if same else _distinct(refs, ref_seg)
    r_weight = np.bincount(r_of, w, minlength=len(r_rows))  # a repeated string weighs as its copies together
    c_ptr, r_ptr = np.searchsorted(c_rows, seg), np.searchsorted(r_rows, ref_seg)
    n_c, n_r = np.diff(c_ptr), np.diff(r_ptr)
    str_ptr = np.zeros(n_seg + 1, np.int64)
    np.cumsum(n_c if same else n_c + n_r, out=str_ptr[1:])
    c_lo = str_ptr[:-1]
    r_lo = c_lo if same else c_lo + n_c
    bounds = np.stack([c_lo, c_lo + n_c, r_lo, r_lo + n_r], axis=1).astype(np.int64)
    seg_c = np.repeat(np.arange(n_seg), n_c)
    cand_dist = c_lo[seg_c] + np.arange(len(c_rows)) - c_ptr[seg_c]  # distinct candidate -> string
    if same:
        strings, ref_dist, str_w = cands.take(pa.array(c_rows)), cand_dist, r_weight
    else:
        seg_r = np.repeat(np.arange(n_seg), n_r)
        ref_dist = r_lo[seg_r] + np.arange(len(r_rows)) - r_ptr[seg_r]
        take = np.empty(str_ptr[-1], np.int64)
        take[cand_dist], take[ref_dist] = c_rows, len(cands) + r_rows
        strings = pa.concat_arrays([cands, refs]).take(pa.array(take))
        str_w = np.zeros(str_ptr[-1])
        str_w[ref_dist] = r_weight
    repeats = len(c_rows) < len(cands) or len(r_rows) < len(refs)
    return _Job(strings, str_ptr, bounds, str_w, cand_dist[c_of], ref_dist[r_of], seg, ref_seg, same, repeats)


def _chunks(job: _Job, params: ChrfParams):
    """Runs of segments whose strings' n-gram entries stay near _CHUNK_ENTRIES (one segment at least):
    yields (first segment, end segment, their first string, the profiles of their strings)."""
    data, off = _text_buffers(job.strings, params)
    _check_segment_size(off, job.str_ptr, params, "candidates and pseudo-references")
    room = params.orders * np.diff(off)  # a string of b bytes has at most b n-grams per order
    ends = np.zeros(len(off), np.int64)
    np.cumsum(room, out=ends[1:])
    s0, n_seg = 0, len(job.str_ptr) - 1
    while s0 < n_seg:
        base = ends[job.str_ptr[s0]]
        s1 = max(s0 + 1, int(np.searchsorted(ends[job.str_ptr], base + _CHUNK_ENTRIES, side="right")) - 1)
        s1 = min(s1, n_seg)
        a, b = job.str_ptr[s0], job.str_ptr[s1]
        longest = int(np.diff(off[a:b + 1]).max(initial=0))
        profiles = _kernels.profiles if s1 - s0 > 1 else _kernels.profiles_serial  # one: no parallel launch
        prof = profiles(data, np.ascontiguousarray(off[a:b + 1]), job.str_ptr[s0:s1 + 1] - a, ends[a:b + 1] - ends[a],
                        params.char_order, params.word_order, params.whitespace, longest)
        yield s0, s1, a, prof
        s0 = s1


def pairwise_chrf(candidates: Any, segments: Any = None, pseudo_references: Any = None, pseudo_segments: Any = None,
                  *, weights: Any = None, matrix: bool = True, params: ChrfParams | None = None,
                  **options: Any) -> PairwiseChrf:
    """chrF of every candidate against every pseudo-reference of its segment (as its one reference).

    Parameters
    ----------
    candidates : H strings (list, numpy, pandas or Arrow).
    segments : int64[S+1], candidates segments[s]:segments[s+1] form segment s (None: one segment).
    pseudo_references : strings, or None: each segment's candidates are its pseudo-references.
    pseudo_segments : int64[S+1] over ``pseudo_references`` (None: one segment).
    weights : float64 per pseudo-reference row (e.g. model probabilities), >= 0, a positive sum per
        segment; None: 1 each. Used by :attr:`PairwiseChrf.expected` only.
    matrix : keep the K x R matrices (False: only the expected utilities, no K x R memory).
    params / options : :func:`~kbest_bleu.metrics.chrf.params.chrf_params` (char_order=6,
        word_order=0 (2: chrF++), beta=2, whitespace=False, lowercase=False, eps_smoothing=False).

    Returns :class:`PairwiseChrf`; entry (i, j) of segment s's matrix equals sacrebleu's
    ``CHRF(...).sentence_score(candidate i, [pseudo-reference j]).score / 100``.
    """
    params = params or chrf_params(**options)
    job = _job(candidates, segments, pseudo_references, pseudo_segments, weights)
    n_seg = len(job.seg) - 1
    k, r = np.diff(job.seg), np.diff(job.ref_seg)
    pair_ptr = np.zeros(n_seg + 1, np.int64)
    np.cumsum(k * r, out=pair_ptr[1:])
    dist_n = job.bounds[:, 1::2] - job.bounds[:, 0::2]  # distinct candidates, pseudo-references
    mat_ptr = np.zeros(n_seg + 1, np.int64)
    np.cumsum(dist_n[:, 0] * dist_n[:, 1], out=mat_ptr[1:])
    mats, expected = [], np.zeros(len(job.strings))
    for s0, s1, a, (ids, cnt, optr, tot, nodes) in _chunks(job, params):
        b = job.str_ptr[s1]
        mat, exp = _pairs.pairwise(ids, cnt, optr, tot, nodes, job.bounds[s0:s1] - a, job.same,
                                     np.ascontiguousarray(job.weights[a:b]), params.factor, params.eps_smoothing,
                                     matrix, mat_ptr[s0:s1 + 1] - mat_ptr[s0])
        mats.append(mat)
        expected[a:b] = exp
    scores = np.zeros(0)
    if matrix:
        dist = np.concatenate(mats) if mats else np.zeros(0)
        # without repeats the distinct strings are the rows, in order (first occurrences)
        scores = _expand(dist, mat_ptr, pair_ptr, job, k, r, dist_n) if job.repeats else dist
    return PairwiseChrf(scores, pair_ptr, np.stack([k, r], axis=1).astype(np.int64), expected[job.cand_str])


def _expand(dist: np.ndarray, mat_ptr: np.ndarray, pair_ptr: np.ndarray, job: _Job, k: np.ndarray, r: np.ndarray,
            dist_n: np.ndarray) -> np.ndarray:
    """Matrices over rows from the matrices over distinct strings (repeated strings share a row/column)."""
    seg = np.repeat(np.arange(len(k)), k * r)
    within = np.arange(pair_ptr[-1]) - pair_ptr[seg]
    row = within // r[seg]
    col = within - row * r[seg]
    cand = job.cand_str[job.seg[seg] + row] - job.bounds[seg, 0]
    ref = job.ref_str[job.ref_seg[seg] + col] - job.bounds[seg, 2]
    return dist[mat_ptr[seg] + cand * dist_n[seg, 1] + ref]


def aggregate_chrf(candidates: Any, segments: Any = None, pseudo_references: Any = None, pseudo_segments: Any = None,
                   *, weights: Any = None, params: ChrfParams | None = None, **options: Any) -> np.ndarray:
    """chrF (0-1) of each candidate against its segment's aggregated pseudo-reference: float64[H].

    The aggregate's n-gram counts are the weighted mean of the pseudo-references' counts, order by
    order, and so is its length (Vamvas & Sennrich 2024; fastChrF's ``aggregate_chrf``,
    which computes the same with the candidate's counts times the number of references). Not the
    mean of the pairwise scores. Arguments as :func:`pairwise_chrf`; linear in K per segment.
    """
    params = params or chrf_params(**options)
    job = _job(candidates, segments, pseudo_references, pseudo_segments, weights)
    out = np.zeros(len(job.strings))
    for s0, s1, a, (ids, cnt, optr, tot, nodes) in _chunks(job, params):
        b = job.str_ptr[s1]
        aggregate = _pairs.aggregate if s1 - s0 > 1 else _pairs.aggregate_serial  # one: no parallel launch
        out[a:b] = aggregate(ids, cnt, optr, tot, nodes, job.bounds[s0:s1] - a, np.ascontiguousarray(job.weights[a:b]),
                             params.factor, params.eps_smoothing)
    return out[job.cand_str]
