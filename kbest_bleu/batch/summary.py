"""The batch job's summary: running totals of whole segments (:class:`Tally`, mergeable across
Spark partitions) and what a job reports at the end (:class:`Summary`): corpus BLEU of the
1-best and oracle rows from summed statistics, and for the other metrics of ``--metric`` the
means of their sentence scores."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..bleu import BleuResult, corpus_score
from ..config import BleuConfig
from ..stats import BleuStats, segment_argmax

__all__ = ["MetricSummary", "Summary", "Tally"]


@dataclass
class Tally:
    """Running totals for the end-of-job summary (sums of statistics, never rows)."""

    config: BleuConfig
    rows: int = 0
    segments: int = 0
    bleu_sum: float = 0.0
    one_best: Optional[BleuStats] = None
    oracle: Optional[BleuStats] = None
    nrefs: set = field(default_factory=set)  # distinct reference counts per segment (the signature's nrefs)
    # per metric of --metric besides BLEU: float64[3] sums of (every row, the 1-best rows, the oracle
    # rows) of its sentence scores, and its signature
    metrics: dict = field(default_factory=dict)
    metric_signatures: dict = field(default_factory=dict)
    bleu: bool = True  # False: a job of other metrics only (--metric meteor), no BLEU fields in the summary

    def add(self, stats: Optional[BleuStats], bleu: Optional[np.ndarray], seg_ptr: np.ndarray,
            model_score: Optional[np.ndarray], nrefs: Optional[np.ndarray] = None,
            metric_scores: Optional[dict] = None) -> None:
        """Add scored whole segments; ``nrefs``: int[segments], each segment's number of references;
        ``stats``/``bleu`` None for a job without BLEU; ``metric_scores``: metric name -> float64[H]
        sentence scores of the other metrics (their 1-best is the same row as BLEU's, their oracle
        the row with their own best score)."""
        if nrefs is not None:
            # not np.unique: without return_* options it imports numpy.ma (~10 ms a process, numpy 2.4)
            self.nrefs.update(np.flatnonzero(np.bincount(nrefs)).tolist())
        self.rows += int(seg_ptr[-1] - seg_ptr[0])
        self.segments += len(seg_ptr) - 1
        first = seg_ptr[:-1] if model_score is None else segment_argmax(model_score, seg_ptr)
        if bleu is not None:
            self.bleu_sum += float(bleu.sum())
            self.one_best = _accumulate(self.one_best, stats[first])
            self.oracle = _accumulate(self.oracle, stats[segment_argmax(bleu, seg_ptr)])
        for name, values in (metric_scores or {}).items():
            v = np.nan_to_num(np.asarray(values, np.float64))  # no NaN in a summary
            sums = np.array([v.sum(), v[first].sum(), v[segment_argmax(v, seg_ptr)].sum()])
            self.metrics[name] = sums + self.metrics.get(name, 0.0)

    def merge(self, other: "Tally") -> None:
        """Add another job part's totals (Spark partitions, tallied apart, summed on the driver)."""
        self.rows += other.rows
        self.segments += other.segments
        self.bleu_sum += other.bleu_sum
        for name in ("one_best", "oracle"):
            theirs = getattr(other, name)
            if theirs is not None:
                setattr(self, name, _accumulate(getattr(self, name), theirs))
        self.nrefs |= other.nrefs
        for name, sums in other.metrics.items():
            self.metrics[name] = sums + self.metrics.get(name, 0.0)
        self.metric_signatures.update(other.metric_signatures)

    def summary(self, seconds: float) -> "Summary":
        empty = BleuStats(np.zeros((1, self.config.max_order + 1), np.int64), np.zeros((1, self.config.max_order + 1),
                          np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64))
        # sacrebleu's nrefs: the count, or "var" when segments differ; unknown when nothing was added
        nrefs = None if not self.nrefs else self.nrefs.copy().pop() if len(self.nrefs) == 1 else "var"
        one_best = corpus_score(self.one_best or empty, self.config)
        oracle = corpus_score(self.oracle or empty, self.config)
        if nrefs is not None:
            corpus_sig = self.config.signature("corpus", nrefs=nrefs)
            one_best, oracle = (replace(r, signature=corpus_sig) for r in (one_best, oracle))
        metrics = {name: MetricSummary(*(sums / np.array([max(self.rows, 1), max(self.segments, 1),
                                                           max(self.segments, 1)])).tolist(),
                                       self.metric_signatures.get(name, ""))
                   for name, sums in self.metrics.items()}
        if not self.bleu:
            return Summary(self.rows, self.segments, None, None, None, None, seconds, metrics)
        return Summary(self.rows, self.segments, self.bleu_sum / self.rows if self.rows else 0.0, one_best, oracle,
                       self.config.signature("sentence", nrefs=nrefs), seconds, metrics)


def _accumulate(total: Optional[BleuStats], part: BleuStats) -> BleuStats:
    return part.sum() if total is None else BleuStats.concat([total, part.sum()]).sum()


@dataclass(frozen=True)
class MetricSummary:
    """A metric's sentence scores summed up (0-1): the mean over every row, over the 1-best rows
    (the model score's argmax, else the first row of each segment) and over the oracle rows (each
    segment's best by this metric); means of sentence scores, not the metric's system score."""

    mean: float
    one_best: float
    oracle: float
    signature: str


@dataclass(frozen=True)
class Summary:
    """What a batch job reports at the end (0-1 scores; printed as sacrebleu-style 0-100).

    The BLEU fields (``mean_bleu``, ``one_best``, ``oracle``, ``signature``) are None for a job
    without BLEU; ``metrics``: a :class:`MetricSummary` per other metric; ``seconds``: the job's
    wall time (:func:`~kbest_bleu.batch.parquet.score_parquet`: from the input opened to the output
    closed; ``kbest-bleu score``: the whole command, reading and converting included)."""

    rows: int
    segments: int
    mean_bleu: Optional[float]
    one_best: Optional[BleuResult]
    oracle: Optional[BleuResult]
    signature: Optional[str]
    seconds: float
    metrics: dict = field(default_factory=dict)

    def __str__(self) -> str:
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        lines = [f"rows {self.rows:,}  segments {self.segments:,}  wall time {self.seconds:.2f} s "
                 f"({rate:,.0f} rows/s, whole job)"]
        if self.one_best is not None:
            lines += [f"mean sentence BLEU   {100 * self.mean_bleu:6.2f}",
                      f"1-best corpus BLEU   {100 * self.one_best.score:6.2f}  ({self.one_best.signature})",
                      f"oracle corpus BLEU   {100 * self.oracle.score:6.2f}",
                      f"sentence signature   {self.signature}"]
        for name, m in self.metrics.items():  # means of sentence scores, on the same 0-100 scale
            width = max(21, len(name) + 16)
            lines += [f"{'mean sentence ' + name:<{width}}{100 * m.mean:6.2f}",
                      f"{'1-best mean ' + name:<{width}}{100 * m.one_best:6.2f}",
                      f"{'oracle mean ' + name:<{width}}{100 * m.oracle:6.2f}",
                      f"{name + ' signature':<{width}}{m.signature}"]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = {"rows": self.rows, "segments": self.segments, "mean_bleu": self.mean_bleu,
               "one_best": None if self.one_best is None else self.one_best.to_dict(),
               "oracle": None if self.oracle is None else self.oracle.to_dict(),
               "signature": self.signature, "seconds": self.seconds}
        if self.metrics:
            out["metrics"] = {name: m.__dict__.copy() for name, m in self.metrics.items()}
        return out
