"""Bit-parallel matching against one short reference: the token-id kernels' path for a segment of
one reference of at most :data:`BITS` ids (an RL reward's shape: one reference per prompt, a
sentence), called by :func:`kbest_bleu.token_ids._kernels.token_run` instead of its trie.

Exact, as the trie: a set holds reference positions, not hashes. The 64 bits of an int64 hold
them; position 63 is the sign bit, so the steps are written to give the same bits in plain Python
(``NUMBA_DISABLE_JIT=1``, unbounded ints) as in machine code: that bit is set as -2**63, a shift
down is masked to a logical one, and the bit counts are exact modulo 2**64.
"""

from ..jit import njit
from ._tables import LOW32, intern, lookup

# the most reference ids a position set holds (the 64 bits of one int64)
BITS = 64
_TOP = -(1 << 63)  # position 63: the sign bit, a value of int64 in plain Python too


@njit(cache=True, inline="always")
def _popcount(x):
    """Set bits of the 64 bits of x (SWAR: LLVM emits one popcnt). Exact for a negative x too,
    in machine code and in plain Python: every step is masked, or read modulo 2**64 (int(x))."""
    x = int(x)  # plain Python: an unbounded int (a numpy int64 would overflow below)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


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
def bits_count(hm, b0, b1, n_count, cnt, stamp, acc):
    """Clipped matches of one hypothesis, per order into acc[:n_count]: ``hm[b0:b1]`` holds, for
    each of its ids, the set of reference positions with that id (0: none).

    The set of the reference positions where the hypothesis's n-gram starting at i starts too is
    the set of its (n-1)-gram ANDed with hm[i + n - 1] shifted down by n - 1. Its size is the
    n-gram's count in the reference (the clip count); its lowest bit is the same for every
    occurrence of the n-gram in the hypothesis and for no other n-gram, so it names the
    n-gram's count slot (``cnt``: ``(stamp << 32) | count``, stale under another stamp: no
    reset). An empty set ends the position: no longer n-gram matches."""
    for n in range(n_count):
        acc[n] = 0
    for i in range(b0, b1):
        m = hm[i]
        for n in range(min(n_count, b1 - i)):
            if n > 0:  # shifted down n places, the sign bit not copied in (~(_TOP >> (n - 1)): 64 - n low bits)
                m &= (hm[i + n] >> n) & ~(_TOP >> (n - 1))
            if m == 0:
                break
            slot = n * BITS + _popcount((int(m) & -int(m)) - 1)  # int: -(-2**63) is not an int64
            e = cnt[slot]
            k = e & LOW32 if (e >> 32) == stamp else 0
            acc[n] += k < _popcount(m)
            cnt[slot] = (stamp << 32) | (k + 1)


@njit(cache=True, inline="always")
def bits_segment(tok, hyp_ptr, h0, h1, dup, out0, ref_tok, ra, rb, n_vocab, masks, uni, ushift, stamp, rid, hm,
                 n_count, cnt, hyp_stamp, acc, matches):
    """Matches of the hypotheses h0..h1-1 (``dup[h - h0] >= 0``: a copy, skipped) against one
    reference ref_tok[ra:rb] of at most BITS ids, into matches[out0 + h - h0, :n_count].

    The reference's position sets are indexed by id (``n_vocab`` > 0: every reference id is in
    0..n_vocab-1, ``masks`` int64[n_vocab]; no local ids at all) or by a local id interned in
    ``uni`` (``masks`` int64[BITS + 1]); they are set back to 0 at the end. ``hm``: scratch of the
    segment's hypothesis ids (indexed from its first hypothesis); ``hyp_stamp``: the last stamp
    of ``cnt`` used, returned advanced."""
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
        hyp_stamp += 1
        bits_count(hm, b0, b1, n_count, cnt, hyp_stamp, acc)
        for n in range(n_count):
            matches[out0 + h - h0, n] = acc[n]
    for k in range(ra, rb):
        masks[ref_tok[k] if n_vocab > 0 else rid[k - ra]] = 0
    return hyp_stamp
