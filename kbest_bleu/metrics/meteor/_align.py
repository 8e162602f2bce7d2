"""Numba port of Meteor 1.5's exact-match alignment and segment statistics.

The search follows the jar's ``Aligner.align``/``resolve`` step for step (Denkowski & Lavie 2014,
section 2.1; Lavie & Agarwal 2007, section 2), because on texts with repeated words its ties and
its pruning decide the chunks, hence the score:

- candidates: for each reference position j, every test position i holding the same token, in
  increasing i (``ExactMatcher``);
- a candidate that is the only one of its reference word and whose test word has no other
  candidate is fixed in every path ("one-to-one, non-overlapping matches are definite");
- left to right over the reference, keep the ``beam`` best partial alignments, sorted stably by:
  more matches, then fewer chunks, then smaller distance; each path yields one child per unused
  candidate (in candidate order) and then itself skipping the position;
- the jar adds a child's distance |j - i| to the *parent* path, after copying it into the child
  (``path.distance += ...`` in ``resolve``): the child keeps the parent's old distance plus the
  distances of the siblings before it, the skipping path gets all of them. Reproduced as is.

Paths store their used test words as a bitset and their chosen matches as a node in a shared
log (parent pointer), so a child costs a few words instead of two arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

N_STATS = 23  # the jar's -ssOut line: 4 lengths, 4 modules x 4 match counts, chunks, 2 word-match totals


@njit(cache=True)
def _before(a: int, b: int, cnt, chk, dist) -> bool:
    """The jar's PARTIAL_COMPARE_TOTAL: a sorts before b (strictly)."""
    if cnt[a] != cnt[b]:
        return cnt[a] > cnt[b]
    if chk[a] != chk[b]:
        return chk[a] < chk[b]
    return dist[a] < dist[b]


@njit(cache=True)
def _stable_order(n, cnt, chk, dist, order, tmp):
    """order[:n] = path indices 0..n-1 sorted stably by the comparator (bottom-up merge sort, as
    Java's Collections.sort is stable)."""
    for k in range(n):
        order[k] = k
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if _before(order[b], order[a], cnt, chk, dist):  # take from the right only if strictly better
                    tmp[k] = order[b]
                    b += 1
                else:
                    tmp[k] = order[a]
                    a += 1
                k += 1
            while a < mid:
                tmp[k] = order[a]
                a += 1
                k += 1
            while b < hi:
                tmp[k] = order[b]
                b += 1
                k += 1
            lo = hi
        order[:n] = tmp[:n]
        width *= 2


