"""The Parmesan :class:`~kbest_bleu.metrics.base.Metric`: ``kbest-bleu score --metric parmesan``,
the Python batch functions and Spark all score through its :meth:`ParmesanMetric.statistics` and
:meth:`ParmesanMetric.compute`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from ..base import SegmentMetric
from ..meteor.params import meteor_params
from ..meteor.score import output_arrays, output_fields
from .analyze import check_analyzer
from .api import load_table, parmesan_segments
from .table import CompiledTable

__all__ = ["ParmesanMetric", "from_options"]

VERSION = "1"  # bump when a change alters paraphrased references or scores


@dataclass(frozen=True)
class ParmesanMetric(SegmentMetric):
    """A built Parmesan metric: the compiled table, the analyzer and Meteor's parameters
    (plain picklable values, so Spark workers use it as it is)."""

    table: CompiledTable
    table_id: str
    analyzer: str
    lang: str
    directed: bool
    sources: tuple
    params: Any
    columns: tuple  # (hyp_lemma, hyp_pos, ref_lemma, ref_pos) column names or None
    name: str = "parmesan"

    def input_columns(self) -> list[str]:
        return [c for c in self.columns if c]

    def output_fields(self, stats: bool) -> list[pa.Field]:
        fields = output_fields(self.name, stats)
        fields.insert(1, pa.field("parmesan_reference", pa.large_string()))
        if stats:
            fields.insert(2, pa.field("parmesan_substitutions", pa.int32()))
        return fields

    def signature(self) -> str:
        return (f"parmesan|table:{self.table_id}|pairs:{'directed' if self.directed else 'both-ways'}"
                f"|sources:{'+'.join(self.sources)}|analyzer:{self.analyzer}|depfix:no|{self.params.signature()}"
                f"|parmesan-version:{VERSION}")

    def statistics(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray, table: pa.Table) -> Any:
        """Rows of whole segments (see :class:`~kbest_bleu.metrics.base.Metric`); lemma/POS
        columns, when used, are read from ``table`` (reference ones from each segment's first row)."""
        hyp_lemma, hyp_pos, ref_lemma, ref_pos = (None if c is None else table.column(c).combine_chunks()
                                                  for c in self.columns)
        first = pa.array(np.asarray(seg_ptr[:-1], np.int64))
        # one entry per reference of each segment, flat, as the references themselves
        ref_lemma, ref_pos = (None if c is None else pc.list_flatten(c.take(first)) for c in (ref_lemma, ref_pos))
        return parmesan_segments(hypotheses, references, seg_ptr, self.table, self.params, analyzer=self.analyzer,
                                 lang=self.lang, hyp_lemma=hyp_lemma, hyp_pos=hyp_pos, ref_lemma=ref_lemma,
                                 ref_pos=ref_pos)

    def compute(self, statistics: Any, stats: bool) -> list[pa.Array]:
        r = statistics  # the paraphrased references and their Meteor statistics (parmesan_segments)
        out = output_arrays(r.meteor, stats)
        out.insert(1, r.references.cast(pa.large_string()))
        if stats:
            out.insert(2, pa.array(r.substitutions))
        return out


def _table_id(path: Path, n_pairs: int) -> str:
    digest = hashlib.sha1(path.read_bytes()).hexdigest()[:10]
    return f"{path.name}:{n_pairs}:{digest}"


def from_options(paraphrases: Optional[str] = None, analyzer: str = "lower", lang: str = "en",
                 directed: bool = False, sources: str = "wordnet,meteor", jar_compat: bool = False,
                 lowercase: bool = False,
                 function_words: Optional[str] = None, hyp_lemma_col: Optional[str] = None,
                 hyp_pos_col: Optional[str] = None, ref_lemma_col: Optional[str] = None,
                 ref_pos_col: Optional[str] = None, **_ignored: Any) -> ParmesanMetric:
    """Build the metric (registered as ``parmesan``).

    paraphrases : path of the paraphrase table (required); directed : use pairs only as listed
    sources : comma-separated table sources to use (wordnet, meteor; ``both`` lines with either)
    analyzer : lower, columns, simplemma, nltk, spacy:<model> (:mod:`.analyze`)
    lang, jar_compat, lowercase, function_words : Meteor's options (``meteor_params``)
    *_col : lemma/POS columns of the input table for ``analyzer="columns"`` (hypothesis columns:
        per row; reference columns: per row, one entry per reference of the row's segment)
    """
    check_analyzer(analyzer)
    if not paraphrases:
        raise InputError("parmesan: expected a paraphrase table (--paraphrases TABLE.tsv), found none; "
                         "build one with kbest-bleu parmesan build-table")
    if analyzer == "columns" and not (hyp_lemma_col and ref_lemma_col):
        raise InputError("parmesan: --analyzer columns expects --hyp-lemma-col and --ref-lemma-col, "
                         f"found {hyp_lemma_col!r} and {ref_lemma_col!r}")
    if analyzer != "columns" and any((hyp_lemma_col, hyp_pos_col, ref_lemma_col, ref_pos_col)):
        raise InputError("parmesan: lemma/POS columns are read with --analyzer columns only, "
                         f"found --analyzer {analyzer}")
    if bool(hyp_pos_col) != bool(ref_pos_col):
        raise InputError("parmesan: expected POS columns for both hypotheses and references or for neither, "
                         f"found {hyp_pos_col!r} and {ref_pos_col!r}")
    kinds = tuple(x.strip() for x in sources.split(",") if x.strip())
    table = load_table(paraphrases, directed, kinds)
    params = meteor_params(lang=lang, jar_compat=jar_compat, lowercase=lowercase, function_words=function_words)
    return ParmesanMetric(table, _table_id(Path(paraphrases), len(table.hyp)), analyzer, lang, directed, kinds, params,
                          (hyp_lemma_col, hyp_pos_col, ref_lemma_col, ref_pos_col))
