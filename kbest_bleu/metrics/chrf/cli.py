"""Command-line face of chrF: the ``kbest-bleu score --metric chrf`` options (sacrebleu's names).

Only argparse is imported here (the CLI must start fast); the scorer is imported when used.
"""

from __future__ import annotations

import argparse
from typing import Any


def _beta(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


def add_score_options(group: argparse._ArgumentGroup) -> None:
    """Add the chrF options of ``kbest-bleu score`` (used with ``--metric ...,chrf``)."""
    group.add_argument("--chrf-char-order", type=int, default=6, metavar="N",
                       help="chrF: character n-gram order (default 6)")
    group.add_argument("--chrf-word-order", type=int, default=0, metavar="N",
                       help="chrF: word n-gram order (default 0; 2 = chrF++)")
    group.add_argument("--chrf-beta", type=_beta, default=2, metavar="BETA",
                       help="chrF: weight of recall against precision (default 2)")
    group.add_argument("--chrf-whitespace", action="store_true",
                       help="chrF: keep whitespace in the character n-grams")
    group.add_argument("--chrf-lowercase", action="store_true", help="chrF: lowercase both sides first")
    group.add_argument("--chrf-eps-smoothing", action="store_true",
                       help="chrF: chrF++.py's epsilon smoothing (NLTK, Moses) instead of the effective order")


def metric_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``from_options`` keyword arguments from parsed ``score`` arguments."""
    return {"char_order": args.chrf_char_order, "word_order": args.chrf_word_order, "beta": args.chrf_beta,
            "whitespace": args.chrf_whitespace, "lowercase": args.chrf_lowercase,
            "eps_smoothing": args.chrf_eps_smoothing}
