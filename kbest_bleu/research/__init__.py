"""Metric research: correlation with human judgments (:mod:`.metaeval`, :mod:`.correlation`) and
sacrebleu-compatible significance tests (:mod:`.significance`)."""

from .correlation import kendall_tau_b, kendall_tau_pairs, pearson, rankdata, spearman
from .significance import PairedResult, approximate_randomization, bootstrap_ci, paired_bootstrap

__all__ = ["PairedResult", "approximate_randomization", "bootstrap_ci", "kendall_tau_b", "kendall_tau_pairs",
           "paired_bootstrap", "pearson", "rankdata", "spearman"]
