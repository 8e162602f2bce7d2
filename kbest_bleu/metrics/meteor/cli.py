"""Command-line face of Meteor (exact): the ``kbest-bleu score --metric meteor`` options.

Only argparse is imported here (the CLI must start fast); the scorer is imported when used.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...cli.options import reads

LANGS = ("en", "cz", "cs", "de", "es", "fr", "ru", "other")


def add_score_options(group: argparse._ArgumentGroup) -> None:
    """Add the Meteor options of ``kbest-bleu score`` (``--lang`` is shared with Parmesan)."""
    group.add_argument("--lang", default="en", choices=LANGS,
                       help="Meteor/Parmesan language, as the jar's -l (cs = cz): parameters and function words")
    group.add_argument("--meteor-jar-compat", action="store_true",
                       help="Meteor: reproduce the jar's quirks (English function words for every language "
                            "unless -s is given; tokens equal when their Java hash codes are equal)")
    group.add_argument("--meteor-lower", action="store_true",
                       help="Meteor: lowercase hypotheses and references first (the jar's -lower)")
    group.add_argument("--meteor-norm", action="store_true",
                       help="Meteor: the jar's -norm: its tokenizer/normalizer, then lowercasing (en, cz, de, es, "
                            "fr, ru; docs/meteor.md)")
    group.add_argument("--meteor-function-words", metavar="FILE", default=None, type=reads("--meteor-function-words"),
                       help="Meteor: function-word list, one word per line (the jar's -s FILE)")


def metric_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``from_options`` keyword arguments from parsed ``score`` arguments."""
    return {"lang": args.lang, "jar_compat": args.meteor_jar_compat, "lowercase": args.meteor_lower,
            "function_words": args.meteor_function_words, "normalize": args.meteor_norm}
