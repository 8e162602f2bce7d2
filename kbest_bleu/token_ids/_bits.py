"""Bit-parallel matching against one short reference: the token-id kernels' path for a segment of
one reference of at most :data:`BITS` ids (an RL reward's shape: one reference per prompt, a
sentence), called by :func:`kbest_bleu.token_ids._kernels.token_run` instead of its trie.

Exact, as the trie: a set holds reference positions, not hashes. The 64 bits of an int64 hold
them; position 63 is the sign bit, so the steps are written to give the same bits in plain Python
(``NUMBA_DISABLE_JIT=1``, unbounded ints) as in machine code: that bit is set as -2**63, a shift
up drops it first, the lowest bit of the set {63} is not taken by negation, and a set's size is
summed below 2**63.
"""

from ..jit import njit
from ._tables import intern, lookup

# the most reference ids a position set holds (the 64 bits of one int64)
BITS = 64
_TOP = -(1 << 63)  # position 63: the sign bit, a value of int64 in plain Python too


@njit(cache=True, inline="always")
def _bit(p):
    """The set {p} of one position 0 <= p < 64 (p = 63 is -2**63: 1 << 63 is not an int64)."""
    return _TOP if p == 63 else 1 << p


@njit(cache=True, inline="always")
def one_short_reference(ref_ptr, r0, r1, skip):
    """The row of a segment's only reference (rows r0..r1-1, ``skip`` left out) when it has
    1..BITS ids, else -1 (the segment goes to the trie)."""
    one, n = -1, 0
    for r in range(r0, r1):
        if r != skip:
            one = r
            n += 1
    if n != 1 or not 0 < ref_ptr[one + 1] - ref_ptr[one] <= BITS:
        return -1
    return one


@njit(cache=True, inline="always")
def _lowest(m):
    """The lowest position of the set m, as a set (0 for the empty set): m & -m, except for the
    set {63}, whose negation overflows int64 (the same bits, but numpy warns in plain Python)."""
    return _TOP if m == _TOP else m & -m


@njit(cache=True, inline="always")
def _up(m):
    """The set m with every position p moved to p + 1 (position 63 leaves the word)."""
    return (m & ~_TOP) << 1


@njit(cache=True, inline="always")
def _size(m):
    """The number of positions in the set m: a popcount of shifts and adds whose sums stay below
    2**63 (position 63 counted apart), so plain Python counts as machine code does, unwarned."""
    n = 1 if m < 0 else 0
    m &= ~_TOP
    m = (m & 0x5555555555555555) + ((m >> 1) & 0x5555555555555555)
    m = (m & 0x3333333333333333) + ((m >> 2) & 0x3333333333333333)
    m = (m + (m >> 4)) & 0x0F0F0F0F0F0F0F0F
    m += m >> 8
    m += m >> 16
    m += m >> 32
    return n + (m & 0x7F)


@njit(cache=True, inline="always")
def bits_count(hm, ends, b0, b1, n_count, acc):
    """Clipped matches of one hypothesis, per order into acc[:n_count]: ``hm[b0:b1]`` holds, for
    each of its ids, the set of reference positions with that id (0: none).

    The set of the reference positions where the hypothesis's n-gram ending at i ends too is the
    set of its (n-1)-gram ending at i - 1 moved up one position, ANDed with hm[i]. Every occurrence
    of one n-gram has the same set, and different n-grams have disjoint sets; so an occurrence
    that takes the lowest position of its set not yet taken (u: the positions taken at its order)
    matches exactly min(hypothesis count, reference count) times per n-gram: the clip of Papineni
    et al. (2002) section 2.1, and the order's matches are the size of u at the end.

    Four orders at a time, each order's sets in registers, without an early exit (a branch on
    whether an n-gram matches would be mispredicted as often as not). Past order 4, ``ends``
    (scratch, int64[b1]) hands each position's set of a block's last order to the next block,
    which is skipped once that set is empty everywhere."""
    for n in range(n_count):
        acc[n] = 0
    for o in range(0, n_count, 4):
        first, more = o == 0, o + 4 < n_count
        u0, u1, u2, u3 = 0, 0, 0, 0
        e0, e1, e2, e3 = 0, 0, 0, 0  # the sets of orders o+1..o+4 ending at the previous position
        c, live = 0, 0  # order o's set ending at the previous position (from the previous block)
        for i in range(b0, b1):
            h = hm[i]
            e3 = _up(e2) & h
            e2 = _up(e1) & h
            e1 = _up(e0) & h
            if first:
                e0 = h
            else:
                e0 = _up(c) & h
                c = ends[i]
            if more:
                ends[i] = e3
                live |= e3
            u0 |= _lowest(e0 & ~u0)
            u1 |= _lowest(e1 & ~u1)
            u2 |= _lowest(e2 & ~u2)
            u3 |= _lowest(e3 & ~u3)
        acc[o] = _size(u0)
        if o + 1 < n_count:
            acc[o + 1] = _size(u1)
        if o + 2 < n_count:
            acc[o + 2] = _size(u2)
        if o + 3 < n_count:
            acc[o + 3] = _size(u3)
        if live == 0:
            break


@njit(cache=True, inline="always")
def bits_segment(tok, hyp_ptr, h0, h1, dup, out0, ref_tok, ra, rb, n_vocab, masks, owner, uni, ushift, stamp, rid,
                 hm, n_count, ends, acc, matches):
    """Matches of the hypotheses h0..h1-1 (``dup[h - h0] >= 0``: a copy, skipped) against one
    reference ref_tok[ra:rb] of at most BITS ids, into matches[out0 + h - h0, :n_count].

    The reference's position sets are indexed by id (``n_vocab`` > 0: every reference id is in
    0..n_vocab-1, ``masks`` int64[n_vocab]; no local ids at all) or by a local id interned in
    ``uni`` (``masks`` int64[BITS + 1], set back to 0 at the end). By id, a set is this segment's
    where ``owner`` (int32[n_vocab], 0 on a run's entry) holds the segment's ``stamp``: no pass
    sets them back, and ``masks`` needs no zeroing (~4 us of a 64 x 64 call, a segment's ~58
    stores and a table the size of the ids' range). ``hm``: scratch of the segment's hypothesis
    ids (indexed from its first hypothesis); ``ends`` (as long as ``hm``) and ``acc``
    (int64[n_count]): scratch of :func:`bits_count`."""
    v = 0
    for k in range(ra, rb):
        x = ref_tok[k]
        if n_vocab == 0:
            x, new = intern(uni, x, ushift, stamp, v)
            v += new
            rid[k - ra] = x
            masks[x] |= _bit(k - ra)
        else:
            masks[x] = (masks[x] if owner[x] == stamp else 0) | _bit(k - ra)
            owner[x] = stamp
    c0 = hyp_ptr[h0]
    for h in range(h0, h1):
        if dup[h - h0] >= 0:
            continue
        b0, b1 = hyp_ptr[h] - c0, hyp_ptr[h + 1] - c0
        for k in range(b0, b1):
            t = tok[c0 + k]
            if n_vocab > 0:
                hm[k] = masks[t] if 0 <= t < n_vocab and owner[t] == stamp else 0
            else:
                x = lookup(uni, t, ushift, stamp)
                hm[k] = masks[x] if x >= 0 else 0
        bits_count(hm, ends, b0, b1, n_count, acc)
        for n in range(n_count):
            matches[out0 + h - h0, n] = acc[n]
    if n_vocab == 0:
        for k in range(ra, rb):
            masks[rid[k - ra]] = 0
