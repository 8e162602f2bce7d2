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
log (parent pointer), so a child costs a few words instead of two arrays. The jar sorts every path
it made, then keeps the best ``beam``; here each new path is offered, in the order the jar makes
them, to a beam kept sorted (after the paths of equal key, as a stable sort puts it), so a child
that would be pruned is never copied, and a step where no path branches (a definite match, a word
without candidates) is re-sorted in place at linear cost. Same paths, same order, same winner.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ...jit import njit

N_STATS = 23  # the jar's -ssOut line: 4 lengths, 4 modules x 4 match counts, chunks, 2 word-match totals


# A path's sort key packed in one int64 so that smaller = better, as PARTIAL_COMPARE_TOTAL:
# (MAX_TOKENS - 1 - matches) << 51 | chunks << 39 | distance. Exact while sentences have fewer than
# MAX_TOKENS tokens (then matches, chunks < 2^12 and distance <= I * J * max(I, J) < 2^39).
MAX_TOKENS = 4096
_MATCH = np.int64(1) << np.int64(51)
_CHUNK = np.int64(1) << np.int64(39)


@njit(inline="always")
def _fits(k, key, kept, n_kept, beam):
    """Whether a path of key k, made after the kept ones, enters the next step's beam: a stable
    sort puts it after every kept path of equal key, so when the beam is full it must be better
    than the last one."""
    return n_kept < beam or k < key[kept[n_kept - 1]]


@njit()
def _keep(slot, key, kept, n_kept, beam, free, n_free):
    """Put path ``slot`` (it :func:`_fits`) into kept[:n_kept], the next step's beam sorted stably by
    key: after the paths of equal key; the last path falls out when more than ``beam`` remain, its
    slot onto the free stack. Returns (n_kept, n_free)."""
    k = key[slot]
    lo, hi = 0, n_kept
    while lo < hi:  # the first kept path with a larger key
        mid = (lo + hi) >> 1
        if key[kept[mid]] <= k:
            lo = mid + 1
        else:
            hi = mid
    if n_kept == beam:
        free[n_free] = kept[n_kept - 1]
        n_free += 1
        n_kept -= 1
    for q in range(n_kept, lo, -1):
        kept[q] = kept[q - 1]
    kept[lo] = slot
    return n_kept + 1, n_free


@njit()
def _resort(cur, n, key):
    """Stable insertion sort of cur[:n] by key: after a step where every path moved on alone (a
    definite match or a word without candidates) the jar's stable sort, at the cost of the few
    inversions that step made."""
    for a in range(1, n):
        p = cur[a]
        b = a
        while b > 0 and key[cur[b - 1]] > key[p]:
            cur[b] = cur[b - 1]
            b -= 1
        cur[b] = p


@njit(inline="always")
def _add_all(cur, n, key, last, pend, shared):
    """Write a pending increment and the shared chunk end into the paths cur[:n]."""
    for r in range(n):
        key[cur[r]] += pend
        last[cur[r]] = shared


@njit()
def workspace(max_i, max_j, beam):
    """Scratch arrays for :func:`align_into`, for hypotheses up to max_i and references up to
    max_j tokens (allocated once per segment, not once per pair)."""
    n_w = (max_i + 63) // 64 + 1
    slots = 2 * beam + 2  # the paths being expanded, the next step's beam and one new child
    log_cap = beam * max_i * max_j + 1
    return (np.empty(max_j + 1, np.int64), np.empty(max_i + 1, np.int64), np.empty(max_i * max_j + 1, np.int64),
            np.empty(max_j + 1, np.int64), np.empty((slots, n_w), np.uint64), np.empty((3, slots), np.int64),
            np.empty((3, log_cap), np.int64), np.empty((3, slots), np.int64))


