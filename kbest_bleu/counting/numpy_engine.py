"""Clipped n-gram statistics without numba, for small jobs: Arrow's hashing and RE2, and numpy.

A process's first numba kernel costs ~0.2 s (importing numba, loading the cached machine code),
and a first run after install compiles for ~12 s; this engine scores 20,000 rows in ~0.2 s
(``none``) to ~0.4 s (``13a``), 10-20 us per row against the kernels' ~3. The statistics equal
:func:`kbest_bleu.stats.text_kernel_stats`'s integer for integer (tests/counting/test_numpy_engine.py checks both against a slow reference and sacrebleu):

- tokens: sacrebleu's four 13a/zh regex rules run as RE2 rewrites (on the line padded with a
  space on each side for 13a), then the split on Python's whitespace; equal strings get equal
  ids through a dictionary encoding, so token identity is exact;
- n-grams: the id of an n-gram is the dictionary code of the pair (id of its first n-1 tokens,
  its last token): exact, with no hashing of the n-gram itself;
- clipping (Papineni et al. 2002, section 2.1): a hypothesis n-gram counts at most as often as
  in the reference of its segment where it is most frequent.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from ..arrays import from_numpy, to_numpy
from ..tokenize import python_space_class
from .codes import REF_AVERAGE, REF_SHORTEST, RULES_13A, RULES_NONE

__all__ = ["rows_equal_owner", "split_tokens", "text_stats"]

# sacrebleu TokenizerRegexp's rules, in order (Tokenizer13a runs them on " " + line + " "). Rule 1's
# class [{-~[-` -&(-+:-@/] starts its third range at the space; here at "!": spaces padded with
# spaces cut no other token, and the neighbours the later rules test stay what they were (a space
# stays a space), as in kbest_bleu.counting._kernels._split. 6x faster: every space was a match.
_RULES = [(r"([\{-\~\[-\`!-\&\(-\+\:-\@\/])", r" \1 "), (r"([^0-9])([\.,])", r"\1 \2 "),
          (r"([\.,])([^0-9])", r" \1 \2"), (r"([0-9])(-)", r"\1 \2 ")]


def _codes(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes int64[n] of int64 keys (equal keys, equal codes; Arrow's hash table), and
    the number of distinct keys."""
    encoded = pc.dictionary_encode(from_numpy(keys))
    return to_numpy(encoded.indices).astype(np.int64), len(encoded.dictionary)


def split_tokens(strings: pa.Array, rules: int) -> tuple[pa.Array, np.ndarray]:
    """The tokens of every string, as :func:`kbest_bleu.counting._kernels._split` cuts them: the rules
    of ``rules`` (RULES_NONE, RULES_ZH, RULES_13A), then Python's ``str.split()``.

    Returns the tokens (large_string, row after row) and int64[n] token counts.
    """
    strings = pc.cast(strings, pa.large_string())
    if rules == RULES_13A:
        strings = pc.utf8_replace_slice(pc.utf8_replace_slice(strings, 0, 0, " "), 1 << 62, 1 << 62, " ")
    if rules != RULES_NONE:
        for pattern, replacement in _RULES:
            strings = pc.replace_substring_regex(strings, pattern, replacement)
    # Text whose only whitespace is " " (nearly all MT output, and all text after the 13a rules
    # but tabs and the like) splits on the literal space, 6x faster than the regex split of
    # Python's ~30 whitespace characters; the empty pieces are dropped below either way. Not
    # Arrow's utf8_split_whitespace: in pyarrow 26 it sometimes returns a piece holding a trailing
    # space, from one run to the next (tests/counting/test_numpy_engine.py)
    if pc.any(pc.match_substring_regex(strings, python_space_class(but_space=True))).as_py():
        parts = pc.split_pattern_regex(strings, python_space_class() + "+")
    else:
        parts = pc.split_pattern(strings, " ")
    pieces = pc.list_flatten(parts)
    kept = to_numpy(pc.binary_length(pieces)) > 0  # the empty pieces around leading/trailing spaces
    counts = np.bincount(to_numpy(pc.list_parent_indices(parts))[kept], minlength=len(strings))
    return pc.filter(pieces, from_numpy(kept)), counts.astype(np.int64)


