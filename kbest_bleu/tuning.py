"""Tuning loops over K-best lists: the BLEU statistics are computed once, every step only
recomputes model scores w.f (DESIGN section 1).

:class:`KbestLists` holds per hypothesis the statistics and the feature vector, grouped by
segment; per-step operations are vectorized over segments (numpy ``reduceat`` over the segment
pointers), and the inherently sequential ones (MIRA's online updates, the greedy oracle) run in
numba kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .bleu import corpus_score, sentence_scores, stats_order
from .config import BleuConfig
from .encode import encode, list_offsets, references_array, segment_references
from .errors import InputError
from .kernels import _background_bleu, _greedy_oracle, _mira_epoch
from .nbest import dense_features
from .stats import BleuStats, segment_argmax, stats_from_encoded
from .tokenize import tokenize


def _joined_tokens(strings: pa.Array, cfg: BleuConfig) -> pa.Array:
    """The tokens of each string joined by single spaces (large_string): splitting on
    whitespace gives the same tokens back."""
    toks, off = tokenize(strings, cfg.tokenize, cfg.lowercase)
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
    keys : pyarrow large_string[H]  the token sequence of each hypothesis (de-duplication key)
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
        contiguous: they are grouped by segment and de-duplicated (the same token sequence is
        the same candidate; the first occurrence is kept), as Moses ``extractor --prev-*`` does.
        ``features``: a list<double> column, or a feature string column (Moses ``lm= -4 ...`` or
        Joshua ``lm_0=-4``) parsed once here. ``score``: optional model-score column.
        """
        cfg = config or BleuConfig()
        for name in (segment, hypothesis, references, features) + ((score,) if score else ()):
            if table.schema.get_field_index(name) < 0:
                raise InputError(f"KbestLists: column {name!r} not found; columns are {table.column_names}")
        col = table[features].combine_chunks()
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
            names, rows = dense_features(col.to_pylist())
            values = np.array(rows, dtype=np.float64).reshape(len(col), len(names))
        hyps = table[hypothesis].combine_chunks()
        keys = _joined_tokens(hyps, cfg)
        seg = table[segment].combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64)
        model = table[score].to_numpy().astype(np.float64) if score else None
        return cls._build(seg, hyps, table[references].combine_chunks(), values, names, keys, model, cfg)

    @classmethod
    def _build(cls, seg, hyps, refs, values, names, keys, model, cfg) -> "KbestLists":
        rows = _first_per_segment(seg, keys)
        seg_sorted = seg[rows]
        starts = np.r_[0, np.flatnonzero(np.diff(seg_sorted)) + 1] if len(rows) else np.zeros(0, np.int64)
        ptr = np.r_[starts, len(rows)].astype(np.int64)
        take = pa.array(rows)
        # the rows of a segment must share their references (checked on the kept rows)
        seg_refs = segment_references(references_array(refs.take(take)), ptr, len(rows))
        per_seg = list_offsets(seg_refs)
        if (np.diff(per_seg) == 0).any():
            bad = seg_sorted[ptr[:-1]][np.flatnonzero(np.diff(per_seg) == 0)[0]]
            raise InputError(f"KbestLists: segment {bad} has no references; tuning needs at least one per segment")
        # keys are the tokens joined by single spaces: splitting them again on whitespace gives the
        # same tokens, so the hypotheses are not tokenized twice; the references get the same rewrite
        ref_text = _joined_tokens(pc.list_flatten(seg_refs), cfg)
        enc = encode(keys.take(take), pa.LargeListArray.from_arrays(pa.array(per_seg), ref_text), ptr)
        stats = stats_from_encoded(enc, stats_order(cfg), cfg.ref_length)
        ref_len = np.minimum.reduceat(np.diff(enc.ref_ptr).astype(np.float64), enc.seg_ref_ptr[:-1])
        return cls(seg_sorted[ptr[:-1]], ptr, stats, values[rows], list(names), keys.take(take), ref_len,
                   None if model is None else model[rows])

    def __len__(self) -> int:
        return len(self.stats)

    def decoder_weights(self) -> np.ndarray:
        """The weights the decoder used: least squares of its model score on the features (exact
        when all lists come from one decoding run, whose model score is w . f)."""
        if self.model_score is None:
            raise InputError("decoder_weights: the lists were loaded without a model-score column (score=...)")
        return np.linalg.lstsq(self.features, self.model_score, rcond=None)[0]

    def model_scores(self, w: np.ndarray) -> np.ndarray:
        """w . f of every hypothesis: float64[H]."""
        return self.features @ np.asarray(w, np.float64)

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
        _greedy_oracle(moses_matrix(self.stats), self.seg_ptr, choice, self.stats.max_order, max_passes)
        return choice

    def merge(self, other: "KbestLists", config: Optional[BleuConfig] = None) -> "KbestLists":
        """Union of two K-best containers per segment, without repeated candidates (self first).
        Statistics are recomputed only through concatenation: both must use the same options."""
        if self.feature_names != other.feature_names:
            raise InputError(f"merge: feature names differ: {self.feature_names} vs {other.feature_names}")
        seg = np.concatenate([self.segment_ids[self.labels], other.segment_ids[other.labels]])
        keys = pa.concat_arrays([self.keys, other.keys])
        rows = _first_per_segment(seg, keys)
        stats = BleuStats.concat([self.stats, other.stats])[rows]
        seg_sorted = seg[rows]
        ptr = np.r_[0, np.flatnonzero(np.diff(seg_sorted)) + 1, len(rows)].astype(np.int64)
        ref_len = dict(zip(other.segment_ids, other.ref_len)) | dict(zip(self.segment_ids, self.ref_len))
        model = None
        if self.model_score is not None and other.model_score is not None:
            model = np.concatenate([self.model_score, other.model_score])[rows]
        return KbestLists(seg_sorted[ptr[:-1]], ptr, stats, np.concatenate([self.features, other.features])[rows],
                          self.feature_names, keys.take(pa.array(rows)),
                          np.array([ref_len[s] for s in seg_sorted[ptr[:-1]]]), model)


