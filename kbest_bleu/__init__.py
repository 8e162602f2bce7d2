"""kbest_bleu: exact, fast sentence-level BLEU for whole K-best lists.

The public names below are imported on first use (PEP 562), so ``import kbest_bleu`` and
``import kbest_bleu.config`` stay cheap: numba, pyarrow and the compiled kernels load only when a
scoring function is first touched.
"""

from importlib import import_module
from typing import Any

from .config import COMPATS, TOKENIZERS, BleuConfig, __version__
from .errors import InputError

_LAZY = {
    "BleuResult": "bleu", "corpus_bleu": "bleu", "corpus_score": "bleu", "document_score": "bleu",
    "score_kbest": "bleu", "sentence_bleu": "bleu", "sentence_results": "bleu", "sentence_scores": "bleu",
    "SentenceScorer": "bleu",
    "BleuStats": "stats", "ngram_stats": "stats",
    "set_threads": "counting.threads", "threads": "counting.threads",  # the kernels' thread count
    "keep_freed_memory": "memory",  # malloc's thresholds, for a process that scores again and again
    "bleu2vec_scores": "metrics.bleu2vec",  # needs the [bleu2vec] extra only when called with a model
}

__all__ = [
    "COMPATS",
    "TOKENIZERS",
    "BleuConfig",
    "BleuResult",
    "BleuStats",
    "InputError",
    "SentenceScorer",
    "__version__",
    "bleu2vec_scores",
    "corpus_bleu",
    "corpus_score",
    "document_score",
    "keep_freed_memory",
    "ngram_stats",
    "score_kbest",
    "sentence_bleu",
    "sentence_results",
    "sentence_scores",
    "set_threads",
    "threads",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kbest_bleu' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
