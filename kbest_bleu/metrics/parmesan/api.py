"""Parmesan's Python functions: tables, paraphrasing of one pair or whole K-best tables, scores."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...encode import hypotheses_array, list_offsets, references_array, segment_pointers
from ...errors import InputError
from .analyze import check_analyzer
from .substitute import Paraphrases, Sentences, analyze, edits, paraphrase_kbest
from .table import CompiledTable, compile_table, read_table

__all__ = ["ParmesanResult", "load_table", "paraphrase", "paraphrase_segments", "parmesan_segments",
           "sentence_parmesan"]


def load_table(path: Union[str, Path], directed: bool = False,
               sources: Sequence[str] = ("wordnet", "meteor")) -> CompiledTable:
    """Read and compile a paraphrase table file (:mod:`.table` format); pairs are used in both
    directions unless ``directed``, and only lines of ``sources`` (``both`` lines with either)."""
    bad = set(sources) - {"wordnet", "meteor"}
    if bad or not sources:
        raise InputError(f"paraphrase sources: expected a non-empty subset of wordnet, meteor; found {list(sources)}")
    return compile_table(read_table(path, directed, tuple(sources)))


def _references(references: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Flat reference strings and int64 [S+1] pointers of list<string> [S]."""
    refs = references_array(references)
    if not pa.types.is_string(refs.type.value_type) and not pa.types.is_large_string(refs.type.value_type):
        refs = refs.cast(pa.list_(pa.string()))
    off = np.asarray(refs.offsets, np.int64)
    return pc.list_flatten(refs).cast(pa.string()), off - off[0]


def paraphrase_segments(hypotheses: Any, references: Any, seg_ptr: Optional[np.ndarray], table: CompiledTable,
                        analyzer: str = "lower", lang: str = "en", hyp_lemma: Optional[pa.Array] = None,
                        hyp_pos: Optional[pa.Array] = None, ref_lemma: Optional[pa.Array] = None,
                        ref_pos: Optional[pa.Array] = None) -> tuple[Paraphrases, Sentences, Sentences, np.ndarray]:
    """Paraphrase each segment's references towards each of its hypotheses (section 4).

    Parameters
    ----------
    hypotheses : H strings
    references : S lists of reference strings (one list per segment)
    seg_ptr : int64 [S+1], rows seg_ptr[s]:seg_ptr[s+1] are segment s (None: one row per segment)
    table : from :func:`load_table`
    analyzer : see :mod:`.analyze`; ``columns`` takes ``hyp_lemma``/``hyp_pos`` (one entry per
        hypothesis) and ``ref_lemma``/``ref_pos`` (one entry per reference, flat over segments),
        each a list of strings per sentence or a space-separated string

    Returns the :class:`Paraphrases`, the analyzed hypotheses and references, and the int64 [S+1]
    pointers of each segment's references.
    """
    check_analyzer(analyzer)
    hyp_arr = hypotheses_array(hypotheses)
    if not (pa.types.is_string(hyp_arr.type) or pa.types.is_large_string(hyp_arr.type)):
        raise InputError(f"parmesan: expected hypotheses as strings, found Arrow type {hyp_arr.type}; "
                         "join pre-tokenized hypotheses with spaces")
    seg_ptr = segment_pointers(None, len(hyp_arr)) if seg_ptr is None else np.asarray(seg_ptr, np.int64)
    flat_refs, unit_ptr = _references(references)
    if len(unit_ptr) != len(seg_ptr) or seg_ptr[-1] != len(hyp_arr):
        raise InputError(f"parmesan: expected one list of references per segment ({len(seg_ptr) - 1}) and "
                         f"seg_ptr ending at the number of hypotheses ({len(hyp_arr)}), found "
                         f"{len(unit_ptr) - 1} lists and seg_ptr[-1] = {int(seg_ptr[-1])}")
    hyps = analyze(hyp_arr, analyzer, lang, hyp_lemma, hyp_pos, "hypotheses")
    refs = analyze(flat_refs, analyzer, lang, ref_lemma, ref_pos, "references")
    return paraphrase_kbest(hyps, refs, unit_ptr, seg_ptr, table), hyps, refs, unit_ptr