@njit(cache=True)
def align(hyp, ref, beam):
    """The jar's exact alignment of one hypothesis (test, ``words1``) with one reference (``words2``).

    Parameters
    ----------
    hyp : int32[I] token ids; ref : int32[J] token ids (equal ids = equal words).
    beam : beam width (the jar's default 40).

    Returns
    -------
    int64[J] : the test position aligned to each reference position, -1 where none.
    """
    n_i, n_j = hyp.shape[0], ref.shape[0]
    cstart = np.zeros(n_j + 1, np.int64)
    cov1 = np.zeros(n_i, np.int64)
    for j in range(n_j):
        c = 0
        for i in range(n_i):
            if hyp[i] == ref[j]:
                c += 1
                cov1[i] += 1
        cstart[j + 1] = cstart[j] + c
    cand = np.empty(cstart[n_j], np.int64)
    cmax = 0
    for j in range(n_j):
        k = cstart[j]
        for i in range(n_i):
            if hyp[i] == ref[j]:
                cand[k] = i
                k += 1
        cmax = max(cmax, cstart[j + 1] - cstart[j])
    # definite matches: the only candidate of ref word j, and test word i has no other candidate
    fixed = np.full(n_j, -1, np.int64)
    n_w = (n_i + 63) // 64
    used0 = np.zeros(n_w, np.uint64)
    for j in range(n_j):
        if cstart[j + 1] - cstart[j] == 1 and cov1[cand[cstart[j]]] == 1:
            i = cand[cstart[j]]
            fixed[j] = i
            used0[i >> 6] |= np.uint64(1) << np.uint64(i & 63)

    widest = 1  # paths alive at once: at most the beam, at most the product of (candidates + 1)
    for j in range(n_j):
        widest = min(widest * (cstart[j + 1] - cstart[j] + 1), beam)
    cap = widest * (cmax + 1) + 1
    used = np.zeros((2, cap, n_w), np.uint64)
    cnt = np.zeros((2, cap), np.int64)
    chk = np.zeros((2, cap), np.int64)
    last = np.full((2, cap), -1, np.int64)
    dist = np.zeros((2, cap), np.int64)
    node = np.full((2, cap), -1, np.int64)
    log_cap = widest * cstart[n_j] + 1
    log_parent = np.empty(log_cap, np.int64)
    log_j = np.empty(log_cap, np.int64)
    log_i = np.empty(log_cap, np.int64)
    n_log = 0
    order = np.empty(cap, np.int64)
    tmp = np.empty(cap, np.int64)
    used[0, 0] = used0
    n_cur, s = 1, 0
    for current in range(n_j + 1):
        _stable_order(n_cur, cnt[s], chk[s], dist[s], order, tmp)
        t = 1 - s
        n_next = 0
        for rank in range(min(beam, n_cur)):
            p = order[rank]
            if current == n_j:  # complete: close the last chunk
                if last[s, p] != -1:
                    chk[s, p] += 1
            elif fixed[current] != -1:  # a definite match (all exact matches have length 1)
                i = fixed[current]
                cnt[s, p] += 1
                if last[s, p] != -1 and i != last[s, p]:
                    chk[s, p] += 1
                last[s, p] = i + 1
                dist[s, p] += abs(current - i)
            else:
                for k in range(cstart[current], cstart[current + 1]):
                    i = cand[k]
                    w, bit = i >> 6, np.uint64(1) << np.uint64(i & 63)
                    if used[s, p, w] & bit:
                        continue
                    used[t, n_next] = used[s, p]
                    used[t, n_next, w] |= bit
                    cnt[t, n_next] = cnt[s, p] + 1
                    chk[t, n_next] = chk[s, p] + (1 if last[s, p] != -1 and i != last[s, p] else 0)
                    last[t, n_next] = i + 1
                    dist[t, n_next] = dist[s, p]
                    log_parent[n_log], log_j[n_log], log_i[n_log] = node[s, p], current, i
                    node[t, n_next] = n_log
                    n_log += 1
                    n_next += 1
                    dist[s, p] += abs(current - i)  # the jar's quirk: onto the parent, see module doc
                if last[s, p] != -1:  # skip this reference word
                    chk[s, p] += 1
                    last[s, p] = -1
            used[t, n_next] = used[s, p]
            cnt[t, n_next], chk[t, n_next], last[t, n_next] = cnt[s, p], chk[s, p], last[s, p]
            dist[t, n_next], node[t, n_next] = dist[s, p], node[s, p]
            n_next += 1
        n_cur, s = n_next, t
    _stable_order(n_cur, cnt[s], chk[s], dist[s], order, tmp)
    out = fixed.copy()
    x = node[s, order[0]]
    while x != -1:
        out[log_j[x]] = log_i[x]
        x = log_parent[x]
    return out


