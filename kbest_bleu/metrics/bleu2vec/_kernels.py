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
from numba import prange

from ...jit import njit

MODE_CORRECTED = 0
MODE_FAITHFUL = 1


@njit(inline="always")
def _hash(ids, p, n):
    h = np.uint64(1469598103934665603)
    for k in range(n):
        h = (h ^ np.uint64(ids[p + k])) * np.uint64(1099511628211)
    return h ^ (h >> np.uint64(29))


@njit(inline="always")
def _same(ids, p, q, n):
    for k in range(n):
        if ids[p + k] != ids[q + k]:
            return False
    return True


@njit()
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


@njit(parallel=True)
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


@njit(fastmath=True)
def _dot(matrix, a, b):
    """float32 dot product of two unit rows (gensim's ``similarity``; summed in SIMD lanes, so it
    may differ from BLAS's sum in the last float32 bit)."""
    acc = np.float32(0.0)
    for k in range(matrix.shape[1]):
        acc += matrix[a, k] * matrix[b, k]
    return acc


@njit()
def _fill_row(i, values, order, row_emb, col_emb, matrix, eps):
    """Row i of the segment's table, on its first use: the weight of hypothesis type i with every
    reference type (cosine; ``eps`` when either has no vector) and the reference types sorted
    by descending weight, ties by first occurrence (a stable sort: the original's strict ``>``
    row scan keeps the first maximum). NaN weights (never paired) sort last."""
    if row_emb[i] < 0:  # every weight is eps: the sort would keep the columns in order
        values[i] = eps
        order[i] = np.arange(values.shape[1])
        return
    for j in range(values.shape[1]):
        values[i, j] = eps if col_emb[j] < 0 else _dot(matrix, row_emb[i], col_emb[j])
    order[i] = np.argsort(-values[i], kind="mergesort")


@njit()
def _advance(a, rows, pos, order, values, colcnt, floor):
    """Row a's best reference type still available, walking its sorted list from pos[a] (types are
    only used up within a hypothesis, so the walk never goes back): (type, weight), (-1, floor)."""
    i = rows[a]
    for p in range(pos[a], order.shape[1]):
        j = order[i, p]
        v = values[i, j]
        if not v > floor:
            break
        if colcnt[j] > 0:
            pos[a] = p
            return j, v
    pos[a] = order.shape[1]
    return -1, floor


@njit()
def _greedy(rows, rc, colcnt, values, order, floor, pos, best_j, best_v):
    """Greedy pairing, most similar pair first, ties to the first pair in row-major order (the
    original's scan for a value above a running maximum that starts at ``floor``).

    rows : residual hypothesis types (rows of the segment's ``values`` / ``order``) in order of
    first occurrence, rc their residual counts; colcnt : residual count of every reference type
    (0: not a candidate); both consumed here (faithful: 1 each, the original pairs distinct
    types: pandas' drop-by-label removes every row of a label). The picked pair takes
    min(counts) pairs. Each row follows its sorted list of reference types, so a hypothesis
    costs about (rows x pairs taken), not a sort. pos, best_j, best_v : scratch.
    Returns the sum of the taken weights.
    """
    na = len(rows)
    for a in range(na):
        pos[a] = 0
        best_j[a], best_v[a] = _advance(a, rows, pos, order, values, colcnt, floor)
    total = 0.0
    while True:
        pick, pv = -1, floor
        for a in range(na):
            if rc[a] > 0 and best_j[a] >= 0 and best_v[a] > pv:
                pick, pv = a, best_v[a]
        if pick < 0:
            return total
        j = best_j[pick]
        k = min(rc[pick], colcnt[j])
        total += k * pv
        rc[pick] -= k
        colcnt[j] -= k
        if colcnt[j] == 0:
            for a in range(na):
                if rc[a] > 0 and best_j[a] == j:
                    best_j[a], best_v[a] = _advance(a, rows, pos, order, values, colcnt, floor)


@njit()
def _reference_counts(ptr, gram, r0, n_refs, n_types, n):
    """The segment's reference n-gram types, in order of first occurrence over its references:
    ref_of int64[n_types] (type -> reference type, -1), ref_types int64[nr], counts per
    reference int64[max(n_refs, 1), nr] and their max over references int64[nr]."""
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
    rc = np.zeros((max(n_refs, 1), nr), np.int64)
    for r in range(n_refs):
        for p in range(ptr[r0 + r], ptr[r0 + r + 1] - n + 1):
            rc[r, ref_of[gram[p]]] += 1
    rmax = np.zeros(nr, np.int64)
    for r in range(n_refs):
        for j in range(nr):
            rmax[j] = max(rmax[j], rc[r, j])
    return ref_of, ref_types[:nr], rc, rmax


