"""BLEU2VEC scores of K-best lists: the faithful (bc4.py) and corrected modes, the Metric object.

Paper: Taettar & Fishel (WMT 2017), section 3. Every hypothesis n-gram found in the reference is
precise with weight 1 (clipped as in BLEU); the others are paired greedily, most similar pair
first, with same-length reference n-grams, each pair weighing the cosine of their embeddings;
p_n = (exact + fuzzy) / hypothesis n-grams, combined as BLEU with a brevity penalty.
The differences between the two modes are tabled in docs/bleu2vec.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...config import BleuConfig, __version__
from ...encode import (
    hypotheses_array,
    is_token_lists,
    list_offsets,
    references_array,
    segment_pointers,
    segment_references,
)
from ...errors import InputError
from ...smoothing import sacrebleu_bleu
from ...tokenize import TOKENIZERS, prepare, split_ids
from ..base import SegmentMetric
from . import _kernels
from .models import Embeddings, load_embeddings

__all__ = ["Bleu2vec", "bleu2vec_scores", "faithful_combine", "from_options", "sentence_bleu2vec"]

MODES = ("corrected", "faithful")
FAITHFUL_WEIGHTS = (0.33, 0.34, 0.33)  # the authors' scoring scripts
FAITHFUL_FUZZY_ORDERS = 3  # bc4.py: orders above 3 are NLTK's plain clipped precision
_NO_VECTORS = np.zeros((0, 1), np.float32)


@dataclass(frozen=True)
class Bleu2vec(SegmentMetric):
    """A built BLEU2VEC metric (a :class:`kbest_bleu.metrics.Metric`): options plus the
    normalised float32 embedding matrices, picklable as it is (Spark ships it to workers).

    mode : "corrected" or "faithful"
    weights : one weight per order, orders 1..len(weights)
    config : the core BLEU options of corrected mode (smoothing 0-7, epsilon, k, alpha)
    min_similarity : corrected: fuzzy pairs with a lower cosine are not taken
    tokenize : core tokenizer (faithful: "none", the whitespace split of the gold files)
    """

    embeddings: Embeddings
    mode: str = "corrected"
    weights: tuple = (1 / 3, 1 / 3, 1 / 3)
    config: Optional[BleuConfig] = None
    min_similarity: float = 0.0
    tokenize: str = "13a"
    name: str = "bleu2vec"

    @property
    def max_order(self) -> int:
        return len(self.weights)

    def input_columns(self) -> list[str]:
        return []

    def output_fields(self, stats: bool) -> list[pa.Field]:
        fields = [pa.field("bleu2vec", pa.float64())]
        if stats:
            for n in range(1, self.max_order + 1):
                fields += [pa.field(f"bleu2vec_exact_{n}", pa.float64()), pa.field(f"bleu2vec_fuzzy_{n}", pa.float64()),
                           pa.field(f"bleu2vec_ngrams_{n}", pa.float64())]
            fields += [pa.field("bleu2vec_hyp_len", pa.float64()), pa.field("bleu2vec_ref_len", pa.float64())]
        return fields

    def signature(self) -> str:
        w = ",".join(f"{x:g}" for x in self.weights)
        parts = [f"bleu2vec|mode:{self.mode}|orders:{self.max_order}|w:{w}"]
        if self.mode == "corrected":
            parts.append(f"s:{self.config.smoothing_label()}|eff:yes|minsim:{self.min_similarity:g}")
        kind = "joint" if self.embeddings.joint else "sep"
        parts.append(f"tok:{self.tokenize}|emb:{kind}:{self.embeddings.fingerprint}|version:{__version__}")
        return "|".join(parts)

    def counts(self, hypotheses: pa.Array, seg_refs: pa.Array, seg_ptr: np.ndarray) -> tuple:
        """Per-order statistics of whole segments.

        Returns counts float64 [H, 3 * N'] (exact, fuzzy, hypothesis n-grams of orders 1..N',
        N' = N + 1 for smoothings 5 and 7, which read order N+1), c and r float64 [H].
        """
        ids, ptr, vocab = _tokens(hypotheses, seg_refs, self.tokenize)
        n_hyp = len(hypotheses)
        ref_ptr = list_offsets(seg_refs)
        seg_ptr = np.ascontiguousarray(seg_ptr, dtype=np.int64)
        sizes = (ptr[seg_ptr[1:]] - ptr[seg_ptr[:-1]]) + (ptr[n_hyp + ref_ptr[1:]] - ptr[n_hyp + ref_ptr[:-1]])
        type_base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        faithful = self.mode == "faithful"
        top = self.max_order + (1 if not faithful and self.config.smoothing in (5, 7) else 0)
        out = np.zeros((n_hyp, 3 * top))
        for n in range(1, top + 1):
            gram, rep, n_types = _kernels.intern_ngrams(ids, ptr, seg_ptr, ref_ptr, n_hyp, n, type_base)
            fuzzy = self.embeddings.has_order(n) and not (faithful and n > FAITHFUL_FUZZY_ORDERS)
            type_emb = _type_rows(self.embeddings, ids, vocab, rep, n_types, type_base, n) if fuzzy else \
                np.full(len(rep), -1, np.int64)
            matrix = self.embeddings.matrix(n) if fuzzy else _NO_VECTORS
            # faithful orders above 3: bc4.py falls back to NLTK's clipped precision over all references
            mode = _kernels.MODE_FAITHFUL if faithful and n <= FAITHFUL_FUZZY_ORDERS else _kernels.MODE_CORRECTED
            min_sim = self.min_similarity if fuzzy else np.inf
            _kernels.order_counts(ids, ptr, gram, type_emb, type_base, n_types, matrix, seg_ptr, ref_ptr, n_hyp, n,
                                  mode, float(min_sim), out, 3 * (n - 1))
        c, r = _kernels.lengths(ptr, seg_ptr, ref_ptr, n_hyp)
        return out, c, r

    def scores(self, counts: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
        """BLEU2VEC per row from :meth:`counts`: float64 [H]."""
        m = counts[:, 0::3] + counts[:, 1::3]
        ngrams = counts[:, 2::3]
        if self.mode == "faithful":
            return faithful_combine(m, ngrams, c, r, self.weights)
        # effective order, as sacrebleu's sentence BLEU: orders the hypothesis has no n-gram of are dropped
        bleu, _, _ = sacrebleu_bleu(m, ngrams, c, r, self.config, True)
        return bleu

    def statistics(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                   table: Optional[pa.Table] = None) -> tuple:  # noqa: ARG002 (the Metric interface)
        """:meth:`counts` of rows of whole segments (the batch job's entry point; see :class:`Metric`)."""
        return self.counts(hypotheses, references, seg_ptr)

    def compute(self, statistics: tuple, stats: bool) -> list[pa.Array]:
        counts, c, r = statistics
        out = [pa.array(self.scores(counts, c, r))]
        if stats:
            out += [pa.array(counts[:, k]) for k in range(3 * self.max_order)] + [pa.array(c), pa.array(r)]
        return out


def faithful_combine(m: np.ndarray, ngrams: np.ndarray, c: np.ndarray, r: np.ndarray,
                     weights: Sequence[float]) -> np.ndarray:
    """bc4.py's ``corpus_bleu`` for one sentence: float64 [H] from m, ngrams float64 [H, N].

    p_n = m_n / ngrams_n (0 when there are none; orders above 3 divide by max(1, ngrams_n));
    0 when m_1 == 0; NLTK 3.2's method0 keeps the precisions up to the first p_n <= 0 and sums
    w_n log p_n over those without renormalising (none kept: the score is the brevity penalty);
    BP = 1 if c > r, 0 if c == 0, else exp(1 - r / c).
    """
    n = len(weights)
    den = ngrams[:, :n].copy()
    den[:, FAITHFUL_FUZZY_ORDERS:] = np.maximum(den[:, FAITHFUL_FUZZY_ORDERS:], 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(den > 0, m[:, :n] / den, 0.0)
    kept = np.cumprod(p > 0, axis=1).astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(kept, np.log(np.where(kept, p, 1.0)), 0.0)
    s = logs @ np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(c > r, 1.0, np.where(c == 0, 0.0, np.exp(1.0 - r / np.where(c == 0, 1.0, c))))
    return np.where(m[:, 0] == 0, 0.0, bp * np.exp(s))


def _tokens(hypotheses: pa.Array, seg_refs: pa.Array, tokenize: str) -> tuple:
    """Token ids int32[T], row pointers int64[H+R+1] (hypotheses, then the flat references) and the
    vocabulary (string array) with the core's exact interning; pre-tokenized lists kept as they are."""
    flat = pc.list_flatten(seg_refs)
    if pa.types.is_null(flat.type):
        flat = flat.cast(pa.string())
    if is_token_lists(hypotheses.type) or is_token_lists(flat.type):
        rows = [hypotheses if is_token_lists(hypotheses.type) else pc.split_pattern(hypotheses, " "),
                flat if is_token_lists(flat.type) else pc.split_pattern(flat, " ")]
        tokens = pa.concat_arrays([pc.list_flatten(x).cast(pa.large_string()) for x in rows])
        enc = tokens.dictionary_encode()
        ptr = np.concatenate([list_offsets(rows[0]), list_offsets(rows[1])[1:] + len(pc.list_flatten(rows[0]))])
        return enc.indices.to_numpy().astype(np.int32), ptr.astype(np.int64), enc.dictionary
    both = pa.concat_arrays([hypotheses.cast(pa.large_string()), flat.cast(pa.large_string())])
    ids, ptr, vocab = split_ids(*prepare(both, tokenize))
    return ids, np.ascontiguousarray(ptr, dtype=np.int64), vocab


def _type_rows(emb: Embeddings, ids: np.ndarray, vocab: pa.Array, rep: np.ndarray, n_types: np.ndarray,
               type_base: np.ndarray, n: int) -> np.ndarray:
    """Embedding row of every segment-local n-gram type (-1: unknown): its tokens joined with ``_``
    (paper section 2.1) looked up in the order-n model."""
    valid = np.repeat(type_base[:-1], n_types) + (np.arange(n_types.sum()) - np.repeat(np.cumsum(n_types) - n_types,
                                                                                        n_types))
    rows = np.full(len(rep), -1, np.int64)
    rows[valid] = emb.ngram_rows(ids, rep[valid], vocab, n)
    return rows


def _weights(weights: Any, max_order: Optional[int], default: tuple) -> tuple:
    if isinstance(weights, str):
        try:
            weights = [float(x) for x in weights.split(",")]
        except ValueError:
            raise InputError(f"bleu2vec weights: expected comma-separated numbers, found {weights!r}") from None
    if weights is None:
        n = max_order or len(default)
        return default if n == len(default) else tuple([1.0 / n] * n)
    w = tuple(float(x) for x in weights)
    # finite: an infinite weight times a zero log precision is NaN in the scores
    if (not w or any(not 0 <= x < float("inf") for x in w) or (max_order is not None and len(w) != max_order)
            or not 0 < sum(w) < float("inf")):
        raise InputError(f"bleu2vec weights: expected {max_order or 'one per order'} non-negative weights (finite, "
                         f"with a positive sum), found {weights!r}")
    return w


def from_options(embeddings: "str | Path | Embeddings | None" = None, mode: str = "corrected",
                 max_order: Optional[int] = None, weights: Any = None, smoothing: Any = None,
                 min_similarity: float = 0.0, tokenize: Optional[str] = None, epsilon: float = 0.1,
                 k: float = 5.0, alpha: float = 5.0) -> Bleu2vec:
    """Build the BLEU2VEC metric (registered as ``bleu2vec`` in :data:`kbest_bleu.metrics.REGISTRY`).

    Parameters
    ----------
    embeddings : model directory (see :func:`load_embeddings`) or loaded :class:`Embeddings`
    mode : "corrected" (default) or "faithful" (the authors' bc4.py number for number)
    max_order, weights : orders 1..N and their weights (faithful default 0.33, 0.34, 0.33;
        corrected default N = 3, uniform); a string "0.3,0.4,0.3" is accepted
    smoothing, epsilon, k, alpha : corrected only: Chen & Cherry smoothing 0-7 of the core on
        the real-valued counts (default 3, "exp", sacrebleu's sentence-level default), with
        sacrebleu's effective order (orders without hypothesis n-grams dropped, weights renormalised)
    min_similarity : corrected only: fuzzy pairs below this cosine are not taken (cosines are
        clipped at 0 in any case)
    tokenize : corrected: a core tokenizer (default 13a); faithful: "none" (whitespace split)
    """
    if embeddings is None:
        raise InputError("bleu2vec: expected embeddings (a model directory, e.g. --embeddings DIR), found none; "
                         "train one with 'kbest-bleu bleu2vec train'")
    emb = embeddings if isinstance(embeddings, Embeddings) else load_embeddings(embeddings)
    if mode not in MODES:
        raise InputError(f"bleu2vec mode: expected one of {', '.join(MODES)}, found {mode!r}")
    if mode == "faithful":
        for name, value, ok in (("smoothing", smoothing, (None, 0, "0", "none")),
                                ("min_similarity", min_similarity, (0, 0.0)), ("tokenize", tokenize, (None, "none"))):
            if value not in ok:
                raise InputError(f"bleu2vec {name}: the faithful mode reproduces bc4.py, which has no such option "
                                 f"(found {value!r}); use mode='corrected'")
        return Bleu2vec(emb, "faithful", _weights(weights, max_order, FAITHFUL_WEIGHTS), None, 0.0, "none")
    w = _weights(weights, max_order, (1 / 3, 1 / 3, 1 / 3))
    cfg = BleuConfig(compat="sacrebleu", smoothing=3 if smoothing is None else smoothing, epsilon=epsilon, k=k,
                     alpha=alpha, max_order=len(w), weights=w, effective_order=True)
    tok = "13a" if tokenize is None else tokenize
    if tok not in TOKENIZERS:
        raise InputError(f"bleu2vec tokenize: expected one of {', '.join(TOKENIZERS)}, found {tok!r}")
    if not np.isfinite(min_similarity) or not -1.0 <= min_similarity <= 1.0:
        raise InputError(f"bleu2vec min_similarity: expected a cosine in [-1, 1], found {min_similarity!r}")
    return Bleu2vec(emb, "corrected", w, cfg, float(min_similarity), tok)


def bleu2vec_scores(hypotheses: Any, references: Any, segments: Any = None, *, embeddings: Any,
                    mode: str = "corrected", stats: bool = False, **options: Any) -> Any:
    """BLEU2VEC of every hypothesis of K-best lists.

    Parameters
    ----------
    hypotheses : strings (list, numpy or pyarrow array) [H], or lists of tokens
    references : per row [H] or per segment [S]: a string or a list of strings each
    segments : segment id per row (contiguous runs); None = every row its own segment
    embeddings, mode, options : see :func:`from_options`
    stats : also return the per-order counts (float64 [H, 3N]: exact, fuzzy, n-grams per order)

    Returns
    -------
    float64 [H] scores (and the counts with ``stats``).
    """
    metric = from_options(embeddings, mode, **options)
    hyp = hypotheses_array(hypotheses)
    seg_ptr = segment_pointers(segments, len(hyp))
    seg_refs = segment_references(references_array(references), seg_ptr, len(hyp))
    counts, c, r = metric.counts(hyp, seg_refs, seg_ptr)
    scores = metric.scores(counts, c, r)
    return (scores, counts[:, :3 * metric.max_order]) if stats else scores


def sentence_bleu2vec(hypothesis: str, references: "str | Sequence[str]", *, embeddings: Any,
                      mode: str = "corrected", **options: Any) -> float:
    """BLEU2VEC of one hypothesis against its reference(s); options as :func:`from_options`."""
    refs = [references] if isinstance(references, str) else list(references)
    return float(bleu2vec_scores([hypothesis], [refs], embeddings=embeddings, mode=mode, **options)[0])