@njit(cache=True)
def pair_stats(hyp, hyp_fw, ref, ref_fw, beam, out):
    """The jar's -ssOut statistics of one pair into out int64[23] (exact module in slots 4-7).

    hyp_fw, ref_fw : bool per token, whether it is a function word.
    """
    m = align(hyp, ref, beam)
    out[:] = 0
    out[0], out[1] = hyp.shape[0], ref.shape[0]
    out[2] = np.sum(hyp_fw)
    out[3] = np.sum(ref_fw)
    n_match, chunks, last_end = 0, 0, -1
    for j in range(ref.shape[0]):
        i = m[j]
        if i == -1:
            if last_end != -1:
                chunks += 1
                last_end = -1
            continue
        n_match += 1
        if hyp_fw[i]:
            out[6] += 1
        else:
            out[4] += 1
        if ref_fw[j]:
            out[7] += 1
        else:
            out[5] += 1
        if last_end != -1 and i != last_end:
            chunks += 1
        last_end = i + 1
    if last_end != -1:
        chunks += 1
    out[20], out[21], out[22] = chunks, n_match, n_match


@njit(cache=True, error_model="numpy")
def metrics(st, alpha, beta, gamma, delta):
    """(precision, recall, fragmentation penalty, score) from -ssOut statistics st[23], in the
    jar's floating-point order (``MeteorScorer.computeMetrics``; IEEE division, so NaN and inf
    where the jar has them); the score is 0 where undefined."""
    t_len = delta * (st[0] - st[2]) + (1.0 - delta) * st[2]
    r_len = delta * (st[1] - st[3]) + (1.0 - delta) * st[3]
    p = (st[4] * delta + st[6] * (1.0 - delta)) / t_len
    r = (st[5] * delta + st[7] * (1.0 - delta)) / r_len
    f_mean = 1.0 / ((1.0 - alpha) / p + alpha / r)
    if st[4] + st[6] == st[0] and st[5] + st[7] == st[1] and st[20] == 1:
        frag = 0.0  # identical sentences: one chunk covering both
    else:
        frag = st[20] / ((st[21] + st[22]) / 2.0)
    penalty = gamma * frag ** beta
    score = f_mean * (1.0 - penalty)
    if np.isnan(score):
        score = 0.0
    return p, r, penalty, max(score, 0.0)


@njit(cache=True, parallel=True)
def segment_stats(tok, fw, hyp_ptr, ref_tok, ref_fw, ref_ptr, seg_hyp_ptr, seg_ref_ptr,
                  alpha, beta, gamma, delta, beam):
    """Meteor of every hypothesis row against its segment's references (best score, first on ties).

    tok int32[T], fw bool[T] (hypothesis tokens, row i = tok[hyp_ptr[i]:hyp_ptr[i+1]]);
    ref_tok int32[Tr], ref_fw bool[Tr], ref_ptr int64[R+1]; seg_hyp_ptr, seg_ref_ptr int64[S+1].
    Returns stats int64[H, 23], p, r, penalty, score float64[H], best int64[H] (reference index
    within the segment, -1 for a segment without references). Parallel over segments.
    """
    n_h = hyp_ptr.shape[0] - 1
    stats = np.zeros((n_h, N_STATS), np.int64)
    res = np.full((4, n_h), np.nan)
    res[3] = 0.0  # score 0 without references, P/R/penalty undefined
    best = np.full(n_h, -1, np.int64)
    for s in prange(seg_hyp_ptr.shape[0] - 1):
        cur = np.zeros(N_STATS, np.int64)
        for h in range(seg_hyp_ptr[s], seg_hyp_ptr[s + 1]):
            top = -1.0
            a, b = hyp_ptr[h], hyp_ptr[h + 1]
            for r in range(seg_ref_ptr[s], seg_ref_ptr[s + 1]):
                c, d = ref_ptr[r], ref_ptr[r + 1]
                pair_stats(tok[a:b], fw[a:b], ref_tok[c:d], ref_fw[c:d], beam, cur)
                p, rc, pen, score = metrics(cur, alpha, beta, gamma, delta)
                if score > top:  # the jar keeps the first reference of the best score
                    top = score
                    stats[h] = cur
                    res[0, h], res[1, h], res[2, h], res[3, h] = p, rc, pen, score
                    best[h] = r - seg_ref_ptr[s]
    return stats, res[0], res[1], res[2], res[3], best