@njit()
def _segment(ids, ptr, gram, emb, matrix, h0, h1, r0, r1, n_types, n, mode, min_sim, out, col):  # noqa: ARG001
    """Counts of order ``n`` for the hypotheses h0..h1-1 of one segment whose references are rows
    r0..r1-1; writes out[h, col + 0/1/2] = exact, fuzzy, hypothesis n-grams."""
    faithful = mode == MODE_FAITHFUL
    n_refs = r1 - r0 if not faithful else min(1, r1 - r0)  # faithful: the first reference only
    ref_of, ref_types, rc, rmax = _reference_counts(ptr, gram, r0, n_refs, n_types, n)
    nr = len(ref_types)
    # the similarity table, hypothesis types of the segment x reference types, rows filled on first use
    row_of = np.full(n_types, -1, np.int64)
    n_rows = 0
    for p in range(ptr[h0], ptr[h1]):
        if gram[p] >= 0 and row_of[gram[p]] < 0:
            row_of[gram[p]] = n_rows
            n_rows += 1
    row_emb = np.empty(n_rows, np.int64)
    row_emb[row_of[row_of >= 0]] = emb[np.flatnonzero(row_of >= 0)]
    values = np.empty((n_rows, nr))
    order = np.empty((n_rows, nr), np.int64)
    ready = np.zeros(n_rows, np.bool_)
    col_emb = emb[ref_types]
    eps = 0.001 if faithful else np.nan  # bc4.py: a pair with an unknown n-gram weighs 0.001
    floor = -1.0 if faithful else max(min_sim, 0.0)  # faithful: the running max starts at -1, strict >
    if not faithful and min_sim > 0.0:
        floor = np.nextafter(min_sim, -np.inf)  # pairs with cosine >= min_similarity are taken
    hc = np.zeros(n_types, np.int64)
    first = np.empty(n_types, np.int64)
    rows, row_cnt = np.empty(n_types, np.int64), np.empty(n_types, np.int64)
    colcnt = np.empty(nr, np.int64)
    pos, best_j, best_v = np.empty(n_types, np.int64), np.empty(n_types, np.int64), np.empty(n_types)
    for h in range(h0, h1):
        nh = 0
        for p in range(ptr[h], ptr[h + 1] - n + 1):
            t = gram[p]
            if hc[t] == 0:
                first[nh] = t
                nh += 1
            hc[t] += 1
        exact, na = 0, 0
        for i in range(nh):
            t = first[i]
            j = ref_of[t]
            clip = 0 if j < 0 else (rc[0, j] if faithful else rmax[j])
            exact += min(hc[t], clip)
            if hc[t] > clip:
                rows[na] = row_of[t]
                row_cnt[na] = 1 if faithful else hc[t] - clip
                if not ready[rows[na]]:
                    _fill_row(rows[na], values, order, row_emb, col_emb, matrix, eps)
                    ready[rows[na]] = True
                na += 1
        any_col = False
        for j in range(nr):
            res = rc[0, j] - hc[ref_types[j]]
            for r in range(1, n_refs):  # corrected: candidates from every reference, the most one has left
                res = max(res, rc[r, j] - hc[ref_types[j]])
            colcnt[j] = 0 if res <= 0 else (1 if faithful else res)
            any_col |= res > 0
        fuzzy = 0.0
        if na > 0 and any_col:
            fuzzy = _greedy(rows[:na], row_cnt[:na], colcnt, values, order, floor, pos, best_j, best_v)
        out[h, col] = exact
        out[h, col + 1] = fuzzy
        out[h, col + 2] = max(0, ptr[h + 1] - ptr[h] - n + 1)
        for i in range(nh):
            hc[first[i]] = 0


@njit(parallel=True)
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


@njit(parallel=True)
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


_FNV_OFFSET = np.uint64(1469598103934665603)
_FNV_PRIME = np.uint64(1099511628211)
_JOIN = np.uint8(95)  # "_": the n-gram joiner of the models' tokens (paper section 2.1)


@njit(inline="always")
def _fnv_bytes(h, data, start, end):
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return h


@njit()
def key_table(data, offsets):
    """Open-addressing table over the model's keys (FNV-1a of their UTF-8 bytes): int64[2^k],
    the row of the key in each used slot, -1 elsewhere. A repeated key keeps its first row."""
    n = len(offsets) - 1
    size = 16
    while size < 2 * n:
        size *= 2
    table = np.full(size, -1, np.int64)
    mask = np.uint64(size - 1)
    for i in range(n):
        slot = _fnv_bytes(_FNV_OFFSET, data, offsets[i], offsets[i + 1]) & mask
        while table[slot] >= 0:
            j = table[slot]
            if offsets[j + 1] - offsets[j] == offsets[i + 1] - offsets[i] and np.array_equal(
                    data[offsets[j]:offsets[j + 1]], data[offsets[i]:offsets[i + 1]]):
                break
            slot = (slot + np.uint64(1)) & mask
        if table[slot] < 0:
            table[slot] = i
    return table


@njit()
def _key_equals(key_data, k0, k1, ids, p, n, vdata, voff):
    """Whether model key bytes key_data[k0:k1] equal the tokens ids[p:p+n] joined with '_'."""
    q = k0
    for t in range(n):
        if t > 0:
            if q >= k1 or key_data[q] != _JOIN:
                return False
            q += 1
        tok = ids[p + t]
        length = voff[tok + 1] - voff[tok]
        if q + length > k1:
            return False
        for b in range(length):
            if key_data[q + b] != vdata[voff[tok] + b]:
                return False
        q += length
    return q == k1


@njit(parallel=True)
def ngram_rows(ids, starts, n, vdata, voff, key_data, key_off, table):
    """Model row of the n-gram starting at each of ``starts`` (its tokens joined with '_', looked up
    by bytes, no string built), -1 when the model has no such key: int64[len(starts)]."""
    out = np.empty(len(starts), np.int64)
    mask = np.uint64(len(table) - 1)
    for i in prange(len(starts)):
        p = starts[i]
        h = _FNV_OFFSET
        for t in range(n):
            if t > 0:
                h = (h ^ np.uint64(_JOIN)) * _FNV_PRIME
            tok = ids[p + t]
            h = _fnv_bytes(h, vdata, voff[tok], voff[tok + 1])
        slot = h & mask
        out[i] = -1
        while table[slot] >= 0:
            k = table[slot]
            if _key_equals(key_data, key_off[k], key_off[k + 1], ids, p, n, vdata, voff):
                out[i] = k
                break
            slot = (slot + np.uint64(1)) & mask
    return out
