"""Targeted paraphrasing of references towards their hypotheses (Barančíková 2014, section 4).

With hypothesis and reference lemma sets H_L and R_L, the candidates are the table pairs
<r, h> with r in R_L \\ H_L, h in H_L \\ R_L and r_POS = h_POS. Going through the reference from
left to right, a word whose lemma r heads a candidate is replaced by the hypothesis word form
of the preferred candidate's lemma h (first such word of the hypothesis with the reference
word's POS); other words are kept. Preference: pairs in both WordNet and Meteor, then WordNet,
then Meteor; then higher Meteor probability; then table order. This is the paper's "Before
Depfix" reference: Depfix, the Czech grammar-fixing step, is not available.

K-best structure: each reference's lemma set and candidate lists are prepared once per
segment; the K hypotheses of the segment then only mark their lemmas and scan the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import prange

from ...errors import InputError
from ...jit import njit
from ..meteor.score import split_words
from .analyze import analyze_tokens
from .table import CompiledTable

__all__ = ["Paraphrases", "Sentences", "analyze", "edits", "paraphrase_kbest", "words"]


@njit(parallel=True)
def _substitute(seg_ptr, unit_ptr, ref_ptr, ref_lem, ref_pos, hyp_ptr, hyp_lem, hyp_pos,
                t_ptr, t_hyp, t_pos, out_ptr, n_vocab, n_chunks):
    """sub int32[out_ptr[-1]]: for row h, the tokens of its segment's references one after
    another from out_ptr[h]; each slot holds the index (into hyp tokens) of the word that
    replaces that reference token, or -1 to keep it. Lemma ids are table ids (-1: not in the
    table); t_pos -1 = any POS, -2 = a POS absent from the text."""
    sub = np.full(out_ptr[-1], -1, np.int32)
    n_seg = len(seg_ptr) - 1
    for c in prange(n_chunks):
        # stamps instead of clearing: rmark[v] == u <=> v in R_L of reference unit u
        rmark = np.full(n_vocab, -1, np.int64)
        hmark = np.full(n_vocab, -1, np.int64)
        stamp = 0
        for s in range(c * n_seg // n_chunks, (c + 1) * n_seg // n_chunks):
            first = ref_ptr[unit_ptr[s]]
            for u in range(unit_ptr[s], unit_ptr[s + 1]):
                for i in range(ref_ptr[u], ref_ptr[u + 1]):
                    if ref_lem[i] >= 0:
                        rmark[ref_lem[i]] = u
                for row in range(seg_ptr[s], seg_ptr[s + 1]):
                    stamp += 1
                    for j in range(hyp_ptr[row], hyp_ptr[row + 1]):
                        if hyp_lem[j] >= 0:
                            hmark[hyp_lem[j]] = stamp
                    o = out_ptr[row] - first
                    for i in range(ref_ptr[u], ref_ptr[u + 1]):
                        r = ref_lem[i]
                        if r < 0 or hmark[r] == stamp:  # not in the table, or r in H_L
                            continue
                        p = ref_pos[i]
                        for e in range(t_ptr[r], t_ptr[r + 1]):
                            h = t_hyp[e]
                            if hmark[h] != stamp or rmark[h] == u or (t_pos[e] != -1 and t_pos[e] != p):
                                continue
                            found = -1
                            for j in range(hyp_ptr[row], hyp_ptr[row + 1]):
                                if hyp_lem[j] == h and hyp_pos[j] == p:
                                    found = j
                                    break
                            if found >= 0:
                                sub[o + i] = found
                                break
    return sub


def words(strings: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The words of every string as Meteor (exact) tokenizes them (:func:`meteor.score.split_words`):
    string [T] and row pointers int64 [n+1]."""
    ids, ptr, vocab = split_words(strings)
    return vocab.take(pa.array(ids)).cast(pa.string()), ptr


@dataclass(frozen=True)
class Sentences:
    """Tokenized, analyzed sentences: forms/lemma/pos string [T] (pos None: no POS), sentence i
    = tokens ptr[i]:ptr[i+1] (int64 [n+1]) of the original ``text`` (string [n])."""

    forms: pa.Array
    ptr: np.ndarray
    lemma: pa.Array
    pos: Optional[pa.Array]
    text: pa.Array


