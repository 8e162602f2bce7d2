"""Bit-parallel matching of a hypothesis against one short reference: the token-id kernels'
path for a segment of one reference of at most :data:`BITS` ids (an RL reward's shape: one
reference per prompt, a sentence), called by :func:`kbest_bleu.token_ids._kernels.token_run`.

Exact, as the trie: a reference position set holds positions, not hashes. Bits 0..62 of an int64
hold them, so every shift, AND and lowest-bit step stays non-negative: the same bits in plain
Python (``NUMBA_DISABLE_JIT=1``) as in machine code.
"""

from ..jit import njit

# the most reference ids a position set holds (bits 0..62 of one int64)
BITS = 63
_LOW32 = (1 << 32) - 1


@njit(cache=True, inline="always")
def _popcount(x):
    """Set bits of 0 <= x < 2**63 (SWAR: LLVM emits one popcnt; int(x): exact as plain Python)."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((int(x) * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=True, inline="always")
def bits_count(hid, b0, b1, miss, masks, n_count, cnt, stamp, acc):
    """Clipped matches of one hypothesis (local ids hid[b0:b1], -1: in no reference) against a
    segment's one reference of at most BITS ids (``masks``: bit p of masks[x] says that it has
    local id x at position p), per order into acc[:n_count].

    Bit-parallel matching: the set of the reference positions where the hypothesis's n-gram
    starting at i starts too is the set of its (n-1)-gram ANDed with the set of the id at
    i + n - 1 shifted down by n - 1. Its size is the n-gram's count in the reference (the clip
    count); its lowest bit is the same for every occurrence of the n-gram in the hypothesis and
    for no other n-gram, so it names the n-gram's count slot (``cnt``: ``(stamp << 32) | count``,
    stale under another stamp: no reset). An empty set ends the position: no longer n-gram
    matches. ``miss``: a local id whose set is empty (the segment's number of local ids)."""
    for n in range(n_count):
        acc[n] = 0
    for i in range(b0, b1):
        x = hid[i]
        m = masks[x if x >= 0 else miss]
        for n in range(min(n_count, b1 - i)):
            if n > 0:
                y = hid[i + n]
                m &= masks[y if y >= 0 else miss] >> n
            if m == 0:
                break
            slot = n * BITS + _popcount((m & -m) - 1)
            e = cnt[slot]
            k = e & _LOW32 if (e >> 32) == stamp else 0
            acc[n] += k < _popcount(m)
            cnt[slot] = (stamp << 32) | (k + 1)
