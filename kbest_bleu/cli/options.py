"""The command line's shared options: the parser class, the scoring options every scoring
command takes and the :class:`~kbest_bleu.config.BleuConfig` they build, the column and
reference-file options. Only argparse and the config at import: ``kbest-bleu --help`` stays fast."""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path
from typing import Callable, NoReturn, Sequence

from ..config import COMPATS, REF_LENGTH_POLICIES, TOKENIZERS, BleuConfig
from .. import settings
from ..errors import InputError

# the metrics besides BLEU (kbest_bleu.metrics.base.REGISTRY); their cli modules import only argparse
METRICS = ("bleu2vec", "chrf", "meteor", "parmesan")
log = logging.getLogger("kbest_bleu")

__all__ = ["Parser", "block_bytes_option", "columns_options", "config_from", "decimals_int", "finite_float",
           "float_range", "int_range", "nonnegative_float", "nonnegative_int", "positive_float", "positive_int",
           "probability", "reads", "refs_option", "scoring_options", "seed_int", "threads_int", "writes"]


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: X)" after each help, except where it would say nothing (None, a
    flag's False) or where the help already states its default ("default: ..." in the text)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False) or "default" in text or action.default is argparse.SUPPRESS:
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """Every (sub)command shows its defaults in --help; a usage error is one paragraph; a
    mistyped option or choice gets a "did you mean" (argparse's ``suggest_on_error`` on Python
    >= 3.14 for choices, by hand for option names and on older Pythons)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        if sys.version_info >= (3, 14):
            kwargs.setdefault("suggest_on_error", True)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):  # noqa: ANN001, ANN201 (argparse's signature)
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{_did_you_mean(extras, self, parsed)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        """The error and where the options are, without argparse's usage block (~30 lines for
        ``score``, which buried the one line that mattered); exit status 2."""
        if "maybe you meant" not in message:
            message += _choice_hint(message)
        self.exit(2, f"{self.prog}: error: {message}\n{self.prog} --help lists the options\n")


def _option_strings(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> list:
    """Every option string of ``parser`` and of the subcommands ``parsed`` went through."""
    out = []
    for action in parser._actions:
        out += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
            if chosen is not None:
                out += _option_strings(chosen, parsed)
    return out


def _did_you_mean(extras: Sequence[str], parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> str:
    """"; did you mean --smoothing?" for the unknown options of ``extras`` that are close to one."""
    import difflib
    known = _option_strings(parser, parsed)
    hints = []
    for word in extras:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.75)
            if close:
                hints.append((word.split("=", 1)[0], close[0]))
    if len(hints) == 1:
        return f"; did you mean {hints[0][1]}?"
    return f"; did you mean {', '.join(f'{c} for {w}' for w, c in hints)}?" if hints else ""


def _choice_hint(message: str) -> str:
    """", maybe you meant 'score'?" for argparse's "invalid choice: 'scroe' (choose from ...)"
    (Python 3.14's ``suggest_on_error`` says the same)."""
    import difflib
    import re
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2)) or [c.strip() for c in found.group(2).split(",")]
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return f", maybe you meant '{close[0]}'?" if close else ""


# ---- typed option values: one validation layer for every command (argparse ``type=``) ----------
# argparse names the option in front of the message: "argument --epochs: expected a positive ..."

