"""Numba kernels of chrF / chrF++: exact n-gram ids and clipped match counts (pairwise and aggregated
chrF are in :mod:`._pairs`). Private: :mod:`.score` and :mod:`.mbr` validate every argument first
(DESIGN.md section 5).

Text arrives as UTF-8 bytes with int64 offsets, and is cut as sacrebleu's ``CHRF`` cuts it:
character n-grams over the string without Python's whitespace (``''.join(s.split())``) or with it;
for chrF++ word n-grams over ``s.split()`` with one ASCII punctuation mark split off the end, else
off the start, of each word of two or more characters (``CHRF._remove_punctuation``).

N-gram ids are exact: a character n-gram is the trie node (parent node, code point), a word n-gram
the node (parent word n-gram, trie node of the word's characters), each pair packed into one int64
key of an open-addressing table: a collision costs a probe, never a merged n-gram. Ids are local to
a segment, so dense per-id arrays stay small. Every kernel also runs as plain Python
(``NUMBA_DISABLE_JIT=1``): keys are Python ints and the hash keeps its product below 2^62.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ...jit import njit

_LOW62 = (1 << 62) - 1
_MULT = 0x1E3779B97F4A7C15  # odd multiplier below 2^62 (a wider literal would make numba use floats)
_WORD_TAG = 1 << 62  # keys of word n-grams: tag | parent << 31 | word node (character keys stay below 2^52)
# chunks of work per kernel: fixed (not the thread count), so that sums come out in the same order anywhere
CHUNKS = 32


@njit(inline="always")
def _is_space(c):
    """Python's ``str.isspace`` (what ``str.split()`` cuts at); tests compare all of Unicode."""
    if c <= 32:
        return c == 32 or 9 <= c <= 13 or 28 <= c <= 31
    if c < 0x85:
        return False
    return (c == 0x85 or c == 0xA0 or c == 0x1680 or 0x2000 <= c <= 0x200A or c == 0x2028 or c == 0x2029
            or c == 0x202F or c == 0x205F or c == 0x3000)


@njit(inline="always")
def _is_punct(c):
    """ASCII ``string.punctuation``, sacrebleu's ``CHRF._PUNCTS``."""
    return 33 <= c <= 47 or 58 <= c <= 64 or 91 <= c <= 96 or 123 <= c <= 126


@njit(inline="always")
def _decode(data, a, b, cp):
    """Code points of the valid UTF-8 bytes data[a:b] into cp; returns their number."""
    n = 0
    i = a
    while i < b:
        c = int(data[i])
        if c < 0x80:
            i += 1
        elif c < 0xE0:
            c = ((c & 0x1F) << 6) | (int(data[i + 1]) & 0x3F)
            i += 2
        elif c < 0xF0:
            c = ((c & 0x0F) << 12) | ((int(data[i + 1]) & 0x3F) << 6) | (int(data[i + 2]) & 0x3F)
            i += 3
        else:
            c = (((c & 0x07) << 18) | ((int(data[i + 1]) & 0x3F) << 12) | ((int(data[i + 2]) & 0x3F) << 6)
                 | (int(data[i + 3]) & 0x3F))
            i += 4
        cp[n] = c
        n += 1
    return n


@njit(inline="always")
def _slot(key, shift):
    return ((int(key) * _MULT) & _LOW62) >> shift


@njit()
def _shift(cap):
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    return 62 - bits


@njit()
def _new_table(cap):
    """(table int64[2 * cap]: slot s holds its key at 2s (-1: empty) and the key's node id at 2s+1,
    side by side so that a probe reads one cache line; occupied slots int64[cap]; state int64[3]:
    next node id (0 is the root), the number of occupied slots, a sink for :func:`_nodes`)."""
    table = np.full(2 * cap, -1, np.int64)
    st = np.zeros(3, np.int64)
    st[0] = 1
    return table, np.zeros(cap, np.int64), st


@njit()
def _clear(table, used, st):
    for i in range(st[1]):
        table[2 * used[i]] = -1
    st[0] = 1
    st[1] = 0


@njit()
def _grown(table, used, st, need):
    """The table, doubled until ``need`` more nodes keep it at most half full (node ids unchanged)."""
    cap = table.size // 2
    while 2 * (st[0] + need) > cap:
        cap *= 2
    if 2 * cap == table.size:
        return table, used
    new = np.full(2 * cap, -1, np.int64)
    new_used = np.zeros(cap, np.int64)
    shift = _shift(cap)
    for i in range(st[1]):
        key = table[2 * used[i]]
        s = _slot(key, shift)
        while new[2 * s] >= 0:
            s = (s + 1) & (cap - 1)
        new[2 * s] = key
        new[2 * s + 1] = table[2 * used[i] + 1]
        new_used[i] = s
    return new, new_used


