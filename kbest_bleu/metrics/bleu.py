"""Sentence BLEU as a :class:`~kbest_bleu.metrics.base.Metric`: the batch job, Spark and the CLI
score it through the same loop as every other metric (DESIGN.md section 6).

Counting is :func:`kbest_bleu.stats.segment_counter` (text) or
:func:`kbest_bleu.token_ids.segment_token_stats` (token ids), once for every BLEU column of the
job; each column is then a pure function of the statistics (:func:`kbest_bleu.bleu.sentence_scores`,
Chen & Cherry 2014 section 2 for the smoothings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..arrays import from_numpy
from ..bleu import BleuResult, corpus_score, score_rows
from ..config import BLEU_PLUS_1, BleuConfig, allowed_smoothings
from ..encode import is_id_lists
from ..errors import InputError
from ..stats import BleuStats, counts_in_parallel, segment_counter
from .base import Counting, SegmentMetric

__all__ = ["Bleu", "from_options", "score_columns"]


def score_columns(config: BleuConfig, smoothings: Sequence = ()) -> list[tuple[str, BleuConfig]]:
    """(column name, config) of every sentence-BLEU column: ``bleu`` under ``config``, then one
    ``bleu_s<n>`` per entry of ``smoothings`` (Chen & Cherry number or sacrebleu name; "all" = every
    smoothing of the preset; ``bleu_plus1`` for moses's bleu+1) under the same preset and options.
    ``smoothings`` may be one comma-separated string. The statistics are counted once for all."""
    wanted = []
    for s in _smoothing_names(smoothings):
        wanted += allowed_smoothings(config.compat, config.max_order) if s == "all" else [s]
    out = [("bleu", config)]
    for s in wanted:
        try:
            cfg = BleuConfig.make(config, smoothing=s)
        except InputError as exc:
            raise InputError(f"extra smoothing {s!r}: {exc}") from None
        name = "bleu_plus1" if cfg.smoothing == BLEU_PLUS_1 else f"bleu_s{cfg.smoothing}"
        if name not in dict(out):
            out.append((name, cfg))
    return out


def _smoothing_names(smoothings: Sequence) -> tuple:
    """``smoothings`` as a tuple of entries (a string: comma-separated)."""
    if isinstance(smoothings, str):
        return tuple(x.strip() for x in smoothings.split(",") if x.strip())
    return tuple(smoothings)


@dataclass(frozen=True)
class Bleu(SegmentMetric):
    """Sentence BLEU columns of one job: ``bleu`` under ``config`` and one per extra smoothing
    (:func:`score_columns`), counted once for all; picklable (options only). Its own counter
    (prepared now, counted later, on a thread of its own for text), corpus score and signatures;
    ``score_segments`` from :class:`~kbest_bleu.metrics.base.SegmentMetric`.

    engine : "kernels" (numba) or "numpy" for text (:func:`kbest_bleu.stats.numpy_engine_suits`);
        token ids always count on the kernels.
    Statistics: a :class:`~kbest_bleu.stats.BleuStats` [H]; with ``stats`` the output also holds
    m1..mN, t1..tN, hyp_len and ref_len (int32).
    """

    config: BleuConfig = BleuConfig()
    smoothings: tuple = ()
    engine: str = "kernels"
    name: str = "bleu"
    columns: list = field(init=False, repr=False, compare=False)  # (name, config) per column: score_columns

    def __post_init__(self) -> None:
        # checked when built, before any row is read: bad extra smoothings, the engine
        object.__setattr__(self, "smoothings", _smoothing_names(self.smoothings))
        if self.engine not in ("kernels", "numpy"):
            raise InputError(f"engine: expected 'kernels' or 'numpy', found {self.engine!r}")
        object.__setattr__(self, "columns", score_columns(self.config, self.smoothings))

    def input_columns(self) -> list[str]:
        return []

    def output_fields(self, stats: bool) -> list[pa.Field]:
        fields = [pa.field(name, pa.float64()) for name, _ in self.columns]
        if stats:
            n = self.config.max_order
            fields += [pa.field(f"{kind}{i}", pa.int32()) for kind in ("m", "t") for i in range(1, n + 1)]
            fields += [pa.field("hyp_len", pa.int32()), pa.field("ref_len", pa.int32())]
        return fields

    def signatures(self) -> dict[str, str]:
        return {name: cfg.signature("sentence") for name, cfg in self.columns}

    def counter(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                table: pa.Table, row0: int = 0) -> Counting:  # noqa: ARG002 (the Metric interface)
        """Text: prepared now (tokenized, references flattened), counted at ``run`` (on a thread
        of its own in a batch job unless parallel kernels count it). Token ids: validated and
        counted at ``run``, under ``tokenize='none'``, by kernels on plain threads (no numba
        parallel launch: a batch job counts them ahead too)."""
        configs = [cfg for _, cfg in self.columns]
        if is_id_lists(hypotheses.type):
            from ..token_ids import segment_token_stats

            # (mteval's own lowercasing, "ascii", has nothing to lower in ids: token_config drops it)
            if any(cfg.tokenize != "none" or cfg.lowercase_rule is True for cfg in configs):
                raise InputError("token ids are tokens already: score them with tokenize='none' and no lowercasing")
            return Counting(lambda: segment_token_stats(hypotheses, references, seg_ptr, *configs, row_offset=row0),
                            parallel=False)
        return Counting(segment_counter(hypotheses, references, seg_ptr, *configs, engine=self.engine),
                        parallel=counts_in_parallel(hypotheses, references))

    def compute(self, statistics: BleuStats, stats: bool) -> list[pa.Array]:
        # the kernels' statistics: scored without sentence_scores' check of hand-built values
        arrays = [from_numpy(score_rows(statistics, cfg, "sentence")) for _, cfg in self.columns]
        if stats:
            n = self.config.max_order
            arrays += [from_numpy(statistics.matches[:, i]) for i in range(n)]
            arrays += [from_numpy(statistics.totals[:, i]) for i in range(n)]
            arrays += [from_numpy(statistics.hyp_len), from_numpy(statistics.ref_len)]
        return arrays

    def totals(self, statistics: BleuStats, rows: np.ndarray) -> Optional[np.ndarray]:
        """int64 [2 (N+1) + 2]: the summed matches, totals, hypothesis and reference lengths."""
        s = statistics[rows].sum(self.config)
        return np.concatenate([s.matches[0], s.totals[0], s.hyp_len, s.ref_len])

    def corpus(self, totals: np.ndarray) -> BleuResult:
        """Corpus BLEU of summed :meth:`totals` under ``config`` (:func:`kbest_bleu.bleu.corpus_score`)."""
        t = np.asarray(totals, np.int64)
        k = (len(t) - 2) // 2
        return corpus_score(BleuStats(t[None, :k], t[None, k:2 * k], t[2 * k:2 * k + 1], t[2 * k + 1:]), self.config)


def from_options(smoothings: Sequence = (), engine: str = "kernels", config: Optional[BleuConfig] = None,
                 **options: Any) -> Bleu:
    """The ``bleu`` metric of the registry: a :class:`~kbest_bleu.config.BleuConfig` and/or its
    fields (``preset``, ``smoothing``, ``tokenize``, ...), extra smoothing columns, the engine."""
    return Bleu(BleuConfig.make(config, **options), smoothings, engine)
