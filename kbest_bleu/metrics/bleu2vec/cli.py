"""Command-line faces of BLEU2VEC: ``score`` options and the ``kbest-bleu bleu2vec`` command.

Only argparse is imported here (the CLI must start fast); gensim, numba and the scoring code are
imported inside the handlers.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...cli.options import float_range, int_range, positive_int, reads, seed_int, threads_int, writes

MODES = ("corrected", "faithful")


def add_score_options(group: argparse._ArgumentGroup) -> None:
    """Add the BLEU2VEC options of ``kbest-bleu score`` (used with ``--metric ...,bleu2vec``)."""
    group.add_argument("--embeddings", metavar="DIR", type=reads("--embeddings"),
                       help="BLEU2VEC: model directory (<name>.1gram.w2v.bin, ..., or <name>.joint.w2v.bin), "
                            "as written by 'kbest-bleu bleu2vec train'")
    group.add_argument("--bleu2vec-mode", choices=MODES, default="corrected",
                       help="BLEU2VEC: corrected (default, the paper done right) or faithful (the authors' bc4.py)")
    group.add_argument("--bleu2vec-max-order", type=int_range(1, 9, "an n-gram order from 1 to 9"), default=None,
                       help="BLEU2VEC: highest n-gram order (default: 3 in both modes; faithful: bc4.py's 3)")
    group.add_argument("--bleu2vec-weights", default=None,
                       help="BLEU2VEC: comma-separated weights, one per order (default: corrected 1/N each, as "
                            "the signature shows; faithful 0.33,0.34,0.33, bc4.py's)")
    group.add_argument("--bleu2vec-smoothing", default=None,
                       help="BLEU2VEC corrected: Chen & Cherry smoothing 0-7 or a name on the fuzzy counts "
                            "(default: 3, exp, sacrebleu's sentence-level default; faithful: none, as bc4.py)")
    group.add_argument("--bleu2vec-min-similarity", type=float_range(-1.0, 1.0, "a cosine from -1 to 1"), default=0.0,
                       help="BLEU2VEC corrected: fuzzy pairs below this cosine are not taken (default 0)")
    group.add_argument("--bleu2vec-tokenize", default=None,
                       help="BLEU2VEC corrected: core tokenizer (default 13a); faithful always splits on whitespace")


def metric_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``from_options`` keyword arguments from parsed ``score`` arguments."""
    options: dict[str, Any] = {"embeddings": args.embeddings, "mode": args.bleu2vec_mode,
                               "min_similarity": args.bleu2vec_min_similarity}
    if args.bleu2vec_max_order is not None:
        options["max_order"] = args.bleu2vec_max_order
    if args.bleu2vec_weights:
        options["weights"] = args.bleu2vec_weights  # parsed and validated by from_options
    if args.bleu2vec_smoothing is not None:
        options["smoothing"] = args.bleu2vec_smoothing
    if args.bleu2vec_tokenize is not None:
        options["tokenize"] = args.bleu2vec_tokenize
    return options


def _train(args: argparse.Namespace) -> int:
    from ...errors import InputError
    from .models import train
    try:
        orders = tuple(int(x) for x in args.orders.split(","))
    except ValueError:
        print(f"kbest-bleu bleu2vec train: --orders: expected comma-separated integers such as 1,2,3, "
              f"found {args.orders!r}", file=sys.stderr)
        return 2
    try:
        paths = train(args.corpus, args.output, orders=orders, joint=args.joint, name=args.name,
                      tokenize=args.tokenize, vector_size=args.vector_size, epochs=args.epochs,
                      min_counts=args.min_counts, workers=args.workers, seed=args.seed,
                      progress=not args.quiet)
    except InputError as exc:
        print(f"kbest-bleu bleu2vec train: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


def _metaeval(args: argparse.Namespace) -> int:
    from ...errors import InputError
    from ...research.bleu2vec_paper import main
    from ...research.data import shared_data_errors
    try:
        with shared_data_errors(args.data):
            print(main(args.data, args.models, args.corpus_out, train_models=args.train, epochs=args.epochs,
                       vector_size=args.vector_size, workers=args.workers))
    except InputError as exc:
        print(f"kbest-bleu bleu2vec metaeval: {exc}", file=sys.stderr)
        return 2
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbest-bleu bleu2vec {train,metaeval}``."""
    p = subparsers.add_parser("bleu2vec", help="BLEU2VEC: train n-gram embeddings, meta-evaluate",
                              description="BLEU2VEC (Taettar & Fishel, WMT 2017): n-gram embedding models "
                                          "and the paper's correlation table.")
    sub = p.add_subparsers(dest="bleu2vec_command", required=True)
    t = sub.add_parser("train", help="train separate (paper 2.1) and/or joint (2.2) n-gram word2vec models")
    t.add_argument("corpus", type=reads("bleu2vec train CORPUS"), help="plain text, one sentence per line (.gz read transparently)")
    t.add_argument("-o", "--output", required=True, type=writes("-o"), help="model directory to write")
    t.add_argument("--orders", default="1,2,3", help="n-gram orders of the separate models (1,2,3)")
    t.add_argument("--joint", action="store_true", help="also train the joint model of section 2.2")
    t.add_argument("--name", default="model", help="file name prefix (<name>.<n>gram.w2v.bin)")
    t.add_argument("--tokenize", default="13a", help="core tokenizer applied to each line (13a)")
    t.add_argument("--vector-size", type=int_range(1, 100_000, "a vector size from 1 to 100000"), default=300)
    t.add_argument("--epochs", type=positive_int, default=5)
    t.add_argument("--min-counts", default="5,30,50",
                   help="minimum counts per order, comma-separated (paper: bigrams 30, trigrams 50)")
    t.add_argument("--workers", type=threads_int, default=2)
    t.add_argument("--seed", type=seed_int, default=1)
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)
    m = sub.add_parser("metaeval", help="the paper's correlation table on WMT15/WMT17 DA and WMT22 systems")
    m.add_argument("--data", default=None, help="directory of the shared parquet data (default: $KBEST_BLEU_DATA, "
                                                "else ../shared/data from the current directory, else beside the checkout)")
    m.add_argument("--models", default="out/bleu2vec_models", help="model directory (trained with --train)")
    m.add_argument("--corpus-out", default="out/bleu2vec_corpus.txt", type=writes("--corpus-out"),
                   help="where --train writes the deduplicated English training text")
    m.add_argument("--train", action="store_true", help="(re)train the separate and joint models first")
    m.add_argument("--vector-size", type=int_range(1, 100_000, "a vector size from 1 to 100000"), default=100)
    m.add_argument("--epochs", type=positive_int, default=5)
    m.add_argument("--workers", type=threads_int, default=2)
    m.set_defaults(func=_metaeval)