def _first_per_segment(seg: np.ndarray, keys: pa.Array) -> np.ndarray:
    """Rows grouped by segment (stable: earlier lists first), keeping the first row of each
    (segment, token sequence): int64 row indices."""
    order = np.argsort(seg, kind="stable")
    combo = pc.binary_join_element_wise(pa.array(seg.astype(str), pa.large_string()), keys,
                                        pa.scalar("\x1f", pa.large_string()))
    codes = pc.dictionary_encode(combo.take(pa.array(order))).indices.to_numpy()
    first = np.zeros(len(codes), bool)
    first[np.unique(codes, return_index=True)[1]] = True
    return order[first]


def moses_matrix(stats: BleuStats) -> np.ndarray:
    """float64[H, 2N+1] statistics in Moses order (m1 t1 ... mN tN reflen)."""
    return stats.to_moses().astype(np.float64)


def segment_softmax(scores: np.ndarray, seg_ptr: np.ndarray) -> np.ndarray:
    """Per-segment softmax of ``scores`` (log-sum-exp stable): float64[H]."""
    starts = seg_ptr[:-1]
    sizes = np.diff(seg_ptr)
    z = np.exp(scores - np.repeat(np.maximum.reduceat(scores, starts), sizes))
    return z / np.repeat(np.add.reduceat(z, starts), sizes)


