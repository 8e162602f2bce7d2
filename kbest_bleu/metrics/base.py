"""The interface every metric implements (BLEU included) for the batch job, the CLI and Spark.

A metric scores whole segments in two steps, as sacrebleu splits its metrics: counting the
sufficient statistics of every row (:meth:`Metric.counter`, the work that may run ahead on a
thread of its own), then a pure :meth:`Metric.compute` of the output columns from them. A metric
with a corpus score also sums the statistics of chosen rows (:meth:`Metric.totals`) and scores
such sums (:meth:`Metric.corpus`): the job summary's 1-best and oracle corpus scores. Everything
a metric needs besides the rows (embedding models, function-word lists, paraphrase tables,
lemma columns) is bound when it is built, so a built metric is a plain picklable value that
Spark workers can use as it is.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from ..errors import InputError, install_extra

__all__ = ["REGISTRY", "Counting", "Metric", "SegmentMetric", "load_metric"]

# metric name -> "module:factory"; the factory is called as factory(**options) and returns a Metric.
# Modules are imported lazily: a metric's optional dependency is needed only when it is used.
REGISTRY: dict[str, str] = {
    "bleu": "kbest_bleu.metrics.bleu:from_options",
    "bleu2vec": "kbest_bleu.metrics.bleu2vec:from_options",
    "chrf": "kbest_bleu.metrics.chrf:from_options",
    "meteor": "kbest_bleu.metrics.meteor:from_options",
    "parmesan": "kbest_bleu.metrics.parmesan:from_options",
}


@dataclass(frozen=True)
class Counting:
    """The counting left to do for rows of whole segments (:meth:`Metric.counter`).

    run : called once, returns the metric's statistics of the rows.
    parallel : whether ``run`` launches numba's parallel kernels; such a launch must come from
        one thread at a time, so the batch job runs it on its calling thread, never ahead.
    """

    run: Callable[[], Any]
    parallel: bool


@runtime_checkable
class Metric(Protocol):
    """What the batch job needs of a metric.

    name : the metric's main output column (``bleu``, ``chrf``, ``meteor``, ...), one of
        :meth:`output_fields` (the summary's means and oracle rows are read from it).
    """

    name: str

    def input_columns(self) -> list[str]:
        """Extra input columns the metric reads from the table (e.g. lemma/POS columns); [] if none."""

    def output_fields(self, stats: bool) -> list[pa.Field]:
        """The columns :meth:`compute` returns, in order (with ``stats``: also its statistics)."""

    def signatures(self) -> dict[str, str]:
        """Output column -> reproducibility signature naming every option that changes its numbers."""

    def counter(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray, table: pa.Table,
                row0: int = 0) -> Counting:
        """Check and prepare rows of whole segments now; return the counting left to do.

        hypotheses : string array [H] validated (no nulls), or list<int> token ids [H].
        references : list<string> array [S], the references of each segment, validated
            (token ids: list<list<int>> [H], each row's references).
        seg_ptr : int64 [S+1], rows seg_ptr[s]:seg_ptr[s+1] belong to segment s.
        table : the input rows [H] (for :meth:`input_columns`).
        row0 : the first row's number in the whole input, for messages.
        """

    def compute(self, statistics: Any, stats: bool) -> list[pa.Array]:
        """One array of H values per field of :meth:`output_fields`, from the counted statistics."""

    def totals(self, statistics: Any, rows: np.ndarray) -> Optional[np.ndarray]:
        """The statistics of ``rows`` (int64 indices) summed into a 1-D array that adds up across
        chunks and Spark partitions; None for a metric without a corpus score."""

    def corpus(self, totals: np.ndarray) -> Any:
        """The corpus score of summed :meth:`totals` (0-1, or a result object)."""


class SegmentMetric:
    """The defaults of a metric: its counting is one call, ``self.statistics(hypotheses,
    references, seg_ptr, table)``, that may launch parallel kernels; it has no corpus score; one
    signature names its columns; :meth:`score_segments` counts and computes at once. A subclass
    overrides what differs (:class:`~kbest_bleu.metrics.bleu.Bleu`: its counter, corpus score and
    per-column signatures; chrF: its corpus score)."""

    name: str

    def signature(self) -> str:
        raise NotImplementedError

    def statistics(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray, table: pa.Table) -> Any:
        raise NotImplementedError

    def compute(self, statistics: Any, stats: bool) -> list[pa.Array]:
        raise NotImplementedError

    def signatures(self) -> dict[str, str]:
        return {self.name: self.signature()}

    def counter(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray, table: pa.Table,
                row0: int = 0) -> Counting:  # noqa: ARG002 (the Metric interface)
        return Counting(partial(self.statistics, hypotheses, references, seg_ptr, table), parallel=True)

    def totals(self, statistics: Any, rows: np.ndarray) -> Optional[np.ndarray]:  # noqa: ARG002
        return None

    def corpus(self, totals: np.ndarray) -> Any:  # noqa: ARG002 (the Metric interface)
        raise InputError(f"metric {self.name!r} has no corpus score")

    def score_segments(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                       table: Optional[pa.Table] = None, stats: bool = False) -> list[pa.Array]:
        """Count and compute in one call (see :class:`Metric`): the output columns of the rows."""
        return self.compute(self.counter(hypotheses, references, seg_ptr, table).run(), stats)


def load_metric(name: str, **options: Any) -> Metric:
    """Build the metric registered as ``name`` with its options; :class:`InputError` for an unknown
    name or when its optional dependency is missing."""
    if name not in REGISTRY:
        raise InputError(f"metric: expected one of {', '.join(REGISTRY)}; found {name!r}")
    module_name, factory = REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"metric {name!r} needs an optional dependency that is not installed ({exc}); "
                         f"install it with {install_extra(name)}") from None
    return getattr(module, factory)(**options)

