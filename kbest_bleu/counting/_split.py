"""The counting kernels' splitter: UTF-8 bytes cut into tokens by ``str.split()`` with
sacrebleu's 13a/zh regex rules as cut decisions (byte classes from :mod:`kbest_bleu.tokenize`),
tokens interned to exact ids, 13a's entity scan and ``char``'s spacing.

Private to :mod:`kbest_bleu.counting`: no validation happens here (the public wrappers in
:mod:`kbest_bleu.tokenize` check first).
"""

import numpy as np
from numba import prange

from ..jit import njit, python_function
from .codes import BYTE_DIGIT, BYTE_DOT, BYTE_HYPHEN, BYTE_MAY_SPACE, BYTE_PUNCT, BYTE_SPACE, RULES_13A, RULES_NONE
from ._tables import _at, _equal_runs, _hash_bytes, _table_capacity


@njit(inline="always")
def _wide_space_width(data, i, end, wide_space):
    """Byte length of the whitespace character starting at data[i], or 0 if it is not one."""
    b = data[i]
    size = 2 if b < 0xE0 else (3 if b < 0xF0 else 4)
    if i + size > end:
        return 0
    # int(): without the JIT, uint8 numpy scalars would wrap at 8 bits when shifted
    cp = int(b) & (0x1F if size == 2 else (0x0F if size == 3 else 0x07))
    for k in range(1, size):
        cp = (cp << 6) | (int(data[i + k]) & 0x3F)
    for w in wide_space:
        if cp == w:
            return size
    return 0


# a literal 0 argument would compile _split a second time, for the type Literal[int](0)
_ZERO = np.int64(0)


@njit()
def _split(data, i, end, rules, byte_class, wide_space, starts, ends, t):
    r"""Tokens of data[i:end] (UTF-8): Python's ``str.split()``, after sacrebleu's 13a/zh regex
    rules when ``rules`` is RULES_ZH or RULES_13A. Token k gets the byte bounds starts[t + k],
    ends[t + k] (count only when ``starts`` is empty). Returns t + the number of tokens.

    ``byte_class`` (uint8[256]) marks ASCII whitespace, the lead bytes of multi-byte whitespace
    characters (only those are decoded: in valid UTF-8 a lead byte never appears inside another
    character) and the bytes the rules test. One state-machine loop per string: per-token calls
    cost more than the split itself.

    The rules (sacrebleu TokenizerRegexp, applied in order, each ``re.sub`` scanning left to
    right and resuming after its match) only insert spaces, so their tokens are the original
    bytes cut at the gaps where some rule puts a space. Working the rules through gives:

    1. ``([\{-\~\[-\` -\&\(-\+\:-\@\/])`` -> `` \1 ``: such a byte is a token of its own.
    2. ``([^0-9])([\.,])`` -> ``\1 \2 ``: a '.' or ',' is cut from both neighbours when the
       character before it (after rule 1: a space if that is a rule-1 byte; with 13a padding, a
       space at the start) is not a digit, unless that character is a '.' or ',' which rule 2
       already matched (re.sub consumed it as the second character of the previous match).
    3. ``([\.,])([^0-9])`` -> `` \1 \2``: ... also when the character after it exists and is not
       a digit (a following '.' or ',' becomes a space by rule 2 in every case). Rule 3 never
       finds its '.' consumed: a '.' or ',' before it is always followed by a space by rule 2.
    4. ``([0-9])(-)`` -> ``\1 \2 ``: a '-' right after a digit is a token of its own (no rule
       ever puts a space between a digit and a '-', so this adjacency is the original one).

    Every byte the rules test is ASCII, and UTF-8 continuation bytes are never digits, '.', ','
    or '-', so byte positions stand for the code points the regexes match. The test suite checks
    this against sacrebleu on every real sentence of the shared data and on fuzzed text.
    """
    fill = starts.shape[0] > 0
    first = i
    tok = -1  # start of the open token
    rule2 = False  # rule 2 matched the previous byte (read only when that byte is '.' or ',')
    while i < end:
        c = byte_class[_at(data, i)]
        width = 0
        if c == BYTE_SPACE:
            width = 1
        elif c == BYTE_MAY_SPACE:
            width = _wide_space_width(data, i, end, wide_space)
        if width > 0:
            if tok >= 0:
                if fill:
                    starts[t] = tok
                    ends[t] = i
                t += 1
                tok = -1
            i += width
            continue
        cut = False
        if rules != RULES_NONE and c >= BYTE_PUNCT:
            if c == BYTE_PUNCT:
                cut = True
            elif c == BYTE_HYPHEN:
                cut = i > first and byte_class[data[i - 1]] == BYTE_DIGIT
            elif c == BYTE_DOT:
                if i > first:
                    before = byte_class[data[i - 1]]
                    rule2 = before != BYTE_DIGIT and not (before == BYTE_DOT and rule2)
                else:
                    rule2 = rules == RULES_13A
                if i + 1 < end:
                    rule3 = byte_class[data[i + 1]] != BYTE_DIGIT
                else:
                    rule3 = rules == RULES_13A
                cut = rule2 or rule3
        if cut:  # a one-byte token; it closes the open one
            if tok >= 0:
                if fill:
                    starts[t] = tok
                    ends[t] = i
                t += 1
                tok = -1
            if fill:
                starts[t] = i
                ends[t] = i + 1
            t += 1
        elif tok < 0:
            tok = i
        i += 1
    if tok >= 0:
        if fill:
            starts[t] = tok
            ends[t] = end
        t += 1
    return t


