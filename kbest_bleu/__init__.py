"""kbest_bleu: exact, fast sentence-level BLEU for whole K-best lists."""

from .bleu import (BleuResult, corpus_bleu, corpus_score, document_score, score_kbest, sentence_bleu,
                   sentence_scores)
from .config import COMPATS, BleuConfig, __version__
from .errors import InputError
from .stats import BleuStats, ngram_stats
from .tokenize import TOKENIZERS

__all__ = [
    "COMPATS",
    "TOKENIZERS",
    "BleuConfig",
    "BleuResult",
    "BleuStats",
    "InputError",
    "__version__",
    "corpus_bleu",
    "corpus_score",
    "document_score",
    "ngram_stats",
    "score_kbest",
    "sentence_bleu",
    "sentence_scores",
]
