"""Metric research: correlation with human judgments (:mod:`.metaeval`, :mod:`.judged`,
:mod:`.correlation`, :mod:`.chen_cherry`) and sacrebleu-compatible significance tests
(:mod:`.significance`). Names load on first use (PEP 562), so ``kbest-bleu --help`` stays fast."""

from importlib import import_module
from typing import Any

_LAZY = {"kendall_tau_b": "correlation", "kendall_tau_pairs": "correlation", "pearson": "correlation",
         "rankdata": "correlation", "spearman": "correlation", "PairedResult": "significance",
         "approximate_randomization": "significance", "bootstrap_ci": "significance",
         "paired_bootstrap": "significance"}

__all__ = ["PairedResult", "approximate_randomization", "bootstrap_ci", "kendall_tau_b", "kendall_tau_pairs",
           "paired_bootstrap", "pearson", "rankdata", "spearman"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'kbest_bleu.research' has no attribute {name!r}")
