"""Sentence, corpus and document BLEU from statistics, and the one-call conveniences.

The three steps of DESIGN.md section 2 are public: ``stats = ngram_stats(...)``,
``sentence_scores(stats)`` per row, ``corpus_score(stats)`` on the column sums.
All scores are on the 0-1 scale.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, Sequence

import numpy as np

from . import settings
from .config import BleuConfig
from .counting import kernels
from .counting.codes import RULES_13A, RULES_NONE, RULES_ZH
from .counting.threads import thread_count
from .errors import InputError
from .smoothing import PRESETS, moses_corpus_bleu, sacrebleu_sentence_one
from .stats import BleuStats, check_group_pointers, counting_args, ngram_stats
from .tokenize import BYTE_CLASS, WIDE_SPACE, prepare_one

__all__ = ["BleuResult", "SentenceScorer", "corpus_bleu", "corpus_score", "document_score", "score_kbest",
           "score_rows", "sentence_bleu", "sentence_results", "sentence_scores"]


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




def _preset_scores(stats: BleuStats, cfg: BleuConfig, level: str):
    """(bleu float64[H], precisions float64[H, N], bp float64[H]) of every row of ``stats`` under
    ``cfg`` at ``level`` ("sentence" or "corpus": decides the default effective order)."""
    if stats.max_order < cfg.max_order:
        raise InputError(f"the statistics hold orders up to {stats.max_order} (+1) but max_order is "
                         f"{cfg.max_order}; recompute them with max_order >= {cfg.max_order}")
    # Moses scores a corpus without its sentence-level BLEU+1 smoothing (BleuScorer, multi-bleu.perl)
    preset = moses_corpus_bleu if level == "corpus" and cfg.compat == "moses" else PRESETS[cfg.compat]
    args = (stats.matches.astype(np.float64), stats.totals.astype(np.float64), stats.hyp_len.astype(np.float64),
            stats.ref_len.astype(np.float64), cfg, cfg.effective(level))
    if cfg.smoothing not in _UNBOUNDED:
        return preset(*args)
    # only smoothings 4-7 make precisions above 1 (K below ln c, alpha's prior, NLTK's averages), so
    # only they can overflow, with extreme parameters or weights: a number no tool defines (NLTK's
    # math.exp raises OverflowError), said in one line instead of numpy's warnings
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        bleu, p, bp = preset(*args)
    if not np.isfinite(bleu).all():
        row = int(np.flatnonzero(~np.isfinite(bleu))[0])
        raise InputError(f"smoothing {cfg.smoothing_label()}: row {row} scores {bleu[row]} (its precisions "
                         f"{p[row].tolist()} overflow with weights {cfg.weights or 'uniform'}); use parameters near "
                         "the paper's (K = 5, alpha = 5) or weights summing to 1")
    return bleu, p, bp


_UNBOUNDED = (4, 5, 6, 7)  # the smoothings whose precisions can exceed 1 (_preset_scores)


def score_rows(stats: BleuStats, cfg: BleuConfig, level: str) -> np.ndarray:
    """BLEU of every row of ``stats`` under ``cfg`` at ``level`` (see :func:`_preset_scores`): float64[H].

    Rows are independent, so large inputs are cut into chunks scored on numba's thread count
    (numpy releases the GIL); only the scores are gathered, not the precisions.
    """
    if len(stats) < 2 * settings.SMOOTHING_CHUNK_ROWS or (n_threads := thread_count()) == 1:
        return _preset_scores(stats, cfg, level)[0]
    size = max(settings.SMOOTHING_CHUNK_ROWS, -(-len(stats) // n_threads))
    with ThreadPoolExecutor(n_threads) as pool:
        return np.concatenate(list(pool.map(lambda a: _preset_scores(stats[a:a + size], cfg, level)[0],
                                            range(0, len(stats), size))))


def _checked(stats: Any) -> BleuStats:
    """``stats`` when they are statistics a hypothesis can have: a :class:`BleuStats` whose counts
    are non-negative (NaN is not) and whose matches do not exceed the n-gram totals (a hand-built
    row with m_n > l_n scored BLEU 2.15)."""
    if not isinstance(stats, BleuStats):
        raise InputError(f"stats: expected a BleuStats (kb.ngram_stats(...), BleuStats.from_moses(...)), found "
                         f"{type(stats).__name__}")
    m, t = stats.matches, stats.totals
    ok = (m >= 0) & (m <= t)
    if not (ok.all() and (stats.hyp_len >= 0).all() and (stats.ref_len >= 0).all()):
        row = int(np.flatnonzero(~ok.all(1) | ~(stats.hyp_len >= 0) | ~(stats.ref_len >= 0))[0])
        raise InputError(f"stats: row {row} (matches {m[row].tolist()}, totals {t[row].tolist()}, lengths "
                         f"{stats.hyp_len[row]}, {stats.ref_len[row]}) has a negative or NaN count, or more matches "
                         "than n-grams; statistics come from kb.ngram_stats or BleuStats.from_moses")
    return stats


def sentence_scores(stats: BleuStats, config: Optional[BleuConfig] = None, **options: Any) -> np.ndarray:
    """Sentence BLEU of every row of ``stats``: float64[H], 0-1 scale.

    ``options`` are :class:`~kbest_bleu.config.BleuConfig` fields (compat, smoothing, ...);
    effective order defaults to on, as sacrebleu's ``sentence_bleu``.
    """
    return score_rows(_checked(stats), BleuConfig.make(config, **options), "sentence")


def _results(stats: BleuStats, cfg: BleuConfig, level: str) -> list:
    """A :class:`BleuResult` for every row of ``stats`` at ``level``."""
    bleu, p, bp = _preset_scores(stats, cfg, level)
    sig = cfg.signature(level)
    return [BleuResult(float(bleu[i]), tuple(float(x) for x in p[i]), float(bp[i]), int(stats.hyp_len[i]),
                       int(stats.ref_len[i]), sig) for i in range(len(stats))]


def corpus_score(stats: BleuStats, config: Optional[BleuConfig] = None, **options: Any) -> BleuResult:
    """Corpus BLEU of the summed statistics (smoothing applies to the sums, as sacrebleu)."""
    cfg = BleuConfig.make(config, **options)
    return _results(_checked(stats).sum(cfg), cfg, "corpus")[0]


def sentence_results(stats: BleuStats, config: Optional[BleuConfig] = None, **options: Any) -> list:
    """Sentence BLEU of every row of ``stats`` with its parts: a :class:`BleuResult` per row, each
    the score of :func:`sentence_scores` (a row's corpus score differs under ``compat="moses"``,
    whose corpus BLEU is unsmoothed, and where effective order is on for sentences only)."""
    return _results(_checked(stats), BleuConfig.make(config, **options), "sentence")


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
    return np.divide(num, den, out=np.zeros(len(ptr) - 1), where=den > 0)  # (bincount of no row: int64)


@lru_cache(maxsize=256)
def _cached_config(key: tuple) -> BleuConfig:
    return BleuConfig.make(**{k: v for k, v, _ in key})


def _config(config: Optional[BleuConfig], options: dict) -> BleuConfig:
    """:meth:`BleuConfig.make`, memoized for hashable keyword options: validating a config costs
    ~10 us, as much as scoring one sentence pair."""
    if config is not None or not options:
        return BleuConfig.make(config, **options)
    try:
        return _cached_config(BleuConfig.options_key(options))
    except TypeError:  # unhashable option values (a weights list)
        return BleuConfig.make(**options)


def _prepared_bytes(text: Any, cfg: BleuConfig, what: str) -> np.ndarray:
    """UTF-8 bytes of one string after :func:`kbest_bleu.tokenize.prepare_one`, as a read-only
    uint8 array (the batch path's array type, :func:`kbest_bleu.arrays.string_buffers`: the two
    share one compiled kernel)."""
    if not isinstance(text, str):
        raise InputError(f"{what}: expected a string, found {type(text).__name__} ({text!r}); pass str "
                         "(score_kbest scores many hypotheses at once)")
    try:
        data = prepare_one(text, cfg.tokenize, cfg.lowercase_rule).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{what}: holds {exc.object[exc.start:exc.end]!r}, which is not valid Unicode text (a lone "
                         "surrogate); decode the input properly first") from None
    return np.frombuffer(data, np.uint8)


class SentenceScorer:
    """Sentence BLEU of single hypotheses against fixed references, for references scored again
    and again (a training loop, a notebook, a reranker): the references are prepared once.

    ``scorer = SentenceScorer(["the cat sat on a mat"], tokenize="13a")`` then ``scorer(hyp)``
    -> float on the 0-1 scale, equal to :func:`sentence_bleu` and to sacrebleu's
    ``sentence_score``. One call counts with the single-thread kernel
    (:func:`kbest_bleu._counting._one_text_stats`) and no Arrow round trip; the default sacrebleu
    preset with smoothings 0-3 (Chen & Cherry 2014, sections 2.1-2.3) is scored on Python floats.
    For many hypotheses at once, :meth:`scores` takes the bulk path.

    Parameters
    ----------
    references : str or sequence of str, zero or more references
    config, options : a :class:`~kbest_bleu.config.BleuConfig` and/or its fields
    """

    def __init__(self, references: "str | Sequence[str]", config: Optional[BleuConfig] = None,
                 **options: Any) -> None:
        self.config = cfg = _config(config, options)
        if isinstance(references, str):
            refs = [references]
        elif isinstance(references, (Sequence, np.ndarray)) and not isinstance(references, bytes):
            refs = list(references)
        else:
            raise InputError(f"references: expected a string or a list of strings, found {type(references).__name__}"
                             " (give [] for no reference)")
        parts = [_prepared_bytes(x, cfg, f"references[{i}]") for i, x in enumerate(refs)]
        self._references = refs
        self._ref_data = np.frombuffer(b"".join(p.tobytes() for p in parts), np.uint8)
        self._ref_off = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=self._ref_off[1:])
        self._n_orders, self._policy = counting_args(cfg)
        self._rules = {"13a": RULES_13A, "zh": RULES_ZH}.get(cfg.tokenize, RULES_NONE)
        self._fast = cfg.compat == "sacrebleu" and cfg.smoothing in (0, 1, 2, 3) and cfg.weights is None

    def vector(self, hypothesis: str) -> np.ndarray:
        """The statistics of one hypothesis: int64[2(N+1) + 2], m_1..m_{N+1}, l_1..l_{N+1}, c, r."""
        return kernels()._one_text_stats(_prepared_bytes(hypothesis, self.config, "hypothesis"), self._ref_data,
                                         self._ref_off, self._n_orders, self._policy, self._rules, BYTE_CLASS,
                                         WIDE_SPACE)

    def __call__(self, hypothesis: str) -> float:
        v = self.vector(hypothesis)
        score = sacrebleu_sentence_one(v, self.config) if self._fast else None
        if score is not None:
            return score
        k = self._n_orders
        stats = BleuStats(v[None, :k], v[None, k:2 * k], v[-2:-1], v[-1:])
        return float(_preset_scores(stats, self.config, "sentence")[0][0])

    def scores(self, hypotheses: Any) -> np.ndarray:
        """Sentence BLEU of many hypotheses against these references: float64[H] (bulk path)."""
        if not hasattr(hypotheses, "__len__"):  # a generator
            hypotheses = list(hypotheses)
        if len(hypotheses) == 0:
            return np.zeros(0)
        return score_kbest(hypotheses, [self._references], np.zeros(len(hypotheses), np.int64), config=self.config)


def sentence_bleu(hypothesis: str, references: "str | Sequence[str]", **options: Any) -> float:
    """Sentence BLEU of one hypothesis against its references (0-1 scale).

    The single-call path of :class:`SentenceScorer` (no threads, no Arrow round trip); use a
    ``SentenceScorer`` when the same references are scored many times.

    >>> sentence_bleu("the cat sat on the mat", ["the cat sat on a mat"])  # doctest: +ELLIPSIS
    0.5372...
    """
    return SentenceScorer(references, **options)(hypothesis)


def score_kbest(hypotheses: Any, references: Any, segments: Any = None, **options: Any) -> np.ndarray:
    """Sentence BLEU of every hypothesis of a K-best table in one call: float64[H].

    hypotheses: H strings (list, numpy, pandas, Arrow); segments: H segment ids with the rows
    of a segment contiguous (None: one segment per row); references: one list of references per
    segment or per row. See :func:`kbest_bleu.stats.ngram_stats`.
    """
    cfg = BleuConfig.make(**options)
    return score_rows(ngram_stats(hypotheses, references, segments, cfg), cfg, "sentence")


def corpus_bleu(hypotheses: Any, references: Any, *, references_layout: Optional[str] = None,
                **options: Any) -> BleuResult:
    """Corpus BLEU of H hypotheses.

    ``references_layout``: ``"rows"`` (``references[i]``: the references of hypothesis i, as NLTK)
    or ``"streams"`` (``references[j]``: reference stream j, H strings, as sacrebleu's
    ``corpus_bleu(hyps, [refs1, refs2])``). Left out, references are rows; but a list of H lists of
    H strings (H >= 2) reads both ways, with different scores, and is refused until the layout is
    given, and a list of lists of H strings that cannot be rows says so.
    """
    if references_layout not in (None, "rows", "streams"):
        raise InputError(f"references_layout: expected 'rows', 'streams' or None, found {references_layout!r}")
    if isinstance(references, np.ndarray) and references.ndim == 2:  # as the list of its rows
        references = list(references)
    if references_layout is None:
        _refuse_ambiguous_layout(hypotheses, references)
    elif references_layout == "streams":
        if isinstance(references, str) or not all(_is_sequence(s) for s in references):
            raise InputError("references: with references_layout='streams', expected a list of reference streams, "
                             "each a list of strings, one per hypothesis")
        n = len(hypotheses)
        lengths = sorted({len(s) for s in references})
        if lengths != [n]:
            raise InputError(f"references: with references_layout='streams', expected streams of {n} strings (one "
                             f"per hypothesis), found streams of {', '.join(map(str, lengths)) or 'no'} strings")
        # None in a stream: no reference of that stream for that hypothesis (sacrebleu's varying count)
        references = [[x for x in r if x is not None] for r in zip(*references)]
    cfg = BleuConfig.make(**options)
    return corpus_score(ngram_stats(hypotheses, references, None, cfg), cfg)


def _is_sequence(x: Any) -> bool:
    """A list, tuple, 1-D array or Series of strings (a stream, or a row's references)."""
    return isinstance(x, (list, tuple)) or (hasattr(x, "__array__") and hasattr(x, "__len__")
                                            and not isinstance(x, (str, bytes)) and np.ndim(x) == 1)


def _refuse_ambiguous_layout(hypotheses: Any, references: Any) -> None:
    """InputError when a list of references (lists, arrays, Series) reads as rows and as
    sacrebleu's streams."""
    if not isinstance(references, (list, tuple)) or not references:
        return
    try:
        n = len(hypotheses)
    except TypeError:
        return
    if n < 2 or not all(_is_sequence(s) and len(s) == n for s in references):
        return
    if len(references) == n:
        raise InputError(f"references: {n} lists of {n} strings read both as one list per hypothesis (rows, NLTK) "
                         "and as reference streams (sacrebleu), with different scores; pass "
                         "references_layout='rows' or references_layout='streams'")
    raise InputError(f"references: {len(references)} lists of {n} strings for {n} hypotheses: reference streams "
                     "(sacrebleu's layout), not one list per hypothesis; pass references_layout='streams'")
