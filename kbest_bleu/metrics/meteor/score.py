"""Meteor 1.5 (exact module) over hypothesis rows and K-best segments: Python API and the
:class:`~kbest_bleu.metrics.base.Metric` of ``kbest-bleu score --metric meteor``.

Tokens are what the jar's ``StringTokenizer`` gives without ``-norm``: runs of characters other
than space, tab, newline, carriage return and form feed (Denkowski & Lavie 2014, section 2 leave
tokenization to the user; the jar splits on these five only). Function words are recognised by
the lowercase of the token, as the jar does. Every distinct token gets an integer id once for
the whole batch; the numba kernel (:mod:`._align`) then aligns each hypothesis with each of its
segment's references, parallel over segments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...encode import hypotheses_array, is_token_lists, list_offsets, references_array
from ...errors import InputError
from ...tokenize import lowercase as lowercase_column
from ...tokenize import split_ids
from ..base import SegmentMetric
from . import _align
from .normalize import normalizer
from .params import BEAM_SIZE, MeteorParams, meteor_params

__all__ = ["PY_ONLY_SPACE", "Meteor", "MeteorResult", "from_options", "jar_split", "meteor_rows",
           "meteor_segments", "output_arrays", "output_fields", "sentence_meteor", "split_words", "system_meteor"]

# Python's str.split() also cuts at these, the jar's StringTokenizer does not (checked in the tests
# against every code point's str.isspace()).
PY_ONLY_SPACE = "[\x0b\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_JAR_SPACE = "[ \t\n\r\f]+"
# the -ssOut columns of the exact module (the 12 columns of the other modules are always 0 here)
STAT_NAMES = ("tst_len", "ref_len", "tst_func", "ref_func", "tst_content_match", "ref_content_match",
              "tst_func_match", "ref_func_match", "chunks", "tst_word_match", "ref_word_match")
_STAT_COLUMNS = (0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22)


@dataclass(frozen=True)
class MeteorResult:
    """Meteor of H hypothesis rows against their best reference.

    score, precision, recall, fragmentation : float64[H] (the jar's -vOut columns; fragmentation
        is its ``fragPenalty`` = gamma * frag^beta; NaN where the jar prints NaN).
    stats : int64[H, 23], the jar's -ssOut line of the best reference (tstLen refLen tstFunc
        refFunc, 4 modules x (tstContent refContent tstFunction refFunction), chunks,
        tstWordMatches refWordMatches).
    best_reference : int64[H], index of that reference among the row's (segment's) references,
        the first one on ties, as the jar; -1 where there is none.
    """

    score: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    fragmentation: np.ndarray
    stats: np.ndarray
    best_reference: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    def take(self, rows: Any) -> "MeteorResult":
        """The rows selected by an integer index array or a boolean mask (e.g. the 1-best rows)."""
        return MeteorResult(*(a[rows] for a in (self.score, self.precision, self.recall, self.fragmentation,
                                                self.stats, self.best_reference)))


def _java_hash(token: str) -> int:
    """Java's String.hashCode (31-polynomial over UTF-16 code units, 32-bit)."""
    h = 0
    for unit in np.frombuffer(token.encode("utf-16-be"), ">u2").tolist():
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def jar_split(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The jar's tokens of every string by Arrow's regex split on its five separators
    ``[ \t\n\r\f]`` (slower than split_ids; for the rows holding a Python-only space, see
    ``PY_ONLY_SPACE``): tokens string [T] and row pointers int64 [n+1]."""
    lists = pc.split_pattern_regex(texts, _JAR_SPACE)
    flat, rows = pc.list_flatten(lists), pc.list_parent_indices(lists)
    keep = pc.greater(pc.binary_length(flat), 0)  # empty strings before leading / after trailing spaces
    ptr = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(np.bincount(rows.filter(keep).to_numpy(), minlength=len(texts)), out=ptr[1:])
    return flat.filter(keep), ptr


def _regex_split(texts: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """:func:`split_words` by :func:`jar_split`."""
    flat, ptr = jar_split(texts)
    enc = flat.dictionary_encode()
    return enc.indices.to_numpy().astype(np.int32), ptr, enc.dictionary


def split_words(texts: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(ids int32[T], ptr int64[n+1], vocabulary) of the jar's tokens of every string.

    Rows with a character where Python's split and the jar's differ (rare: a no-break space in a
    reference) take the regex split, the others the fast split_ids; one vocabulary for both."""
    odd = pc.match_substring_regex(texts, PY_ONLY_SPACE).to_numpy(zero_copy_only=False)
    if not odd.any():
        return split_ids(texts)
    parts = [np.flatnonzero(~odd), np.flatnonzero(odd)]
    (ids_a, ptr_a, voc_a), (ids_b, ptr_b, voc_b) = split_ids(texts.take(parts[0])), _regex_split(texts.take(parts[1]))
    enc = pa.concat_arrays([voc_a.cast(pa.large_string()), voc_b.cast(pa.large_string())]).dictionary_encode()
    remap = enc.indices.to_numpy().astype(np.int32)
    lengths = np.zeros(len(texts), np.int64)
    for rows, part_ptr in zip(parts, (ptr_a, ptr_b)):
        lengths[rows] = np.diff(part_ptr)
    ptr = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    ids = np.empty(ptr[-1], np.int32)
    for rows, part_ptr, part_ids in zip(parts, (ptr_a, ptr_b), (remap[ids_a], remap[len(voc_a) + ids_b])):
        # token t of part row k goes to ptr[rows[k]] + (t - part_ptr[k])
        ids[np.repeat(ptr[rows] - part_ptr[:-1], np.diff(part_ptr)) + np.arange(part_ptr[-1])] = part_ids
    return ids, ptr, enc.dictionary


def _tokens(texts: pa.Array, params: MeteorParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids int32[T] (equal ids = tokens the jar finds equal), function-word flags bool[T],
    row pointers int64[n+1]."""
    if params.normalize:  # the jar's -norm: normalized, then lowercased (below)
        texts = _normalized(texts, params.lang)
    if params.lowercase:
        texts = lowercase_column(texts)
    ids, ptr, vocab = split_words(texts)
    words = pa.array(sorted(params.function_words), pa.large_string())
    fw = pc.is_in(lowercase_column(vocab.cast(pa.large_string())), value_set=words).to_numpy(zero_copy_only=False)
    fw_tok = np.ascontiguousarray(fw[ids], dtype=np.bool_)
    if params.jar_compat:  # the jar compares String.hashCode values, not strings
        hashes = np.array([_java_hash(t) for t in vocab.to_pylist()], np.int64)
        _, merged = np.unique(hashes, return_inverse=True)
        ids = merged.astype(np.int32)[ids]
    return np.ascontiguousarray(ids, np.int32), fw_tok, ptr


def _normalized(texts: pa.Array, lang: str) -> pa.Array:
    """Every string through the jar's normalizer (:mod:`.normalize`), each distinct string once."""
    enc = pc.dictionary_encode(texts)
    norm = normalizer(lang)
    return pa.array([norm(t) for t in enc.dictionary.to_pylist()], pa.large_string()).take(enc.indices)


def _first_copies(hyps: pa.Array, seg_ptr: np.ndarray) -> np.ndarray:
    """int64[H]: for each row, the first row of its segment with the same text (itself if none)."""
    ids = pc.dictionary_encode(hyps).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    seg = np.repeat(np.arange(len(seg_ptr) - 1, dtype=np.int64), np.diff(seg_ptr))
    _, first, inverse = np.unique(seg * (int(ids.max(initial=0)) + 1) + ids, return_index=True,
                                  return_inverse=True)  # return_index: the first occurrence
    return first[inverse.reshape(-1)].astype(np.int64)


def _as_text(hypotheses: Any) -> pa.Array:
    arr = hypotheses_array(hypotheses)
    if is_token_lists(arr.type):
        raise InputError("Meteor: expected hypotheses as strings (the jar's tokens are split on spaces, tabs and "
                         "line breaks), found token lists; join the tokens with spaces")
    return arr.cast(pa.large_string())


def meteor_segments(hypotheses: Any, references: Any, seg_ptr: Any,
                    params: MeteorParams | None = None) -> MeteorResult:
    """Meteor (exact) of K-best lists: every hypothesis against its segment's references.

    Parameters
    ----------
    hypotheses : H strings (list, numpy, pandas or Arrow).
    references : S lists of reference strings, one list per segment (a bare string is one reference).
    seg_ptr : int64[S+1], rows seg_ptr[s]:seg_ptr[s+1] are the hypotheses of segment s.
    params : :func:`~kbest_bleu.metrics.meteor.params.meteor_params` (default English).

    Each segment's references are tokenized once; the score of a row is its best reference's
    (Meteor 1.5, ``MeteorScorer.getMeteorStats`` over a reference list).
    """
    params = params or meteor_params()
    hyps = _as_text(hypotheses)
    refs = references_array(references)
    ptr = np.asarray(seg_ptr, dtype=np.int64)
    if ptr.ndim != 1 or len(ptr) != len(refs) + 1 or ptr[0] != 0 or ptr[-1] != len(hyps) or np.any(np.diff(ptr) < 0):
        raise InputError(f"Meteor: seg_ptr must be int64[S+1] rising from 0 to the {len(hyps)} hypotheses with "
                         f"S = {len(refs)} reference lists; found {len(ptr)} pointers ending at "
                         f"{ptr[-1] if len(ptr) else None}")
    flat_refs = pc.list_flatten(refs)
    if is_token_lists(flat_refs.type):
        raise InputError("Meteor: expected references as strings, found token lists; join the tokens with spaces")
    flat_refs = flat_refs.cast(pa.large_string()) if len(flat_refs) else pa.array([], pa.large_string())
    ids, fw, tok_ptr = _tokens(pa.concat_arrays([hyps, flat_refs]), params)
    n_h, n_tok = len(hyps), int(tok_ptr[len(hyps)])
    lengths = np.diff(tok_ptr)
    if len(lengths) and lengths.max() >= _align.MAX_TOKENS:
        row = int(np.argmax(lengths))
        what = f"hypothesis {row}" if row < n_h else f"reference {row - n_h} (flattened)"
        raise InputError(f"Meteor: {what} has {int(lengths[row])} tokens; expected fewer than {_align.MAX_TOKENS} "
                         "per sentence (the aligner packs its counts in 64 bits); split the text into sentences")
    stats, p, r, pen, score, best = _align.segment_stats(
        ids[:n_tok], fw[:n_tok], tok_ptr[:n_h + 1], ids[n_tok:], fw[n_tok:], tok_ptr[n_h:] - n_tok, ptr,
        list_offsets(refs), _first_copies(hyps, ptr), params.alpha, params.beta, params.gamma, params.delta,
        params.beam_size)
    return MeteorResult(score, p, r, pen, stats, best)


def meteor_rows(hypotheses: Any, references: Any, params: MeteorParams | None = None) -> MeteorResult:
    """Meteor (exact) of H hypotheses, each against its own list of references (H lists)."""
    hyps = _as_text(hypotheses)
    refs = references_array(references)
    if len(refs) != len(hyps):
        raise InputError(f"Meteor: expected one list of references per hypothesis ({len(hyps)}), found {len(refs)}")
    return meteor_segments(hyps, refs, np.arange(len(hyps) + 1, dtype=np.int64), params)


def sentence_meteor(hypothesis: str, references: str | list[str], params: MeteorParams | None = None) -> float:
    """Meteor (exact) of one hypothesis against one reference or a list of references."""
    refs = [references] if isinstance(references, str) else list(references)
    return float(meteor_rows([hypothesis], [refs], params).score[0])


def system_meteor(result: MeteorResult, params: MeteorParams | None = None) -> float:
    """Meteor's system score: the statistics of all rows summed, then scored (the jar's
    "Final score", ``MeteorStats.addStats`` + ``computeMetrics``), not the mean of segment scores.
    Select rows first (``result.take(one_best_rows)``) to score one system's output."""
    params = params or meteor_params()
    st = np.asarray(result.stats, dtype=np.int64)
    total = st.sum(axis=0)
    # MeteorStats.addStats adds no chunks for a segment matched entirely in one chunk
    whole = (st[:, 4] + st[:, 6] == st[:, 0]) & (st[:, 5] + st[:, 7] == st[:, 1]) & (st[:, 20] == 1)
    total[20] = st[~whole, 20].sum()
    return float(_align.metrics(total, params.alpha, params.beta, params.gamma, params.delta)[3])


def output_fields(name: str, stats: bool) -> list[pa.Field]:
    """The columns of a Meteor-based metric ``name``: its score, and with ``stats`` the jar's
    P, R, fragmentation penalty and the 11 -ssOut statistics of the exact module. P, R and the
    penalty are null where the jar prints NaN (0/0: P of an empty hypothesis, R of an empty
    reference, the penalty without matches): an output column holds no NaN
    (docs/failure_behaviour.md)."""
    fields = [pa.field(name, pa.float64())]
    if stats:
        fields += [pa.field(f"{name}_{x}", pa.float64()) for x in ("precision", "recall", "frag_penalty")]
        fields += [pa.field(f"{name}_{x}", pa.int64()) for x in STAT_NAMES]
    return fields


def output_arrays(result: MeteorResult, stats: bool) -> list[pa.Array]:
    """The arrays of :func:`output_fields`, in the same order."""
    arrays = [pa.array(result.score)]
    if stats:
        arrays += [pa.array(a, mask=np.isnan(a)) for a in (result.precision, result.recall, result.fragmentation)]
        arrays += [pa.array(np.ascontiguousarray(result.stats[:, c])) for c in _STAT_COLUMNS]
    return arrays


@dataclass(frozen=True)
class Meteor(SegmentMetric):
    """Meteor (exact) as a :class:`~kbest_bleu.metrics.base.Metric` (picklable: parameters only)."""

    params: MeteorParams
    name: str = "meteor"

    def input_columns(self) -> list[str]:
        return []

    def output_fields(self, stats: bool) -> list[pa.Field]:
        return output_fields(self.name, stats)

    def signature(self) -> str:
        return self.params.signature()

    def statistics(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                   table: pa.Table) -> Any:  # noqa: ARG002 (the Metric interface)
        """The alignments' statistics of every row (:func:`meteor_segments`)."""
        return meteor_segments(hypotheses, references, seg_ptr, self.params)

    def compute(self, statistics: Any, stats: bool) -> list[pa.Array]:
        return output_arrays(statistics, stats)


def from_options(lang: str = "en", jar_compat: bool = False, lowercase: bool = False,
                 function_words: str | None = None, beam_size: int = BEAM_SIZE, normalize: bool = False) -> Meteor:
    """The ``meteor`` metric of the registry (options as :func:`meteor_params`)."""
    return Meteor(meteor_params(lang, jar_compat, lowercase, function_words, beam_size, normalize))