def _column_tokens(values: pa.Array, ptr: np.ndarray, what: str) -> pa.Array:
    """Flat per-token values of a lemma/POS column: list<string> per sentence, or one
    space-separated string per sentence; checked against the sentences' token counts."""
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        flat, counts = pc.list_flatten(values), pc.list_value_length(values).to_numpy(zero_copy_only=False)
    elif pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        flat, vptr = words(values)
        counts = np.diff(vptr)
    else:
        raise InputError(f"{what}: expected a list of strings or a space-separated string per sentence, "
                         f"found Arrow type {values.type}")
    if values.null_count or flat.null_count:
        raise InputError(f"{what}: expected no nulls, found {values.null_count or flat.null_count}")
    bad = np.flatnonzero(counts != np.diff(ptr)) if len(counts) == len(ptr) - 1 else [0]
    if len(bad):
        b = int(bad[0])
        found = int(counts[b]) if len(counts) == len(ptr) - 1 else f"{len(counts)} sentences"
        raise InputError(f"{what}: expected one value per whitespace-separated word; sentence {b} has "
                         f"{int(ptr[b + 1] - ptr[b]) if b + 1 < len(ptr) else '?'} words but {found} values "
                         f"(of {len(ptr) - 1} sentences); tokenize lemmas/POS exactly as the text")
    return flat.cast(pa.string())


def analyze(strings: pa.Array, analyzer: str = "lower", lang: str = "en", lemma: Optional[pa.Array] = None,
            pos: Optional[pa.Array] = None, what: str = "sentences") -> Sentences:
    """Split ``strings`` (string [n]) into :func:`words` and give every word its lemma and POS, from
    the columns ``lemma``/``pos`` when given (analyzer ``columns``), else from ``analyzer``."""
    text = (strings if isinstance(strings, pa.Array) else pa.array(strings, pa.string())).cast(pa.string())
    forms, ptr = words(text)
    if analyzer == "columns":
        if lemma is None:
            raise InputError(f"analyzer columns: expected a lemma column for the {what}, found none; "
                             f"give --hyp-lemma-col/--ref-lemma-col or another --analyzer")
        lem = pc.utf8_lower(_column_tokens(lemma, ptr, f"{what} lemma column"))
        tags = None if pos is None else _column_tokens(pos, ptr, f"{what} POS column")
        return Sentences(forms, ptr, lem, tags, text)
    lem, tags = analyze_tokens(forms, ptr, analyzer, lang)
    return Sentences(forms, ptr, lem, tags, text)


@dataclass(frozen=True)
class Paraphrases:
    """Paraphrased references of every row.

    references : list<string> [H], row h's paraphrased references (its segment's, in order)
    units : int64 [H+1], row h's references are entries units[h]:units[h+1] of ``count``
    count : int32 [units[-1]], substitutions made in each of them
    sub, slots : int32 [slots[-1]], int64 [H+1], the kernel's output (see :func:`_substitute`)
    """

    references: pa.Array
    units: np.ndarray
    count: np.ndarray
    sub: np.ndarray
    slots: np.ndarray


def _ids(values: pa.Array, vocab: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.index_in(values, value_set=vocab), -1).to_numpy(zero_copy_only=False).astype(np.int32)


