"""The ``kbest-bleu metaeval`` command and its recipes (named tables over the generic
meta-evaluation of :mod:`.judged`). Only argparse at module level: ``kbest-bleu --help`` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..cli.options import float_range, int_range, probability, seed_int

__all__ = ["add_commands", "markdown"]


def markdown(header: Sequence[str], rows: list) -> str:
    """A markdown table; floats with 3 decimals, NaN as an em dash (:func:`cell`)."""
    from .correlation import cell
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows])


def _recipe(command):
    """A recipe command whose data errors are one line (:func:`.data.shared_data_errors`)."""
    def run(a: argparse.Namespace) -> int:
        from .data import shared_data_errors
        with shared_data_errors(a.data):
            return command(a)
    return run


def _need(a: argparse.Namespace, names: Sequence[str]) -> list:
    from .data import require_data
    return require_data(names, a.data)


def _config(a: argparse.Namespace):
    from ..config import BleuConfig
    return BleuConfig(tokenize=a.tokenize, lowercase=a.lowercase, smoothing6_variant=a.smoothing6_variant)


def _signature(cfg) -> str:
    import re
    sig = re.sub(r"smooth:[^|]+", "smooth:per-row", cfg.signature())  # each row is one smoothing
    return sig if cfg.smoothing6_variant == "literal" else sig.replace("|order:", f"|s6:{cfg.smoothing6_variant}|order:")


def _cmd_wmt12(a: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from .metaeval import wmt12_table
    cfg = _config(a)
    _check_plot(a)
    seg, pairs = (pq.read_table(p) for p in _need(a, ["wmt12_segments.parquet", "wmt12_rr_pairs.parquet"]))
    chart = {}
    for title, lps in (("into English", ["cs-en", "de-en", "es-en", "fr-en"]),
                       ("out of English", ["en-cs", "en-de", "en-es", "en-fr"])):
        print(f"\nWMT12 newstest2012, {title} ({', '.join(lps)}; mean over pairs), {_signature(cfg)}\n")
        rows = wmt12_table(seg, pairs, lps, cfg, a.tau_variant)
        print(markdown(["BLEU", "seg tau", "sys Pearson", "sys Spearman"], rows))
        chart[title] = {_row_label(r[0]): r[1] for r in rows}
    _bars(a, chart, f"WMT12 segment-level Kendall tau ({a.tau_variant} variant) by BLEU smoothing", "seg tau")
    return 0


def _row_label(row) -> str:
    """A smoothing row of the tables as the chart names it: crp (corpus BLEU) or s0-s7."""
    return str(row) if isinstance(row, str) else f"s{row}"


def _check_plot(a: argparse.Namespace) -> None:
    """--plot's path and matplotlib checked before the tables are computed."""
    if getattr(a, "plot", None):
        from ..plots import check_plot_path
        check_plot_path(a.plot)


def _bars(a: argparse.Namespace, groups: dict, title: str, ylabel: str) -> None:
    """--plot: the table's per-smoothing column as a bar chart (one group of bars per block)."""
    if getattr(a, "plot", None):
        from ..plots import plot_bars
        plot_bars(groups, a.plot, title, ylabel)
        print(f"\nkbest-bleu metaeval: drew {a.plot}")


