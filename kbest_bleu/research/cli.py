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


def _cmd_chen_cherry(a: argparse.Namespace) -> int:
    import numpy as np
    import pyarrow.parquet as pq

    from .chen_cherry import PAPER, chen_cherry_tables
    from .metaeval import mean_over_lps
    cfg = _config(a)
    data = Path(a.data)
    w12 = tuple(pq.read_table(p) for p in _need(data, ["wmt12_segments.parquet", "wmt12_rr_pairs.parquet"]))
    names13 = ["wmt13_segments.parquet", "wmt13_rr_pairs.parquet"]
    w13 = tuple(pq.read_table(data / n) for n in names13) if all((data / n).exists() for n in names13) else None
    blocks = chen_cherry_tables(w12, w13, cfg, a.distinct_pairs)
    pairs = "distinct pairs" if a.distinct_pairs else "one pair per ranking"
    print(f"\nChen & Cherry 2014 Tables 2-3, {_signature(cfg)}, seed-paper tau, WMT13 {pairs}")
    means = {}
    for (direction, test), per in blocks.items():
        lps = list(per)
        means[direction, test] = avg = mean_over_lps(per)
        print(f"\n{test}, {direction} English: per-pair seg tau, mean seg tau and system Pearson / Spearman\n")
        rows = [(row,) + tuple(per[lp][i][1] for lp in lps) + avg[i][1:] for i, row in enumerate(r[0] for r in avg)]
        print(markdown(["BLEU"] + lps + ["seg tau", "sys Pearson", "sys Spearman"], rows))
    for direction in ("into", "out"):
        sets = [t for d, t in blocks if d == direction]
        ours = np.mean([[r[1:] for r in means[direction, t]] for t in sets], axis=0)
        print(f"\n{direction} English, mean of {' and '.join(sets)} beside the paper (mean of WMT12 and WMT13)\n")
        rows = []
        for i, (row, paper) in enumerate(PAPER[direction].items()):
            rows.append((row,) + tuple(v for k in range(3) for v in (ours[i][k], paper[k], ours[i][k] - paper[k])))
        print(markdown(["BLEU"] + [f"{c} {w}" for c in ("seg tau", "sys r", "sys rho") for w in ("ours", "paper", "diff")],
                       rows))
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
    r = recipes.add_parser("chen-cherry", help="Chen & Cherry 2014 Tables 2-3 on WMT12 and WMT13, the paper beside ours")
    _common(r)
    r.add_argument("--distinct-pairs", action="store_true",
                   help="WMT13: one row per distinct judged pair (default: one per 5-way ranking, as released)")
    r.set_defaults(func=_cmd_chen_cherry)
