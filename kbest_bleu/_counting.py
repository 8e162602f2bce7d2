"""The numba kernels of the counting path: split, interning, the reference trie, duplicate
checks, the text and id kernels, MBR's pair statistics.

Private: no validation happens here; the public wrappers in :mod:`kbest_bleu.stats`,
:mod:`kbest_bleu.encode` and :mod:`kbest_bleu.tokenize` check shapes, dtypes and bounds before
calling in. Every kernel also runs as plain Python under ``NUMBA_DISABLE_JIT=1`` (CI runs a
subset of the tests that way).

These kernels call each other, so they stay in this one file: numba's on-disk cache
(``cache=True``) keys a compiled function by its own file and does not notice a change in a
callee that lives in another file; a stale compiled caller would be served (DESIGN.md section 5).

N-gram identity is exact (DESIGN.md section 3): the n-grams of a segment's references are
interned as a trie whose edges live in an open-addressing hash table keyed by the exact
pair ``(parent node id, token id)`` packed into one int64. A hash collision only costs a
probe step; it can never merge two n-grams.
"""

import os

import numpy as np
from numba import njit, prange

from . import _numba_cache  # noqa: F401  (a broken kernel cache never fails a job: DESIGN.md section 5)
from ._kernel_codes import (
    BYTE_DIGIT,
    BYTE_DOT,
    BYTE_HYPHEN,
    BYTE_MAY_SPACE,
    BYTE_PUNCT,
    BYTE_SPACE,
    REF_AVERAGE,
    REF_CLOSEST,
    REF_SHORTEST,
    RULES_13A,
    RULES_NONE,
    python_function,
)

# Idle OpenMP workers sleep instead of spinning (unless the user chose a policy): on a busy 2-core
# machine (load 11) a parallel launch otherwise waited ~16 ms for spinning peers to be
# descheduled; passive, ~13 us. Set before the first parallel launch starts OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_EMPTY = -1
# Keep every intermediate below 2**63 so that numba's wrapping int64 arithmetic and Python's
# unbounded ints give the same low bits (the kernels must also run with the JIT disabled).
_LOW62 = (1 << 62) - 1


@njit(cache=True, inline="always")
def _at(a, i):
    """a[i] for an index known to be >= 0. An unsigned index skips numba's negative-index
    wraparound, which costs ~10% of the text kernel in the per-byte loops."""
    return a[np.uint64(i)]


@njit(cache=True, inline="always")
def _slot(key, shift):
    """Multiplicative hashing: the top bits of the (62-bit) product pick the table slot."""
    return ((int(key) * 0x5851F42D4C957F2D) & _LOW62) >> shift


@njit(cache=True)
def _table_capacity(n_items):
    cap = 16
    while cap < 2 * n_items:
        cap *= 2
    return cap


@njit(cache=True, inline="always")
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


@njit(cache=True)
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


@njit(cache=True, inline="always")
def _find_slot(table, key, shift):
    """The slot of ``key``, or the empty slot where it would go (linear probing)."""
    mask = table.shape[0] // 2 - 1
    s = _slot(key, shift)
    k = table[2 * s]
    while k != key and k != _EMPTY:
        s = (s + 1) & mask
        k = table[2 * s]
    return s


@njit(cache=True, inline="always")
def _tally(tally, v, base):
    """Count one more occurrence of node v in the pass whose stamp is ``base`` >> 32; returns the
    node's count in this pass."""
    cell = tally[v]
    if cell < base:  # last counted by an earlier pass
        cell = base
    cell += 1
    tally[v] = cell
    return cell - base


@njit(cache=True)
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


@njit(cache=True)
def _add_unigrams(trie, n_vocab):
    """Insert the unigrams of token ids 0..n_vocab-1 first, as nodes 1..n_vocab, so that the
    unigram of id t is node t + 1. Returns the number of nodes."""
    table, maxref, tally, shift = trie
    for t in range(n_vocab):
        s = _find_slot(table, np.int64(t), shift)  # parent 0
        table[2 * s] = t
        table[2 * s + 1] = t + 1
    return n_vocab


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _length_stats(c, ref_lens, policy, totals, hyp_len, ref_len, row):
    """hyp_len, ref_len and the n-gram totals l_n = max(0, c - n + 1) of a hypothesis of length c."""
    hyp_len[row] = c
    ref_len[row] = _ref_length(c, ref_lens, policy)
    for n in range(totals.shape[1]):
        totals[row, n] = max(0, c - n)