def paraphrase(hypothesis: str, reference: str, table: CompiledTable, analyzer: str = "lower",
               lang: str = "en") -> tuple[str, list]:
    """The paraphrased reference of one pair and its substitutions [(position, reference word,
    hypothesis word)], e.g. ``("the big car ...", [(1, "large", "big"), ...])``."""
    p, hyps, refs, unit_ptr = paraphrase_segments([hypothesis], [[reference]], None, table, analyzer, lang)
    return p.references[0][0].as_py(), edits(p, hyps, refs, 0, unit_ptr, 0)[0]


@dataclass
class ParmesanResult:
    """Meteor (exact) of every row against its paraphrased references: ``meteor`` the
    MeteorResult (its best_reference picks the reference), ``references`` the best paraphrased
    reference per row (string [H], null without references), ``substitutions`` int32 [H] made in it."""

    meteor: Any
    references: pa.Array
    substitutions: np.ndarray
    paraphrases: Paraphrases = field(repr=False)


def _meteor_distinct(hyps: pa.Array, refs: pa.Array, params: Any) -> Any:
    """``meteor_rows`` of every row, computed once per distinct (hypothesis, paraphrased
    references) row (K-best lists repeat hypotheses), with the rows that share their references
    (all rows of a segment whose references were left unchanged, for one) grouped as one
    ``meteor_segments`` segment, so that Meteor prepares each distinct reference list once."""
    from ..meteor import meteor_segments
    # exact keys from dictionary codes: reference list = "code,code,...", row = "hypothesis code|references"
    ref_code = pc.cast(pc.dictionary_encode(pc.list_flatten(refs)).indices, pa.string())
    ref_keys = pc.binary_join(pa.ListArray.from_arrays(pa.array(list_offsets(refs).astype(np.int32)), ref_code), ",")
    hyp_code = pc.cast(pc.dictionary_encode(hyps).indices, pa.string())
    codes = pc.dictionary_encode(pc.binary_join_element_wise(hyp_code, ref_keys, "|")).indices.to_numpy(
        zero_copy_only=False)
    first = np.unique(codes, return_index=True)[1]  # codes number distinct keys by first appearance
    group = pc.dictionary_encode(ref_keys).indices.to_numpy(zero_copy_only=False)[first]
    order = np.argsort(group, kind="stable")  # distinct rows, those with equal references together
    starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]]) if len(order) else np.zeros(0, int)
    rows = first[order]
    result = meteor_segments(hyps.take(pa.array(rows)), refs.take(pa.array(rows[starts])),
                             np.append(starts, len(rows)).astype(np.int64), params)
    back = np.empty(len(order), np.int64)
    back[order] = np.arange(len(order))
    return result.take(back[codes])


def parmesan_segments(hypotheses: Any, references: Any, seg_ptr: Optional[np.ndarray], table: CompiledTable,
                      params: Any = None, **analysis: Any) -> ParmesanResult:
    """Parmesan scores: :func:`paraphrase_segments`, then Meteor (exact) of each row against its
    own paraphrased references (``meteor_rows``; ``params`` from ``meteor_params``, default English).
    ``analysis``: the analyzer options of :func:`paraphrase_segments`."""
    p, _, _, _ = paraphrase_segments(hypotheses, references, seg_ptr, table, **analysis)
    result = _meteor_distinct(hypotheses_array(hypotheses), p.references, params)
    best = np.asarray(result.best_reference, np.int64)
    has = (np.diff(p.units) > 0) & (best >= 0)
    unit = np.where(has, p.units[:-1] + np.maximum(best, 0), 0)
    flat = pc.list_flatten(p.references)
    chosen = flat.take(pa.array(unit, mask=~has)) if len(flat) else pa.nulls(len(best), pa.large_string())
    subs = np.where(has, p.count[unit] if len(p.count) else 0, 0).astype(np.int32)
    return ParmesanResult(result, chosen, subs, p)



def sentence_parmesan(hypothesis: str, references: Union[str, list], table: CompiledTable, params: Any = None,
                      analyzer: str = "lower", lang: str = "en") -> float:
    """Parmesan of one hypothesis against one reference or a list of references (the best)."""
    refs = [references] if isinstance(references, str) else list(references)
    result = parmesan_segments([hypothesis], [refs], None, table, params, analyzer=analyzer, lang=lang)
    return float(result.meteor.score[0])