def expected_bleu(kb: KbestLists, w: np.ndarray, bleu: np.ndarray, lam: float = 10.0,
                  segments: Optional[np.ndarray] = None) -> tuple[float, np.ndarray]:
    """The seed paper's objective (section 3.2) and its exact gradient:

    L(w) = lam ||w||^2 - sum_i len(R_i) E_P[BLEU_i],   P(h | i) = softmax_h(w . f_h),
    dL/dw = 2 lam w - sum_i len(R_i) sum_h P(h|i) (BLEU_h - E_P[BLEU_i]) f_h.

    ``bleu``: sentence BLEU of every hypothesis (any smoothing: it does not depend on w).
    ``segments``: optional bool[S] mask, the sum runs over these segments only (minibatches).
    """
    w = np.asarray(w, np.float64)
    p = segment_softmax(kb.model_scores(w), kb.seg_ptr)
    starts, sizes = kb.seg_ptr[:-1], np.diff(kb.seg_ptr)
    expected = np.add.reduceat(p * bleu, starts)
    weight = kb.ref_len if segments is None else np.where(segments, kb.ref_len, 0.0)
    loss = lam * (w @ w) - (weight * expected).sum()
    coef = np.repeat(weight, sizes) * p * (bleu - np.repeat(expected, sizes))
    return float(loss), 2 * lam * w - kb.features.T @ coef


def background_bleu(kb: KbestLists, bg: np.ndarray) -> np.ndarray:
    """Moses kbmira background BLEU of every hypothesis: BLEU(stats + bg) x reference length."""
    return _background_bleu(moses_matrix(kb.stats), np.asarray(bg, np.float64), kb.stats.max_order)


