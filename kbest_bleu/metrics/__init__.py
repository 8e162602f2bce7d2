"""Metrics beyond BLEU over the same K-best tables: BLEU2VEC, Meteor (exact), Parmesan.

Each metric lives in its own subpackage (optional dependencies are imported there, never here) and
exposes a :class:`~kbest_bleu.metrics.base.Metric`: the batch job, the CLI and Spark call every
metric through that one interface (DESIGN.md section 6). ``REGISTRY`` maps the name used by
``kbest-bleu score --metric`` to the module that builds it; the module is imported only when the
metric is asked for. Names load on first use (PEP 562), so ``kbest-bleu --help`` stays fast.
"""

from importlib import import_module
from typing import Any

__all__ = ["REGISTRY", "Counting", "Metric", "SegmentMetric", "load_metric"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module(".base", __name__), name)
    raise AttributeError(f"module 'kbest_bleu.metrics' has no attribute {name!r}")