@njit()
def align_into(hyp, ref, beam, ws):
    """The jar's exact alignment of one hypothesis (test, ``words1``) with one reference (``words2``).

    hyp : int32[I] token ids; ref : int32[J] token ids (equal ids = equal words); beam : the beam
    width (the jar's default 40); ws : :func:`workspace` of at least I and J tokens.
    Returns int64[J] (a view into ws): the test position aligned to each reference position, -1
    where none.
    """
    cstart, cov1, cand, fixed, used, paths, log, lists = ws
    n_i, n_j = hyp.shape[0], ref.shape[0]
    cov1[:n_i] = 0
    cstart[0] = 0
    for j in range(n_j):  # candidates of ref word j: every equal test word, in increasing i
        k = cstart[j]
        for i in range(n_i):
            if hyp[i] == ref[j]:
                cand[k] = i
                k += 1
                cov1[i] += 1
        cstart[j + 1] = k
    # definite matches: the only candidate of ref word j, and test word i has no other candidate
    n_w = (n_i + 63) // 64
    used[0, :n_w] = 0
    ambiguous = False
    for j in range(n_j):
        c = cstart[j + 1] - cstart[j]
        fixed[j] = -1
        if c == 1 and cov1[cand[cstart[j]]] == 1:
            i = cand[cstart[j]]
            fixed[j] = i
            used[0, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
        elif c > 0:
            ambiguous = True
    if not ambiguous:  # one path: the definite matches
        return fixed[:n_j]
    # paths live in slots (key, last, node, used bitset); cur[:n_cur] is the beam in the jar's order
    key, last, node = paths[0], paths[1], paths[2]
    log_parent, log_j, log_i = log[0], log[1], log[2]
    cur, nxt, free = lists[0], lists[1], lists[2]
    key[0], last[0], node[0] = (MAX_TOKENS - 1) * _MATCH, -1, -1
    cur[0], n_cur, n_fresh, n_free, n_log = 0, 1, 1, 0, 0
    # After a step where no path branches, every path's last chunk ends at the same place
    # (``shared``): the next such steps add the same amount to every key and keep the order, so
    # that amount is summed in ``pend`` and written once, before the next branching step.
    uniform, pend, shared = True, 0, -1
    for current in range(n_j):
        c0, c1 = cstart[current], cstart[current + 1]
        i = fixed[current]  # a definite match (all exact matches have length 1), or -1
        if i != -1 or c0 == c1:
            if uniform:
                if i != -1:
                    pend += abs(current - i) - _MATCH + (_CHUNK if shared != -1 and i != shared else 0)
                    shared = i + 1
                elif shared != -1:  # no candidate: the word is skipped
                    pend += _CHUNK
                    shared = -1
                continue
            for r in range(n_cur):
                p = cur[r]
                if i != -1:
                    key[p] += abs(current - i) - _MATCH + (_CHUNK if last[p] != -1 and i != last[p] else 0)
                    last[p] = i + 1
                elif last[p] != -1:
                    key[p] += _CHUNK
                    last[p] = -1
            _resort(cur, n_cur, key)
            uniform, pend, shared = True, 0, last[cur[0]]
            continue
        if uniform:
            _add_all(cur, n_cur, key, last, pend, shared)
            uniform = False
        n_next = 0
        for r in range(n_cur):
            p = cur[r]
            for k in range(c0, c1):
                i = cand[k]
                w, bit = i >> 6, np.uint64(1) << np.uint64(i & 63)
                if used[p, w] & bit:
                    continue
                child = key[p] - _MATCH + (_CHUNK if last[p] != -1 and i != last[p] else 0)
                key[p] += abs(current - i)  # the jar's quirk: distance onto the parent, see module doc
                if not _fits(child, key, nxt, n_next, beam):
                    continue
                if n_free > 0:
                    n_free -= 1
                    c = free[n_free]
                else:
                    c = n_fresh
                    n_fresh += 1
                for x in range(n_w):
                    used[c, x] = used[p, x]
                used[c, w] |= bit
                key[c], last[c], node[c] = child, i + 1, n_log
                log_parent[n_log], log_j[n_log], log_i[n_log] = node[p], current, i
                n_log += 1
                n_next, n_free = _keep(c, key, nxt, n_next, beam, free, n_free)
            if last[p] != -1:  # the parent skips this reference word
                key[p] += _CHUNK
                last[p] = -1
            if _fits(key[p], key, nxt, n_next, beam):
                n_next, n_free = _keep(p, key, nxt, n_next, beam, free, n_free)
            else:
                free[n_free] = p
                n_free += 1
        cur, nxt, n_cur = nxt, cur, n_next
    if uniform:
        _add_all(cur, n_cur, key, last, pend, shared)
    best = cur[0]
    for r in range(n_cur):  # complete: close the last chunk; the stable sort's first path wins
        p = cur[r]
        if last[p] != -1:
            key[p] += _CHUNK
        if key[p] < key[best]:
            best = p
    x = node[best]
    while x != -1:
        fixed[log_j[x]] = log_i[x]
        x = log_parent[x]
    return fixed[:n_j]


@njit()
def align(hyp, ref, beam):
    """:func:`align_into` with its own workspace; returns a new int64[J] array."""
    return align_into(hyp, ref, beam, workspace(hyp.shape[0], ref.shape[0], beam)).copy()


@njit()
def pair_stats(hyp, hyp_fw, ref, ref_fw, beam, ws, out):
    """The jar's -ssOut statistics of one pair into out int64[23] (exact module in slots 4-7).

    hyp_fw, ref_fw : bool per token, whether it is a function word; ws : :func:`workspace`.
    """
    m = align_into(hyp, ref, beam, ws)
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


@njit(error_model="numpy")
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


@njit(parallel=True)
def segment_stats(tok, fw, hyp_ptr, ref_tok, ref_fw, ref_ptr, seg_hyp_ptr, seg_ref_ptr, first,
                  alpha, beta, gamma, delta, beam):
    """Meteor of every hypothesis row against its segment's references (best score, first on ties).

    tok int32[T], fw bool[T] (hypothesis tokens, row i = tok[hyp_ptr[i]:hyp_ptr[i+1]]);
    ref_tok int32[Tr], ref_fw bool[Tr], ref_ptr int64[R+1]; seg_hyp_ptr, seg_ref_ptr int64[S+1];
    first int64[H]: an earlier row of the same segment with the same tokens (its results are
    copied, K-best lists repeat hypotheses), or the row itself.
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
        max_i, max_j = 0, 0
        for h in range(seg_hyp_ptr[s], seg_hyp_ptr[s + 1]):
            max_i = max(max_i, hyp_ptr[h + 1] - hyp_ptr[h])
        for r in range(seg_ref_ptr[s], seg_ref_ptr[s + 1]):
            max_j = max(max_j, ref_ptr[r + 1] - ref_ptr[r])
        ws = workspace(max_i, max_j, beam)
        for h in range(seg_hyp_ptr[s], seg_hyp_ptr[s + 1]):
            if first[h] != h:  # a repeat, scored already by this thread
                stats[h], best[h] = stats[first[h]], best[first[h]]
                res[:, h] = res[:, first[h]]
                continue
            top = -1.0
            a, b = hyp_ptr[h], hyp_ptr[h + 1]
            for r in range(seg_ref_ptr[s], seg_ref_ptr[s + 1]):
                c, d = ref_ptr[r], ref_ptr[r + 1]
                pair_stats(tok[a:b], fw[a:b], ref_tok[c:d], ref_fw[c:d], beam, ws, cur)
                p, rc, pen, score = metrics(cur, alpha, beta, gamma, delta)
                if score > top:  # the jar keeps the first reference of the best score
                    top = score
                    stats[h] = cur
                    res[0, h], res[1, h], res[2, h], res[3, h] = p, rc, pen, score
                    best[h] = r - seg_ref_ptr[s]
    return stats, res[0], res[1], res[2], res[3], best
