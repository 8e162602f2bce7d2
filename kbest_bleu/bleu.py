"""Sentence, corpus and document BLEU from statistics, and the one-call conveniences.

The three steps of DESIGN.md section 2 are public: ``stats = ngram_stats(...)``,
``sentence_scores(stats)`` per row, ``corpus_score(stats)`` on the column sums.
All scores are on the 0-1 scale.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numba
import numpy as np

from .config import BleuConfig
from .errors import InputError
from .smoothing import PRESETS
from .stats import BleuStats, check_group_pointers, ngram_stats

__all__ = ["BleuResult", "corpus_bleu", "corpus_score", "document_score", "score_kbest", "score_rows",
           "sentence_bleu", "sentence_scores"]


@dataclass(frozen=True)
class BleuResult:
    """A corpus-level BLEU score with its parts (0-1 scale) and signature."""

    score: float
    precisions: tuple
    bp: float
    hyp_len: int
    ref_len: int
    signature: str

    def __str__(self) -> str:
        prec = "/".join(f"{100 * p:.1f}" for p in self.precisions)
        ratio = self.hyp_len / self.ref_len if self.ref_len else 0.0
        return (f"BLEU = {100 * self.score:.2f} {prec} (BP = {self.bp:.3f} ratio = {ratio:.3f} "
                f"hyp_len = {self.hyp_len} ref_len = {self.ref_len}) {self.signature}")

    def to_dict(self) -> dict:
        return {"score": self.score, "precisions": list(self.precisions), "bp": self.bp,
                "hyp_len": self.hyp_len, "ref_len": self.ref_len, "signature": self.signature}


_CHUNK_ROWS = 32768  # smoothing runs on row chunks of at least this size in threads


def _preset_scores(stats: BleuStats, cfg: BleuConfig, level: str):
    """(bleu float64[H], precisions float64[H, N], bp float64[H]) of every row of ``stats`` under
    ``cfg`` at ``level`` ("sentence" or "corpus": decides the default effective order)."""
    if stats.max_order < cfg.max_order:
        raise InputError(f"the statistics hold orders up to {stats.max_order} (+1) but max_order is "
                         f"{cfg.max_order}; recompute them with max_order >= {cfg.max_order}")
    preset = PRESETS[cfg.compat]
    return preset(stats.matches.astype(np.float64), stats.totals.astype(np.float64),
                  stats.hyp_len.astype(np.float64), stats.ref_len.astype(np.float64), cfg, cfg.effective(level))


def score_rows(stats: BleuStats, cfg: BleuConfig, level: str) -> np.ndarray:
    """BLEU of every row of ``stats`` under ``cfg`` at ``level`` (see :func:`_preset_scores`): float64[H].

    Rows are independent, so large inputs are cut into chunks scored on numba's thread count
    (numpy releases the GIL); only the scores are gathered, not the precisions.
    """
    n_threads = numba.get_num_threads()
    if len(stats) < 2 * _CHUNK_ROWS or n_threads == 1:
        return _preset_scores(stats, cfg, level)[0]
    size = max(_CHUNK_ROWS, -(-len(stats) // n_threads))
    with ThreadPoolExecutor(n_threads) as pool:
        return np.concatenate(list(pool.map(lambda a: _preset_scores(stats[a:a + size], cfg, level)[0],
                                            range(0, len(stats), size))))


def sentence_scores(stats: BleuStats, config: Optional[BleuConfig] = None, **options: Any) -> np.ndarray:
    """Sentence BLEU of every row of ``stats``: float64[H], 0-1 scale.

    ``options`` are :class:`~kbest_bleu.config.BleuConfig` fields (compat, smoothing, ...);
    effective order defaults to on, as sacrebleu's ``sentence_bleu``.
    """
    return score_rows(stats, BleuConfig.make(config, **options), "sentence")


def corpus_score(stats: BleuStats, config: Optional[BleuConfig] = None, **options: Any) -> BleuResult:
    """Corpus BLEU of the summed statistics (smoothing applies to the sums, as sacrebleu)."""
    cfg = BleuConfig.make(config, **options)
    total = stats.sum()
    bleu, p, bp = _preset_scores(total, cfg, "corpus")
    return BleuResult(float(bleu[0]), tuple(float(x) for x in p[0]), float(bp[0]), int(total.hyp_len[0]),
                      int(total.ref_len[0]), cfg.signature("corpus"))


def document_score(stats: BleuStats, groups: Any = None, config: Optional[BleuConfig] = None,
                   **options: Any) -> Any:
    """Document-level BLEU (seed paper Eq. 13): sum_i |R_i| BLEU_i / sum_i |R_i|.

    BLEU_i is the sentence BLEU of row i, |R_i| its reference length. ``groups``: None for one
    value over all rows, or int64[G+1] row pointers (rows ptr[g]:ptr[g+1] form document g) for
    float64[G]. A group whose reference lengths sum to 0 scores 0.
    """
    bleu = sentence_scores(stats, config, **options)
    r = stats.ref_len.astype(np.float64)
    if groups is None:
        return float((r * bleu).sum() / r.sum()) if r.sum() > 0 else 0.0
    ptr = check_group_pointers(groups, len(stats))
    labels = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    num = np.bincount(labels, weights=r * bleu, minlength=len(ptr) - 1)
    den = np.bincount(labels, weights=r, minlength=len(ptr) - 1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def sentence_bleu(hypothesis: str, references: "str | Sequence[str]", **options: Any) -> float:
    """Sentence BLEU of one hypothesis against its references (0-1 scale).

    >>> sentence_bleu("the cat sat on the mat", ["the cat sat on a mat"])  # doctest: +ELLIPSIS
    0.5372...
    """
    cfg = BleuConfig.make(**options)
    refs = [references] if isinstance(references, str) else list(references)
    return float(sentence_scores(ngram_stats([hypothesis], [refs], None, cfg), cfg)[0])


def score_kbest(hypotheses: Any, references: Any, segments: Any = None, **options: Any) -> np.ndarray:
    """Sentence BLEU of every hypothesis of a K-best table in one call: float64[H].

    hypotheses: H strings (list, numpy, pandas, Arrow); segments: H segment ids with the rows
    of a segment contiguous (None: one segment per row); references: one list of references per
    segment or per row. See :func:`kbest_bleu.stats.ngram_stats`.
    """
    cfg = BleuConfig.make(**options)
    return sentence_scores(ngram_stats(hypotheses, references, segments, cfg), cfg)


def corpus_bleu(hypotheses: Any, references: Any, **options: Any) -> BleuResult:
    """Corpus BLEU of H hypotheses, ``references[i]`` the references of hypothesis i.

    Unlike sacrebleu (one list per reference stream), references are given per segment, as NLTK
    does; ``list(zip(*streams))`` converts sacrebleu-style streams.
    """
    cfg = BleuConfig.make(**options)
    return corpus_score(ngram_stats(hypotheses, references, None, cfg), cfg)
