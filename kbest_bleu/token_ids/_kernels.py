"""Numba kernels of the token-id path (:mod:`kbest_bleu.token_ids`): clipped n-gram statistics of
integer token ids, compared as 64-bit integers, without any vocabulary-sized table.

Private: no validation happens here; :mod:`kbest_bleu.token_ids` checks dtypes, shapes and
bounds before calling in. The kernels are declared through :func:`kbest_bleu.jit.njit` (the
package's cache, keyed by this folder's contents, so a change in a sibling module recompiles
them too: DESIGN.md section 5). Every kernel also runs as plain Python under
``NUMBA_DISABLE_JIT=1``: hashing keeps every intermediate below 2**62 through Python ints, so
slots, and therefore the statistics, are the same bits both ways.

Exactness (DESIGN.md section 3): nothing is hashed to an id that could collide. Per segment, the
references' distinct ids become local ids 0..v-1, through a direct table when the batch's
reference ids are small non-negative integers, else an open-addressing table keyed by the exact
64-bit id; the references' n-grams of order >= 2 form a trie whose edges live in a table keyed
by the exact pair (parent node, local id). A collision costs a probe, never a merged n-gram. A
hypothesis id that no reference of its segment has matches nothing. A segment of one short
reference is matched on exact sets of its positions instead (:mod:`kbest_bleu.token_ids._bits`).

The hashed tables (:mod:`kbest_bleu.token_ids._tables`) are reused by every segment and order of
a run without being cleared: a slot whose stamp is not the current one is empty. The count
arrays are set back to 0 position by position. A segment therefore costs work proportional to its
own tokens, whatever the ids' range and however large the run's tables.
"""

import numpy as np

from ..jit import njit
from ._bits import BITS, bits_segment, one_short_reference
from ._tables import LOW32, LOW62, capacity, intern, lookup, slot, sparse_capacity

# reference-length policies (kbest_bleu.token_ids maps BleuConfig.ref_length to these)
CLOSEST, SHORTEST, AVERAGE = 0, 1, 2
# columns of the segment table: hypothesis rows h0:h1, reference rows r0:r1, first output row,
# reference row left out (-1: none; self-BLEU against the rest of a group)
SEG_H0, SEG_H1, SEG_R0, SEG_R1, SEG_OUT, SEG_SKIP = range(6)


@njit(cache=True, inline="always")
def _ref_length(c, ref_ptr, r0, r1, skip, policy):
    """Effective reference length for a hypothesis of length c: closest (ties to the shorter,
    as mteval-v13a, sacrebleu, NLTK and Moses), shortest, or the integer-truncated average
    (Moses); 0 without references."""
    n, total, best = 0, 0, -1
    for r in range(r0, r1):
        if r == skip:
            continue
        x = ref_ptr[r + 1] - ref_ptr[r]
        n += 1
        total += x
        if best < 0:
            best = x
        elif policy == SHORTEST:
            best = min(best, x)
        elif policy == CLOSEST:
            d, bd = abs(x - c), abs(best - c)
            if d < bd or (d == bd and x < best):
                best = x
    if n == 0:
        return 0
    if policy == AVERAGE:
        return int(total / n)
    return best


@njit(cache=True, inline="always")
def _row_hash(tok, a, b):
    """Hash of the ids tok[a:b] (any int64 values), below 2**62."""
    h = int(b - a)
    for i in range(a, b):
        h = (h * 31 + int(tok[i])) & LOW62
    h = ((h ^ (h >> 31)) * 0x4CF5AD432745937F) & LOW62
    return h ^ (h >> 29)


@njit(cache=True, inline="always")
def _same_row(tok, hyp_ptr, p, q):
    a, b, qa = hyp_ptr[p], hyp_ptr[p + 1], hyp_ptr[q]
    if hyp_ptr[q + 1] - qa != b - a:
        return False
    for k in range(b - a):
        if tok[a + k] != tok[qa + k]:
            return False
    return True


