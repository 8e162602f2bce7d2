"""Metrics beyond BLEU over the same K-best tables: BLEU2VEC, Meteor (exact), Parmesan.

Each metric lives in its own module (optional dependencies are imported there, never here) and
exposes a :class:`~kbest_bleu.metrics.base.Metric`: the batch job, the CLI and Spark call every
metric through that one interface (DESIGN.md section 6). :data:`REGISTRY` maps the
name used by ``kbest-bleu score --metric`` to the module that builds it; the module is imported
only when the metric is asked for.
"""

from .base import REGISTRY, Metric, load_metric

__all__ = ["REGISTRY", "Metric", "load_metric"]
