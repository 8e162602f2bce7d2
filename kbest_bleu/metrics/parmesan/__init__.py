"""Parmesan (Barančíková, WMT 2014): Meteor with exact matches only, on references paraphrased
towards each hypothesis (section 4), "Before Depfix" (Depfix, the paper's Czech grammar
fixer, is not available).

Python faces: :func:`load_table`, :func:`paraphrase` and :func:`sentence_parmesan` (one pair),
:func:`paraphrase_segments` and :func:`parmesan_segments` (whole K-best tables); :func:`from_options` builds the
:class:`~kbest_bleu.metrics.base.Metric` used by ``kbest-bleu score --metric parmesan`` and Spark.

Kept light: importing this package (as the CLI does for its options) loads nothing heavy; the
table, analyzer and numba modules load with the first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ParmesanMetric", "ParmesanResult", "from_options", "load_table", "paraphrase", "paraphrase_segments",
           "parmesan_segments", "sentence_parmesan"]

_WHERE = {"ParmesanMetric": "metric", "from_options": "metric", "ParmesanResult": "api", "load_table": "api",
          "paraphrase": "api", "paraphrase_segments": "api", "parmesan_segments": "api", "sentence_parmesan": "api"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
