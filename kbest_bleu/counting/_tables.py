"""The counting kernels' tables: the reference trie (an open-addressing hash table keyed by the
exact pair (parent node id, token id) packed into one int64: a collision costs a probe, never a
merged n-gram; DESIGN.md section 3), row hashing for duplicate checks, the statistics' arrays.

Private to :mod:`kbest_bleu.counting`: no validation happens here. Kernels of this folder call
each other across its modules; their cache is keyed by the contents of the whole folder
(:mod:`kbest_bleu.jit`), so a changed callee never leaves a stale caller.
"""

import numpy as np

from ..jit import njit
from .codes import REF_AVERAGE, REF_SHORTEST


_EMPTY = -1
# Keep every intermediate below 2**63 so that numba's wrapping int64 arithmetic and Python's
# unbounded ints give the same low bits (the kernels must also run with the JIT disabled).
_LOW62 = (1 << 62) - 1


@njit(inline="always")
def _at(a, i):
    """a[i] for an index known to be >= 0. An unsigned index skips numba's negative-index
    wraparound, which costs ~10% of the text kernel in the per-byte loops."""
    return a[np.uint64(i)]


@njit(inline="always")
def _slot(key, shift):
    """Multiplicative hashing: the top bits of the (62-bit) product pick the table slot."""
    return ((int(key) * 0x5851F42D4C957F2D) & _LOW62) >> shift


@njit()
def _table_capacity(n_items):
    cap = 16
    while cap < 2 * n_items:
        cap *= 2
    return cap


@njit(inline="always")
def _ref_length(hyp_len, ref_lens, policy):
    """Effective reference length of one hypothesis.

    closest: |r - c| minimal, ties to the shorter reference (mteval-v13a, sacrebleu, NLTK,
    Moses); shortest; average: integer-truncated mean (Moses ``BleuScorer``). 0 without refs.
    """
    n = ref_lens.shape[0]
    if n == 0:
        return 0
    if policy == REF_SHORTEST:
        return ref_lens.min()
    if policy == REF_AVERAGE:
        return int(ref_lens.sum() / n)
    best = ref_lens[0]
    for j in range(1, n):
        r = ref_lens[j]
        d, bd = abs(r - hyp_len), abs(best - hyp_len)
        if d < bd or (d == bd and r < best):
            best = r
    return best


@njit()
def _new_trie(n_ref_ngrams):
    """An empty reference n-gram trie with room for ``n_ref_ngrams`` nodes.

    (table, maxref, tally, shift): ``table`` holds slot s as table[2s] = the packed
    (parent, token) key and table[2s + 1] = its node id (one cache line per probe);
    ``maxref[id]`` is the clip count (max over references). ``tally[id]`` counts the node's
    occurrences in the current pass (one reference or one hypothesis) as (stamp << 32) + count:
    each pass has a larger stamp, so a tally left by an earlier pass reads as 0 and nothing has
    to be reset between passes.
    """
    cap = _table_capacity(n_ref_ngrams)
    return (np.full(2 * cap, _EMPTY, np.int64), np.zeros(n_ref_ngrams + 1, np.int32),
            np.zeros(n_ref_ngrams + 1, np.int64), 62 - int(np.log2(cap)))


@njit(inline="always")
def _find_slot(table, key, shift):
    """The slot of ``key``, or the empty slot where it would go (linear probing)."""
    mask = table.shape[0] // 2 - 1
    s = _slot(key, shift)
    k = table[2 * s]
    while k != key and k != _EMPTY:
        s = (s + 1) & mask
        k = table[2 * s]
    return s


@njit(inline="always")
def _tally(tally, v, base):
    """Count one more occurrence of node v in the pass whose stamp is ``base`` >> 32; returns the
    node's count in this pass."""
    cell = tally[v]
    if cell < base:  # last counted by an earlier pass
        cell = base
    cell += 1
    tally[v] = cell
    return cell - base


@njit()
def _add_reference(trie, ids, a, b, n_orders, n_nodes, stamp):
    """Insert the n-grams (orders 1..n_orders) of the reference ids[a:b]; each node's clip count
    becomes the max of its count in this reference and before. ``stamp``: this pass's number,
    larger than any earlier pass's on this trie. Returns the number of nodes."""
    table, maxref, tally, shift = trie
    base = np.int64(stamp) << 32
    for i in range(a, b):
        parent = 0
        for n in range(min(n_orders, b - i)):
            key = (np.int64(parent) << 32) | np.int64(ids[i + n])
            s = _find_slot(table, key, shift)
            if table[2 * s] == _EMPTY:
                n_nodes += 1
                table[2 * s] = key
                table[2 * s + 1] = n_nodes
            child = table[2 * s + 1]
            maxref[child] = max(maxref[child], _tally(tally, child, base))
            parent = child
    return n_nodes


@njit()
def _add_unigrams(trie, n_vocab):
    """Insert the unigrams of token ids 0..n_vocab-1 first, as nodes 1..n_vocab, so that the
    unigram of id t is node t + 1. Returns the number of nodes."""
    table, maxref, tally, shift = trie
    for t in range(n_vocab):
        s = _find_slot(table, np.int64(t), shift)  # parent 0
        table[2 * s] = t
        table[2 * s + 1] = t + 1
    return n_vocab


