"""Command-line hooks of Parmesan: ``score`` options and the ``kbest-bleu parmesan`` command.

Only argparse is imported here (this module is imported on every CLI start); the work is done
by the handlers, which import the metric's modules when they run.
"""

from __future__ import annotations

import argparse
import sys

from ...cli.options import probability, reads, writes

ANALYZERS_HELP = "lower (lowercased words, no POS), columns, simplemma, nltk, spacy:<model> (spacy:cs_core_news_sm)"


def add_score_options(group: argparse._ArgumentGroup) -> None:
    """Options of ``kbest-bleu score --metric parmesan`` (``--lang`` is Meteor's, shared)."""
    group.add_argument("--paraphrases", metavar="TABLE.tsv", default=None, type=reads("--paraphrases"),
                       help="Parmesan: paraphrase table (lemma_ref lemma_hyp pos source [prob]); "
                            "see kbest-bleu parmesan build-table")
    group.add_argument("--paraphrase-sources", default="wordnet,meteor",
                       help="Parmesan: table sources to use, comma-separated (wordnet, meteor; 'both' lines: either)")
    group.add_argument("--analyzer", default="lower", help=f"Parmesan lemmas/POS: {ANALYZERS_HELP}")
    group.add_argument("--paraphrases-directed", action="store_true",
                       help="Parmesan: use table pairs only as listed (default: both directions)")
    for side in ("hyp", "ref"):
        for what in ("lemma", "pos"):
            group.add_argument(f"--{side}-{what}-col", default=None,
                               help=f"Parmesan, --analyzer columns: {side} {what} column "
                                    "(list of strings per token, or one space-separated string)")


# the options of other metrics' groups this one reads (Meteor's: Parmesan scores with Meteor);
# kbest_bleu.cli.score refuses an option given that no selected metric reads
OPTIONS_FROM = ("lang", "meteor_jar_compat", "meteor_lower", "meteor_function_words")


def metric_options(args: argparse.Namespace) -> dict:
    """The keyword options of :func:`kbest_bleu.metrics.parmesan.from_options` from parsed ``args``."""
    # --lang and the --meteor-* options belong to Meteor's group: Parmesan scores with Meteor (exact)
    return {"paraphrases": args.paraphrases, "analyzer": args.analyzer, "lang": getattr(args, "lang", "en"),
            "directed": args.paraphrases_directed,
            "sources": args.paraphrase_sources, "jar_compat": getattr(args, "meteor_jar_compat", False),
            "lowercase": getattr(args, "meteor_lower", False),
            "function_words": getattr(args, "meteor_function_words", None),
            "hyp_lemma_col": args.hyp_lemma_col, "hyp_pos_col": args.hyp_pos_col,
            "ref_lemma_col": args.ref_lemma_col, "ref_pos_col": args.ref_pos_col}


def _build_table(args: argparse.Namespace) -> int:
    from ...errors import InputError
    from .table import build_table
    try:
        counts = build_table(args.input, args.output, analyzer=args.analyzer, lang=args.lang,
                             synonyms=args.synonyms, min_prob=args.min_prob)
    except InputError as exc:
        print(f"kbest-bleu parmesan build-table: {exc}", file=sys.stderr)
        return 2
    print(" ".join(f"{k} {v:,}" for k, v in counts.items()))
    return 0


def _metaeval(args: argparse.Namespace) -> int:
    from ...errors import InputError
    from ...research.data import shared_data_errors
    from ...research.parmesan_paper import run_metaeval
    try:
        with shared_data_errors(args.data):
            print(run_metaeval(args.data, paraphrases=args.paraphrases, experiment=args.experiment))
    except InputError as exc:
        print(f"kbest-bleu parmesan metaeval: {exc}", file=sys.stderr)
        return 2
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbest-bleu parmesan build-table|metaeval``."""
    p = subparsers.add_parser("parmesan", help="Parmesan (Barancikova 2014): paraphrase tables, metaeval")
    sub = p.add_subparsers(dest="parmesan_command", required=True)
    b = sub.add_parser("build-table", help="filter a Meteor paraphrase table as Parmesan section 3.1")
    b.add_argument("input", type=reads("build-table IN"), help="Meteor paraphrase table: paraphrase-xx.gz (3 lines per pair) or "
                                 "prob<TAB>word<TAB>paraphrase")
    b.add_argument("-o", "--output", required=True, type=writes("-o"), help="output TSV: lemma_ref lemma_hyp pos source prob")
    b.add_argument("--synonyms", default=None, type=reads("--synonyms"),
                   help="WordNet synsets in Meteor's format (english.synsets: word line, synset-ids line); "
                        "pairs found there are tagged wordnet / both")
    b.add_argument("--analyzer", default="simplemma", help=f"lemmas/POS of the words: {ANALYZERS_HELP}")
    b.add_argument("--lang", default="en", help="language code for the analyzer (en, cs, ...)")
    b.add_argument("--min-prob", type=probability, default=0.0, help="drop Meteor pairs below this probability")
    b.set_defaults(func=_build_table)
    m = sub.add_parser("metaeval", help="the paper's correlations as far as the shared data allow")
    m.add_argument("--data", default=None, help="shared data folder (default: $KBEST_BLEU_DATA, else ../shared/data from the current "
                                                "directory, else beside the checkout)")
    m.add_argument("--paraphrases", default=None, type=reads("--paraphrases"),
                   help="English table for the into-English experiment (default: built from pycocoevalcap's "
                        "Meteor data)")
    m.add_argument("--experiment", choices=("all", "en-cs", "into-en"), default="all")
    m.set_defaults(func=_metaeval)
