"""The command line's shared options: the parser class, the scoring options every scoring
command takes and the :class:`~kbest_bleu.config.BleuConfig` they build, the column and
reference-file options. Only argparse and the config at import: ``kbest-bleu --help`` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from .config import COMPATS, REF_LENGTH_POLICIES, TOKENIZERS, BleuConfig
from .errors import InputError

__all__ = ["Parser", "columns_options", "config_from", "refs_option", "scoring_options"]


class Parser(argparse.ArgumentParser):
    """Every (sub)command shows its defaults in --help; a usage error is one paragraph."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """The error and where the options are, without argparse's usage block (~30 lines for
        ``score``, which buried the one line that mattered); exit status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n{self.prog} --help lists the options\n")


def scoring_options(p: argparse.ArgumentParser) -> None:
    """The options that make a :class:`BleuConfig` (:func:`config_from`), as one group."""
    g = p.add_argument_group("scoring options (README, smoothing and preset tables)")
    g.add_argument("--compat", choices=COMPATS, default="sacrebleu", help="whose conventions to reproduce")
    g.add_argument("-s", "--smoothing", default=None,
                   help="0-7 (Chen & Cherry 2014), none/floor/add-k/exp, or bleu+1 (moses); default: the preset's")
    g.add_argument("--epsilon", type=float, default=0.1, help="smoothing 1 / floor value")
    g.add_argument("--add-k", type=float, default=1.0, help="smoothing 2 / add-k value; moses: s")
    g.add_argument("--k", type=float, default=5.0, help="smoothing 4 and 7 constant K")
    g.add_argument("--alpha", type=float, default=5.0, help="smoothing 6 alpha")
    g.add_argument("--max-order", type=int, default=4)
    g.add_argument("--weights", default=None, help="comma-separated n-gram weights, one per order")
    g.add_argument("--effective-order", dest="effective_order", action="store_true", default=None)
    g.add_argument("--no-effective-order", dest="effective_order", action="store_false")
    g.add_argument("--auto-reweigh", action="store_true", help="nltk: NLTK's auto_reweigh")
    g.add_argument("--smooth-bp", action="store_true", help="moses: smoothed brevity penalty")
    g.add_argument("--ref-length", choices=list(REF_LENGTH_POLICIES), default="closest")
    g.add_argument("-t", "-tok", "--tokenize", choices=TOKENIZERS, default="13a", metavar="TOK",
                   help=f"{', '.join(TOKENIZERS)}: as sacrebleu; 'none' for pre-tokenized (Moses-style) K-best lists; ja-mecab/ko-mecab: "
                        "pip install '.[ja]'/'.[ko]'; flores101/flores200/spm: '.[flores]' and a local "
                        "model file (--spm-model)")
    g.add_argument("--spm-model", metavar="PATH", default=None,
                   help="the SentencePiece model file of -t flores101/flores200/spm (never downloaded); default: "
                        "$KBEST_BLEU_FLORES101_MODEL / $KBEST_BLEU_FLORES200_MODEL, else sacrebleu's cache "
                        "~/.sacrebleu/models")
    g.add_argument("-lc", "--lowercase", action="store_true")


def config_from(a: argparse.Namespace) -> BleuConfig:
    """The :class:`BleuConfig` of :func:`scoring_options`' values; ``--spm-model`` goes through the
    environment, so that worker processes (Spark, local mode) find the model too."""
    if a.spm_model:
        if a.tokenize not in ("flores101", "flores200", "spm"):
            raise InputError(f"--spm-model: expected with -t flores101, flores200 or spm; found -t {a.tokenize}")
        import os
        from .tokenize import SPM_MODEL_ENV
        os.environ[SPM_MODEL_ENV["flores101" if a.tokenize == "spm" else a.tokenize]] = str(Path(a.spm_model).resolve())
    weights = None
    if a.weights:
        try:
            weights = tuple(float(x) for x in a.weights.split(","))
        except ValueError:
            raise InputError(f"--weights: expected comma-separated numbers, found {a.weights!r}") from None
    return BleuConfig(compat=a.compat, smoothing=a.smoothing, epsilon=a.epsilon, add_k=a.add_k, k=a.k,
                      alpha=a.alpha, max_order=a.max_order, weights=weights, effective_order=a.effective_order,
                      auto_reweigh=a.auto_reweigh, smooth_bp=a.smooth_bp, ref_length=a.ref_length,
                      tokenize=a.tokenize, lowercase=a.lowercase)


def columns_options(p: argparse.ArgumentParser, segment_help: str = "segment id column(s), comma-separated; "
                     "default: the key stored in a parquet file by kbest-bleu, else segment_id") -> None:
    """--hyp-col, --ref-col and --seg-col (``segment_help``: what --seg-col means to the command)."""
    p.add_argument("--hyp-col", default="hypothesis", help="string column of hypotheses")
    p.add_argument("--ref-col", default="references", help="list<string> column of references")
    p.add_argument("--seg-col", default=None, help=segment_help)


def refs_option(p: argparse.ArgumentParser, **kwargs) -> None:
    """The one spelling of reference files across commands (line i = segment i, one file per stream)."""
    p.add_argument("-r", "--refs", "--ref-file", dest=kwargs.pop("dest", "refs"), nargs="+", action="extend",
                   metavar="REF", help="reference text files, one per stream; .gz/.bz2/.zst read as such", **kwargs)
