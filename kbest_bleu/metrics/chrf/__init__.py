"""chrF (Popovic 2015) and chrF++ (Popovic 2017), equal to sacrebleu 2.6.0's ``CHRF``, over the
same K-best tables as BLEU; pairwise and aggregated chrF for minimum Bayes risk decoding.

N-grams become exact integer ids (a trie of code points and words per segment) and the clipped
match counts come from numba kernels; the F-score is vectorized numpy. Kept light: importing this
package (as the CLI does for its options) loads nothing heavy; numba and pyarrow load with the
first scoring call.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Chrf", "ChrfParams", "ChrfResult", "PairwiseChrf", "aggregate_chrf", "chrf_from_stats", "chrf_params",
           "chrf_rows", "chrf_scores", "chrf_segments", "corpus_chrf", "from_options", "pairwise_chrf",
           "sentence_chrf"]

_WHERE = {"ChrfParams": "params", "chrf_params": "params", "Chrf": "score", "ChrfResult": "score",
          "chrf_from_stats": "score", "chrf_rows": "score", "chrf_scores": "score", "chrf_segments": "score",
          "corpus_chrf": "score", "from_options": "score", "sentence_chrf": "score", "PairwiseChrf": "mbr",
          "aggregate_chrf": "mbr", "pairwise_chrf": "mbr"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
