"""The interface every extra metric implements for the batch job, the CLI and Spark.

A metric scores whole segments: the batch layer hands it the hypotheses of a run of complete
segments, each segment's references once, and the segment pointers; it returns one or more
output columns aligned with the rows. Everything a metric needs besides that (embedding models,
function-word lists, paraphrase tables, lemma columns) is bound when it is built, so a built
metric is a plain picklable value that Spark workers can use as it is.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from ..errors import InputError, install_extra

__all__ = ["REGISTRY", "Metric", "load_metric"]

# metric name -> "module:factory"; the factory is called as factory(**options) and returns a Metric.
# Modules are imported lazily: a metric's optional dependency is needed only when it is used.
REGISTRY: dict[str, str] = {
    "bleu2vec": "kbest_bleu.metrics.bleu2vec:from_options",
    "chrf": "kbest_bleu.metrics.chrf:from_options",
    "meteor": "kbest_bleu.metrics.meteor:from_options",
    "parmesan": "kbest_bleu.metrics.parmesan:from_options",
}

@runtime_checkable
class Metric(Protocol):
    """What the batch job needs of a metric.

    name : the metric's main output column (``bleu2vec``, ``meteor``, ``parmesan``).
    """

    name: str

    def input_columns(self) -> list[str]:
        """Extra input columns the metric reads from the table (e.g. lemma/POS columns); [] if none."""

    def output_fields(self, stats: bool) -> list[pa.Field]:
        """The columns :meth:`score_segments` returns, in order (with ``stats``: also its statistics)."""

    def signature(self) -> str:
        """Reproducibility signature naming every option that changes the number."""

    def score_segments(self, hypotheses: pa.Array, references: pa.Array, seg_ptr: np.ndarray,
                       table: pa.Table, stats: bool) -> list[pa.Array]:
        """Score rows of whole segments.

        hypotheses : string array [H], validated (no nulls).
        references : list<string> array [S], the references of each segment, validated.
        seg_ptr : int64 [S+1], rows seg_ptr[s]:seg_ptr[s+1] belong to segment s.
        table : the input rows [H] (for :meth:`input_columns`).
        Returns one array of H values per field of :meth:`output_fields`.
        """


def load_metric(name: str, **options: Any) -> Metric:
    """Build the metric registered as ``name`` with its options; :class:`InputError` for an unknown
    name or when its optional dependency is missing."""
    if name not in REGISTRY:
        raise InputError(f"metric: expected one of bleu, {', '.join(REGISTRY)}; found {name!r}")
    module_name, factory = REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"metric {name!r} needs an optional dependency that is not installed ({exc}); "
                         f"install it with {install_extra(name)}") from None
    return getattr(module, factory)(**options)