def _ref_lengths(hyp_len: np.ndarray, ref_lens: np.ndarray, seg_of_row: np.ndarray, seg_ref_ptr: np.ndarray,
                 policy: int) -> np.ndarray:
    """Effective reference length of every row (:func:`kbest_bleu._counting._ref_length`):
    closest (ties to the shorter), shortest, or the truncated average; 0 without references."""
    n_refs = np.diff(seg_ref_ptr)[seg_of_row]
    out = np.zeros(len(hyp_len), np.int64)
    has = n_refs > 0
    if not has.any():
        return out
    rows = np.repeat(np.arange(len(hyp_len)), n_refs)  # one (row, reference) pair per reference of its segment
    first = np.repeat(np.cumsum(n_refs) - n_refs, n_refs)
    ref = np.repeat(seg_ref_ptr[:-1][seg_of_row], n_refs) + np.arange(len(rows)) - first
    r = ref_lens[ref]
    starts = (np.cumsum(n_refs) - n_refs)[has]
    if policy == REF_SHORTEST:
        out[has] = np.minimum.reduceat(r, starts)
    elif policy == REF_AVERAGE:
        out[has] = (np.add.reduceat(r, starts) / n_refs[has]).astype(np.int64)
    else:  # closest: the least (distance, length)
        span = int(r.max()) + 1
        best = np.minimum.reduceat(np.abs(r - hyp_len[rows]) * span + r, starts)
        out[has] = best % span
    return out


def _reference_table(keys: np.ndarray, ref_of: np.ndarray, seg_of_ref: np.ndarray, n_grams: int) -> tuple:
    """(sorted unique (segment, n-gram) keys, the most times one reference of the segment holds
    the n-gram) from the n-grams of the references: keys = n-gram ids, ref_of = their reference."""
    pair, times = np.unique(ref_of * n_grams + keys, return_counts=True)
    seg_key = seg_of_ref[pair // n_grams] * n_grams + pair % n_grams
    table, at = np.unique(seg_key, return_inverse=True)
    most = np.zeros(len(table), np.int64)
    np.maximum.at(most, at, times)
    return table, most


def _clipped_per_row(row: np.ndarray, grams: np.ndarray, most: np.ndarray, n_hyp: int, n_grams: int) -> np.ndarray:
    """Clipped matches per row: occurrence k (from 0) of an n-gram in a row matches when the
    references hold it more than k times; float64[n_hyp]."""
    order = np.argsort(row * n_grams + grams, kind="stable")
    key = (row * n_grams + grams)[order]
    first = np.ones(len(key), bool)
    first[1:] = key[1:] != key[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(len(key)), 0))
    hit = np.arange(len(key)) - start < most[order]
    return np.bincount(row[order][hit], minlength=n_hyp)


