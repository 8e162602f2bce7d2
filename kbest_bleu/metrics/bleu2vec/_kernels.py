"""Numba kernels of BLEU2VEC: segment-local n-gram interning and the exact + fuzzy counts.

A K-best segment repeats most n-grams across its K hypotheses, so each segment's n-gram types
are interned once (:func:`intern_ngrams`), its similarity table (every n-gram type of the
segment x every reference n-gram type) is computed once, and each hypothesis's greedy pairing
(paper section 3) then runs from lookups in that table (:func:`order_counts`). Both kernels run
in parallel over segments.

Token layout (from :func:`kbest_bleu.tokenize.split_ids` over hypotheses then references):
``ids`` int32[T] token ids, ``ptr`` int64[H+R+1] with row i = ids[ptr[i]:ptr[i+1]]; hypothesis
rows 0..H-1, reference rows H..H+R-1; segment s owns hypotheses seg_ptr[s]:seg_ptr[s+1] and
references H + ref_ptr[s] : H + ref_ptr[s+1].
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

MODE_CORRECTED = 0
MODE_FAITHFUL = 1


@njit(cache=True, inline="always")
def _hash(ids, p, n):
    h = np.uint64(1469598103934665603)
    for k in range(n):
        h = (h ^ np.uint64(ids[p + k])) * np.uint64(1099511628211)
    return h ^ (h >> np.uint64(29))


@njit(cache=True, inline="always")
def _same(ids, p, q, n):
    for k in range(n):
        if ids[p + k] != ids[q + k]:
            return False
    return True


@njit(cache=True)
def _intern_rows(ids, ptr, first_row, last_row, n, table, mask, gram, rep, base, count):
    """Intern the n-grams of rows first_row..last_row-1 into the open-addressing ``table``."""
    for row in range(first_row, last_row):
        for p in range(ptr[row], ptr[row + 1] - n + 1):
            slot = _hash(ids, p, n) & mask
            while True:
                t = table[slot]
                if t < 0:
                    table[slot] = count
                    rep[base + count] = p
                    gram[p] = count
                    count += 1
                    break
                if _same(ids, rep[base + t], p, n):
                    gram[p] = t
                    break
                slot = (slot + np.uint64(1)) & mask
    return count


@njit(cache=True, parallel=True)
def intern_ngrams(ids, ptr, seg_ptr, ref_ptr, n_hyp, n, type_base):
    """Segment-local ids of the n-grams: the same n-gram in one segment gets the same id.

    Returns gram int32[T] (type of the n-gram starting at each token; -1 where none starts),
    rep int64[type_base[-1]] (a token position where type t of segment s starts, at
    rep[type_base[s] + t]) and n_types int64[S]. Types are numbered in order of first occurrence
    over the segment's hypotheses, then its references.
    """
    n_seg = len(seg_ptr) - 1
    gram = np.full(len(ids), -1, np.int32)
    rep = np.empty(type_base[-1], np.int64)
    n_types = np.zeros(n_seg, np.int64)
    for s in prange(n_seg):
        size = 16
        while size < 2 * (type_base[s + 1] - type_base[s]):
            size *= 2
        table = np.full(size, -1, np.int64)
        mask = np.uint64(size - 1)
        c = _intern_rows(ids, ptr, seg_ptr[s], seg_ptr[s + 1], n, table, mask, gram, rep, type_base[s], 0)
        c = _intern_rows(ids, ptr, n_hyp + ref_ptr[s], n_hyp + ref_ptr[s + 1], n, table, mask, gram, rep,
                         type_base[s], c)
        n_types[s] = c
    return gram, rep, n_types


@njit(cache=True)
def _similarities(types, ref_types, emb, matrix, unknown):
    """float64 [len(types), len(ref_types)]: cosine (float32 dot of unit vectors, gensim's
    ``similarity``) or ``unknown`` when either n-gram has no vector."""
    out = np.empty((len(types), len(ref_types)))
    d = matrix.shape[1]
    for i in range(len(types)):
        a = emb[types[i]]
        for j in range(len(ref_types)):
            b = emb[ref_types[j]]
            if a < 0 or b < 0:
                out[i, j] = unknown
            else:
                acc = np.float32(0.0)
                for k in range(d):
                    acc += matrix[a, k] * matrix[b, k]
                out[i, j] = acc
    return out


@njit(cache=True)
def _greedy(rows, row_cnt, cols, col_cnt, sim, floor):
    """Greedy pairing, most similar pair first, ties to the first pair in row-major order.

    rows / cols : residual hypothesis / reference types (indexes into ``sim``), in order of first
    occurrence; row_cnt / col_cnt their residual counts (faithful: 1 each, the original pairs
    distinct types: pandas' drop-by-label removes every row of a label). Pairs are visited in
    descending similarity (a stable sort keeps row-major order among ties, as the original's
    strict ``>`` scan); a pair whose row and column still have counts takes min(counts) pairs.
    Only pairs with similarity > ``floor`` are taken. Returns the sum of the taken weights.
    """
    na, nb = len(rows), len(cols)
    if na == 0 or nb == 0:
        return 0.0
    vals = np.empty(na * nb)
    for i in range(na):
        for j in range(nb):
            vals[i * nb + j] = -sim[rows[i], cols[j]]
    order = np.argsort(vals, kind="mergesort")
    rc, cc = row_cnt.copy(), col_cnt.copy()
    left = min(rc.sum(), cc.sum())
    total = 0.0
    for o in order:
        v = -vals[o]
        if not v > floor or left == 0:
            break
        i, j = o // nb, o % nb
        k = min(rc[i], cc[j])
        if k > 0:
            total += k * v
            rc[i] -= k
            cc[j] -= k
            left -= k
    return total


@njit(cache=True)
def _segment(ids, ptr, gram, emb, matrix, h0, h1, r0, r1, n_types, n, mode, min_sim, out, col):
    """Counts of order ``n`` for the hypotheses h0..h1-1 of one segment whose references are rows
    r0..r1-1; writes out[h, col + 0/1/2] = exact, fuzzy, hypothesis n-grams."""
    faithful = mode == MODE_FAITHFUL
    n_refs = r1 - r0 if not faithful else min(1, r1 - r0)
    # reference n-gram types (faithful: the first reference only), in order of first occurrence
    ref_of = np.full(n_types, -1, np.int64)
    ref_types = np.empty(n_types, np.int64)
    nr = 0
    for r in range(r0, r0 + n_refs):
        for p in range(ptr[r], ptr[r + 1] - n + 1):
            t = gram[p]
            if ref_of[t] < 0:
                ref_of[t] = nr
                ref_types[nr] = t
                nr += 1
    ref_types = ref_types[:nr]
    rc = np.zeros((max(n_refs, 1), nr), np.int64)
    for r in range(n_refs):
        for p in range(ptr[r0 + r], ptr[r0 + r + 1] - n + 1):
            rc[r, ref_of[gram[p]]] += 1
    rmax = np.zeros(nr, np.int64)
    for r in range(n_refs):
        for j in range(nr):
            rmax[j] = max(rmax[j], rc[r, j])
    # hypothesis types that have a reference type to pair with: only their rows are computed
    in_hyp = np.zeros(n_types, np.bool_)
    for p in range(ptr[h0], ptr[h1]):
        if gram[p] >= 0:
            in_hyp[gram[p]] = True
    hyp_types = np.flatnonzero(in_hyp)
    row_of = np.full(n_types, -1, np.int64)
    row_of[hyp_types] = np.arange(len(hyp_types))
    unknown = 0.001 if faithful else 0.0  # bc4.py: a pair with an unknown n-gram weighs eps = 0.001
    sim_rows = _similarities(hyp_types, ref_types, emb, matrix, unknown)
    floor = -1.0 if faithful else max(min_sim, 0.0)  # faithful: vmax starts at -1, strict >
    if not faithful and min_sim > 0.0:
        floor = np.nextafter(min_sim, -np.inf)  # pairs with cosine >= min_similarity are taken
    hc = np.zeros(n_types, np.int64)
    first = np.empty(n_types, np.int64)
    for h in range(h0, h1):
        nh = 0
        for p in range(ptr[h], ptr[h + 1] - n + 1):
            t = gram[p]
            if hc[t] == 0:
                first[nh] = t
                nh += 1
            hc[t] += 1
        exact = 0
        rows = np.empty(nh, np.int64)
        row_cnt = np.empty(nh, np.int64)
        na = 0
        for i in range(nh):
            t = first[i]
            j = ref_of[t]
            clip = 0 if j < 0 else (rc[0, j] if faithful else rmax[j])
            exact += min(hc[t], clip)
            if hc[t] > clip:
                rows[na] = row_of[t]
                row_cnt[na] = 1 if faithful else hc[t] - clip
                na += 1
        cols = np.empty(nr, np.int64)
        col_cnt = np.empty(nr, np.int64)
        nb = 0
        for j in range(nr):
            t = ref_types[j]
            if faithful:
                res = rc[0, j] - hc[t]
            else:  # candidates from every reference, each clipped to what the hypothesis left unmatched
                res = 0
                for r in range(n_refs):
                    res = max(res, rc[r, j] - hc[t])
            if res > 0:
                cols[nb] = j
                col_cnt[nb] = 1 if faithful else res
                nb += 1
        fuzzy = _greedy(rows[:na], row_cnt[:na], cols[:nb], col_cnt[:nb], sim_rows, floor)
        out[h, col] = exact
        out[h, col + 1] = fuzzy
        out[h, col + 2] = max(0, ptr[h + 1] - ptr[h] - n + 1)
        for i in range(nh):
            hc[first[i]] = 0


@njit(cache=True, parallel=True)
def order_counts(ids, ptr, gram, type_emb, type_base, n_types, matrix, seg_ptr, ref_ptr, n_hyp, n, mode,
                 min_sim, out, col):
    """Exact and fuzzy counts of order ``n`` for every hypothesis, parallel over segments.

    type_emb : int64[type_base[-1]], the embedding row of each segment-local type (-1: unknown).
    matrix : float32 [V, d] unit vectors of order n.
    out : float64 [H, C]; columns col, col+1, col+2 get exact matches (clipped: faithful by the
    first reference, corrected by the max count over references), the fuzzy weight sum, and
    the number of hypothesis n-grams.
    """
    for s in prange(len(seg_ptr) - 1):
        b = type_base[s]
        _segment(ids, ptr, gram, type_emb[b:b + n_types[s]], matrix, seg_ptr[s], seg_ptr[s + 1],
                 n_hyp + ref_ptr[s], n_hyp + ref_ptr[s + 1], n_types[s], n, mode, min_sim, out, col)


@njit(cache=True, parallel=True)
def lengths(ptr, seg_ptr, ref_ptr, n_hyp):
    """Hypothesis lengths c and closest reference lengths r (ties to the shorter), float64[H] each."""
    c = np.empty(n_hyp)
    r = np.zeros(n_hyp)
    for s in prange(len(seg_ptr) - 1):
        for h in range(seg_ptr[s], seg_ptr[s + 1]):
            c[h] = ptr[h + 1] - ptr[h]
            best = -1
            for q in range(n_hyp + ref_ptr[s], n_hyp + ref_ptr[s + 1]):
                rl = ptr[q + 1] - ptr[q]
                if best < 0 or abs(rl - c[h]) < abs(best - c[h]) or (
                        abs(rl - c[h]) == abs(best - c[h]) and rl < best):
                    best = rl
            r[h] = max(best, 0)
    return c, r
