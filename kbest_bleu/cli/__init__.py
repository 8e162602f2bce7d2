"""``kbest-bleu``: score K-best tables, corpus BLEU of text files as sacrebleu, n-best conversion.

Every heavy import (numba, pyarrow) happens inside the command handlers: ``--help`` and
``--version`` start instantly. Commands print BLEU on sacrebleu's 0-100 scale.

Bad input exits with status 2 and a one-paragraph message (no traceback, no output file).
"""

from __future__ import annotations

import argparse
import errno
import sys
from importlib import import_module
from typing import Optional, Sequence

from .. import collector, settings
from ..config import __version__
from ..errors import InputError
from .options import METRICS, Parser
from .score import SAMPLE

__all__ = ["SAMPLE", "build_parser", "main"]


def _metric_parser(name: str):
    """A metric's own commands (training, table building, its paper's tables), under its name."""
    def add(sub) -> None:
        module = import_module(f"kbest_bleu.metrics.{name}.cli")
        if hasattr(module, "add_commands"):
            module.add_commands(sub)
    return add


def _command(module: str, name: str):
    """The function adding a command, from ``module`` of this package, imported when that command
    is built: a run imports its own command's module only."""
    def add(sub) -> None:
        getattr(import_module(f"{__name__}.{module}"), name)(sub)
    return add


# each top-level command and the function that adds it (and its subcommands), in --help's order
_COMMANDS = {"score": _command("score", "_score_parser"), "corpus": _command("commands", "_corpus_parser"),
             "convert": _command("commands", "_convert_parser"), "export-moses": _command("commands", "_export_parser"),
             "tune": _command("commands", "_tune_parser"), "metaeval": _command("commands", "_metaeval_parser"),
             "warmup": _command("commands", "_warmup_parser"), "paired": _command("commands", "_paired_parser"),
             "mbr": _command("mbr", "add_command"), **{m: _metric_parser(m) for m in METRICS}}


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (one of its commands), that command alone:
    what a run parses, and the other 17 parsers would cost ~10 ms of a 0.3 s job."""
    parser = Parser(prog="kbest-bleu", description="Exact, fast sentence BLEU for K-best lists. Commands print "
                     "BLEU on sacrebleu's 0-100 scale (the Python API returns 0-1).")
    parser.add_argument("--version", action="version", version=f"kbest-bleu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, add in _COMMANDS.items():
        if command in (None, name):
            add(sub)
    if command is not None and command not in sub.choices:  # a metric without commands of its own
        return build_parser()
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..files.inputs import check_declared_outputs, command_scope
    from ..files.temporaries import install_signal_handlers
    argv = sys.argv[1:] if argv is None else list(argv)
    # the files the command reads, registered as the options are parsed and files opened; the
    # environment as it was when main returns (--spm-model sets a variable for the command's workers)
    with command_scope(), settings.variables_restored():
        return _run(argv, check_declared_outputs, install_signal_handlers)


def _run(argv: list, check_declared_outputs, install_signal_handlers) -> int:
    """Parse ``argv`` and run its command, every exception mapped to an exit status
    (docs/failure_behaviour.md)."""
    import signal
    args, unknown = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None).parse_known_args(argv)
    if unknown:  # the full parser says so, its usage line listing every command
        args = build_parser().parse_args(argv)
    # SIGINT/SIGTERM/SIGHUP: temporaries removed, one line, exit 128+signal (README, "Failure
    # behaviour"); the previous handlers come back when main returns (main called in-process)
    previous = install_signal_handlers()
    if args.command != "score":
        collector.resume()  # only a scoring job's start-up runs without the collector
    try:
        check_declared_outputs()  # an output that is an input named on the command line: before any read
        if sys.stdout is None and getattr(args, "output", None) in (None, "-") and not getattr(args, "scores", None):
            raise InputError("standard output is closed (the command was started with >&-), so the results it "
                             "prints would be lost; run it with stdout open (> FILE, or > /dev/null to discard)")
        return args.func(args)
    except InputError as exc:
        print(f"kbest-bleu {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:  # bytes Arrow decodes late, as a parquet file's column names
        from ..files.inputs import registered_inputs
        where = ", ".join(repr(path) for path, _ in registered_inputs()) or "an input"
        print(f"kbest-bleu {args.command}: error: {where}: holds a name or text that is not valid UTF-8 (byte "
              f"{exc.object[exc.start:exc.start + 1].hex()}); rewrite it in UTF-8 (a column name, when a tool let the "
              "bytes through)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output's reader has gone (`-o - | head -c 100`): exit as SIGPIPE would
        return 128 + 13
    except OSError as exc:  # the machine, not the input: a full disk, a vanished directory
        where = f"{exc.filename}: " if exc.filename and str(exc.filename) not in str(exc) else ""
        if not where and (exc.errno == errno.ENOSPC or "[Errno 28]" in str(exc)):  # Arrow's writes name no file
            import tempfile
            where = (f"no space left on the device of the output or of the work files in {tempfile.gettempdir()} "
                     "(TMPDIR chooses that directory): ")
        print(f"kbest-bleu {args.command}: error: {where}{exc}", file=sys.stderr)
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