def paraphrase_kbest(hyps: Sentences, refs: Sentences, unit_ptr: np.ndarray, seg_ptr: np.ndarray,
                     table: CompiledTable) -> Paraphrases:
    """Paraphrase every reference of each segment towards each of the segment's hypotheses.

    Parameters
    ----------
    hyps : the H hypotheses; refs : all references, segment after segment
    unit_ptr : int64 [S+1], segment s has references unit_ptr[s]:unit_ptr[s+1] of ``refs``
    seg_ptr : int64 [S+1], segment s has hypothesis rows seg_ptr[s]:seg_ptr[s+1]
    table : the compiled paraphrase table
    """
    seg_ptr, unit_ptr = np.asarray(seg_ptr, np.int64), np.asarray(unit_ptr, np.int64)
    use_pos = hyps.pos is not None and refs.pos is not None
    if use_pos:
        pos_vocab = pc.unique(pa.concat_arrays([hyps.pos, refs.pos]))
        hyp_pos, ref_pos = _ids(hyps.pos, pos_vocab), _ids(refs.pos, pos_vocab)
        t_pos = _ids(table.pos, pos_vocab)
        t_pos[t_pos < 0] = -2
        t_pos[pc.equal(table.pos, "").to_numpy(zero_copy_only=False)] = -1
    else:  # no POS in the text: every word has the same (unknown) POS, table POS is not checked
        hyp_pos, ref_pos = np.zeros(len(hyps.forms), np.int32), np.zeros(len(refs.forms), np.int32)
        t_pos = np.full(len(table.hyp), -1, np.int32)
    rows_per_seg = np.diff(seg_ptr)
    seg_tok = refs.ptr[unit_ptr]  # segment s's reference tokens: seg_tok[s]:seg_tok[s+1]
    slots = np.zeros(len(hyps.ptr), np.int64)
    np.cumsum(np.repeat(np.diff(seg_tok), rows_per_seg), out=slots[1:])
    sub = _substitute(seg_ptr, unit_ptr, refs.ptr, _ids(refs.lemma, table.vocab), ref_pos, hyps.ptr,
                      _ids(hyps.lemma, table.vocab), hyp_pos, table.ptr, table.hyp, t_pos, slots,
                      len(table.vocab), max(1, min(numba.get_num_threads(), len(rows_per_seg))))
    # row h's references are its segment's units, in order; offsets: their slots
    n_slots = int(slots[-1])
    seg_of_row = np.repeat(np.arange(len(rows_per_seg)), rows_per_seg)
    refs_per_row = np.repeat(np.diff(unit_ptr), rows_per_seg)
    units = np.zeros(len(hyps.ptr), np.int64)
    np.cumsum(refs_per_row, out=units[1:])
    unit_of = np.repeat(unit_ptr[seg_of_row] - units[:-1], refs_per_row) + np.arange(units[-1])
    offsets = np.zeros(len(unit_of) + 1, np.int64)
    np.cumsum(np.diff(refs.ptr)[unit_of], out=offsets[1:])
    changed = np.zeros(n_slots + 1, np.int64)
    np.cumsum(sub >= 0, out=changed[1:])
    count = np.diff(changed[offsets]).astype(np.int32)
    # only edited references are rebuilt (their words joined by single spaces): in each slot the
    # substituted hypothesis word, else the reference word; the others stay byte for byte as given
    edited = np.flatnonzero(count > 0)
    lengths = np.diff(offsets)[edited]
    at = np.repeat(offsets[edited] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
    ref_idx = at + (seg_tok[seg_of_row] - slots[:-1])[np.searchsorted(slots, at, side="right") - 1]
    gather = np.where(sub[at] >= 0, sub[at].astype(np.int64) + len(refs.forms), ref_idx)
    tokens = pa.concat_arrays([refs.forms, hyps.forms]).take(pa.array(gather))
    joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(lengths)]), tokens), " ")
    pick = np.where(count > 0, len(refs.text) + np.cumsum(count > 0) - 1, unit_of)
    strings = pa.concat_arrays([refs.text.cast(pa.large_string()), joined.cast(pa.large_string())])
    references = pa.LargeListArray.from_arrays(pa.array(units), strings.take(pa.array(pick)))
    return Paraphrases(references, units, count, sub, slots)


def edits(p: Paraphrases, hyps: Sentences, refs: Sentences, row: int, unit_ptr: np.ndarray,
          seg: int) -> list:
    """Substitutions of row ``row`` (segment ``seg``): per reference, a list of
    (position, reference word, hypothesis word)."""
    out = []
    slot = int(p.slots[row])
    for u in range(int(unit_ptr[seg]), int(unit_ptr[seg + 1])):
        a, b = int(refs.ptr[u]), int(refs.ptr[u + 1])
        s = p.sub[slot:slot + b - a]
        out.append([(int(i), refs.forms[a + i].as_py(), hyps.forms[int(s[i])].as_py()) for i in np.flatnonzero(s >= 0)])
        slot += b - a
    return out
