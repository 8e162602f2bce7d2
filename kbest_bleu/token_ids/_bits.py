"""Bit-parallel matching against one short reference: the token-id kernels' path for a segment of
one reference of at most :data:`BITS` ids (an RL reward's shape: one reference per prompt, a
sentence), called by :func:`kbest_bleu.token_ids._kernels.token_run` instead of its trie.

Exact, as the trie: a set holds reference positions, not hashes. The 64 bits of an int64 hold
them; position 63 is the sign bit, so the steps are written to give the same bits in plain Python
(``NUMBA_DISABLE_JIT=1``, unbounded ints) as in machine code: that bit is set as -2**63, a shift
down is masked to a logical one, and the lowest bit of the set {63} is not taken by negation.
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
def bits_count(hm, b0, b1, n_count, used, acc):
    """Clipped matches of one hypothesis, per order into acc[:n_count]: ``hm[b0:b1]`` holds, for
    each of its ids, the set of reference positions with that id (0: none).

    The set of the reference positions where the hypothesis's n-gram starting at i starts too is
    the set of its (n-1)-gram ANDed with hm[i + n - 1] shifted down by n - 1. Every occurrence of
    one n-gram has the same set, and different n-grams have disjoint sets; so an occurrence that
    takes the lowest position of its set not yet taken (``used[n]``: the positions taken at order
    n) matches exactly min(hypothesis count, reference count) times per n-gram: the clip of
    Papineni et al. (2002) section 2.1. An empty set ends the position: no longer n-gram matches."""
    for n in range(n_count):
        acc[n] = 0
        used[n] = 0
    for i in range(b0, b1):
        m = hm[i]
        for n in range(min(n_count, b1 - i)):
            if n > 0:  # shifted down n places, the sign bit not copied in (~(_TOP >> (n - 1)): 64 - n low bits)
                m &= (hm[i + n] >> n) & ~(_TOP >> (n - 1))
            if m == 0:
                break
            free = m & ~used[n]
            acc[n] += free != 0
            used[n] |= _lowest(free)


@njit(cache=True, inline="always")
def bits_segment(tok, hyp_ptr, h0, h1, dup, out0, ref_tok, ra, rb, n_vocab, masks, uni, ushift, stamp, rid, hm,
                 n_count, used, acc, matches):
    """Matches of the hypotheses h0..h1-1 (``dup[h - h0] >= 0``: a copy, skipped) against one
    reference ref_tok[ra:rb] of at most BITS ids, into matches[out0 + h - h0, :n_count].

    The reference's position sets are indexed by id (``n_vocab`` > 0: every reference id is in
    0..n_vocab-1, ``masks`` int64[n_vocab]; no local ids at all) or by a local id interned in
    ``uni`` (``masks`` int64[BITS + 1]); they are set back to 0 at the end. ``hm``: scratch of the
    segment's hypothesis ids (indexed from its first hypothesis); ``used``, ``acc``: int64[n_count]
    scratch of :func:`bits_count`."""
    v = 0
    for k in range(ra, rb):
        x = ref_tok[k]
        if n_vocab == 0:
            x, new = intern(uni, x, ushift, stamp, v)
            v += new
            rid[k - ra] = x
        masks[x] |= _bit(k - ra)
    c0 = hyp_ptr[h0]
    for h in range(h0, h1):
        if dup[h - h0] >= 0:
            continue
        b0, b1 = hyp_ptr[h] - c0, hyp_ptr[h + 1] - c0
        for k in range(b0, b1):
            t = tok[c0 + k]
            if n_vocab > 0:
                hm[k] = masks[t] if 0 <= t < n_vocab else 0
            else:
                x = lookup(uni, t, ushift, stamp)
                hm[k] = masks[x] if x >= 0 else 0
        bits_count(hm, b0, b1, n_count, used, acc)
        for n in range(n_count):
            matches[out0 + h - h0, n] = acc[n]
    for k in range(ra, rb):
        masks[ref_tok[k] if n_vocab > 0 else rid[k - ra]] = 0
