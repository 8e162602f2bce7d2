"""The numba kernels of the counting path: each segment's reference n-grams built once into a
trie (:mod:`._tables`), its K hypotheses streamed through it (duplicates scored once), from
global token ids (the id kernel), straight from text (the text kernel, splitting with
:mod:`._split`), for every pair of a segment (MBR), or for one hypothesis (single calls).

Private: no validation happens here; the public wrappers in :mod:`kbest_bleu.stats`,
:mod:`kbest_bleu.encode` and :mod:`kbest_bleu.tokenize` check shapes, dtypes and bounds before
calling in. Every kernel also runs as plain Python under ``NUMBA_DISABLE_JIT=1`` (CI runs a
subset of the tests that way). This module also serves the names of :mod:`._tables` and
:mod:`._split`, so that :func:`kbest_bleu.counting.kernels` is one namespace.
"""

import numpy as np
from numba import prange

from ..jit import njit
from .codes import REF_CLOSEST
from ._split import (  # noqa: F401 (served by kernels())
    _ZERO,
    _reference_vocab,
    _rehash,
    _rows_with_bytes,
    _space_each_char,
    _split,
    _split_inline,
    _split_intern,
    _token_bounds,
    _token_slot,
    _wide_space_width,
)
from ._tables import (  # noqa: F401 (served by kernels())
    _EMPTY,
    _LOW62,
    _add_reference,
    _add_unigrams,
    _at,
    _copy_row,
    _count_matches,
    _equal_runs,
    _find_slot,
    _finish,
    _hash_bytes,
    _hash_ids,
    _length_stats,
    _longest,
    _mix,
    _new_row_table,
    _new_stats,
    _new_trie,
    _ref_length,
    _reference_trie,
    _seen_before,
    _slot,
    _table_capacity,
    _tally,
)


@njit()
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


@njit()
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


@njit(parallel=True, nogil=True)
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


@njit()
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


@njit(nogil=True)
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


@njit(nogil=True)
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


@njit(parallel=True, nogil=True)
def _pair_stats(tok, hyp_ptr, seg_ptr, ref_seg_ptr, out_ptr, n_orders, n_threads):
    """Statistics of every hypothesis of a segment against every reference of that segment as the
    only reference (MBR / consensus). Both are rows of the one CSR ``tok``/``hyp_ptr``: segment s
    has the K = seg_ptr[s+1] - seg_ptr[s] hypotheses from seg_ptr[s] and the R = ref_seg_ptr[s+1] -
    ref_seg_ptr[s] references from ref_seg_ptr[s] (``ref_seg_ptr`` is ``seg_ptr`` when the
    hypotheses are their own references). Its K*R output rows start at out_ptr[s], row
    out_ptr[s] + j*K + i = hypothesis i vs reference j (each reference's trie built once, the K
    hypotheses streamed through it); segments are cut into one run of about equal pair counts per
    thread (``n_threads``).
    Returns matches, totals int32[P, n_orders], hyp_len, ref_len int32[P], P = out_ptr[-1].
    """
    n_pairs = out_ptr[-1]
    matches, totals, hyp_len, ref_len = _new_stats(n_pairs, n_orders)
    n_vocab = tok.max() + 1 if tok.shape[0] > 0 else 0
    cut = _thread_chunks(out_ptr, n_threads)
    for c in prange(cut.shape[0] - 1):
        local = np.full(n_vocab, -1, np.int32)
        for s in range(cut[c], cut[c + 1]):
            h0, h1, p0 = seg_ptr[s], seg_ptr[s + 1], ref_seg_ptr[s]
            if h1 == h0:  # no rows to write
                continue
            for j in range(p0, ref_seg_ptr[s + 1]):
                _segment_stats(tok, hyp_ptr, tok, hyp_ptr, h0, h1, j, j + 1, n_orders, REF_CLOSEST,
                               matches, totals, hyp_len, ref_len, out_ptr[s] + (j - p0) * (h1 - h0), local)
    return matches, totals, hyp_len, ref_len


@njit()
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