@njit(cache=True)
def _run_sizes(hyp_ptr, ref_ptr, segs, s0, s1, n_count):
    """Scratch sizes of segments s0..s1-1: the largest reference id count, reference n-gram count
    of orders 2..n_count, hypothesis id count, hypothesis count and reference count of one
    segment, and the number of segments of one short reference (:func:`one_short_reference`)."""
    ref_tok, ref_ngrams, hyp_tok, n_hyp, n_ref, n_bits = 0, 0, 0, 0, 0, 0
    for s in range(s0, s1):
        r0, r1 = segs[s, SEG_R0], segs[s, SEG_R1]
        n_bits += one_short_reference(ref_ptr, r0, r1, segs[s, SEG_SKIP]) >= 0
        ref_tok = max(ref_tok, ref_ptr[r1] - ref_ptr[r0])
        n_ref = max(n_ref, r1 - r0)
        grams = 0
        for r in range(r0, r1):
            x = ref_ptr[r + 1] - ref_ptr[r]
            for n in range(1, n_count):
                grams += max(0, x - n)
        ref_ngrams = max(ref_ngrams, grams)
        h0, h1 = segs[s, SEG_H0], segs[s, SEG_H1]
        n_hyp = max(n_hyp, h1 - h0)
        hyp_tok = max(hyp_tok, hyp_ptr[h1] - hyp_ptr[h0])
    return ref_tok, ref_ngrams, hyp_tok, n_hyp, n_ref, n_bits