@njit(inline="always")
def _count_matches(trie, ids, c, n_orders, matches, row, stamp):
    """Add the clipped matches of the hypothesis ids[0:c] to matches[row, :].

    Ids are local to the segment: the unigram of id t is node t + 1 (:func:`_add_unigrams`),
    found without a table probe, and a negative id stands for a token that no reference has,
    which matches nothing. The hypothesis walks the trie from every position; an n-gram whose
    (n-1)-gram prefix is not in the trie cannot match, so the walk stops there. ``stamp``: as
    :func:`_add_reference`.
    """
    table, maxref, tally, shift = trie
    base = np.int64(stamp) << 32
    for i in range(c):
        parent = 0
        for n in range(min(n_orders, c - i)):
            t = ids[i + n]
            if t < 0:
                break
            if n == 0:
                v = t + 1
            else:
                s = _find_slot(table, (np.int64(parent) << 32) | np.int64(t), shift)
                if table[2 * s] == _EMPTY:
                    break
                v = table[2 * s + 1]
            if _tally(tally, v, base) <= maxref[v]:
                matches[row, n] += 1
            parent = v


@njit(inline="always")
def _length_stats(c, ref_lens, policy, totals, hyp_len, ref_len, row):
    """hyp_len, ref_len and the n-gram totals l_n = max(0, c - n + 1) of a hypothesis of length c."""
    hyp_len[row] = c
    ref_len[row] = _ref_length(c, ref_lens, policy)
    for n in range(totals.shape[1]):
        totals[row, n] = max(0, c - n)


@njit(inline="always")
def _copy_row(src, dst, matches, totals, hyp_len, ref_len):
    for n in range(matches.shape[1]):
        matches[dst, n] = matches[src, n]
        totals[dst, n] = totals[src, n]
    hyp_len[dst] = hyp_len[src]
    ref_len[dst] = ref_len[src]


@njit(inline="always")
def _mix(h, x):
    """One step of a multiplicative hash over 62 bits (equal under the JIT and plain Python)."""
    return ((h ^ int(x)) * 0x5851F42D4C957F2D) & _LOW62


@njit(inline="always")
def _finish(h):
    """Final mixing, so that the low bits (table slots) depend on every bit of h."""
    h = ((h ^ (h >> 31)) * 0x4CF5AD432745937F) & _LOW62
    return h ^ (h >> 29)


@njit(inline="always")
def _hash_ids(ids, a, b):
    """Hash of ids[a:b]: a cheap polynomial (short dependency chain), mixed at the end."""
    h = int(b - a)  # a Python int without the JIT: numpy scalars would overflow instead of widening
    for i in range(a, b):
        h = (h * 31 + int(ids[i])) & _LOW62  # int(): an int32 plus a Python int stays int32 without the JIT
    return _finish(h)


@njit(inline="always")
def _hash_bytes(data, a, b):
    """Hash of data[a:b] (uint8), eight bytes per multiplication."""
    h = int(b - a)  # a Python int without the JIT: numpy scalars would overflow instead of widening
    i = a
    while i + 8 <= b:
        w = 0
        for k in range(8):
            w |= int(_at(data, i + k)) << (8 * k)
        h = _mix(h, w)
        i += 8
    w = 0
    for k in range(b - i):
        w |= int(_at(data, i + k)) << (8 * k)
    return _finish(_mix(h, w))


@njit(inline="always")
def _equal_runs(x, xa, y, ya, n):
    """Whether x[xa:xa+n] and y[ya:ya+n] are equal element by element."""
    for j in range(n):
        if _at(x, xa + j) != _at(y, ya + j):
            return False
    return True


@njit(inline="always")
def _seen_before(data, ptr, r, h, rows, hashes):
    """Exact duplicate detection within a segment: the earlier row q whose data[ptr[q]:ptr[q+1]]
    equals row r's (``h`` its hash), or -1 after recording row r. ``rows`` (int64, -1 = empty,
    power-of-two size) and ``hashes`` form an open-addressing table; equal hashes are confirmed
    element by element, so only true duplicates are reported."""
    mask = rows.shape[0] - 1
    a, b = ptr[r], ptr[r + 1]
    s = h & mask
    while rows[s] >= 0:
        q = rows[s]
        if hashes[s] == h and ptr[q + 1] - ptr[q] == b - a and _equal_runs(data, ptr[q], data, a, b - a):
            return q
        s = (s + 1) & mask
    rows[s] = r
    hashes[s] = h
    return -1


@njit()
def _new_row_table(n_rows):
    cap = _table_capacity(n_rows)
    return np.full(cap, -1, np.int64), np.empty(cap, np.int64)


@njit()
def _new_stats(n_rows, n_orders):
    """Zeroed outputs: matches, totals int32[n_rows, n_orders], hyp_len, ref_len int32[n_rows].

    matches and totals are column-major (transposed views), so that each order is one
    contiguous column for the vectorized smoothings.
    """
    return (np.zeros((n_orders, n_rows), np.int32).T, np.zeros((n_orders, n_rows), np.int32).T,
            np.zeros(n_rows, np.int32), np.zeros(n_rows, np.int32))


@njit()
def _reference_trie(rid, rptr, n_ids, n_orders):
    """The n-gram trie of a segment's references: reference r is rid[rptr[r]:rptr[r+1]], in
    segment-local ids 0..n_ids-1 (rptr int64[R+1], rptr[0] = 0). The references are passes
    1..R (:func:`_new_trie`); the hypotheses' passes take the stamps after R.
    Returns (trie, number of nodes)."""
    trie = _new_trie(rptr[-1] * n_orders)
    n_nodes = _add_unigrams(trie, n_ids)
    for r in range(rptr.shape[0] - 1):
        n_nodes = _add_reference(trie, rid, rptr[r], rptr[r + 1], n_orders, n_nodes, r + 1)
    return trie, n_nodes


@njit()
def _longest(ptr, h0, h1):
    """The largest ptr[h + 1] - ptr[h] for h in h0..h1-1 (0 when empty)."""
    longest = 0
    for h in range(h0, h1):
        longest = max(longest, ptr[h + 1] - ptr[h])
    return longest