def hope_fear_model(kb: KbestLists, w: np.ndarray, bg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of hope (model + bgBLEU), fear (model - bgBLEU) and model 1-best per segment."""
    score = kb.model_scores(w)
    bleu = background_bleu(kb, bg)
    return (segment_argmax(score + bleu, kb.seg_ptr), segment_argmax(score - bleu, kb.seg_ptr),
            segment_argmax(score, kb.seg_ptr))


@dataclass(frozen=True)
class TuneResult:
    """weights: the tuned weights; bleu: 1-best corpus BLEU on the tuning lists with them;
    history: 1-best corpus BLEU after each epoch/iteration (MIRA: of the averaged weights)."""

    weights: np.ndarray
    bleu: float
    history: list


def tune_mira(kb: KbestLists, w0: np.ndarray, c: float = 0.01, decay: float = 0.999, epochs: int = 60,
              seed: int = 0, config: Optional[BleuConfig] = None) -> TuneResult:
    """k-best batch MIRA (Cherry & Foster 2012) with Moses kbmira defaults: C = 0.01, background
    BLEU decay 0.999, 60 epochs, averaged weights, the best epoch kept."""
    cfg = config or BleuConfig()
    w = np.array(w0, np.float64)
    w_sum, n_sum = np.zeros_like(w), np.zeros(1, np.int64)
    bg = np.ones(2 * kb.stats.max_order + 1)
    m = moses_matrix(kb.stats)
    rng = np.random.default_rng(seed)
    best_w, best, history = w.copy(), -1.0, []
    for _ in range(epochs):
        _mira_epoch(kb.features, m, kb.seg_ptr, rng.permutation(len(kb.seg_ptr) - 1), w, w_sum, n_sum, bg, c, decay,
                    kb.stats.max_order)
        avg = w_sum / n_sum[0]
        score = kb.corpus_bleu(kb.one_best(avg), cfg)
        history.append(score)
        if score > best:
            best, best_w = score, avg.copy()
    return TuneResult(best_w, best, history)


def tune_pro(kb: KbestLists, w0: np.ndarray, samples: int = 5000, keep: int = 50, min_diff: float = 0.05,
             seed: int = 0, config: Optional[BleuConfig] = None, interpolate: float = 1.0) -> TuneResult:
    """PRO (Hopkins & May 2011): per segment sample ``samples`` pairs, keep the ``keep`` with the
    largest BLEU+1 difference above ``min_diff``, fit a logistic regression without bias on
    feature differences (Newton's method). Between decoding runs Moses interpolates the result
    with the previous weights (``interpolate=0.1``); on fixed lists the default keeps it whole."""
    cfg = config or BleuConfig()
    bleu = sentence_scores(kb.stats, compat="moses")
    rng = np.random.default_rng(seed)
    sizes = np.diff(kb.seg_ptr)
    seg = np.repeat(np.arange(len(sizes)), samples)
    i = kb.seg_ptr[seg] + (rng.random(len(seg)) * sizes[seg]).astype(np.int64)
    j = kb.seg_ptr[seg] + (rng.random(len(seg)) * sizes[seg]).astype(np.int64)
    diff = np.abs(bleu[i] - bleu[j])
    ok = diff > min_diff
    seg, i, j, diff = seg[ok], i[ok], j[ok], diff[ok]
    order = np.lexsort((-diff, seg))  # per segment, largest difference first
    seg, i, j = seg[order], i[order], j[order]
    rank = np.arange(len(seg)) - np.searchsorted(seg, seg)
    take = rank < keep
    i, j = i[take], j[take]
    if len(i) == 0:
        raise InputError("PRO: no hypothesis pair differs by more than min_diff in BLEU+1; nothing to learn from")
    sign = np.where(bleu[i] > bleu[j], 1.0, -1.0)
    x = np.concatenate([(kb.features[i] - kb.features[j]) * sign[:, None],
                        (kb.features[j] - kb.features[i]) * sign[:, None]])
    y = np.r_[np.ones(len(i)), np.zeros(len(i))]
    w_new = _logistic_regression(x, y)
    w = interpolate * w_new + (1 - interpolate) * np.asarray(w0, np.float64)
    score = kb.corpus_bleu(kb.one_best(w), cfg)
    return TuneResult(w, score, [score])


def _logistic_regression(x: np.ndarray, y: np.ndarray, l2: float = 1e-6, iters: int = 50) -> np.ndarray:
    """Weights of a logistic regression without bias (Newton / IRLS with a tiny L2 for stability)."""
    w = np.zeros(x.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def tune_expected_bleu(lists: Sequence[KbestLists], w0: np.ndarray, lam: float = 10.0, epochs: int = 20,
                       batch: int = 16, lr: float = 0.05, seed: int = 0,
                       config: Optional[BleuConfig] = None) -> TuneResult:
    """Expected-BLEU training (seed paper section 3.2): minimize lam ||w||^2 - sum_i len(R_i)
    E_P[BLEU_i] by stochastic gradient descent over minibatches of segments (Adam step sizes),
    with the MERT-like outer loop: at outer iteration t the K-best lists of iterations 1..t are
    merged (de-duplicated) and training continues from the current weights."""
    cfg = config or BleuConfig()
    w = np.array(w0, np.float64)
    rng = np.random.default_rng(seed)
    history = []
    pool = None
    for kb_t in lists:
        pool = kb_t if pool is None else pool.merge(kb_t)
        bleu = sentence_scores(pool.stats, cfg)
        mom, vel, step = np.zeros_like(w), np.zeros_like(w), 0
        n_seg = len(pool.seg_ptr) - 1
        for _ in range(epochs):
            for part in np.array_split(rng.permutation(n_seg), max(1, n_seg // batch)):
                mask = np.zeros(n_seg, bool)
                mask[part] = True
                _, g = expected_bleu(pool, w, bleu, lam * len(part) / n_seg, mask)
                g /= pool.ref_len[part].sum()  # per reference token: the step size does not depend on the batch
                step += 1
                mom = 0.9 * mom + 0.1 * g
                vel = 0.999 * vel + 0.001 * g * g
                w -= lr * (mom / (1 - 0.9 ** step)) / (np.sqrt(vel / (1 - 0.999 ** step)) + 1e-8)
        history.append(pool.corpus_bleu(pool.one_best(w), cfg))
    return TuneResult(w, history[-1], history)
