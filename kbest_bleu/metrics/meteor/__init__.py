"""Meteor 1.5 with the exact module only (Denkowski & Lavie, WMT 2014), equal to the jar on every
statistic, over the same K-best tables as BLEU: the reference side is prepared once per segment,
the jar's beam-search alignment runs in numba, parallel over segments.

Kept light: importing this package (as the CLI does for its options) loads nothing heavy; numba
and pyarrow load with the first scoring call.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Meteor", "MeteorParams", "MeteorResult", "from_options", "meteor_params", "meteor_rows",
           "meteor_segments", "normalize_line", "sentence_meteor", "system_meteor"]

_WHERE = {"MeteorParams": "params", "meteor_params": "params", "MeteorResult": "score", "Meteor": "score",
          "from_options": "score", "meteor_rows": "score", "meteor_segments": "score",
          "sentence_meteor": "score", "system_meteor": "score", "normalize_line": "normalize"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
