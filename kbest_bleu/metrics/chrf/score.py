"""chrF / chrF++ of hypothesis rows and K-best segments, equal to sacrebleu 2.6.0's ``CHRF``: the
Python API and the :class:`~kbest_bleu.metrics.base.Metric` of ``kbest-bleu score --metric chrf``.

chrF (Popovic 2015) is the F-beta score of character n-gram precision and recall, averaged over the
orders; chrF++ (Popovic 2017) adds word n-grams. As sacrebleu computes it (``CHRF``): per order the
hypothesis count, the reference count and the clipped matches (the hypothesis count is 0 where the
reference has no n-gram of that order); a sentence is scored against each of its references and
keeps the statistics of the one with the highest F (the first on ties); a corpus score is the F of
the summed statistics. With no reference a row scores 0, as against one empty reference.

Scores are 0-1 (sacrebleu prints 100 times these). The counting runs in numba (:mod:`._kernels`),
parallel over segments; the F-score is vectorized numpy over the integer statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...encode import hypotheses_array, is_token_lists, list_offsets, references_array
from ...errors import InputError
from ...stats import check_group_pointers
from ...tokenize import lowercase as lowercase_column
from ..base import SegmentMetric
from . import _kernels
from .params import ChrfParams, chrf_params

__all__ = ["Chrf", "ChrfResult", "chrf_from_stats", "chrf_rows", "chrf_scores", "chrf_segments", "corpus_chrf",
           "from_options", "sentence_chrf"]

_EPS = 1e-16  # sacrebleu's CHRF._compute_f_score
_MAX_NODES = 2 ** 31 - 1  # n-gram ids of one segment are int32; keys pack two of them


@dataclass(frozen=True)
class ChrfResult:
    """chrF of H rows against their best reference.

    score : float64[H], 0-1 (sacrebleu's ``CHRF.sentence_score`` / 100).
    stats : int64[H, 3 * (char_order + word_order)], per order (characters 1..n, then words 1..n)
        the hypothesis n-grams, the reference n-grams and the clipped matches, as sacrebleu's
        ``_get_match_statistics`` for the best reference.
    best_reference : int64[H], that reference's index in the row's references; -1 where none.
    """

    score: np.ndarray
    stats: np.ndarray
    best_reference: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    def take(self, rows: Any) -> "ChrfResult":
        """The rows selected by an integer index array or a boolean mask (e.g. the 1-best rows)."""
        return ChrfResult(self.score[rows], self.stats[rows], self.best_reference[rows])


def chrf_from_stats(stats: Any, params: ChrfParams | None = None) -> np.ndarray:
    """chrF (0-1) from statistics int[..., 3 * orders] (the layout of :attr:`ChrfResult.stats`).

    sacrebleu's ``CHRF._compute_f_score`` vectorized, operation for operation in the same order, so
    that 100 times a value is sacrebleu's to the bit (eps smoothing: within an ulp). A corpus score
    is ``chrf_from_stats(stats.sum(axis=0))``."""
    params = params or chrf_params()
    st = np.asarray(stats)
    if st.shape[-1:] != (3 * params.orders,) or not np.issubdtype(st.dtype, np.integer) or (st < 0).any():
        raise InputError(f"chrF statistics: expected non-negative integers [..., {3 * params.orders}] (3 per order "
                         f"for char_order {params.char_order} + word_order {params.word_order}), found {st.dtype} "
                         f"{st.shape}")
    return _f_scores(st.reshape(-1, st.shape[-1]), params, 1).reshape(st.shape[:-1])


def _f_scores(stats: np.ndarray, params: ChrfParams, hundred: int) -> np.ndarray:
    """``hundred`` (1 or 100: sacrebleu's scale) x chrF of statistics int[n, 3 * orders]."""
    n_ord = params.orders
    st = stats.reshape(-1, n_ord, 3).astype(np.float64)
    factor = params.beta ** 2  # an int for an int beta, as in sacrebleu
    score = np.zeros(len(st))
    avg_prec = np.zeros(len(st))
    avg_rec = np.zeros(len(st))
    effective = np.zeros(len(st), np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n_ord):
            n_hyp, n_ref, n_match = st[:, i, 0], st[:, i, 1], st[:, i, 2]
            prec = np.where(n_hyp > 0, n_match / n_hyp, _EPS)
            rec = np.where(n_ref > 0, n_match / n_ref, _EPS)
            denom = factor * prec + rec
            score += np.where(denom > 0, (1 + factor) * prec * rec / denom, _EPS)
            both = (n_hyp > 0) & (n_ref > 0)
            avg_prec += np.where(both, prec, 0.0)  # x + 0.0 is x: the same sum as adding only these
            avg_rec += np.where(both, rec, 0.0)
            effective += both
        if params.eps_smoothing:
            return hundred * score / n_ord
        avg_prec = np.where(effective > 0, avg_prec / effective, 0.0)
        avg_rec = np.where(effective > 0, avg_rec / effective, 0.0)
        f = (1 + factor) * avg_prec * avg_rec
        f /= (factor * avg_prec) + avg_rec
    return np.where(avg_prec + avg_rec != 0, hundred * f, 0.0)


def _best(pair_stats: np.ndarray, n_pairs: np.ndarray, params: ChrfParams) -> tuple[np.ndarray, np.ndarray]:
    """Each row's statistics of its best reference and that reference's index (-1: none): the highest
    F as sacrebleu compares it (its 0-100 value), the first on ties. n_pairs int64[H]: references per row."""
    n_rows = len(n_pairs)
    if len(pair_stats) == n_rows and (n_pairs == 1).all():
        return pair_stats, np.zeros(n_rows, np.int64)
    stats = np.zeros((n_rows, pair_stats.shape[1]), np.int64)
    best = np.full(n_rows, -1, np.int64)
    has = n_pairs > 0
    if not has.any():
        return stats, best
    starts = (np.cumsum(n_pairs) - n_pairs)[has]
    keys = _f_scores(pair_stats, params, 100)
    top = np.repeat(np.maximum.reduceat(keys, starts), n_pairs[has])
    first = np.minimum.reduceat(np.where(keys == top, np.arange(len(keys)), len(keys)), starts)
    stats[has] = pair_stats[first]
    best[has] = first - starts
    return stats, best


def _text_column(values: Any, what: str) -> pa.Array:
    """Strings (list, numpy, pandas or Arrow) as a validated Arrow large_string array; ``what``
    names them in messages. Token lists are refused: chrF reads the text itself."""
    arr = hypotheses_array(values)
    if is_token_lists(arr.type):
        raise InputError(f"chrF: expected {what} as strings, found token lists; join the tokens with spaces")
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr.cast(pa.large_string())


def _text_buffers(strings: pa.Array, params: ChrfParams) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes uint8, offsets int64[n+1]) of a large_string array, lowercased first if asked
    (Python's ``str.lower``, as sacrebleu); the bytes read-only, so the kernels compile once."""
    if params.lowercase and len(strings):
        strings = lowercase_column(strings).cast(pa.large_string())
    if len(strings) == 0:
        data, off = np.zeros(1, np.uint8), np.zeros(1, np.int64)
    else:  # offsets into the whole data buffer (a sliced array keeps its parent's)
        _, off_buf, data_buf = strings.buffers()
        off = np.frombuffer(off_buf, np.int64)[strings.offset:strings.offset + len(strings) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and data_buf.size else np.zeros(1, np.uint8)
    data.setflags(write=False)
    return data, np.ascontiguousarray(off, np.int64)


def _flat_references(references: Any) -> tuple[pa.Array, np.ndarray]:
    refs = references_array(references)
    flat = pc.list_flatten(refs)
    if is_token_lists(flat.type):
        raise InputError("chrF: expected references as strings, found token lists; join the tokens with spaces")
    if pa.types.is_dictionary(flat.type):
        flat = flat.dictionary_decode()
    flat = flat.cast(pa.large_string()) if len(flat) else pa.array([], pa.large_string())
    return flat, list_offsets(refs)


def _first_copies(strings: pa.Array, seg_ptr: np.ndarray) -> np.ndarray:
    """int64[n]: for each row, the first row of its segment holding the same text (itself if none)."""
    if len(strings) == 0:
        return np.zeros(0, np.int64)
    ids = pc.dictionary_encode(strings).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    seg = np.repeat(np.arange(len(seg_ptr) - 1, dtype=np.int64), np.diff(seg_ptr))
    _, first, inverse = np.unique(seg * (int(ids.max()) + 1) + ids, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


def _check_segment_size(off: np.ndarray, ptr: np.ndarray, params: ChrfParams, what: str) -> None:
    """Each segment's n-gram ids must fit int32: at most (orders + 1) per byte of its text."""
    per_segment = off[ptr[1:]] - off[ptr[:-1]]
    if len(per_segment) and int(per_segment.max()) * (params.orders + 1) + 1 >= _MAX_NODES:
        s = int(np.argmax(per_segment))
        raise InputError(f"chrF: segment {s} holds {int(per_segment[s]):,} bytes of {what}; expected fewer than "
                         f"{_MAX_NODES // (params.orders + 1):,} per segment (n-gram ids are 32-bit); split it")


def chrf_segments(hypotheses: Any, references: Any, seg_ptr: Any, params: ChrfParams | None = None,
                  **options: Any) -> ChrfResult:
    """chrF of K-best lists: every hypothesis against its segment's references.

    Parameters
    ----------
    hypotheses : H strings (list, numpy, pandas or Arrow).
    references : S lists of reference strings, one per segment (a bare string is one reference).
    seg_ptr : int64[S+1], rows seg_ptr[s]:seg_ptr[s+1] are the hypotheses of segment s.
    params : :func:`~kbest_bleu.metrics.chrf.params.chrf_params`, or its keywords as ``options``
        (char_order=6, word_order=0, beta=2, whitespace=False, lowercase=False, eps_smoothing=False).

    Each segment's references are counted once; a hypothesis repeated in its segment is counted once.
    """
    params = params or chrf_params(**options)
    hyps = _text_column(hypotheses, "hypotheses")
    flat, ref_ptr = _flat_references(references)
    ptr = check_group_pointers(seg_ptr, len(hyps), len(ref_ptr) - 1, "chrF seg_ptr")
    hdata, hoff = _text_buffers(hyps, params)
    rdata, roff = _text_buffers(flat, params)
    _check_segment_size(roff, ref_ptr, params, "references")
    longest = max(int(np.diff(hoff).max(initial=0)), int(np.diff(roff).max(initial=0)))
    n_pairs = np.repeat(np.diff(ref_ptr), np.diff(ptr))
    pair_ptr = np.zeros(len(hyps) + 1, np.int64)
    np.cumsum(n_pairs, out=pair_ptr[1:])
    pair_stats = _kernels.segment_stats(hdata, hoff, rdata, roff, ptr, ref_ptr, _first_copies(hyps, ptr), pair_ptr,
                                        params.char_order, params.word_order, params.whitespace, longest)
    stats, best = _best(pair_stats, n_pairs, params)
    return ChrfResult(_f_scores(stats, params, 1), stats, best)


def chrf_scores(hypotheses: Any, references: Any, params: ChrfParams | None = None, **options: Any) -> np.ndarray:
    """chrF (0-1) of H hypotheses, each against its own list of references (H lists; a bare string
    is one reference): float64[H]. Options as :func:`chrf_segments`."""
    return chrf_rows(hypotheses, references, params, **options).score


def chrf_rows(hypotheses: Any, references: Any, params: ChrfParams | None = None, **options: Any) -> ChrfResult:
    """:class:`ChrfResult` of H hypotheses, each against its own list of references."""
    n = len(_text_column(hypotheses, "hypotheses"))
    n_refs = len(references_array(references))
    if n_refs != n:
        raise InputError(f"chrF: expected one list of references per hypothesis ({n}), found {n_refs}")
    return chrf_segments(hypotheses, references, np.arange(n + 1, dtype=np.int64), params, **options)


def sentence_chrf(hypothesis: str, references: str | list[str], params: ChrfParams | None = None,
                  **options: Any) -> float:
    """chrF (0-1) of one hypothesis against one reference or a list of them (sacrebleu's
    ``CHRF(...).sentence_score(hypothesis, references).score / 100``)."""
    if not isinstance(references, (str, list, tuple)):
        raise InputError(f"references: expected a string or a list of strings, found {type(references).__name__} "
                         f"({references!r:.60})")
    refs = [references] if isinstance(references, str) else list(references)
    return float(chrf_segments([hypothesis], [refs], np.array([0, 1], np.int64), params, **options).score[0])


def corpus_chrf(hypotheses: Any, references: Any, params: ChrfParams | None = None, **options: Any) -> float:
    """Corpus chrF (0-1): the F of the statistics summed over the rows, each row's from its best
    reference (sacrebleu's ``CHRF(...).corpus_score`` / 100). ``references``: one list per hypothesis.
    For K-best lists, select the rows first: ``chrf_from_stats(result.stats[rows].sum(axis=0))``."""
    params = params or chrf_params(**options)
    return float(chrf_from_stats(chrf_rows(hypotheses, references, params).stats.sum(axis=0), params))


@dataclass(frozen=True)
class Chrf(SegmentMetric):
    """chrF as a :class:`~kbest_bleu.metrics.base.Metric` (picklable: the options only)."""

    params: ChrfParams
    name: str = "chrf"

    def input_columns(self) -> list[str]:
        return []

    def output_fields(self, stats: bool) -> list[pa.Field]:
        """``chrf`` (0-1), with ``stats`` also ``chrf_<order>_{hyp,ref,match}`` per order (c1.., w1..)."""
        fields = [pa.field(self.name, pa.float64())]
        if stats:
            fields += [pa.field(f"{self.name}_{o}_{x}", pa.int64()) for o in self.params.order_names()
                       for x in ("hyp", "ref", "match")]
        return fields

    def signature(self) -> str:
        return self.params.signature()

    def statistics(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                   table: pa.Table) -> ChrfResult:  # noqa: ARG002 (the Metric interface)
        return chrf_segments(hypotheses, references, seg_ptr, self.params)

    def compute(self, statistics: ChrfResult, stats: bool) -> list[pa.Array]:
        arrays = [pa.array(statistics.score)]
        if stats:
            arrays += [pa.array(np.ascontiguousarray(statistics.stats[:, k])) for k in range(statistics.stats.shape[1])]
        return arrays

    def totals(self, statistics: ChrfResult, rows: np.ndarray) -> np.ndarray:
        """int64 [3 * orders]: the rows' statistics summed (each against its best reference)."""
        return statistics.stats[rows].sum(axis=0, dtype=np.int64)

    def corpus(self, totals: np.ndarray) -> float:
        """Corpus chrF of summed statistics, as :func:`corpus_chrf` (sacrebleu's ``corpus_score``)."""
        return float(chrf_from_stats(totals, self.params))


def from_options(char_order: int = 6, word_order: int = 0, beta: float = 2, whitespace: bool = False,
                 lowercase: bool = False, eps_smoothing: bool = False) -> Chrf:
    """The ``chrf`` metric of the registry (options as :func:`~kbest_bleu.metrics.chrf.params.chrf_params`)."""
    return Chrf(chrf_params(char_order, word_order, beta, whitespace, lowercase, eps_smoothing))