@njit()
def _nodes(table, used, st, shift, keys, slots, n_keys, insert, out, at):
    """out[at + i] = node id of keys[i] for i < n_keys: added when absent and ``insert``, else -1
    (also for a key of -1). The keys are independent, so all their slots are computed and read
    first: the table's cache misses then overlap instead of following each other (3x faster on a
    2 MB table). The probe is written out here: as an inlined function it ran 3x slower."""
    mask = table.size // 2 - 1
    sink = 0
    for i in range(n_keys):
        if keys[i] >= 0:
            s = _slot(keys[i], shift)
            slots[i] = s
            sink ^= table[2 * s]
    st[2] ^= sink  # kept, so that the reads are not optimised away
    for i in range(n_keys):
        key = keys[i]
        node = -1
        if key >= 0:
            s = slots[i]
            while True:
                k = table[2 * s]
                if k == key:
                    node = table[2 * s + 1]
                    break
                if k < 0:
                    if insert:
                        node = st[0]
                        table[2 * s] = key
                        table[2 * s + 1] = node
                        used[st[1]] = s
                        st[0] += 1
                        st[1] += 1
                    break
                s = (s + 1) & mask
        out[at + i] = node


@njit()
def _walk(data, a, b, ws, nc, nw, insert, table, used, st, cp, ch, tok, keys, slots, occ, optr):
    """Every n-gram occurrence of the string data[a:b], as node ids grouped by order: occ[optr[o]:
    optr[o+1]] for order o (characters 1..nc, then words 1..nw); -1 for an n-gram not in the table
    when not ``insert``. Scratch: cp, ch, keys, slots of at least b - a + 1 entries, tok twice that."""
    shift = _shift(table.size // 2)
    n_cp = _decode(data, a, b, cp)
    m = 0
    for i in range(n_cp):
        if ws or not _is_space(cp[i]):
            ch[m] = cp[i]
            m += 1
    k = 0
    for n in range(1, nc + 1):
        optr[n - 1] = k
        for p in range(m - n + 1):
            parent = 0 if n == 1 else int(occ[k - (m - n + 2) + p])  # the (n-1)-gram at p
            keys[p] = -1 if parent < 0 else (parent << 21) | int(ch[p + n - 1])
        _nodes(table, used, st, shift, keys, slots, max(m - n + 1, 0), insert, occ, k)
        k += max(m - n + 1, 0)
    optr[nc] = k
    if nw == 0:
        return k
    n_tok = 0  # tokens (start, end) in cp: sacrebleu's _remove_punctuation of s.split()
    i = 0
    while i < n_cp:
        while i < n_cp and _is_space(cp[i]):
            i += 1
        if i == n_cp:
            break
        s = i
        while i < n_cp and not _is_space(cp[i]):
            i += 1
        if i - s > 1 and _is_punct(cp[i - 1]):
            cut = i - 1
        elif i - s > 1 and _is_punct(cp[s]):
            cut = s + 1
        else:
            cut = i
        tok[2 * n_tok] = s
        tok[2 * n_tok + 1] = cut
        n_tok += 1
        if cut < i:
            tok[2 * n_tok] = cut
            tok[2 * n_tok + 1] = i
            n_tok += 1
    for t in range(n_tok):  # each token's character node, kept in ch (no longer needed)
        ch[t] = 0
        for j in range(tok[2 * t], tok[2 * t + 1]):
            keys[0] = (int(ch[t]) << 21) | int(cp[j])
            _nodes(table, used, st, shift, keys, slots, 1, insert, ch, t)
            if ch[t] < 0:
                break
    for n in range(1, nw + 1):
        optr[nc + n - 1] = k
        for t in range(n_tok - n + 1):
            parent = 0 if n == 1 else int(occ[k - (n_tok - n + 2) + t])
            word = int(ch[t + n - 1])
            keys[t] = -1 if parent < 0 or word < 0 else _WORD_TAG | (parent << 31) | word
        _nodes(table, used, st, shift, keys, slots, max(n_tok - n + 1, 0), insert, occ, k)
        k += max(n_tok - n + 1, 0)
    optr[nc + nw] = k
    return k


@njit()
def _unique(occ, optr, n_orders, dense, touched, out_ids, out_cnt, out_optr, e):
    """The distinct found ids of each order of occ with their counts, written from out_*[e];
    out_optr[o] = where order o starts. Returns the end. dense: zeros[number of nodes], left zero."""
    for o in range(n_orders):
        out_optr[o] = e
        n_t = 0
        for k in range(optr[o], optr[o + 1]):
            i = occ[k]
            if i < 0:
                continue
            if dense[i] == 0:
                touched[n_t] = i
                n_t += 1
            dense[i] += 1
        for t in range(n_t):
            i = touched[t]
            out_ids[e] = i
            out_cnt[e] = dense[i]
            dense[i] = 0
            e += 1
    out_optr[n_orders] = e
    return e


@njit()
def _scratch(n_ord, max_bytes):
    """Per-thread buffers of :func:`_walk` and :func:`_unique` for strings of up to max_bytes bytes:
    cp, ch, tok, keys, slots, occ, touched."""
    n = max_bytes + 1
    return (np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(2 * n, np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64), np.zeros(n_ord * n, np.int32), np.zeros(n_ord * n, np.int32))


@njit(error_model="numpy")
def _stats_chunk(hdata, hoff, rdata, roff, seg_ptr, ref_ptr, first, pair_ptr, nc, nw, ws, max_bytes, s_lo, s_hi,
                 stats):
    """:func:`segment_stats` of segments s_lo..s_hi-1: one thread's share, serial."""
    n_ord = nc + nw
    table, used, st = _new_table(1024)
    dense = np.zeros(used.size, np.int32)
    cp, ch, tok, keys, slots, occ, touched = _scratch(n_ord, max_bytes)
    optr = np.zeros(n_ord + 1, np.int64)
    hids = np.zeros(n_ord * (max_bytes + 1), np.int32)
    hcnt = np.zeros(n_ord * (max_bytes + 1), np.int32)
    hoptr = np.zeros(n_ord + 1, np.int64)
    for s in range(s_lo, s_hi):
        _clear(table, used, st)
        r0 = ref_ptr[s]
        n_ref = ref_ptr[s + 1] - r0
        need = 1 + (n_ord + 1) * (roff[r0 + n_ref] - roff[r0])
        table, used = _grown(table, used, st, need)
        if dense.size < used.size:
            dense = np.zeros(used.size, np.int32)
        rids = np.zeros(n_ord * (roff[r0 + n_ref] - roff[r0] + n_ref), np.int32)
        rcnt = np.zeros(rids.size, np.int32)
        roptr = np.zeros((n_ref, n_ord + 1), np.int64)
        rtot = np.zeros((n_ref, n_ord), np.int64)
        e = 0
        for j in range(n_ref):
            _walk(rdata, roff[r0 + j], roff[r0 + j + 1], ws, nc, nw, True, table, used, st,
                  cp, ch, tok, keys, slots, occ, optr)
            for o in range(n_ord):
                rtot[j, o] = optr[o + 1] - optr[o]
            e = _unique(occ, optr, n_ord, dense, touched, rids, rcnt, roptr[j], e)
        # each reference's count of every node: rc[node * n_ref + j]
        rc = np.zeros(max(st[0] * n_ref, 1), np.int32)
        for j in range(n_ref):
            for k in range(roptr[j, 0], roptr[j, n_ord]):
                rc[rids[k] * n_ref + j] = rcnt[k]
        match = np.zeros((max(n_ref, 1), n_ord), np.int64)
        for h in range(seg_ptr[s], seg_ptr[s + 1]):
            if n_ref == 0:  # no pairs
                break
            if first[h] != h:
                for j in range(n_ref):
                    stats[pair_ptr[h] + j] = stats[pair_ptr[first[h]] + j]
                continue
            _walk(hdata, hoff[h], hoff[h + 1], ws, nc, nw, False, table, used, st,
                  cp, ch, tok, keys, slots, occ, optr)
            _unique(occ, optr, n_ord, dense, touched, hids, hcnt, hoptr, 0)
            match[:] = 0
            for o in range(n_ord):
                for k in range(hoptr[o], hoptr[o + 1]):
                    base = hids[k] * n_ref
                    cnt = hcnt[k]
                    for j in range(n_ref):
                        match[j, o] += min(cnt, rc[base + j])
            for j in range(n_ref):
                for o in range(n_ord):
                    stats[pair_ptr[h] + j, 3 * o] = optr[o + 1] - optr[o] if rtot[j, o] > 0 else 0
                    stats[pair_ptr[h] + j, 3 * o + 1] = rtot[j, o]
                    stats[pair_ptr[h] + j, 3 * o + 2] = match[j, o]


@njit(parallel=True)
def segment_stats(hdata, hoff, rdata, roff, seg_ptr, ref_ptr, first, pair_ptr, nc, nw, ws, max_bytes):
    """chrF statistics of each hypothesis against each of its segment's references.

    hdata/hoff: hypotheses' UTF-8 bytes and offsets [H+1]; rdata/roff: the references' [nR+1];
    segment s owns hypotheses seg_ptr[s]:seg_ptr[s+1] and references ref_ptr[s]:ref_ptr[s+1];
    first[h]: the first row of h's segment with the same text (counted once); pair_ptr int64[H+1]:
    row h's pairs (one per reference of its segment). max_bytes: the longest string. Returns
    int64[P, 3*(nc+nw)]: per pair and order (hyp, ref, match) as sacrebleu's
    ``_get_match_statistics`` (hyp 0 where the reference has no n-gram of that order).
    """
    n_seg = seg_ptr.size - 1
    stats = np.zeros((pair_ptr[-1], 3 * (nc + nw)), np.int64)
    n_chunks = min(CHUNKS, n_seg)
    for c in prange(n_chunks):  # each chunk's body in a serial function: parfors mishandled its reassignments
        _stats_chunk(hdata, hoff, rdata, roff, seg_ptr, ref_ptr, first, pair_ptr, nc, nw, ws, max_bytes,
                     c * n_seg // n_chunks, (c + 1) * n_seg // n_chunks, stats)
    return stats


@njit()
def _profile_chunk(data, off, seg_ptr, ent_off, nc, nw, ws, max_bytes, s_lo, s_hi, ids, cnt, optr, tot, nodes):
    """:func:`profiles` of segments s_lo..s_hi-1: one thread's share, serial."""
    n_ord = nc + nw
    table, used, st = _new_table(1024)
    dense = np.zeros(used.size, np.int32)
    cp, ch, tok, keys, slots, occ, touched = _scratch(n_ord, max_bytes)
    o_ptr = np.zeros(n_ord + 1, np.int64)
    for s in range(s_lo, s_hi):
        _clear(table, used, st)
        for i in range(seg_ptr[s], seg_ptr[s + 1]):
            table, used = _grown(table, used, st, 1 + (n_ord + 1) * (off[i + 1] - off[i]))
            if dense.size < used.size:
                dense = np.zeros(used.size, np.int32)
            _walk(data, off[i], off[i + 1], ws, nc, nw, True, table, used, st, cp, ch, tok, keys, slots,
                  occ, o_ptr)
            for o in range(n_ord):
                tot[i, o] = o_ptr[o + 1] - o_ptr[o]
            _unique(occ, o_ptr, n_ord, dense, touched, ids, cnt, optr[i], ent_off[i])
        nodes[s] = st[0]


@njit(parallel=True)
def profiles(data, off, seg_ptr, ent_off, nc, nw, ws, max_bytes):
    """Every string's distinct n-grams with counts, ids local to its segment (strings
    seg_ptr[s]:seg_ptr[s+1]). ent_off int64[n+1]: room for string i's entries (>= its n-gram
    occurrences). Returns ids int32[E], counts int32[E], optr int64[n, O+1] (string i's order o at
    ids[optr[i, o]:optr[i, o+1]]), totals int32[n, O] (occurrences per order), nodes int64[S]
    (ids of segment s are < nodes[s])."""
    n_ord = nc + nw
    n_str = off.size - 1
    n_seg = seg_ptr.size - 1
    ids = np.zeros(ent_off[-1], np.int32)
    cnt = np.zeros(ent_off[-1], np.int32)
    optr = np.zeros((n_str, n_ord + 1), np.int64)
    tot = np.zeros((n_str, n_ord), np.int32)
    nodes = np.zeros(n_seg, np.int64)
    n_chunks = min(CHUNKS, n_seg)
    for c in prange(n_chunks):
        _profile_chunk(data, off, seg_ptr, ent_off, nc, nw, ws, max_bytes, c * n_seg // n_chunks,
                       (c + 1) * n_seg // n_chunks, ids, cnt, optr, tot, nodes)
    return ids, cnt, optr, tot, nodes


@njit()
def profiles_serial(data, off, seg_ptr, ent_off, nc, nw, ws, max_bytes):
    """:func:`profiles` on the calling thread (a single segment: no parallel launch, ~ms saved)."""
    n_ord = nc + nw
    ids = np.zeros(ent_off[-1], np.int32)
    cnt = np.zeros(ent_off[-1], np.int32)
    optr = np.zeros((off.size - 1, n_ord + 1), np.int64)
    tot = np.zeros((off.size - 1, n_ord), np.int32)
    nodes = np.zeros(seg_ptr.size - 1, np.int64)
    _profile_chunk(data, off, seg_ptr, ent_off, nc, nw, ws, max_bytes, 0, seg_ptr.size - 1, ids, cnt, optr, tot,
                   nodes)
    return ids, cnt, optr, tot, nodes