# The same splitter inlined where it runs once per hypothesis (:func:`_text_segment_stats`): a
# call there costs more than the split of a short sentence (numba reference-counts a callee's
# array arguments, atomically, on every call); inlined at all four call sites it added ~2.5 s to
# `kbest-bleu warmup`. Never compiled on its own, so not cached. Measured on 200,000 rows in one
# process, with the token lookup inlined too: the text kernel 6-8% faster (none 124-128 against
# 128-138 ms, 13a 134-136 against 136-152 ms on one thread).
_split_inline = njit(inline="always")(python_function(_split))


@njit()
def _token_bounds(data, offsets, r0, r1, rules, byte_class, wide_space, ptr, starts, ends, hashes):
    """Tokens of strings r0..r1-1 (:func:`_split`).

    Count mode (``starts`` empty): ptr[r + 1] = number of tokens of string r. Fill mode: the
    tokens of string r go to positions ptr[r]..: byte bounds in starts/ends, hash in hashes.
    """
    fill = starts.shape[0] > 0
    for r in range(r0, r1):
        if not fill:
            ptr[r + 1] = _split(data, offsets[r], offsets[r + 1], rules, byte_class, wide_space, starts, ends, _ZERO)
            continue
        t = _split(data, offsets[r], offsets[r + 1], rules, byte_class, wide_space, starts, ends, ptr[r])
        for k in range(ptr[r], t):
            hashes[k] = _hash_bytes(data, starts[k], ends[k])


@njit(inline="always")
def _token_slot(table, hashes, first, lengths, data, buf, a, b, h):
    """Slot of the token buf[a:b] (hash h) in an open-addressing table of token ids, or of the
    empty slot where it would go. Token v is data[first[v]:first[v] + lengths[v]]; equal hashes
    are confirmed byte by byte, so two different tokens never share an id."""
    mask = table.shape[0] - 1
    s = h & mask
    while True:
        v = table[s]
        if v < 0:
            return s
        if hashes[v] == h and lengths[v] == b - a and _equal_runs(data, first[v], buf, a, b - a):
            return s
        s = (s + 1) & mask


@njit()
def _rehash(hashes, n, cap):
    """A table of capacity ``cap`` holding ids 0..n-1 at the slots of their hashes."""
    table = np.full(cap, -1, np.int32)
    mask = cap - 1
    for v in range(n):
        s = hashes[v] & mask
        while table[s] >= 0:
            s = (s + 1) & mask
        table[s] = v
    return table


@njit(parallel=True, nogil=True)
def _split_intern(data, offsets, rules, byte_class, wide_space):
    """Split UTF-8 strings into tokens (:func:`_split`) and give each distinct token an exact int32 id.

    Parameters
    ----------
    data : uint8[B]            UTF-8 bytes of all strings (an Arrow string buffer)
    offsets : int64[n+1]       string i is data[offsets[i]:offsets[i+1]]
    rules : int                RULES_NONE, RULES_ZH or RULES_13A
    byte_class : uint8[256]    BYTE_* class of each byte value
    wide_space : int64[k]      non-ASCII whitespace code points

    Returns
    -------
    ids : int32[T]             token ids, row after row (ids in order of first appearance)
    ptr : int64[n+1]           the tokens of string i are ids[ptr[i]:ptr[i+1]]
    first : int64[V]           byte offset of the first occurrence of each distinct token
    length : int64[V]          its byte length

    Tokens are interned in an open-addressing table; equal hashes are confirmed byte by byte,
    so two different tokens never share an id.
    """
    n = offsets.shape[0] - 1
    n_chunks = min(n, 256)
    cut = (np.arange(n_chunks + 1) * n) // n_chunks
    ptr = np.zeros(n + 1, np.int64)
    empty = np.empty(0, np.int64)
    for c in prange(n_chunks):  # count tokens per string
        _token_bounds(data, offsets, cut[c], cut[c + 1], rules, byte_class, wide_space, ptr, empty, empty, empty)
    for r in range(n):
        ptr[r + 1] += ptr[r]
    t = ptr[n]
    starts = np.empty(t, np.int64)
    ends = np.empty(t, np.int64)
    token_hash = np.empty(t, np.int64)
    for c in prange(n_chunks):  # bounds and hashes
        _token_bounds(data, offsets, cut[c], cut[c + 1], rules, byte_class, wide_space, ptr, starts, ends,
                      token_hash)
    # The table grows with the number of distinct tokens (small: it stays in cache), not with t.
    table = np.full(1 << 12, -1, np.int32)
    hashes = np.empty(t, np.int64)  # hash of each distinct token, for rehashing
    first = np.empty(t, np.int64)
    length = np.empty(t, np.int64)
    ids = np.empty(t, np.int32)
    n_ids = 0
    for k in range(t):
        a, b = starts[k], ends[k]
        s = _token_slot(table, hashes, first, length, data, data, a, b, token_hash[k])
        if table[s] < 0:
            table[s] = n_ids
            hashes[n_ids] = token_hash[k]
            first[n_ids] = a
            length[n_ids] = b - a
            n_ids += 1
            if 2 * n_ids > table.shape[0]:
                table = _rehash(hashes, n_ids, 2 * table.shape[0])
                s = _token_slot(table, hashes, first, length, data, data, a, b, token_hash[k])
        ids[k] = table[s]
    return ids, ptr, first[:n_ids], length[:n_ids]


