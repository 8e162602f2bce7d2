"""Open-addressing tables of the token-id kernels (:mod:`kbest_bleu.token_ids._kernels`,
:mod:`kbest_bleu.token_ids._bits`): keys are exact 64-bit values (an id, or a trie edge
``(parent node << 32) | local id``), so a collision costs a probe, never a merged n-gram.

A slot holds its key and ``(stamp << 32) | value``; a slot whose stamp is not the current one is
empty, so a table is reused by every segment and order of a run without being cleared. Hashing
keeps every intermediate below 2**62 through Python ints: the same slots in plain Python
(``NUMBA_DISABLE_JIT=1``) as in machine code.
"""

from ..jit import njit

LOW62 = (1 << 62) - 1
LOW32 = (1 << 32) - 1
_MULT = 0x5851F42D4C957F2D


@njit(cache=True, inline="always")
def slot(key, shift):
    """Multiplicative hashing: the top bits of the 62-bit product pick the slot."""
    return ((int(key) * _MULT) & LOW62) >> shift


@njit(cache=True)
def capacity(n_items):
    """log2 of the table size for ``n_items`` keys: a power of two >= 2 n_items, at least 16."""
    bits = 4
    while (1 << bits) < 2 * n_items:
        bits += 1
    return bits


@njit(cache=True)
def sparse_capacity(n_items):
    """log2 of a table size for ``n_items`` keys at a load factor of at most 1/8 while the table
    is small (<= 2**15 slots, 512 KiB: in the L2 cache), else at most 1/2. A probe that does not
    end at its first slot is a mispredicted branch; at 1/8 few do (the n-gram lookups ran ~2x
    faster than at 1/2)."""
    bits = capacity(n_items)
    while bits < 15 and (1 << bits) < 8 * n_items:
        bits += 1
    return bits


@njit(cache=True, inline="always")
def find(table, key, shift, stamp):
    """Slot of ``key`` in ``table`` (int64[2 cap]: key, (stamp << 32) | value per slot) among the
    slots stamped ``stamp``, or the first slot not stamped so (where it would go): linear probing
    over the first 2**(62 - shift) slots."""
    mask = (1 << (62 - shift)) - 1
    s = slot(key, shift)
    while (table[2 * s + 1] >> 32) == stamp:
        if table[2 * s] == key:
            return s
        s = (s + 1) & mask
    return s


@njit(cache=True, inline="always")
def lookup(table, key, shift, stamp):
    """The value of ``key`` among the slots of ``table`` stamped ``stamp``, or -1."""
    w = table[2 * find(table, key, shift, stamp) + 1]
    return w & LOW32 if (w >> 32) == stamp else -1


@njit(cache=True, inline="always")
def intern(table, key, shift, stamp, fresh):
    """The value of ``key`` among the slots of ``table`` stamped ``stamp`` (:func:`find`), stored
    with the value ``fresh`` when it is not there: (value, 1 if stored else 0). The slot is written
    either way (branch-free: a new key or a known one is as likely)."""
    e = find(table, key, shift, stamp)
    w = table[2 * e + 1]
    new = (w >> 32) != stamp
    x = fresh if new else w & LOW32
    table[2 * e] = key
    table[2 * e + 1] = (stamp << 32) | x
    return x, new