@njit(cache=True, nogil=True)
def token_run(tok, hyp_ptr, ref_tok, ref_ptr, segs, s0, s1, n_count, policy, dedupe, n_vocab,
              matches, totals, hyp_len, ref_len):
    """Statistics of the segments s0..s1-1, written into the output arrays (serial).

    Parameters
    ----------
    tok : int64[T]           hypothesis ids, any 64-bit values
    hyp_ptr : int64[H+1]     CSR offsets of the hypotheses into ``tok``
    ref_tok : int64[Tr]      reference ids
    ref_ptr : int64[R+1]     CSR offsets of the references into ``ref_tok``
    segs : int64[S, 6]       per segment: hypothesis rows h0:h1, reference rows r0:r1, first output
                             row (hypothesis h goes to row out + h - h0), reference row left out or -1
    n_count : int            orders counted, 1..n_count (columns >= n_count of ``matches`` stay 0)
    policy : int             CLOSEST, SHORTEST or AVERAGE
    dedupe : bool            a hypothesis equal to an earlier one of its segment copies its row
    n_vocab : int            > 0: every reference id is in 0..n_vocab-1, and segment-local ids are
                             found by direct index (an int32[n_vocab] table per run with trie
                             segments, an int64[n_vocab] of position sets per run with segments of
                             one short reference); 0: hashed
    matches, totals : int32[P, n_cols]  zeroed on entry; clipped matches m_n and l_n = max(0, c - n + 1)
    hyp_len, ref_len : int32[P]

    The orders are counted level by level over lists of live positions: the positions whose
    n-gram so far is in the references (hypotheses) or in some hypothesis (references), with its
    trie node. Order 1 interns the references' ids (local ids = unigram nodes) and looks the
    hypotheses' up. Order n+1 extends each live position's node by the id n places on: in the
    references first (inserting into the trie), then in the hypotheses (looking up); a position
    whose extension is not there leaves the list. A reference position whose n-gram, or whose
    next id, no hypothesis of the segment has is dropped before inserting: no hypothesis can
    match its extensions. So the references' n-grams are interned only where a hypothesis shares
    their prefix.

    The loops are branch-free where the data decide (a new id or a repeated one, a match or not:
    as likely as not, so a branch would be mispredicted half the time): lists are compacted by
    writing every position and advancing by the condition; an insert writes its slot whether the
    key was there or not; a hypothesis n-gram that no reference has is counted on the node
    ``miss``, whose clip count is 0, in the same loop as the lookup. Clipping: a pass adds 1 to
    ``cnt[node]`` per occurrence (a hypothesis's occurrence k of a node matches while k <= its
    clip count, compared before the increment; a second pass over its live nodes sets ``cnt``
    back to 0); a reference's second pass takes the max into ``clip`` and sets ``cnt`` back to 0,
    except in a segment of one reference, which counts straight into ``clip``.

    A segment of one reference of at most BITS ids (an RL reward's shape: one reference per
    prompt, a sentence) takes no trie and no local ids where the ids are direct: its hypotheses
    are matched on the reference's position sets (:func:`kbest_bleu.token_ids._bits.bits_segment`).
    """
    max_ref_tok, max_ref_ngrams, max_hyp_tok, max_hyps, max_refs, n_bits = _run_sizes(hyp_ptr, ref_ptr, segs, s0,
                                                                                      s1, n_count)
    local = np.full(n_vocab if n_bits < s1 - s0 else 0, -1, np.int32)  # the trie's direct id table
    uni = np.zeros(2 << sparse_capacity(max_ref_tok if n_vocab == 0 else 0), np.int64)
    tri = np.zeros(2 << sparse_capacity(max_ref_tok), np.int64)  # one order's n-grams at a time
    rows = np.zeros(2 << capacity(max_hyps if dedupe else 0), np.int64)
    n_nodes_cap = max_ref_tok + max_ref_ngrams + 1
    miss = n_nodes_cap  # the node of a hypothesis n-gram no reference has (clip 0)
    clip = np.zeros(n_nodes_cap + 1, np.int32)  # max count over the references, 0 after each segment
    cnt = np.zeros(n_nodes_cap + 1, np.int32)  # counts of the current pass, 0 between passes
    hit = np.zeros(n_nodes_cap + 1, np.uint8)  # some hypothesis of the segment has the n-gram
    rid = np.empty(max_ref_tok, np.int32)  # local ids of the segment's references
    rpos = np.empty(max_ref_tok, np.int32)  # live lists of the references: position, node
    rnode = np.empty(max_ref_tok, np.int32)
    hid = np.empty(max_hyp_tok, np.int32)  # local ids of the segment's hypotheses (-1: none)
    hpos = np.empty(max_hyp_tok, np.int32)
    hnode = np.empty(max_hyp_tok, np.int32)
    n_live = np.empty(max_hyps + max_refs, np.int64)  # list lengths: the hypotheses', then the references'
    dup = np.empty(max_hyps, np.int64)
    # position sets of one short reference: by id (direct) or by local id (hashed); bits_segment
    # (by id: uninitialized, each set valid where ``owner`` holds its segment's stamp)
    masks = (np.empty(n_vocab, np.int64) if n_vocab > 0 else np.zeros(BITS + 1, np.int64)) if n_bits > 0 else (
        np.empty(0, np.int64))
    owner = np.zeros(n_vocab if n_bits > 0 else 0, np.int32)
    hm = np.empty(max_hyp_tok if n_bits > 0 else 0, np.int64)  # the segment's hypothesis ids' sets
    ends = np.empty(max_hyp_tok if n_bits > 0 and n_count > 4 else 0, np.int64)  # bits_count's, past order 4
    acc = np.empty(n_count, np.int64)
    n_cols = totals.shape[1]
    for s in range(s0, s1):
        h0, h1, r0, r1 = segs[s, SEG_H0], segs[s, SEG_H1], segs[s, SEG_R0], segs[s, SEG_R1]
        out0, skip = segs[s, SEG_OUT], segs[s, SEG_SKIP]
        seg_stamp = np.int64(s - s0 + 1)  # marks this segment's slots in uni, tri and rows
        a0, a1 = ref_ptr[r0], ref_ptr[r1]
        c0 = hyp_ptr[h0]
        nh = h1 - h0
        # one reference: its counts are the clip counts (no max to take)
        single = r1 - r0 - (1 if r0 <= skip < r1 else 0) == 1
        rcnt = clip if single else cnt
        # lengths; a duplicate of an earlier hypothesis of the segment is copied at the end
        rshift = 62 - capacity(nh)
        rmask = (1 << (62 - rshift)) - 1
        for h in range(h0, h1):
            a, b = hyp_ptr[h], hyp_ptr[h + 1]
            dup[h - h0] = -1
            if dedupe and nh > 1:  # a segment of one hypothesis has no duplicate to find
                hh = _row_hash(tok, a, b)
                e = slot(hh, rshift)
                while (rows[2 * e + 1] >> 32) == seg_stamp:
                    p = rows[2 * e + 1] & LOW32
                    if rows[2 * e] == hh and _same_row(tok, hyp_ptr, h0 + p, h):
                        dup[h - h0] = p
                        break
                    e = (e + 1) & rmask
                if dup[h - h0] >= 0:
                    continue
                rows[2 * e] = hh
                rows[2 * e + 1] = (seg_stamp << 32) | (h - h0)
            row = out0 + h - h0
            c = b - a
            hyp_len[row] = c
            ref_len[row] = _ref_length(c, ref_ptr, r0, r1, skip, policy)
            for n in range(n_cols):
                totals[row, n] = max(0, c - n)
        one = one_short_reference(ref_ptr, r0, r1, skip)
        if one >= 0:  # matched on the reference's position sets (kbest_bleu.token_ids._bits)
            ra, rb = ref_ptr[one], ref_ptr[one + 1]
            bits_segment(tok, hyp_ptr, h0, h1, dup, out0, ref_tok, ra, rb, n_vocab, masks, owner, uni,
                         62 - sparse_capacity(rb - ra), seg_stamp, rid, hm, n_count, ends, acc, matches)
        else:
            # order 1: the references' distinct ids become the local ids 0..v-1 (the unigram nodes)
            ushift = 62 - sparse_capacity(a1 - a0)
            v = 0
            for r in range(r0, r1):
                if r == skip:
                    continue
                if n_vocab > 0:
                    for k in range(ref_ptr[r], ref_ptr[r + 1]):
                        t = ref_tok[k]
                        x = local[t]
                        new = x < 0
                        x = v if new else x
                        local[t] = x
                        v += new
                        rid[k - a0] = x
                else:
                    for k in range(ref_ptr[r], ref_ptr[r + 1]):
                        x, new = intern(uni, ref_tok[k], ushift, seg_stamp, v)
                        v += new
                        rid[k - a0] = x
            n_nodes = v
            if v > 0:
                for r in range(r0, r1):
                    if r != skip:
                        b0, b1 = ref_ptr[r] - a0, ref_ptr[r + 1] - a0
                        for k in range(b0, b1):
                            rcnt[rid[k]] += 1
                        if not single:
                            _clip_pass(rid, b0, b1, cnt, clip)
                for h in range(h0, h1):
                    if dup[h - h0] >= 0:
                        continue
                    b0, b1 = hyp_ptr[h] - c0, hyp_ptr[h + 1] - c0
                    if n_vocab > 0:
                        for k in range(b0, b1):
                            t = tok[c0 + k]
                            hid[k] = local[t] if 0 <= t < n_vocab else -1
                    else:
                        for k in range(b0, b1):
                            hid[k] = lookup(uni, tok[c0 + k], ushift, seg_stamp)
                    j = b0
                    m = 0
                    for k in range(b0, b1):
                        j, hit_k = _live_step(hid[k], k, j, hpos, hnode, miss, cnt, clip, hit)
                        m += hit_k
                    _reset_counts(hnode, b0, j, cnt, miss)
                    n_live[h - h0] = j - b0
                    matches[out0 + h - h0, 0] = m
                for r in range(r0, r1):
                    if r != skip:
                        b0, b1 = ref_ptr[r] - a0, ref_ptr[r + 1] - a0
                        j = b0
                        for k in range(b0, b1):
                            x = rid[k]
                            rpos[j] = k
                            rnode[j] = x
                            j += hit[x]
                        n_live[nh + r - r0] = j - b0
            # orders 2..n_count, level by level; each order has its own table (stamped with the
            # segment and the order), sized to its own live positions: a small table stays in cache
            for n in range(1, n_count if v > 0 else 1):
                o_stamp = seg_stamp * 32 + n
                n_keys = 0
                for r in range(r0, r1):
                    if r == skip:
                        continue
                    b0, end = ref_ptr[r] - a0, ref_ptr[r + 1] - a0
                    # keep the positions with an n+1-gram whose n-gram prefix and last id some hypothesis has
                    j = b0
                    for q in range(b0, b0 + n_live[nh + r - r0]):
                        i = rpos[q]
                        if i + n >= end:
                            break
                        node = rnode[q]
                        rpos[j] = i
                        rnode[j] = node
                        j += hit[node] & hit[rid[i + n]]
                    n_live[nh + r - r0] = j - b0
                    n_keys += j - b0
                tshift = 62 - sparse_capacity(n_keys)
                for r in range(r0, r1):
                    if r == skip:
                        continue
                    b0 = ref_ptr[r] - a0
                    j = b0 + n_live[nh + r - r0]
                    for q in range(b0, j):
                        x, new = intern(tri, (np.int64(rnode[q]) << 32) | rid[rpos[q] + n], tshift, o_stamp, n_nodes)
                        n_nodes += new
                        rnode[q] = x
                        rcnt[x] += 1
                    if not single:
                        _clip_pass(rnode, b0, j, cnt, clip)
                for h in range(h0, h1):
                    if dup[h - h0] >= 0:
                        continue
                    b0, end = hyp_ptr[h] - c0, hyp_ptr[h + 1] - c0
                    j = b0
                    m = 0
                    for q in range(b0, b0 + n_live[h - h0]):
                        i = hpos[q]
                        if i + n >= end:
                            break
                        # a missing id (-1) makes a key no reference n-gram has: its low half is >= 2**31
                        key = (np.int64(hnode[q]) << 32) | (np.int64(hid[i + n]) & LOW32)
                        j, hit_k = _live_step(lookup(tri, key, tshift, o_stamp), i, j, hpos, hnode, miss, cnt,
                                              clip, hit)
                        m += hit_k
                    _reset_counts(hnode, b0, j, cnt, miss)
                    n_live[h - h0] = j - b0
                    matches[out0 + h - h0, n] = m
            # the segment's tables back to their resting state
            clip[:n_nodes] = 0
            hit[:n_nodes] = 0
            if n_vocab > 0:
                for k in range(a1 - a0):
                    local[ref_tok[a0 + k]] = -1
        for h in range(h0, h1):
            q = dup[h - h0]
            if q >= 0:
                row, src = out0 + h - h0, out0 + q
                for n in range(n_cols):
                    matches[row, n] = matches[src, n]
                    totals[row, n] = totals[src, n]
                hyp_len[row] = hyp_len[src]
                ref_len[row] = ref_len[src]