@njit()
def _reference_vocab(ref_data, ref_off, r0, r1, rules, byte_class, wide_space):
    """Tokens of references r0..r1-1 as ids of a vocabulary local to the segment.

    Returns (vocab, ids int32[T], ptr int64[r1-r0+1], number of distinct tokens). ``vocab`` =
    (table, hashes, first, lengths): an open-addressing table of token ids (:func:`_token_slot`);
    token v is ref_data[first[v]:first[v] + lengths[v]], its hash hashes[v].
    """
    n_bytes = ref_off[r1] - ref_off[r0]
    bound = n_bytes + 1  # tokens are at least one byte
    starts = np.empty(bound, np.int64)
    ends = np.empty(bound, np.int64)
    ptr = np.zeros(r1 - r0 + 1, np.int64)
    for r in range(r0, r1):
        ptr[r - r0 + 1] = _split(ref_data, ref_off[r], ref_off[r + 1], rules, byte_class, wide_space, starts,
                                 ends, ptr[r - r0])
    cap = _table_capacity(bound)
    table = np.full(cap, -1, np.int32)
    hashes = np.empty(bound, np.int64)
    first = np.empty(bound, np.int64)
    lengths = np.empty(bound, np.int64)
    ids = np.empty(bound, np.int32)
    n_ids = 0
    for t in range(ptr[-1]):
        a, b = starts[t], ends[t]
        h = _hash_bytes(ref_data, a, b)
        s = _token_slot(table, hashes, first, lengths, ref_data, ref_data, a, b, h)
        if table[s] < 0:
            table[s] = n_ids
            hashes[n_ids], first[n_ids], lengths[n_ids] = h, a, b - a
            n_ids += 1
        ids[t] = table[s]
    return (table, hashes, first, lengths), ids, ptr, n_ids


@njit(nogil=True)
def _rows_with_bytes(data, offsets, wanted):
    """Whether each string data[offsets[r]:offsets[r+1]] holds a byte b with wanted[b]: bool[n].
    ``wanted`` bool[256]; a branch-free byte scan (Arrow's substring match costs ~200 ns a row).
    Serial, as every kernel of the text's preparation: a batch job prepares the next chunk on
    its reader thread beside the running kernels (numba's workqueue layer takes parallel
    launches from one thread at a time)."""
    n = offsets.shape[0] - 1
    found = np.empty(n, np.bool_)
    for r in range(n):
        hit = False
        for i in range(offsets[r], offsets[r + 1]):
            hit |= wanted[_at(data, i)]
        found[r] = hit
    return found


@njit(nogil=True)
def _space_each_char(data, offsets):
    """Every UTF-8 character followed by a space (sacrebleu's ``char`` tokenizer joins the
    characters of a line with spaces). Returns (bytes uint8[B'], offsets int64[n+1]): the
    output offsets come from the character counts. Serial (see :func:`_rows_with_bytes`)."""
    n = offsets.shape[0] - 1
    out_off = np.zeros(n + 1, np.int64)
    for r in range(n):
        chars = 0
        for i in range(offsets[r], offsets[r + 1]):
            if (data[i] & 0xC0) != 0x80:  # not a continuation byte: a character starts here
                chars += 1
        out_off[r + 1] = offsets[r + 1] - offsets[r] + chars
    for r in range(n):
        out_off[r + 1] += out_off[r]
    out = np.empty(out_off[n], np.uint8)
    for r in range(n):
        o = out_off[r]
        a, b = offsets[r], offsets[r + 1]
        for i in range(a, b):
            out[o] = data[i]
            o += 1
            if i + 1 == b or (data[i + 1] & 0xC0) != 0x80:  # the character ends here
                out[o] = 32
                o += 1
    return out, out_off
