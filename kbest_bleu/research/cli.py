"""The ``kbest-bleu metaeval`` command and its recipes (named tables over the generic
meta-evaluation of :mod:`.judged`). Only argparse at module level: ``kbest-bleu --help`` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

__all__ = ["add_commands", "markdown"]

_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def markdown(header: Sequence[str], rows: list) -> str:
    """A markdown table; floats with 3 decimals, NaN as an em dash."""
    fmt = lambda v: "—" if isinstance(v, float) and v != v else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows])


def _need(data: Path, names: Sequence[str]) -> list:
    from ..errors import InputError
    for name in names:
        if not (data / name).exists():
            raise InputError(f"{data / name}: not found; expected the shared data directory (--data)")
    return [data / n for n in names]


def _config(a: argparse.Namespace):
    from ..config import BleuConfig
    return BleuConfig(tokenize=a.tokenize, lowercase=a.lowercase)


def _signature(cfg) -> str:
    import re
    return re.sub(r"smooth:[^|]+", "smooth:per-row", cfg.signature())  # each row is one smoothing


def _cmd_wmt12(a: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from .metaeval import wmt12_table
    cfg = _config(a)
    seg, pairs = (pq.read_table(p) for p in _need(Path(a.data), ["wmt12_segments.parquet", "wmt12_rr_pairs.parquet"]))
    for title, lps in (("into English", ["cs-en", "de-en", "es-en", "fr-en"]),
                       ("out of English", ["en-cs", "en-de", "en-es", "en-fr"])):
        print(f"\nWMT12 newstest2012, {title} ({', '.join(lps)}; mean over pairs), {_signature(cfg)}\n")
        print(markdown(["BLEU", "seg tau", "sys Pearson", "sys Spearman"],
                       wmt12_table(seg, pairs, lps, cfg, a.tau_variant)))
    return 0


def _cmd_mqm(a: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from .metaeval import mqm_table
    cfg = _config(a)
    (path,) = _need(Path(a.data), ["wmt22_zhen_mtme.parquet"])
    print(f"\nWMT22 zh-en, MQM, {_signature(cfg)}\n")
    print(markdown(["BLEU", "seg tau-b", "seg Pearson", "sys Pearson", "sys Spearman"],
                   mqm_table(pq.read_table(path), cfg)))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    from ..config import TOKENIZERS
    p.add_argument("--data", default=str(_DATA), help="directory with the shared parquet files")
    p.add_argument("-t", "--tokenize", choices=TOKENIZERS, default="13a")
    p.add_argument("-lc", "--lowercase", action="store_true")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``metaeval`` and its recipes to the ``kbest-bleu`` subcommands."""
    p = sub.add_parser("metaeval", help="correlation of metrics with human judgments (named tables, any judged data)")
    recipes = p.add_subparsers(dest="recipe", required=True)
    r = recipes.add_parser("wmt12", help="the seed paper's Tables 2/3 layout on WMT12 alone")
    _common(r)
    r.add_argument("--tau-variant", choices=["seed", "wmt12"], default="seed",
                   help="metric ties: half concordant (seed paper) or discordant (WMT12 official)")
    r.set_defaults(func=_cmd_wmt12)
    r = recipes.add_parser("mqm", help="WMT22 zh-en MQM: segment tau-b / Pearson, system Pearson / Spearman")
    _common(r)
    r.set_defaults(func=_cmd_mqm)