@njit(cache=True, inline="always")
def _clip_pass(nodes, b0, b1, cnt, clip):
    """After a reference's pass added its occurrences of nodes[b0:b1] to ``cnt``: the clip counts
    become the max with them, and ``cnt`` goes back to 0 (a node seen again reads 0 after its
    first reset, which leaves the max unchanged)."""
    for i in range(b0, b1):
        x = nodes[i]
        clip[x] = max(clip[x], cnt[x])
        cnt[x] = 0


@njit(cache=True, inline="always")
def _live_step(x, pos, j, hpos, hnode, miss, cnt, clip, hit):
    """A hypothesis n-gram at ``pos`` with node ``x`` (-1: no reference has it, counted on ``miss``):
    written at j of the live lists, kept (j advances) only when found, and counted
    (:func:`_count_one`). Returns (the next j, 1 if it matched else 0)."""
    found = x >= 0
    x = x if found else miss
    hpos[j] = pos
    hnode[j] = x
    return j + found, _count_one(x, cnt, clip, hit)


@njit(cache=True, inline="always")
def _count_one(x, cnt, clip, hit):
    """One occurrence of node ``x`` in a hypothesis: 1 if it matches (occurrence k of a node
    matches while k <= its clip count, compared before the increment), else 0; counts it in
    ``cnt`` and marks the node as some hypothesis's."""
    m = cnt[x] < clip[x]
    cnt[x] += 1
    hit[x] = 1
    return m