def text_stats(hyp_text: pa.Array, ref_text: pa.Array, rules: int, seg_hyp_ptr: np.ndarray,
               seg_ref_ptr: np.ndarray, n_orders: int, policy: int) -> tuple:
    """:func:`kbest_bleu.stats.text_kernel_stats` of prepared text (:func:`kbest_bleu.tokenize.prepare`).

    hyp_text : Arrow strings (H); ref_text : Arrow strings (R), the references of segment s are
    ref_text[seg_ref_ptr[s]:seg_ref_ptr[s+1]]; seg_hyp_ptr : int64[S+1] rows of each segment.
    Returns matches, totals int32[H, n_orders], hyp_len, ref_len int32[H].

    Order by order, only hypothesis n-grams that can still match are given ids: those whose
    first n-1 tokens and last token are both in their segment's references.
    """
    n_hyp = len(hyp_text)
    hyp_tokens, hyp_count = split_tokens(hyp_text, rules)
    ref_tokens, ref_count = split_tokens(ref_text, rules)
    tok = to_numpy(pc.dictionary_encode(pa.concat_arrays([hyp_tokens, ref_tokens])).indices).astype(np.int64)
    n_vocab = int(tok.max()) + 1 if len(tok) else 1
    n_hyp_tok = len(hyp_tokens)
    counts = np.concatenate([hyp_count, ref_count])  # rows 0..H-1 hypotheses, then the references
    row = np.repeat(np.arange(len(counts)), counts)
    room = np.repeat(np.cumsum(counts), counts) - np.arange(len(tok))  # tokens from here to the row's end
    seg_of_row = np.repeat(np.arange(len(seg_hyp_ptr) - 1), np.diff(seg_hyp_ptr))
    seg_of_ref = np.repeat(np.arange(len(seg_ref_ptr) - 1), np.diff(seg_ref_ptr))
    ref_at = np.arange(n_hyp_tok, len(tok))

    matches = np.zeros((n_orders, n_hyp), np.int32).T
    totals = np.zeros((n_orders, n_hyp), np.int32).T
    gram, n_grams = tok, n_vocab
    live = np.ones(n_hyp_tok, bool)  # hypothesis positions whose n-gram of the last order is in its references
    unigram_live = live
    for n in range(1, n_orders + 1):
        totals[:, n - 1] = np.maximum(hyp_count - n + 1, 0)
        ref_at = ref_at[room[ref_at] >= n]
        hyp_at = np.flatnonzero(live & (room[:n_hyp_tok] >= n))
        if n > 1:
            hyp_at = hyp_at[unigram_live[hyp_at + n - 1]]
            both = np.concatenate([ref_at, hyp_at])
            code, n_grams = _codes(gram[both] * n_vocab + tok[both + n - 1])
            gram = np.full(len(tok), -1, np.int64)
            gram[both] = code
        table, most = _reference_table(gram[ref_at], row[ref_at] - n_hyp, seg_of_ref, n_grams)
        key = seg_of_row[row[hyp_at]] * n_grams + gram[hyp_at]
        where = np.minimum(np.searchsorted(table, key), max(len(table) - 1, 0))
        found = table[where] == key if len(table) else np.zeros(len(key), bool)
        hyp_at, where = hyp_at[found], where[found]
        live = np.zeros(n_hyp_tok, bool)
        live[hyp_at] = True
        unigram_live = live if n == 1 else unigram_live
        matches[:, n - 1] = _clipped_per_row(row[hyp_at], gram[hyp_at], most[where], n_hyp, n_grams)
    ref_len = _ref_lengths(hyp_count, ref_count, seg_of_row, seg_ref_ptr, policy)
    return matches, totals, hyp_count.astype(np.int32), ref_len.astype(np.int32)


def rows_equal_owner(refs: pa.Array, owner: np.ndarray) -> np.ndarray:
    """bool[n]: whether row r of the list<string> (or list<dictionary<string>>) array ``refs``
    holds the same strings, in the same order, as row owner[r]
    (:func:`kbest_bleu._counting._rows_equal_owner`)."""
    values = pc.list_flatten(refs)
    if pa.types.is_dictionary(values.type):
        ids = to_numpy(values.indices).astype(np.int64)  # one dictionary: equal indices, equal strings
    else:
        ids = to_numpy(pc.dictionary_encode(values).indices).astype(np.int64)
    off = to_numpy(refs.offsets).astype(np.int64)
    off = off - off[0]
    count = np.diff(off)
    same = count == count[owner]
    parent = np.repeat(np.arange(len(count)), count)
    other = off[owner[parent]] + np.arange(len(ids)) - off[parent]  # the same position in the owner's row
    other = np.where(same[parent], other, 0)
    differs = (ids != ids[other]) & same[parent]
    return same & (np.bincount(parent[differs], minlength=len(count)) == 0)