@njit(cache=True, inline="always")
def _copy_row(src, dst, matches, totals, hyp_len, ref_len):
    for n in range(matches.shape[1]):
        matches[dst, n] = matches[src, n]
        totals[dst, n] = totals[src, n]
    hyp_len[dst] = hyp_len[src]
    ref_len[dst] = ref_len[src]


@njit(cache=True, inline="always")
def _mix(h, x):
    """One step of a multiplicative hash over 62 bits (equal under the JIT and plain Python)."""
    return ((h ^ int(x)) * 0x5851F42D4C957F2D) & _LOW62


@njit(cache=True, inline="always")
def _finish(h):
    """Final mixing, so that the low bits (table slots) depend on every bit of h."""
    h = ((h ^ (h >> 31)) * 0x4CF5AD432745937F) & _LOW62
    return h ^ (h >> 29)


@njit(cache=True, inline="always")
def _hash_ids(ids, a, b):
    """Hash of ids[a:b]: a cheap polynomial (short dependency chain), mixed at the end."""
    h = int(b - a)  # a Python int without the JIT: numpy scalars would overflow instead of widening
    for i in range(a, b):
        h = (h * 31 + int(ids[i])) & _LOW62  # int(): an int32 plus a Python int stays int32 without the JIT
    return _finish(h)


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _equal_runs(x, xa, y, ya, n):
    """Whether x[xa:xa+n] and y[ya:ya+n] are equal element by element."""
    for j in range(n):
        if _at(x, xa + j) != _at(y, ya + j):
            return False
    return True


@njit(cache=True, inline="always")
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


@njit(cache=True)
def _new_row_table(n_rows):
    cap = _table_capacity(n_rows)
    return np.full(cap, -1, np.int64), np.empty(cap, np.int64)


@njit(cache=True)
def _new_stats(n_rows, n_orders):
    """Zeroed outputs: matches, totals int32[n_rows, n_orders], hyp_len, ref_len int32[n_rows].

    matches and totals are column-major (transposed views), so that each order is one
    contiguous column for the vectorized smoothings.
    """
    return (np.zeros((n_orders, n_rows), np.int32).T, np.zeros((n_orders, n_rows), np.int32).T,
            np.zeros(n_rows, np.int32), np.zeros(n_rows, np.int32))


@njit(cache=True)
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


@njit(cache=True)
def _longest(ptr, h0, h1):
    """The largest ptr[h + 1] - ptr[h] for h in h0..h1-1 (0 when empty)."""
    longest = 0
    for h in range(h0, h1):
        longest = max(longest, ptr[h + 1] - ptr[h])
    return longest


@njit(cache=True)
def _segment_stats(tok, hyp_ptr, ref_tok, ref_ptr, h0, h1, r0, r1, n_orders, policy,
                   matches, totals, hyp_len, ref_len, out0, local):
    """Statistics of hypotheses h0..h1-1 against references r0..r1-1 (one segment), written to
    output rows out0.. (out0 = h0 for one row per hypothesis).

    Token ids become local to the segment through ``local`` (int32[V], all -1 on entry and on
    return): the references' distinct ids become 0..v-1, so that a unigram is found without a
    table probe (:func:`_add_unigrams`), and a hypothesis id that no reference has (or >= V)
    becomes -1, which matches nothing. The reference n-gram trie is built once, then walked
    with each distinct hypothesis; a hypothesis with the same ids as an earlier one of the
    segment gets a copy of its row.
    """
    base = ref_ptr[r0]
    n_ref_tok = ref_ptr[r1] - base
    rid = np.empty(n_ref_tok, np.int32)
    n_ids = 0
    for k in range(n_ref_tok):
        t = ref_tok[base + k]
        if local[t] < 0:
            local[t] = n_ids
            n_ids += 1
        rid[k] = local[t]
    rptr = ref_ptr[r0:r1 + 1] - base
    ref_lens = rptr[1:] - rptr[:-1]
    trie, n_nodes = _reference_trie(rid, rptr, n_ids, n_orders)
    hid = np.empty(_longest(hyp_ptr, h0, h1), np.int32)
    v = local.shape[0]
    rows, hashes = _new_row_table(h1 - h0)
    for h in range(h0, h1):
        a, b = hyp_ptr[h], hyp_ptr[h + 1]
        row = out0 + h - h0
        q = _seen_before(tok, hyp_ptr, h, _hash_ids(tok, a, b), rows, hashes)
        if q >= 0:
            _copy_row(out0 + q - h0, row, matches, totals, hyp_len, ref_len)
            continue
        _length_stats(b - a, ref_lens, policy, totals, hyp_len, ref_len, row)
        if n_nodes > 0:
            for k in range(b - a):
                t = tok[a + k]
                hid[k] = local[t] if t < v else -1
            _count_matches(trie, hid, b - a, n_orders, matches, row, r1 - r0 + 1 + h - h0)
    for k in range(n_ref_tok):
        local[ref_tok[base + k]] = -1