@njit(cache=True, inline="always")
def _reset_counts(nodes, b0, b1, cnt, miss):
    """``cnt`` back to 0 after a hypothesis's pass over the live nodes nodes[b0:b1] and ``miss``."""
    for i in range(b0, b1):
        cnt[nodes[i]] = 0
    cnt[miss] = 0


@njit(cache=True, nogil=True)
def compress_rows(x, pad, flat, ptr):
    """Non-pad ids of the rows of a 2-D array, in order, as CSR: writes flat[:T] and ptr[0:B+1]
    (ptr[0] = 0); returns T. One pass, where numpy takes a mask, a count and a compress."""
    k = 0
    ptr[0] = 0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            t = x[i, j]
            if t != pad:
                flat[k] = t
                k += 1
        ptr[i + 1] = k
    return k


@njit(cache=True, nogil=True)
def padded_batch(hyp, ref, pad, group, per_entry, drop_empty, tok, hyp_ptr, ref_tok, ref_ptr, segs):
    """A reward's batch in one call: the rows of the 2-D arrays ``hyp`` and ``ref`` without the
    ``pad`` ids as CSR (:func:`compress_rows` into tok, hyp_ptr and ref_tok, ref_ptr), and the segment
    table ``segs`` int64[E, 6]: rows g*group..(g+1)*group-1 against the references of entry g, rows
    g*per_entry..(g+1)*per_entry-1 of ``ref``. With ``drop_empty`` (a 3-D array's references), a
    non-empty row of only pad ids is no reference (dropped; the others stay contiguous). Returns the
    numbers of hypothesis ids, reference ids and references kept, and the (min, max) of the
    reference ids (0, -1 for none)."""
    n_tok = compress_rows(hyp, pad, tok, hyp_ptr)
    n_ref = compress_rows(ref, pad, ref_tok, ref_ptr)
    kept = 0
    for g in range(segs.shape[0]):
        segs[g, SEG_H0] = g * group
        segs[g, SEG_H1] = (g + 1) * group
        segs[g, SEG_R0] = kept
        for r in range(g * per_entry, (g + 1) * per_entry):
            end = ref_ptr[r + 1]
            if not (drop_empty and ref.shape[1] > 0 and end == ref_ptr[kept]):
                kept += 1
                ref_ptr[kept] = end
        segs[g, SEG_R1] = kept
        segs[g, SEG_OUT] = g * group
        segs[g, SEG_SKIP] = -1
    lo, hi = id_range(ref_tok[:n_ref]) if n_ref > 0 else (0, -1)
    return n_tok, n_ref, kept, lo, hi


@njit(cache=True, nogil=True)
def id_range(ids):
    """(min, max) of a non-empty int64 array in one pass, where numpy takes two calls (~2 us each
    on a small batch's references)."""
    lo = hi = ids[0]
    for i in range(1, ids.size):
        t = ids[i]
        lo = min(lo, t)
        hi = max(hi, t)
    return lo, hi