def int_range(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting decimal integers in [low, high]; ``what`` describes them."""
    def value(text: str) -> int:
        try:
            number = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"expected {what}, found {number}")
        return number
    value.__name__ = what
    return value


def float_range(low: float, high: float, what: str, open_low: bool = False) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers in [low, high] (``open_low``: (low, high]);
    NaN and infinities are refused (they would reach the outputs as NaN)."""
    def value(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        if not (math.isfinite(number) and low <= number <= high) or (open_low and number == low):
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}")
        return number
    value.__name__ = what
    return value


positive_int = int_range(1, 2**31 - 1, "a positive integer")
nonnegative_int = int_range(0, 2**31 - 1, "an integer >= 0")
seed_int = int_range(0, 2**32 - 1, "a seed from 0 to 4294967295")
finite_float = float_range(-math.inf, math.inf, "a finite number")
positive_float = float_range(0.0, math.inf, "a finite number > 0", open_low=True)
nonnegative_float = float_range(0.0, math.inf, "a finite number >= 0")
probability = float_range(0.0, 1.0, "a probability in [0, 1]")
threads_int = int_range(1, 4096, "a number of threads from 1 to 4096")
decimals_int = int_range(0, 17, "a number of decimals from 0 to 17")


def reads(option: str) -> Callable[[str], str]:
    """An argparse ``type`` for an option naming a file or directory the command reads: the path is
    registered with the output guard (:func:`kbest_bleu.files.inputs.register_input`), so that no
    output of the command may replace it (checked before anything is read)."""
    def path(text: str) -> str:
        from ..files.inputs import register_input
        register_input(text, option)
        return text
    path.__name__ = "path"
    return path


def writes(option: str) -> Callable[[str], str]:
    """An argparse ``type`` for an option naming an output: declared to the output guard
    (:func:`kbest_bleu.files.inputs.declare_output`), which refuses it when it is an input."""
    def path(text: str) -> str:
        from ..files.output import check_output
        from ..files.inputs import declare_output
        if text == "-":  # stdout: open, or the job would run for nothing
            try:
                check_output(text, (), option)
            except InputError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        declare_output(text, option)
        return text
    path.__name__ = "path"
    return path


def scoring_options(p: argparse.ArgumentParser) -> None:
    """The options that make a :class:`BleuConfig` (:func:`config_from`), as one group."""
    g = p.add_argument_group("scoring options (README, smoothing and preset tables)")
    g.add_argument("--compat", choices=COMPATS, default="sacrebleu", help="whose conventions to reproduce")
    g.add_argument("-s", "--smoothing", "--smooth-method", default=None,  # sacrebleu's name too
                   help="0-7 (Chen & Cherry 2014), none/floor/add-k/exp, or bleu+1 (moses); default: the preset's")
    g.add_argument("--epsilon", type=float, default=0.1, help="smoothing 1 / floor value")
    g.add_argument("--add-k", type=float, default=1.0, help="smoothing 2 / add-k value; moses: s")
    g.add_argument("-sv", "--smooth-value", type=float, default=None,
                   help="sacrebleu's -sv: the value of -s floor (--epsilon) or -s add-k (--add-k)")
    g.add_argument("--k", type=float, default=5.0, help="smoothing 4 and 7 constant K")
    g.add_argument("--alpha", type=float, default=5.0, help="smoothing 6 alpha")
    g.add_argument("--max-order", type=int, default=4, help="N, the highest n-gram order (1-16)")
    g.add_argument("--weights", default=None, help="comma-separated n-gram weights, one per order")
    g.add_argument("--effective-order", dest="effective_order", action="store_true", default=None,
                   help="sacrebleu: drop the orders a hypothesis has no n-grams of, reweighting the others; "
                        "default: on for sentence BLEU, off for corpus BLEU, as sacrebleu")
    g.add_argument("--no-effective-order", dest="effective_order", action="store_false",
                   help="sacrebleu: keep every order, also in sentence BLEU")
    g.add_argument("--auto-reweigh", action="store_true", help="nltk: NLTK's auto_reweigh")
    g.add_argument("--smooth-bp", action="store_true", help="moses: smoothed brevity penalty")
    g.add_argument("--ref-length", choices=list(REF_LENGTH_POLICIES), default="closest",
                   help="the reference length r of the brevity penalty with several references: the closest to "
                        "the hypothesis length (ties: the shorter), the shortest, or the average (Moses, truncated)")
    g.add_argument("-t", "-tok", "--tokenize", choices=TOKENIZERS, default=None, metavar="TOK",
                   help=f"{', '.join(TOKENIZERS)}: as sacrebleu (default 13a; 'none' under --compat moses, as "
                        "Moses' scorers split tokenized text on whitespace, and in export-moses); 'none' for "
                        "pre-tokenized (Moses-style) K-best lists; ja-mecab/ko-mecab: pip install '.[ja]'/'.[ko]'; "
                        "flores101/flores200/spm: '.[flores]' and a local model file (--spm-model)")
    g.add_argument("--spm-model", metavar="PATH", default=None, type=reads("--spm-model"),
                   help="the SentencePiece model file of -t flores101/flores200/spm (never downloaded); default: "
                        "$KBEST_BLEU_FLORES101_MODEL / $KBEST_BLEU_FLORES200_MODEL, else sacrebleu's cache "
                        "~/.sacrebleu/models")
    g.add_argument("-lc", "--lowercase", action="store_true", default=None,
                   help="lowercase hypotheses and references before tokenizing (sacrebleu's -lc); the default "
                        "under --compat mteval, which lowercases A-Z as mteval-v13a.pl does without -c")
    g.add_argument("-c", "--case-sensitive", dest="lowercase", action="store_false",
                   help="keep case (mteval-v13a.pl's -c; the default but under --compat mteval)")


def config_from(a: argparse.Namespace) -> BleuConfig:
    """The :class:`BleuConfig` of :func:`scoring_options`' values; ``--spm-model`` goes through the
    environment, so that worker processes (Spark, local mode) find the model too."""
    if a.spm_model:
        if a.tokenize not in ("flores101", "flores200", "spm"):
            raise InputError(f"--spm-model: expected with -t flores101, flores200 or spm; found -t "
                             f"{a.tokenize or 'left to its default'}")
        settings.set_spm_model("flores101" if a.tokenize == "spm" else a.tokenize, Path(a.spm_model).resolve())
    weights = None
    if a.weights:
        try:
            weights = tuple(float(x) for x in a.weights.split(","))
        except ValueError:
            raise InputError(f"--weights: expected comma-separated numbers, found {a.weights!r}") from None
    if a.smooth_value is not None:  # sacrebleu's one option for the value of either smoothing
        name = str(a.smoothing).lower()
        if name not in ("floor", "1", "add-k", "2"):
            raise InputError(f"-sv/--smooth-value: the value of -s floor or -s add-k (as sacrebleu), found -s "
                             f"{a.smoothing}; leave -sv out or choose one of them")
        a.epsilon, a.add_k = (a.smooth_value, a.add_k) if name in ("floor", "1") else (a.epsilon, a.smooth_value)
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


def block_bytes_option(p: argparse.ArgumentParser) -> None:
    """--block-bytes: the block of the CSV/TSV and JSON Lines readers (kbest_bleu.settings.TEXT_BLOCK_BYTES)."""
    p.add_argument("--block-bytes", type=positive_int, default=None, metavar="N",
                   help="CSV/TSV and JSON Lines are read in blocks of N bytes: a row must fit in one, and the first "
                        "block decides each column's type (default: $KBEST_BLEU_BLOCK_BYTES, else 8 MiB)")


def refs_option(p: argparse.ArgumentParser, **kwargs) -> None:
    """The one spelling of reference files across commands (line i = segment i, one file per stream)."""
    p.add_argument("-r", "--refs", "--ref-file", dest=kwargs.pop("dest", "refs"), nargs="+", action="extend",
                   metavar="REF", type=reads("--refs"), help="reference text files, one per stream; .gz/.bz2/.zst read as such", **kwargs)


def _logging(quiet: bool) -> None:
    """The package's messages at INFO (WARNING with -q); other libraries' (gensim's lifecycle
    events, py4j) at WARNING, so that no line of theirs passes for one of ours."""
    logging.basicConfig(format="kbest-bleu: %(message)s", level=logging.WARNING)
    log.setLevel(logging.WARNING if quiet else logging.INFO)


def _reference_rows(paths: Sequence[str], option: str) -> list:
    """Reference files (one per stream, line i = segment i) as one list of references per segment;
    ``option``: the option or argument that named them, for messages."""
    from ..files.readers import read_text
    streams = [read_text(p, option) for p in paths]
    for path, s in zip(paths, streams):
        if len(s) != len(streams[0]):
            raise InputError(f"{option} {path}: {len(s)} lines, but {paths[0]} has {len(streams[0])}; "
                             "expected the same number of lines in every reference file, one line per segment")
    return [list(r) for r in zip(*streams)]


def _segment(a: argparse.Namespace, path: "str | Path") -> tuple:
    """--seg-col, else the key stored in the file by our writers, else segment_id."""
    if a.seg_col is not None:
        names = tuple(a.seg_col.split(","))
        if not all(names):  # '' or 'a,,b': a column without a name (it fell back to the default)
            raise InputError(f"--seg-col: expected comma-separated column names, found {a.seg_col!r}")
        return names
    from ..files.sorting import segment_key
    return (segment_key(path) if Path(path).suffix == ".parquet" and Path(path).exists() else None) or ("segment_id",)


def _verbose(r) -> str:
    """sacrebleu's verbose score: precisions (0-100, 1 decimal), brevity penalty, lengths."""
    ratio = r.hyp_len / r.ref_len if r.ref_len else 0.0
    return (f"{'/'.join(f'{100 * p:.1f}' for p in r.precisions)} (BP = {r.bp:.3f} ratio = {ratio:.3f} "
            f"hyp_len = {r.hyp_len} ref_len = {r.ref_len})")


def _bleu_json(r, signature: str, width: int) -> dict:
    """A BLEU result as sacrebleu's JSON (0-100 score rounded to ``width`` decimals)."""
    out = {"name": "BLEU", "score": float(f"{100 * r.score:.{width}f}"), "signature": signature,
           "verbose_score": _verbose(r)}
    out.update(part.split(":", 1) for part in signature.split("|") if ":" in part)
    return out


def _bleu_line(r, signature: str, a: argparse.Namespace) -> str:
    if a.format_out == "json" and not a.score_only:
        return json.dumps(_bleu_json(r, signature, a.width), indent=None if a.sentence_level else 1,
                          ensure_ascii=False)
    score = f"{100 * r.score:.{a.width}f}"
    return score if a.score_only else f"BLEU|{signature} = {score} {_verbose(r)}"
