"""The batch job's summary: running totals of whole segments (:class:`Tally`, mergeable across
Spark partitions) and what a job reports at the end (:class:`Summary`): for every metric the
means of its sentence scores over every row, the 1-best rows and the oracle rows, and for a
metric with a corpus score (BLEU, chrF) the corpus score of the 1-best and oracle rows from
summed statistics (:meth:`~kbest_bleu.metrics.base.Metric.totals`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

import numpy as np

from ..bleu import BleuResult, corpus_score
from ..config import BleuConfig
from ..stats import BleuStats, segment_argmax

__all__ = ["MetricSummary", "Summary", "Tally"]


@dataclass
class Tally:
    """Running totals for the end-of-job summary (sums of statistics, never rows).

    config : the job's BLEU options (the summary's signatures); ``bleu`` False: a job without
        BLEU (``--metric meteor``), no BLEU fields in the summary.
    """

    config: BleuConfig
    rows: int = 0
    segments: int = 0
    nrefs: set = field(default_factory=set)  # distinct reference counts per segment (the signature's nrefs)
    # per metric: float64[3] sums of its main column over (every row, the 1-best rows, its oracle
    # rows); for a metric with a corpus score, [2, k] summed statistics of (the 1-best, the oracle)
    # rows and the metric itself (small: options only) to score them; every metric's signature
    metrics: dict = field(default_factory=dict)
    totals: dict = field(default_factory=dict)
    corpus_scorers: dict = field(default_factory=dict)
    metric_signatures: dict = field(default_factory=dict)
    bleu: bool = True

    def add(self, seg_ptr: np.ndarray, model_score: Optional[np.ndarray], nrefs: Optional[np.ndarray],
            scored: Sequence[tuple[Any, Any, np.ndarray]]) -> None:
        """Add scored whole segments. ``seg_ptr``: int64[S+1]; ``model_score``: float[H] or None
        (the 1-best row is then each segment's first); ``nrefs``: int[S], each segment's number of
        references; ``scored``: (metric, its statistics, float[H] its main column) per metric. The
        1-best rows are the same for every metric, each metric's oracle is its own best row."""
        if nrefs is not None:
            # not np.unique: without return_* options it imports numpy.ma (~10 ms a process, numpy 2.4)
            self.nrefs.update(np.flatnonzero(np.bincount(nrefs)).tolist())
        self.rows += int(seg_ptr[-1] - seg_ptr[0])
        self.segments += len(seg_ptr) - 1
        first = seg_ptr[:-1] if model_score is None else segment_argmax(model_score, seg_ptr)
        for metric, statistics, values in scored:
            v = np.nan_to_num(np.asarray(values, np.float64))  # no NaN in a summary
            best = segment_argmax(v, seg_ptr)
            self._add(self.metrics, metric.name, np.array([v.sum(), v[first].sum(), v[best].sum()]))
            one_best = metric.totals(statistics, first)
            if one_best is not None:
                self._add(self.totals, metric.name, np.stack([one_best, metric.totals(statistics, best)]))
                self.corpus_scorers.setdefault(metric.name, metric)
            if metric.name not in self.metric_signatures:  # once per job
                self.metric_signatures[metric.name] = metric.signatures().get(metric.name, "")

    @staticmethod
    def _add(sums: dict, name: str, values: np.ndarray) -> None:
        sums[name] = values + sums[name] if name in sums else values

    def merge(self, other: "Tally") -> None:
        """Add another job part's totals (Spark partitions, tallied apart, summed on the driver)."""
        self.rows += other.rows
        self.segments += other.segments
        self.nrefs |= other.nrefs
        for name, sums in other.metrics.items():
            self._add(self.metrics, name, sums)
        for name, sums in other.totals.items():
            self._add(self.totals, name, sums)
        for mine, theirs in ((self.corpus_scorers, other.corpus_scorers),
                             (self.metric_signatures, other.metric_signatures)):
            for name, value in theirs.items():
                mine.setdefault(name, value)

    def summary(self, seconds: float) -> "Summary":
        # sacrebleu's nrefs: the count, or "var" when segments differ; unknown when nothing was added
        nrefs = None if not self.nrefs else self.nrefs.copy().pop() if len(self.nrefs) == 1 else "var"
        rows, segments = max(self.rows, 1), max(self.segments, 1)
        metrics = {}
        for name, sums in self.metrics.items():
            if name == "bleu" and self.bleu:
                continue
            corpus = [None, None]
            if name in self.totals:
                corpus = [float(self.corpus_scorers[name].corpus(t)) for t in self.totals[name]]
            metrics[name] = MetricSummary(*(sums / np.array([rows, segments, segments])).tolist(),
                                          self.metric_signatures.get(name, ""), *corpus)
        if not self.bleu:
            return Summary(self.rows, self.segments, None, None, None, None, seconds, metrics)
        if "bleu" in self.totals:
            one_best, oracle = (self.corpus_scorers["bleu"].corpus(t) for t in self.totals["bleu"])
        else:  # nothing scored: the scores of empty statistics
            n = self.config.max_order + 1
            empty = BleuStats(np.zeros((1, n), np.int64), np.zeros((1, n), np.int64), np.zeros(1, np.int64),
                              np.zeros(1, np.int64))
            one_best = oracle = corpus_score(empty, self.config)
        if nrefs is not None:
            corpus_sig = self.config.signature("corpus", nrefs=nrefs)
            one_best, oracle = (replace(r, signature=corpus_sig) for r in (one_best, oracle))
        mean = self.metrics["bleu"][0] / self.rows if self.rows else 0.0
        return Summary(self.rows, self.segments, float(mean), one_best, oracle,
                       self.config.signature("sentence", nrefs=nrefs), seconds, metrics)


@dataclass(frozen=True)
class MetricSummary:
    """A metric's sentence scores summed up (0-1): the mean over every row, over the 1-best rows
    (the model score's argmax, else the first row of each segment) and over the oracle rows (each
    segment's best by this metric); means of sentence scores, not the metric's system score.
    A metric with a corpus score (chrF) also has it for the 1-best and the oracle rows, from their
    summed statistics (``corpus_one_best``, ``corpus_oracle``; None for the others)."""

    mean: float
    one_best: float
    oracle: float
    signature: str
    corpus_one_best: Optional[float] = None  # the metric's corpus score of the 1-best rows, if it has one
    corpus_oracle: Optional[float] = None


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
                      f"{'oracle mean ' + name:<{width}}{100 * m.oracle:6.2f}"]
            if m.corpus_one_best is not None:
                lines += [f"{'1-best corpus ' + name:<{width}}{100 * m.corpus_one_best:6.2f}",
                          f"{'oracle corpus ' + name:<{width}}{100 * m.corpus_oracle:6.2f}"]
            lines += [f"{name + ' signature':<{width}}{m.signature}"]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = {"rows": self.rows, "segments": self.segments, "mean_bleu": self.mean_bleu,
               "one_best": None if self.one_best is None else self.one_best.to_dict(),
               "oracle": None if self.oracle is None else self.oracle.to_dict(),
               "signature": self.signature, "seconds": self.seconds}
        if self.metrics:
            out["metrics"] = {name: m.__dict__.copy() for name, m in self.metrics.items()}
        return out
