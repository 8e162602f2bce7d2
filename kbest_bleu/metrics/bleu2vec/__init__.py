"""BLEU2VEC (Taettar & Fishel, WMT 2017): BLEU whose n-gram precisions also credit near-matches,
weighted by the cosine of n-gram embeddings, over the same K-best tables as BLEU.

Kept light: importing this package (as the CLI does for its options) loads nothing heavy; the
scoring code (numba, pyarrow) and gensim load when first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Bleu2vec", "Embeddings", "bleu2vec_scores", "from_options", "load_embeddings",
           "sentence_bleu2vec", "train"]

_WHERE = {"Bleu2vec": "score", "bleu2vec_scores": "score", "from_options": "score",
          "sentence_bleu2vec": "score", "Embeddings": "models", "load_embeddings": "models", "train": "models"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
