"""Numba kernels of pairwise and aggregated chrF over the n-gram profiles of
:func:`._kernels.profiles`, and sacrebleu's F-score. Private: :mod:`.mbr` validates every argument
first (DESIGN.md section 5). Jitted code here calls only jitted code of this file.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ...jit import njit

_EPS = 1e-16  # sacrebleu's CHRF._compute_f_score
# chunks of work per kernel: fixed (not the thread count), so that sums come out in the same order anywhere
CHUNKS = 32
# a segment scored against itself: its candidates in ceil(n_c / MIN_BLOCK) blocks of rows, at most BLOCKS, so
# up to 136 tiles of pairs for the threads, and a row reloaded once per tile, not once per pair
BLOCKS = 16
MIN_BLOCK = 32


@njit(inline="always")
def _f_value(sc, n_orders, factor, eps_smoothing):
    """sacrebleu's ``CHRF._compute_f_score`` of the statistics sc = (hyp, ref, match) per order,
    operation for operation, without its final factor 100 (0-1)."""
    score = 0.0
    effective = 0
    avg_prec = 0.0
    avg_rec = 0.0
    for i in range(n_orders):
        n_hyp = sc[3 * i]
        n_ref = sc[3 * i + 1]
        n_match = sc[3 * i + 2]
        prec = n_match / n_hyp if n_hyp > 0 else _EPS
        rec = n_match / n_ref if n_ref > 0 else _EPS
        denom = factor * prec + rec
        score += ((1 + factor) * prec * rec / denom) if denom > 0 else _EPS
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective += 1
    if eps_smoothing:
        return score / n_orders
    if effective == 0:
        avg_prec = 0.0
        avg_rec = 0.0
    else:
        avg_prec /= effective
        avg_rec /= effective
    if avg_prec + avg_rec != 0:
        score = (1 + factor) * avg_prec * avg_rec
        score /= (factor * avg_prec) + avg_rec
        return score
    return 0.0


@njit(inline="always")
def _pair_stats(tot, h, r, match, n_orders, sc):
    """sc = statistics of string h scored against string r as its one reference."""
    for o in range(n_orders):
        sc[3 * o] = tot[h, o] if tot[r, o] > 0 else 0
        sc[3 * o + 1] = tot[r, o]
        sc[3 * o + 2] = match[o]


@njit(inline="always")
def _matches(dense, f_ids, f_cnt, f_off, r, n_orders, match):
    """match[o]: clipped matches of the counts in dense with entries f_off[r, o]:f_off[r, o+1]."""
    for o in range(n_orders):
        m = 0
        for k in range(f_off[r, o], f_off[r, o + 1]):
            m += min(f_cnt[k], dense[f_ids[k]])
        match[o] = m


@njit()
def _matchable(ids, cnt, optr, nodes, bounds, need, f_ids, f_cnt, f_off):
    """Each pseudo-reference's entries whose n-gram ``need`` or more candidates of its segment hold
    (2 when the candidates are the pseudo-references: one besides itself); the rest can match
    nothing. Written to f_ids, f_cnt with f_off[string, o] = where its order o starts."""
    n_ord = optr.shape[1] - 1
    e = 0
    for s in range(bounds.shape[0]):
        held = np.zeros(nodes[s], np.int32)
        for h in range(bounds[s, 0], bounds[s, 1]):
            for k in range(optr[h, 0], optr[h, n_ord]):
                held[ids[k]] += 1
        for r in range(bounds[s, 2], bounds[s, 3]):
            for o in range(n_ord):
                f_off[r, o] = e
                for k in range(optr[r, o], optr[r, o + 1]):
                    if held[ids[k]] >= need:
                        f_ids[e] = ids[k]
                        f_cnt[e] = cnt[k]
                        e += 1
            f_off[r, n_ord] = e


@njit(inline="always")
def _blocks(n_c):
    """Blocks of rows a segment of n_c candidates, its own pseudo-references, is cut into: a
    function of n_c alone, so that every candidate's sums have the same shape."""
    return min(BLOCKS, (n_c + MIN_BLOCK - 1) // MIN_BLOCK)


@njit(error_model="numpy")
def _tile(ids, cnt, optr, tot, n_nodes, c0, n_c, qa, qb, nb, f_ids, f_cnt, f_off, weights, factor,
          eps_smoothing, keep, mat, base, part):
    """The candidates of block qa against those of block qb >= qa, as each other's
    pseudo-references: each unordered pair counted once and both directions scored.
    part[a * nb + q] += weight x chrF of candidate a against each candidate of block q, added in
    pseudo-reference order whether a is the row or the column (the diagonal block's rows go up
    too), so that two candidates with equal chrF against every pseudo-reference get equal sums."""
    n_ord = optr.shape[1] - 1
    dense = np.zeros(n_nodes, np.int32)
    sc = np.zeros(3 * n_ord)
    match = np.zeros(n_ord, np.int64)
    b1 = (qb + 1) * n_c // nb
    for a in range(qa * n_c // nb, (qa + 1) * n_c // nb):
        h = c0 + a
        for k in range(optr[h, 0], optr[h, n_ord]):
            dense[ids[k]] = cnt[k]
        b0 = qb * n_c // nb
        if qa == qb:  # a's own pair, then the pairs with the block's later rows
            for o in range(n_ord):
                match[o] = tot[h, o]
            _pair_stats(tot, h, h, match, n_ord, sc)
            f = _f_value(sc, n_ord, factor, eps_smoothing)
            if keep:
                mat[base + a * n_c + a] = f
            part[a * nb + qa] += weights[h] * f
            b0 = a + 1
        for b in range(b0, b1):
            _matches(dense, f_ids, f_cnt, f_off, c0 + b, n_ord, match)
            _pair_stats(tot, h, c0 + b, match, n_ord, sc)
            f = _f_value(sc, n_ord, factor, eps_smoothing)
            _pair_stats(tot, c0 + b, h, match, n_ord, sc)
            g = _f_value(sc, n_ord, factor, eps_smoothing)
            if keep:
                mat[base + a * n_c + b] = f
                mat[base + b * n_c + a] = g
            part[a * nb + qb] += weights[c0 + b] * f
            part[b * nb + qa] += weights[h] * g
        for k in range(optr[h, 0], optr[h, n_ord]):
            dense[ids[k]] = 0


@njit(error_model="numpy")
def _across(ids, cnt, optr, tot, n_nodes, c0, n_c, r0, n_r, c, n_chunks, f_ids, f_cnt, f_off, weights, factor,
            eps_smoothing, keep, mat, base, expected):
    """Share c of n_chunks of candidates (a = c, c + n_chunks, ...) against a separate set of
    pseudo-references; expected[h] = sum of weight x chrF."""
    n_ord = optr.shape[1] - 1
    dense = np.zeros(n_nodes, np.int32)
    sc = np.zeros(3 * n_ord)
    match = np.zeros(n_ord, np.int64)
    for a in range(c, n_c, n_chunks):
        h = c0 + a
        for k in range(optr[h, 0], optr[h, n_ord]):
            dense[ids[k]] = cnt[k]
        total = 0.0
        for b in range(n_r):
            _matches(dense, f_ids, f_cnt, f_off, r0 + b, n_ord, match)
            _pair_stats(tot, h, r0 + b, match, n_ord, sc)
            f = _f_value(sc, n_ord, factor, eps_smoothing)
            if keep:
                mat[base + a * n_r + b] = f
            total += weights[r0 + b] * f
        expected[h] = total
        for k in range(optr[h, 0], optr[h, n_ord]):
            dense[ids[k]] = 0


@njit(parallel=True, error_model="numpy")
def pairwise(ids, cnt, optr, tot, nodes, bounds, same, weights, factor, eps_smoothing, keep, mat_ptr):
    """chrF (0-1) of every candidate against every pseudo-reference of its segment as the one reference.

    Profiles as :func:`profiles` returns them; segment s: candidates bounds[s, 0]:bounds[s, 1] and
    pseudo-references bounds[s, 2]:bounds[s, 3] (the same strings when ``same``); weights float64[n]
    of the pseudo-references (by string). Returns the K x R matrices float64 (segment s row-major
    at mat_ptr[s]; empty unless ``keep``) and expected float64[n]: each candidate's sum of weight x
    chrF over the pseudo-references divided by the sum of their weights.

    Match counts are symmetric, so with ``same`` each unordered pair is counted once and both
    directions scored from it, in tiles of blocks of rows (:func:`_tile`); a pseudo-reference keeps
    only the n-grams some other string holds. One parallel loop over every segment's tiles or
    shares of rows, so that a few big segments and many small ones both fill the threads.
    """
    n_ord = optr.shape[1] - 1
    n_seg = bounds.shape[0]
    f_ids = np.zeros(ids.size, np.int32)
    f_cnt = np.zeros(ids.size, np.int32)
    f_off = np.zeros((optr.shape[0], n_ord + 1), np.int64)
    _matchable(ids, cnt, optr, nodes, bounds, 2 if same else 1, f_ids, f_cnt, f_off)
    shares = np.zeros(n_seg + 1, np.int64)  # segment s's shares of work (tiles with same): shares[s]:shares[s+1]
    acc_ptr = np.zeros(n_seg + 1, np.int64)  # and its partial sums with same, nb per candidate
    for s in range(n_seg):
        n_c, n_r = bounds[s, 1] - bounds[s, 0], bounds[s, 3] - bounds[s, 2]
        nb = _blocks(n_c)
        n = 0 if n_r == 0 else (nb * (nb + 1) // 2 if same else min(CHUNKS, n_c))
        shares[s + 1] = shares[s] + n
        acc_ptr[s + 1] = acc_ptr[s] + (nb * n_c if same else 0)
    share_seg = np.zeros(shares[-1], np.int64)
    for s in range(n_seg):
        share_seg[shares[s]:shares[s + 1]] = s
    mat = np.zeros(mat_ptr[-1] if keep else 0)
    expected = np.zeros(optr.shape[0])
    acc = np.zeros(acc_ptr[-1])
    for j in prange(shares[-1]):
        s = share_seg[j]
        c, n_chunks = j - shares[s], shares[s + 1] - shares[s]
        c0, n_c = bounds[s, 0], bounds[s, 1] - bounds[s, 0]
        if same:
            nb = _blocks(n_c)
            qa = 0  # tile c of the blocks' pairs qa <= qb, row by row
            while c >= nb - qa:
                c -= nb - qa
                qa += 1
            _tile(ids, cnt, optr, tot, nodes[s], c0, n_c, qa, qa + c, nb, f_ids, f_cnt, f_off, weights, factor,
                  eps_smoothing, keep, mat, mat_ptr[s], acc[acc_ptr[s]:acc_ptr[s + 1]])
        else:
            _across(ids, cnt, optr, tot, nodes[s], c0, n_c, bounds[s, 2], bounds[s, 3] - bounds[s, 2], c, n_chunks,
                    f_ids, f_cnt, f_off, weights, factor, eps_smoothing, keep, mat, mat_ptr[s], expected)
    for s in range(n_seg):
        w_sum = 0.0
        for r in range(bounds[s, 2], bounds[s, 3]):
            w_sum += weights[r]
        n_c = bounds[s, 1] - bounds[s, 0] if w_sum > 0 else 0  # (the caller refuses a segment without weight)
        nb = _blocks(n_c)
        for a in range(n_c):
            h = bounds[s, 0] + a
            if same:  # the blocks' sums, in block order
                for q in range(nb):
                    expected[h] += acc[acc_ptr[s] + a * nb + q]
            expected[h] /= w_sum
    return mat, expected


@njit(error_model="numpy")
def _aggregate_segment(ids, cnt, optr, tot, n_nodes, bounds, weights, factor, eps_smoothing, out):
    """:func:`aggregate` of one segment (bounds int64[4])."""
    n_ord = optr.shape[1] - 1
    mass = np.zeros(n_nodes)
    ref_tot = np.zeros(n_ord)
    w_sum = 0.0
    for r in range(bounds[2], bounds[3]):
        w = weights[r]
        w_sum += w
        for o in range(n_ord):
            ref_tot[o] += w * tot[r, o]
        for k in range(optr[r, 0], optr[r, n_ord]):
            mass[ids[k]] += w * cnt[k]
    sc = np.zeros(3 * n_ord)
    for h in range(bounds[0], bounds[1]):
        for o in range(n_ord):
            m = 0.0
            for k in range(optr[h, o], optr[h, o + 1]):
                m += min(cnt[k] * w_sum, mass[ids[k]])
            sc[3 * o] = w_sum * tot[h, o] if ref_tot[o] > 0 else 0.0
            sc[3 * o + 1] = ref_tot[o]
            sc[3 * o + 2] = m
        out[h] = _f_value(sc, n_ord, factor, eps_smoothing)


@njit(parallel=True)
def aggregate(ids, cnt, optr, tot, nodes, bounds, weights, factor, eps_smoothing):
    """chrF (0-1) of each candidate against the weighted mean n-gram counts of its segment's
    pseudo-references (Vamvas & Sennrich 2024, "reference aggregation"), as fastChrF's
    ``aggregate_chrf`` computes it: the candidate's counts times the weight sum W against the
    weighted sums, so that unit weights stay exact integers. Arguments as :func:`pairwise`;
    returns float64[n] (the candidates' entries). Parallel over segments."""
    out = np.zeros(optr.shape[0])
    for s in prange(bounds.shape[0]):
        _aggregate_segment(ids, cnt, optr, tot, nodes[s], bounds[s], weights, factor, eps_smoothing, out)
    return out


@njit()
def aggregate_serial(ids, cnt, optr, tot, nodes, bounds, weights, factor, eps_smoothing):
    """:func:`aggregate` on the calling thread (a single segment)."""
    out = np.zeros(optr.shape[0])
    for s in range(bounds.shape[0]):
        _aggregate_segment(ids, cnt, optr, tot, nodes[s], bounds[s], weights, factor, eps_smoothing, out)
    return out