def _cmd_mqm(a: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from .metaeval import mqm_table
    cfg = _config(a)
    _check_plot(a)
    (path,) = _need(a, ["wmt22_zhen_mtme.parquet"])
    print(f"\nWMT22 zh-en, MQM, {_signature(cfg)}\n")
    header = ["BLEU", "seg tau-b", "seg Pearson", "sys Pearson", "sys Spearman"]
    rows = mqm_table(pq.read_table(path), cfg)
    print(markdown(header, rows))
    _bars(a, {name: {_row_label(r[0]): r[i] for r in rows} for i, name in enumerate(header[1:], 1)},
          "WMT22 zh-en: correlation with MQM by BLEU smoothing", "correlation")
    return 0


def _cmd_chen_cherry(a: argparse.Namespace) -> int:
    import numpy as np
    import pyarrow.parquet as pq

    from .data import data_dir
    from .chen_cherry import PAPER, chen_cherry_tables
    from .metaeval import mean_over_lps
    cfg = _config(a)
    _check_plot(a)
    data, _ = data_dir(a.data)
    w12 = tuple(pq.read_table(p) for p in _need(a, ["wmt12_segments.parquet", "wmt12_rr_pairs.parquet"]))
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
    _bars(a, {f"{test}, {direction} English": {_row_label(r[0]): r[1] for r in means[direction, test]}
              for direction, test in means}, "Chen & Cherry 2014 Tables 2-3: mean segment-level tau by smoothing",
          "seg tau")
    return 0


def _comparison(a: argparse.Namespace, table, pairs, corr: dict, sys_table, lps) -> None:
    """--compare A,B: paired bootstrap of every segment statistic, Williams test of the Pearson
    correlations (segment level against scores; system level per language pair)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .correlation import pearson
    from .judged import metric_difference, system_correlations, williams_test
    names = a.compare.split(",")  # two of the metrics: checked by _cmd_judged before the tables
    x, y = names
    rows = [(c.name, "paired bootstrap", *metric_difference(c, d)) for c, d in zip(corr[x], corr[y])]
    if pairs is None:
        rated = table.filter(pa.array(~np.isnan(table[a.human].to_numpy(zero_copy_only=False).astype(float))))
        vx, vy, h = (rated[c].to_numpy(zero_copy_only=False).astype(float) for c in (x, y, a.human))
        rows.append(("pearson", "Williams", *williams_test(pearson(vx, h), pearson(vy, h), pearson(vx, vy), len(h))))
    for lp in lps:
        sub = sys_table.filter(pc.equal(sys_table["lp"], lp))
        rx, ry = (system_correlations(sys_table, m, lp)[0] for m in names)
        r23 = pearson(sub[x].to_numpy(), sub[y].to_numpy())
        if sub.num_rows > 3:
            rows.append((f"sys Pearson {lp}", "Williams", *williams_test(rx, ry, r23, sub.num_rows)))
    print(f"\n{x} vs {y}: difference and one-sided p-value ({x} not better)\n")
    print(markdown(["statistic", "test", "difference / t", "p"], rows))


def _cmd_judged(a: argparse.Namespace) -> int:
    from ..batch.parquet import read_parquet_table
    from ..errors import InputError
    from .judged import check_judged_table, judged_correlations, system_correlations, system_table
    if a.plot and a.wmt_style:
        raise InputError("metaeval judged: --plot draws the correlation tables' scatter, not --wmt-style's; "
                         "leave one of them out")
    if (a.pairs is None) == (a.human is None):
        raise InputError("metaeval judged: expected exactly one of --pairs PAIRS.parquet or --human COLUMN")
    given = [o for o, v in (("--average-by", a.average_by), ("--n-perm", a.n_perm), ("--pval", a.pval)) if v is not None]
    if given and not a.wmt_style:  # it would be ignored
        raise InputError(f"{given[0]}: an option of --wmt-style; add --wmt-style or leave {given[0]} out")
    a.average_by, a.n_perm = a.average_by or "item", a.n_perm or 1000
    a.pval = 0.05 if a.pval is None else a.pval
    layouts = [(a.table, "TABLE", "lp, segment_id, system, metric columns")]
    layouts += [(a.pairs, "--pairs", "lp, segment_id, better_system, worse_system")] if a.pairs else []
    for path, option, columns in layouts:
        if not Path(path).exists():
            raise InputError(f"{option} {path}: not found; expected a parquet file ({columns})")
    table = read_parquet_table(a.table, "metaeval judged TABLE")  # empty, truncated, not parquet: one line
    pairs = read_parquet_table(a.pairs, "--pairs") if a.pairs else None
    metrics = a.metric.split(",")
    twice = next((m for i, m in enumerate(metrics) if m in metrics[:i] or m == a.human), None)
    if twice is not None:  # (each metric names columns of the tables printed: twice, or as the human one, clash)
        raise InputError(f"--metric: {twice!r} is given twice, or is the --human column; name each metric column "
                         "once, apart from the human scores")
    check_judged_table(table, metrics, a.human, str(a.table))  # before the bootstrap runs: one line
    pair = a.compare.split(",") if a.compare else []
    if a.compare and (len(pair) != 2 or pair[0] == pair[1] or any(n not in metrics for n in pair)):
        raise InputError(f"--compare: expected two different --metric columns as A,B, found {a.compare!r}")
    _check_plot(a)  # after the inputs are read (registered): the picture may not replace one of them
    if pairs is not None and pairs.num_rows == 0:
        raise InputError(f"{a.pairs}: no rows; expected judged segments")
    if a.wmt_style:
        return _wmt_style(a, table, pairs, metrics)
    corr = {m: judged_correlations(table, m, pairs=pairs, human=a.human, n_boot=a.n_boot, seed=a.seed,
                                   level=a.level) for m in metrics}
    judge = f"pairs {a.pairs}" if pairs is not None else f"human column {a.human}"
    print(f"\nSegment level, {a.table} against {judge}: {a.n_boot} segment bootstrap resamples, "
          f"{a.level:.0%} intervals, seed {a.seed}\n")
    print(markdown(["metric", "statistic", "value", "low", "high"],
                   [(m, c.name, c.value, c.low, c.high) for m in metrics for c in corr[m]]))
    sys_table = system_table(table, metrics, pairs=pairs, human=a.human)
    lp_of = sys_table["lp"].to_pylist()
    lps = sorted(set(lp_of))
    print("\nSystem level (metric: mean over segments; human: "
          f"{'wins / (wins + losses)' if pairs is not None else 'mean score'})\n")
    print(markdown(["metric", "lp", "systems", "Pearson", "Spearman"],
                   [(m, lp, lp_of.count(lp), *system_correlations(sys_table, m, lp))
                    for m in metrics for lp in lps]))
    if a.compare:
        _comparison(a, table, pairs, corr, sys_table, lps)
    if a.plot:
        _judged_scatter(a, table, sys_table, metrics)
    return 0


def _judged_scatter(a: argparse.Namespace, table, sys_table, metrics: list) -> None:
    """--plot: each metric against the human scores, one panel per metric: the rated segments
    with --human, the systems (mean metric vs wins / (wins + losses)) with --pairs."""
    import numpy as np

    from ..plots import plot_scatter
    from .correlation import pearson
    if a.human:
        hum = table[a.human].to_numpy(zero_copy_only=False).astype(float)
        panels = {}
        for m in metrics:
            x = table[m].to_numpy(zero_copy_only=False).astype(float)
            keep = ~(np.isnan(x) | np.isnan(hum))
            panels[m] = (x, hum, f"{int(keep.sum()):,} rated segments, Pearson {pearson(x[keep], hum[keep]):.3f}")
        plot_scatter(panels, a.plot, f"{a.table}: segment level", "segment score", f"human ({a.human})")
    else:
        hum = sys_table["human"].to_numpy()
        panels = {m: (sys_table[m].to_numpy(), hum, f"{sys_table.num_rows} systems (all language pairs), Pearson "
                      f"{pearson(sys_table[m].to_numpy(), hum):.3f}") for m in metrics}
        plot_scatter(panels, a.plot, f"{a.table}: system level", "mean over segments", "human: wins / (wins + losses)")
    print(f"\nkbest-bleu metaeval: drew {a.plot}")


def _wmt_style(a: argparse.Namespace, table, pairs, metrics: list) -> int:
    """--wmt-style: segment acc23 with tie calibration, system SPA / pairwise accuracy, clusters."""
    from .wmt_style import markdown_rows, wmt_table
    rows = wmt_table(table, metrics, human=a.human, pairs=pairs, average_by=a.average_by, k=a.n_perm, seed=a.seed,
                     pval=a.pval)
    judge = f"pairs {a.pairs} (grouped per segment)" if pairs is not None else \
        f"human column {a.human} (average_by {a.average_by})"
    print(f"\nWMT-style table, {a.table} against {judge}: segment acc23 with each metric's tie threshold eps "
          f"optimized per language pair; system soft pairwise accuracy and pairwise accuracy; ranks are "
          f"significance clusters (p <= {a.pval}, {a.n_perm} permutations, seed {a.seed})\n")
    print(markdown(*markdown_rows(rows)))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    from ..config import SMOOTHING6_VARIANTS, TOKENIZERS
    p.add_argument("--data", default=None, help="directory with the shared parquet files (default: $KBEST_BLEU_DATA, "
                                                "else ../shared/data from the current directory, else beside the checkout)")
    p.add_argument("-t", "--tokenize", choices=TOKENIZERS, default="13a")
    p.add_argument("-lc", "--lowercase", action="store_true")
    p.add_argument("--smoothing6-variant", choices=SMOOTHING6_VARIANTS, default="literal",
                   help="reading of smoothing 6 (docs/metaeval.md, 'Smoothing 6')")
    _plot_option(p, "the per-smoothing table as a bar chart")


def _plot_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", default=None,
                   help=f"also draw {what} (pip install '.[plot]')")


# the recipe commands, made once (each parser built takes the same function)
_RECIPES = {f.__name__: _recipe(f) for f in (_cmd_wmt12, _cmd_mqm, _cmd_chen_cherry)}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``metaeval`` and its recipes to the ``kbest-bleu`` subcommands."""
    p = sub.add_parser("metaeval", help="correlation of metrics with human judgments (named tables, any judged data)")
    recipes = p.add_subparsers(dest="recipe", required=True)
    r = recipes.add_parser("wmt12", help="the seed paper's Tables 2/3 layout on WMT12 alone")
    _common(r)
    r.add_argument("--tau-variant", choices=["seed", "wmt12"], default="seed",
                   help="metric ties: half concordant (seed paper) or discordant (WMT12 official)")
    r.set_defaults(func=_RECIPES['_cmd_wmt12'])
    r = recipes.add_parser("mqm", help="WMT22 zh-en MQM: segment tau-b / Pearson, system Pearson / Spearman")
    _common(r)
    r.set_defaults(func=_RECIPES['_cmd_mqm'])
    r = recipes.add_parser("chen-cherry", help="Chen & Cherry 2014 Tables 2-3 on WMT12 and WMT13, the paper beside ours")
    _common(r)
    r.add_argument("--distinct-pairs", action="store_true",
                   help="WMT13: one row per distinct judged pair (default: one per 5-way ranking, as released)")
    r.set_defaults(func=_RECIPES['_cmd_chen_cherry'])
    r = recipes.add_parser("judged", help="any judged table and metric columns: segment tau / Pearson with "
                                          "bootstrap intervals, system Pearson / Spearman, metric comparison")
    r.add_argument("table", help="parquet with lp, segment_id, system and the metric columns")
    r.add_argument("--metric", required=True, help="metric column(s), comma-separated (bleu,meteor,...)")
    human = r.add_mutually_exclusive_group(required=True)
    human.add_argument("--pairs", help="pairwise preferences parquet (lp, segment_id, better_system, worse_system)")
    human.add_argument("--human", help="human score column of TABLE (null/NaN = unrated)")
    r.add_argument("--compare", help="A,B: test whether metric A correlates better than B")
    r.add_argument("--n-boot", type=int_range(1, 1_000_000, "a number of resamples from 1 to 1000000"), default=1000,
                   help="bootstrap resamples of segments (default 1000)")
    r.add_argument("--seed", type=seed_int, default=12345)
    r.add_argument("--level", type=float_range(0.0, 1.0, "a confidence level in (0, 1]", open_low=True), default=0.95,
                   help="confidence level of the intervals")
    r.add_argument("--wmt-style", action="store_true",
                   help="instead: segment acc23 with tie calibration (Deutsch et al. 2023), system soft pairwise "
                        "accuracy (Thompson et al. 2024) and pairwise accuracy, WMT significance clusters")
    # (None: not given; --wmt-style's defaults, and given without --wmt-style they are refused)
    r.add_argument("--average-by", choices=["item", "sys", "none"], default=None,
                   help="--wmt-style segment grouping with --human (default item: each segment's systems)")
    r.add_argument("--n-perm", type=int_range(1, 1_000_000, "a number of permutations from 1 to 1000000"), default=None,
                   help="--wmt-style permutations per metric pair (default 1000)")
    r.add_argument("--pval", type=probability, default=None, help="--wmt-style significance level of the clusters "
                   "(default 0.05)")
    _plot_option(r, "each metric against the human scores (segments with --human, systems with --pairs)")
    r.set_defaults(func=_cmd_judged)