@njit(cache=True)
def _thread_chunks(work_ptr, n_threads):
    """Segment bounds int64[C+1] cutting the segments into ``n_threads`` runs (at most one per
    segment) of about equal work: one run per thread for prange, which hands each thread one
    contiguous block of iterations, or several per thread for a pool that hands them out as
    threads come free. ``work_ptr`` int64[S+1]: the work done before each segment, cumulative
    (token counts: K-best lists differ in length, so equal row counts leave one thread waiting)."""
    n_seg = work_ptr.shape[0] - 1
    n_chunks = max(1, min(n_seg, n_threads))
    total = work_ptr[-1] - work_ptr[0]
    cut = np.searchsorted(work_ptr, work_ptr[0] + (np.arange(n_chunks + 1) * total) // n_chunks)
    cut[0], cut[-1] = 0, n_seg
    return cut


@njit(cache=True, parallel=True, nogil=True)
def _ngram_stats(tok, hyp_ptr, ref_tok, ref_ptr, seg_hyp_ptr, seg_ref_ptr, n_orders, policy, n_threads):
    """Clipped n-gram statistics of every hypothesis, in parallel over segments.

    Parameters
    ----------
    tok : int32[T]          hypothesis token ids (ids shared with ``ref_tok``, >= 0)
    hyp_ptr : int64[H+1]    CSR offsets of each hypothesis into ``tok``
    ref_tok : int32[Tr]     reference token ids (>= 0)
    ref_ptr : int64[R+1]    CSR offsets of each reference into ``ref_tok``
    seg_hyp_ptr : int64[S+1]  hypotheses of segment s are rows seg_hyp_ptr[s]:seg_hyp_ptr[s+1]
    seg_ref_ptr : int64[S+1]  references of segment s are seg_ref_ptr[s]:seg_ref_ptr[s+1]
    n_orders : int          number of n-gram orders counted (max order N + 1)
    policy : int            REF_CLOSEST, REF_SHORTEST or REF_AVERAGE
    n_threads : int         numba's thread count (segments are cut into one run per thread, of
                            about equal token counts)

    Returns
    -------
    matches : int32[H, n_orders]  clipped matches m_n
    totals : int32[H, n_orders]   hypothesis n-grams l_n = max(0, c - n + 1)
    hyp_len : int32[H]
    ref_len : int32[H]
    """
    n_hyp = hyp_ptr.shape[0] - 1
    matches, totals, hyp_len, ref_len = _new_stats(n_hyp, n_orders)
    n_vocab = ref_tok.max() + 1 if ref_tok.shape[0] > 0 else 0
    cut = _thread_chunks(hyp_ptr[seg_hyp_ptr] + ref_ptr[seg_ref_ptr], n_threads)
    for c in prange(cut.shape[0] - 1):
        local = np.full(n_vocab, -1, np.int32)  # one id map per thread, reset by each segment
        for s in range(cut[c], cut[c + 1]):
            _segment_stats(tok, hyp_ptr, ref_tok, ref_ptr, seg_hyp_ptr[s], seg_hyp_ptr[s + 1],
                           seg_ref_ptr[s], seg_ref_ptr[s + 1], n_orders, policy,
                           matches, totals, hyp_len, ref_len, seg_hyp_ptr[s], local)
    return matches, totals, hyp_len, ref_len




@njit(cache=True, inline="always")
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True, inline="always")
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


