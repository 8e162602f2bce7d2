"""The K-best container of the tuning loops: statistics computed once per candidate, features,
segments, de-duplicated across decoding iterations (README, "Tuning")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bleu import corpus_score, sentence_scores
from ..config import BleuConfig
from ..encode import encode, list_offsets, references_array, segment_references
from ..errors import InputError
from ..files.nbest import dense_features
from ..stats import BleuStats, segment_argmax, stats_from_encoded
from ..tokenize import tokenize

__all__ = ["KbestLists", "moses_matrix"]


def _joined_tokens(strings: pa.Array, cfg: BleuConfig) -> pa.Array:
    """The tokens of each string joined by single spaces (large_string): splitting on
    whitespace gives the same tokens back."""
    toks, off = tokenize(strings, cfg.tokenize, cfg.lowercase_rule)
    return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(off), toks.cast(pa.large_string())),
                          pa.scalar(" ", pa.large_string()))


@dataclass(frozen=True)
class KbestLists:
    """K-best lists for tuning.

    Attributes
    ----------
    segment_ids : int64[S]      segment labels, ascending
    seg_ptr : int64[S+1]        rows of segment s: seg_ptr[s]:seg_ptr[s+1]
    stats : BleuStats           H rows
    features : float64[H, F]
    feature_names : list of F names
    keys : pyarrow large_string[H]  the token sequence of each hypothesis
    ref_len : float64[S]        len(R_i): the shortest reference of each segment, in tokens
    model_score : float64[H] or None  the decoder's model score, when loaded with one
    """

    segment_ids: np.ndarray
    seg_ptr: np.ndarray
    stats: BleuStats
    features: np.ndarray
    feature_names: list
    keys: pa.Array
    ref_len: np.ndarray
    model_score: Optional[np.ndarray] = None

    @property
    def labels(self) -> np.ndarray:
        """Segment index (0..S-1) of every row: int64[H]."""
        return np.repeat(np.arange(len(self.seg_ptr) - 1), np.diff(self.seg_ptr))

    @classmethod
    def from_table(cls, table: pa.Table, config: Optional[BleuConfig] = None, *, segment: str = "segment_id",
                   hypothesis: str = "hypothesis", references: str = "references",
                   features: str = "features", score: Optional[str] = None) -> "KbestLists":
        """From a K-best table (our parquet, or converted Moses/Joshua n-best lists).

        Rows of one segment may come from several decoding iterations and need not be
        contiguous: they are grouped by segment and de-duplicated as Moses' extractor de-duplicates
        with ``--prev-*`` files: a row whose features and BLEU statistics both equal an earlier row's
        of its segment is dropped (the first occurrence is kept).
        ``features``: a list<double> column, or a feature string column (Moses ``lm= -4 ...`` or
        Joshua ``lm_0=-4``) parsed once here. ``score``: optional model-score column.
        """
        cfg = config or BleuConfig()
        for name in (segment, hypothesis, references, features) + ((score,) if score else ()):
            if table.schema.get_field_index(name) < 0:
                hint = "; n-best text has none: give its references with -r" if name == references else ""
                raise InputError(f"KbestLists: column {name!r} not found; columns are {table.column_names}{hint}")
        if score and not (pa.types.is_integer(t := table.schema.field(score).type) or pa.types.is_floating(t)):
            raise InputError(f"KbestLists: model-score column {score!r} has Arrow type {t}; expected numbers (the "
                             "decoder's score of each hypothesis)")
        if not pa.types.is_integer(table.schema.field(segment).type):
            raise InputError(f"KbestLists: segment column {segment!r} has Arrow type {table.schema.field(segment).type}; "
                             "expected integer segment ids (one column; the lists of a segment from several "
                             "iterations are merged by it)")
        col = table[features].combine_chunks()
        listed = pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
        numbers = listed and (pa.types.is_integer(col.type.value_type) or pa.types.is_floating(col.type.value_type))
        if not (numbers or pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            raise InputError(f"KbestLists: features column {features!r} has Arrow type {col.type}; expected a list of "
                             "numbers per row, or Moses/Joshua feature strings ('lm= -4 tm= -2 ...')")
        if not (pa.types.is_string(t := table.schema.field(hypothesis).type) or pa.types.is_large_string(t)):
            raise InputError(f"KbestLists: hypothesis column {hypothesis!r} has Arrow type {t}; expected strings")
        if table[hypothesis].null_count:
            row = int(np.flatnonzero(table[hypothesis].is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(f"KbestLists: hypothesis column {hypothesis!r} row {row} is null; expected a string in "
                             "every row ('' for an empty hypothesis)")
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
            n_feat = int(lengths[0]) if len(col) else 0
            if col.null_count or (lengths != n_feat).any():
                row = int(np.flatnonzero((lengths != n_feat) | col.is_null().to_numpy(zero_copy_only=False))[0])
                raise InputError(f"KbestLists: column {features!r} row {row}: expected {n_feat} feature values "
                                 "like row 0 (dense features, no nulls)")
            names = [f"f{i}" for i in range(n_feat)]
            values = pc.list_flatten(col).to_numpy(zero_copy_only=False).astype(np.float64).reshape(len(col), n_feat)
        else:
            names, rows = dense_features(col.to_pylist(), f"KbestLists: column {features!r}")
            values = np.array(rows, dtype=np.float64).reshape(len(col), len(names))
        hyps = table[hypothesis].combine_chunks()
        keys = _joined_tokens(hyps, cfg)
        seg = table[segment].combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64)
        model = table[score].to_numpy().astype(np.float64) if score else None
        for name, array in ((features, values), (score, model)):  # NaN (nulls too) would reach the weights
            bad = None if array is None else np.flatnonzero(~np.isfinite(array).reshape(len(array), -1).all(axis=1)
                                                            if array.size else np.zeros(0, bool))
            if bad is not None and len(bad):
                raise InputError(f"KbestLists: column {name!r} row {int(bad[0])}: a value is null, NaN or infinite; "
                                 "expected finite numbers in every row")
        return cls._build(seg, table[references].combine_chunks(), values, names, keys, model, cfg)

    @classmethod
    def _build(cls, seg, refs, values, names, keys, model, cfg) -> "KbestLists":
        order = np.argsort(seg, kind="stable")  # grouped by segment, earlier lists first
        seg_sorted = seg[order]
        ptr = _pointers(seg_sorted)
        take = pa.array(order)
        # the rows of a segment must share their references
        seg_refs = segment_references(references_array(refs.take(take)), ptr, len(order))
        per_seg = list_offsets(seg_refs)
        if (np.diff(per_seg) == 0).any():
            bad = seg_sorted[ptr[:-1]][np.flatnonzero(np.diff(per_seg) == 0)[0]]
            raise InputError(f"KbestLists: segment {bad} has no references; tuning needs at least one per segment")
        # keys are the tokens joined by single spaces: splitting them again on whitespace gives the
        # same tokens, so the hypotheses are not tokenized twice; the references get the same rewrite
        ref_text = _joined_tokens(pc.list_flatten(seg_refs), cfg)
        enc = encode(keys.take(take), pa.LargeListArray.from_arrays(pa.array(per_seg), ref_text), ptr)
        stats = stats_from_encoded(enc, cfg)
        ref_len = np.minimum.reduceat(np.diff(enc.ref_ptr).astype(np.float64), enc.seg_ref_ptr[:-1])
        kept = _distinct_candidates(seg_sorted, stats, values[order])  # sorted already: rows of the sorted order
        rows = order[kept]
        ptr = _pointers(seg_sorted[kept])
        return cls(seg_sorted[kept][ptr[:-1]], ptr, stats[kept], values[rows], list(names), keys.take(pa.array(rows)),
                   ref_len, None if model is None else model[rows])

    def __len__(self) -> int:
        return len(self.stats)

    def decoder_weights(self) -> np.ndarray:
        """The weights the decoder used: least squares of its model score on the features (exact
        when all lists come from one decoding run, whose model score is w . f)."""
        if self.model_score is None:
            raise InputError("decoder_weights: the lists were loaded without a model-score column (score=...)")
        return np.linalg.lstsq(self.features, self.model_score, rcond=None)[0]

    def check_weights(self, w: Any, what: str = "weights") -> np.ndarray:
        """``w`` as float64[F] (one finite weight per feature, in ``feature_names`` order), else
        :class:`InputError` naming ``what``; also refuses empty lists (nothing to tune on)."""
        if len(self) == 0:
            raise InputError(f"{what}: the K-best lists are empty (0 hypotheses); expected at least one segment")
        try:
            arr = np.asarray(w, np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{what}: expected {self.features.shape[1]} numbers, found {w!r}") from None
        if arr.shape != (self.features.shape[1],) or not np.isfinite(arr).all():
            raise InputError(f"{what}: expected {self.features.shape[1]} finite weights, one per feature "
                             f"({', '.join(self.feature_names)}), found shape {arr.shape}: {arr.tolist()!r}")
        return arr

    def model_scores(self, w: np.ndarray) -> np.ndarray:
        """w . f of every hypothesis: float64[H]; :class:`InputError` where a score overflows
        float64 (weights too large for the features: argmax over infinities would pick a 1-best
        at random)."""
        w = self.check_weights(w)
        with np.errstate(over="ignore", invalid="ignore"):  # said below, in one line
            scores = self.features @ w
        if not np.isfinite(scores).all():
            row = int(np.flatnonzero(~np.isfinite(scores))[0])
            raise InputError(f"weights: the model score w . f of row {row} is {scores[row]} (float64 overflows: "
                             f"weights up to {np.abs(w).max():.3g} against features up to "
                             f"{np.abs(self.features[row]).max():.3g}); scale the weights down")
        return scores

    def one_best(self, w: np.ndarray) -> np.ndarray:
        """Row of the highest model score in each segment (first on ties): int64[S]."""
        return segment_argmax(self.model_scores(w), self.seg_ptr)

    def corpus_bleu(self, rows: np.ndarray, config: Optional[BleuConfig] = None) -> float:
        """Corpus BLEU (0-1) of one selected row per segment."""
        return corpus_score(self.stats[rows], config or BleuConfig()).score

    def sentence_oracle(self, config: Optional[BleuConfig] = None) -> np.ndarray:
        """Row with the best sentence BLEU in each segment."""
        return segment_argmax(sentence_scores(self.stats, config or BleuConfig()), self.seg_ptr)

    def corpus_oracle(self, start: Optional[np.ndarray] = None, max_passes: int = 10) -> np.ndarray:
        """Greedy corpus-level oracle: coordinate ascent on unsmoothed corpus BLEU, starting from
        ``start`` (default: the sentence-level oracle)."""
        choice = np.array(self.sentence_oracle() if start is None else start, dtype=np.int64)
        if choice.shape != (len(self.seg_ptr) - 1,) or not (
                (self.seg_ptr[:-1] <= choice) & (choice < self.seg_ptr[1:])).all():
            raise InputError(f"corpus_oracle: start: expected one row per segment ({len(self.seg_ptr) - 1}), each "
                             "inside its segment's rows (seg_ptr[s] <= row < seg_ptr[s+1])")
        from ._kernels import _greedy_oracle  # numba loads with the first use, not with the package

        _greedy_oracle(moses_matrix(self.stats), self.seg_ptr, choice, self.stats.max_order, max_passes)
        return choice

    def merge(self, other: "KbestLists") -> "KbestLists":
        """Union of two K-best containers per segment, without repeated candidates (self first; as
        :meth:`from_table`). Statistics are not recomputed but concatenated: both must use the same
        options."""
        if self.feature_names != other.feature_names:
            raise InputError(f"merge: feature names differ: {self.feature_names} vs {other.feature_names}")
        seg = np.concatenate([self.segment_ids[self.labels], other.segment_ids[other.labels]])
        stats = BleuStats.concat([self.stats, other.stats])
        features = np.concatenate([self.features, other.features])
        rows = _distinct_candidates(seg, stats, features)
        seg_sorted = seg[rows]
        ptr = _pointers(seg_sorted)
        ref_len = dict(zip(other.segment_ids, other.ref_len)) | dict(zip(self.segment_ids, self.ref_len))
        model = None
        if self.model_score is not None and other.model_score is not None:
            model = np.concatenate([self.model_score, other.model_score])[rows]
        return KbestLists(seg_sorted[ptr[:-1]], ptr, stats[rows], features[rows], self.feature_names,
                          pa.concat_arrays([self.keys, other.keys]).take(pa.array(rows)),
                          np.array([ref_len[s] for s in seg_sorted[ptr[:-1]]]), model)


def _pointers(seg_sorted: np.ndarray) -> np.ndarray:
    """Segment pointers int64[S+1] of rows sorted by segment."""
    starts = np.r_[0, np.flatnonzero(np.diff(seg_sorted)) + 1] if len(seg_sorted) else np.zeros(0, np.int64)
    return np.r_[starts, len(seg_sorted)].astype(np.int64)


def _distinct_candidates(seg: np.ndarray, stats: BleuStats, features: np.ndarray) -> np.ndarray:
    """Rows grouped by segment (stable: earlier lists first), without a row whose features and BLEU
    statistics (Moses order) both equal an earlier row's of its segment, as Moses drops repeated
    candidates (mert/Data.cpp, ``removeDuplicates``): int64 row indices. Equal token sequences have
    equal statistics; a candidate whose features differ is kept, since w . f tells it apart."""
    order = np.argsort(seg, kind="stable")
    _, seg_code = np.unique(seg, return_inverse=True)
    # + 0.0 makes -0.0 +0.0, equal as Moses compares features (==); stats are exact integers as floats
    key = np.column_stack([seg_code.astype(np.float64), moses_matrix(stats), features + 0.0])[order]
    first = np.zeros(len(order), bool)
    first[np.unique(key, axis=0, return_index=True)[1]] = True
    return order[first]


def moses_matrix(stats: BleuStats) -> np.ndarray:
    """float64[H, 2N+1] statistics in Moses order (m1 t1 ... mN tN reflen)."""
    return stats.to_moses().astype(np.float64)