@njit(cache=True)
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


@njit(cache=True, parallel=True, nogil=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _text_segment_stats(hyp_data, hyp_off, ref_data, ref_off, h0, h1, r0, r1, n_orders, policy, rules,
                        byte_class, wide_space, matches, totals, hyp_len, ref_len):
    """:func:`_segment_stats` straight from UTF-8 text: hypotheses h0..h1-1 against references
    r0..r1-1, both split into tokens by :func:`_split` with ``rules``.

    Token ids are local to the segment: the references' tokens form the vocabulary, and a
    hypothesis token outside it can match nothing (id -1), so hypothesis tokens are looked up,
    never inserted. A hypothesis whose bytes equal an earlier one's gets a copy of its row.
    """
    vocab, rid, rptr, n_ids = _reference_vocab(ref_data, ref_off, r0, r1, rules, byte_class, wide_space)
    vocab_table, vocab_hashes, vocab_first, vocab_lengths = vocab
    ref_lens = rptr[1:] - rptr[:-1]
    trie, n_nodes = _reference_trie(rid, rptr, n_ids, n_orders)
    longest = _longest(hyp_off, h0, h1)
    hid = np.empty(longest + 1, np.int32)  # tokens are at least one byte
    starts = np.empty(longest + 1, np.int64)
    ends = np.empty(longest + 1, np.int64)
    rows, hashes = _new_row_table(h1 - h0)
    for h in range(h0, h1):
        a, b = hyp_off[h], hyp_off[h + 1]
        q = _seen_before(hyp_data, hyp_off, h, _hash_bytes(hyp_data, a, b), rows, hashes)
        if q >= 0:
            _copy_row(q, h, matches, totals, hyp_len, ref_len)
            continue
        # the tokens' vocabulary ids (-1: in no reference), written out here: as a helper, even
        # inlined, its array arguments were reference-counted (atomically) for every hypothesis
        c = _split_inline(hyp_data, a, b, rules, byte_class, wide_space, starts, ends, _ZERO)
        for k in range(c):
            t0, t1 = starts[k], ends[k]
            hid[k] = vocab_table[_token_slot(vocab_table, vocab_hashes, vocab_first, vocab_lengths, ref_data,
                                             hyp_data, t0, t1, _hash_bytes(hyp_data, t0, t1))]
        _length_stats(c, ref_lens, policy, totals, hyp_len, ref_len, h)
        if n_nodes > 0:
            _count_matches(trie, hid, c, n_orders, matches, h, r1 - r0 + 1 + h - h0)


@njit(cache=True, nogil=True)
def _text_run_stats(hyp_data, hyp_off, ref_data, ref_off, seg_hyp_ptr, seg_ref_ptr, s0, s1, n_orders, policy,
                    rules, byte_class, wide_space, matches, totals, hyp_len, ref_len):
    """:func:`_ngram_stats` from text (no global token ids) for segments s0..s1-1, into the rows
    of ``matches``, ``totals``, ``hyp_len``, ``ref_len`` (:func:`_new_stats`) those segments own.
    Releases the GIL: :func:`kbest_bleu.stats.text_kernel_stats` runs disjoint runs of segments
    on several threads at once.

    Parameters
    ----------
    hyp_data : uint8[B], hyp_off : int64[H+1]   hypothesis h is hyp_data[hyp_off[h]:hyp_off[h+1]]
    ref_data : uint8[Br], ref_off : int64[R+1]  reference r is ref_data[ref_off[r]:ref_off[r+1]]
    seg_hyp_ptr, seg_ref_ptr : int64[S+1]       rows and references of each segment
    s0, s1 : int                                the run of segments to count
    n_orders, policy                            as :func:`_ngram_stats`
    rules : int                                 RULES_NONE, RULES_ZH or RULES_13A (:func:`_split`)
    byte_class, wide_space                      see :func:`_split`
    """
    for s in range(s0, s1):
        _text_segment_stats(hyp_data, hyp_off, ref_data, ref_off, seg_hyp_ptr[s], seg_hyp_ptr[s + 1],
                            seg_ref_ptr[s], seg_ref_ptr[s + 1], n_orders, policy, rules, byte_class, wide_space,
                            matches, totals, hyp_len, ref_len)


@njit(cache=True, nogil=True)
def _rows_equal_owner(data, elem_off, row_off, owner):
    """Whether row r holds the same elements as row owner[r]: bool[n].

    A row is a run of variable-length elements: row r is elements row_off[r]:row_off[r+1],
    element e is the bytes data[elem_off[e]:elem_off[e+1]] (strings, or fixed-width integers
    viewed as bytes). Rows are equal when element count, element lengths and bytes are equal.
    Serial (see :func:`_rows_with_bytes`).
    """
    n = owner.shape[0]
    same = np.ones(n, np.bool_)
    for r in range(n):
        o = owner[r]
        a, b, oa, ob = row_off[r], row_off[r + 1], row_off[o], row_off[o + 1]
        if o == r:
            continue
        if b - a != ob - oa:
            same[r] = False
            continue
        shift = elem_off[a] - elem_off[oa]
        for k in range(1, b - a + 1):
            if elem_off[a + k] - elem_off[oa + k] != shift:
                same[r] = False
                break
        if same[r]:
            same[r] = _equal_runs(data, elem_off[a], data, elem_off[oa], elem_off[b] - elem_off[a])
    return same


@njit(cache=True, parallel=True, nogil=True)
def _pair_stats(tok, hyp_ptr, seg_ptr, out_ptr, n_orders, n_threads):
    """Statistics of every hypothesis against every hypothesis of its segment as the only
    reference (MBR / consensus). Segment s has K = seg_ptr[s+1] - seg_ptr[s] hypotheses; its
    K*K output rows start at out_ptr[s], row out_ptr[s] + j*K + i = hypothesis i vs reference j;
    segments are cut into one run of about equal pair counts per thread (``n_threads``).
    Returns matches, totals int32[P, n_orders], hyp_len, ref_len int32[P], P = out_ptr[-1].
    """
    n_pairs = out_ptr[-1]
    matches, totals, hyp_len, ref_len = _new_stats(n_pairs, n_orders)
    n_vocab = tok.max() + 1 if tok.shape[0] > 0 else 0
    cut = _thread_chunks(out_ptr, n_threads)
    for c in prange(cut.shape[0] - 1):
        local = np.full(n_vocab, -1, np.int32)
        for s in range(cut[c], cut[c + 1]):
            h0, h1 = seg_ptr[s], seg_ptr[s + 1]
            for j in range(h0, h1):
                _segment_stats(tok, hyp_ptr, tok, hyp_ptr, h0, h1, j, j + 1, n_orders, REF_CLOSEST,
                               matches, totals, hyp_len, ref_len, out_ptr[s] + (j - h0) * (h1 - h0), local)
    return matches, totals, hyp_len, ref_len


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True)
def _one_text_stats(hyp_data, ref_data, ref_off, n_orders, policy, rules, byte_class, wide_space):
    """:func:`_text_segment_stats` of one hypothesis (all of ``hyp_data``) against the references
    ref_data[ref_off[r]:ref_off[r+1]]: the single-call path, no threads, one array out.

    Returns int64[2 * n_orders + 2]: matches m_1.., totals l_1.., hyp_len c, ref_len r.
    """
    matches, totals, hyp_len, ref_len = _new_stats(1, n_orders)
    hyp_off = np.array([0, hyp_data.shape[0]], np.int64)
    # the bounds as int64 variables, not literals: the batch path's compiled _text_segment_stats serves
    _text_segment_stats(hyp_data, hyp_off, ref_data, ref_off, _ZERO, hyp_off.shape[0] - 1, _ZERO, ref_off.shape[0] - 1,
                        n_orders, policy, rules, byte_class, wide_space, matches, totals, hyp_len, ref_len)
    out = np.empty(2 * n_orders + 2, np.int64)
    out[:n_orders] = matches[0]
    out[n_orders:2 * n_orders] = totals[0]
    out[-2] = hyp_len[0]
    out[-1] = ref_len[0]
    return out
