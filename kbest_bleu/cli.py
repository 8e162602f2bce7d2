"""``kbest-bleu``: score K-best parquet tables, corpus BLEU of text files, n-best conversion.

Bad input exits with status 2 and a one-paragraph message (no traceback, no output file).
"""

from __future__ import annotations

import argparse
from importlib import import_module
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

import pyarrow.parquet as pq

from .bleu import corpus_bleu
from .config import COMPATS, REF_LENGTH_POLICIES, TOKENIZERS, BleuConfig
from .errors import InputError
from .batch.parquet import score_parquet
from .batch.references import Columns, ReferenceTable, read_lines
from .batch.stream import COMPRESSIONS
from .interop.nbest import export_moses, read_nbest, write_nbest
from .stats import ngram_stats

SAMPLE = Path(__file__).parent / "data" / "moses_100best_sample.parquet"
SAMPLE_COLUMNS = Columns(segment=("iteration", "segment_id"), score="model_score")
# the metrics besides BLEU (kbest_bleu.metrics.base.REGISTRY); their cli modules import only argparse
METRICS = ("bleu2vec", "meteor", "parmesan")


def _scoring_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scoring options (README, smoothing and preset tables)")
    g.add_argument("--compat", choices=COMPATS, default="sacrebleu", help="whose conventions to reproduce")
    g.add_argument("-s", "--smoothing", default=None,
                   help="0-7 (Chen & Cherry 2014), none/floor/add-k/exp, or bleu+1 (moses); default: the preset's")
    g.add_argument("--epsilon", type=float, default=0.1, help="smoothing 1 / floor value (0.1)")
    g.add_argument("--add-k", type=float, default=1.0, help="smoothing 2 / add-k value; moses: s (1)")
    g.add_argument("--k", type=float, default=5.0, help="smoothing 4 and 7 constant K (5)")
    g.add_argument("--alpha", type=float, default=5.0, help="smoothing 6 alpha (5)")
    g.add_argument("--max-order", type=int, default=4)
    g.add_argument("--weights", default=None, help="comma-separated n-gram weights, one per order")
    g.add_argument("--effective-order", dest="effective_order", action="store_true", default=None)
    g.add_argument("--no-effective-order", dest="effective_order", action="store_false")
    g.add_argument("--auto-reweigh", action="store_true", help="nltk: NLTK's auto_reweigh")
    g.add_argument("--smooth-bp", action="store_true", help="moses: smoothed brevity penalty")
    g.add_argument("--ref-length", choices=list(REF_LENGTH_POLICIES), default="closest")
    g.add_argument("-t", "--tokenize", choices=TOKENIZERS, default="none")
    g.add_argument("-lc", "--lowercase", action="store_true")


def _config(a: argparse.Namespace) -> BleuConfig:
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


def _metrics(a: argparse.Namespace) -> list:
    """The metrics of ``--metric`` besides BLEU, built from their own options (DESIGN.md section 6)."""
    from .metrics.base import REGISTRY, load_metric
    names = [m.strip() for m in a.metric.split(",") if m.strip()]
    unknown = [m for m in names if m != "bleu" and m not in REGISTRY]
    if unknown or "bleu" not in names:
        raise InputError(f"--metric: expected a comma-separated list starting with bleu, from bleu, "
                         f"{', '.join(REGISTRY)}; found {a.metric!r}")
    return [load_metric(m, **import_module(f".metrics.{m}.cli", __package__).metric_options(a))
            for m in dict.fromkeys(names) if m != "bleu"]


def _cmd_score(a: argparse.Namespace) -> int:
    cfg = _config(a)
    metrics = _metrics(a)
    if a.input is None:
        src, columns = SAMPLE, SAMPLE_COLUMNS
        print(f"no input given: scoring the bundled sample {SAMPLE.name} (real Moses 100-best lists, "
              "moses-regression-tests, LGPL)", file=sys.stderr)
    else:
        src = Path(a.input)
        columns = Columns(a.hyp_col, a.ref_col, tuple(a.seg_col.split(",")), a.score_col)
    refs = None
    if a.ref_table:
        try:
            refs = ReferenceTable.from_table(pq.read_table(a.ref_table), columns, a.ref_table)
        except (OSError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{a.ref_table}: not a readable parquet reference table ({exc})") from None
    elif a.ref_file:
        refs = ReferenceTable.from_text_files(a.ref_file)
    if a.engine == "spark":
        from .batch.spark import score_parquet_spark
        if not a.output or refs is not None:
            raise InputError("--engine spark: expected IN and -o OUT (a dataset directory) with references in a "
                             "column of the input (--ref-table/--ref-file are single-machine options)")
        n = score_parquet_spark(str(src), a.output, cfg, columns=columns, stats=a.stats,
                                smoothings=a.also_smoothing, metrics=metrics, master=a.master,
                                batch_rows=a.batch_size)
        print(f"scored {n:,} rows with Spark ({a.master}); wrote the dataset {a.output}", file=sys.stderr)
        return 0
    summary = score_parquet(src, a.output, cfg, columns=columns, references=refs, stats=a.stats,
                            smoothings=a.also_smoothing, metrics=metrics, batch_size=a.batch_size, quiet=a.quiet,
                            compression=a.compression)
    print(json.dumps(summary.to_dict(), indent=1) if a.json else summary)
    if a.output:
        print(f"wrote {a.output}", file=sys.stderr)
    return 0


def _cmd_corpus(a: argparse.Namespace) -> int:
    cfg = _config(a)
    hyps = read_lines(a.hypotheses)
    streams = [read_lines(r) for r in a.references]
    for path, s in zip(a.references, streams):
        if len(s) != len(hyps):
            raise InputError(f"{path}: {len(s)} lines, but {a.hypotheses} has {len(hyps)}; expected one reference "
                             "line per hypothesis line")
    result = corpus_bleu(hyps, [list(r) for r in zip(*streams)], **cfg.__dict__)
    print(json.dumps(result.to_dict(), indent=1) if a.json else result)
    return 0


def _cmd_convert(a: argparse.Namespace) -> int:
    src, dst = Path(a.input), Path(a.output)
    if src.suffix == ".parquet":
        write_nbest(pq.read_table(src), dst)
    else:
        table = read_nbest(src, a.refs or ())
        pq.write_table(table, dst, compression="zstd")
    print(f"wrote {dst}", file=sys.stderr)
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    cfg = _config(a)
    table = pq.read_table(a.input)
    columns = Columns(a.hyp_col, a.ref_col, tuple(a.seg_col.split(",")))
    n = export_moses(table, a.scores, a.features, cfg, columns)
    print(f"wrote {n} segments to {a.scores}" + (f" and {a.features}" if a.features else ""), file=sys.stderr)
    return 0


def _markdown(header: Sequence[str], rows: list) -> str:
    fmt = lambda v: "—" if isinstance(v, float) and v != v else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows])


def _cmd_paired(a: argparse.Namespace) -> int:
    from .research.significance import approximate_randomization, paired_bootstrap
    cfg = _config(a)
    streams = [read_lines(r) for r in a.refs]
    refs = [list(r) for r in zip(*streams)]
    systems = [read_lines(p) for p in [a.baseline] + a.systems]
    for path, lines in zip([a.baseline] + a.systems + a.refs, systems + streams):
        if len(lines) != len(refs):
            raise InputError(f"{path}: {len(lines)} lines; expected {len(refs)} like the references")
    stats = [ngram_stats(h, refs, None, cfg) for h in systems]
    test = paired_bootstrap if a.test == "bs" else approximate_randomization
    n = a.n_samples or (1000 if a.test == "bs" else 10000)
    rows = []
    for path, st in zip(a.systems, stats[1:]):
        r = test(stats[0], st, cfg, n, a.seed)
        rows.append((path, 100 * r.score, r.p_value, 100 * r.mean, 100 * r.ci))
    base = test(stats[0], stats[0], cfg, 1, a.seed)
    print(f"baseline {a.baseline}: BLEU {100 * base.score:.2f}; test {a.test}, {n} samples, seed {a.seed}; "
          f"{cfg.signature('corpus')}")
    print(_markdown(["system", "BLEU", "p-value", "bootstrap mean", "95% CI +-"], rows))
    return 0


def _cmd_tune(a: argparse.Namespace) -> int:
    import numpy as np

    from .tuning import KbestLists, tune_expected_bleu, tune_mira, tune_pro
    cfg = _config(a)
    table = pq.read_table(a.input) if Path(a.input).suffix == ".parquet" else read_nbest(a.input, a.refs or ())
    lists = KbestLists.from_table(table, cfg, segment=a.seg_col, hypothesis=a.hyp_col, references=a.ref_col,
                                  features=a.features_col, score=a.score_col)
    n_feat = lists.features.shape[1]
    if a.init:
        w0 = np.array([float(x) for x in a.init.split(",")])
        if len(w0) != n_feat:
            raise InputError(f"--init: expected {n_feat} weights ({', '.join(lists.feature_names)}), found {len(w0)}")
    elif a.score_col:
        w0 = lists.decoder_weights()
    else:
        w0 = np.zeros(n_feat)
    start = lists.corpus_bleu(lists.one_best(w0), cfg)
    if a.method == "mira":
        res = tune_mira(lists, w0, c=a.c, epochs=a.epochs, seed=a.seed, config=cfg)
    elif a.method == "pro":
        res = tune_pro(lists, w0, seed=a.seed, config=cfg)
    else:
        res = tune_expected_bleu([lists], w0, lam=a.lam, epochs=a.epochs, seed=a.seed, config=cfg)
    out = {"method": a.method, "feature_names": lists.feature_names, "weights": res.weights.tolist(),
           "start_bleu": start, "bleu": res.bleu, "history": res.history, "segments": len(lists.seg_ptr) - 1,
           "hypotheses": len(lists), "signature": cfg.signature("corpus")}
    print(json.dumps(out, indent=1))
    return 0


def _columns_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hyp-col", default="hypothesis", help="string column of hypotheses")
    p.add_argument("--ref-col", default="references", help="list<string> column of references")
    p.add_argument("--seg-col", default="segment_id", help="segment id column(s), comma-separated")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbest-bleu", description="Exact, fast sentence BLEU for K-best lists.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score a parquet K-best table (no input: the bundled real sample)")
    p.add_argument("input", nargs="?", help="input parquet file")
    p.add_argument("-o", "--output", help="output parquet file (input columns + bleu); omit for the summary only")
    _columns_options(p)
    p.add_argument("--score-col", default=None, help="model score column: the summary's 1-best is its argmax")
    p.add_argument("--ref-table", help="parquet file with the segment column(s) and the references column")
    p.add_argument("--ref-file", action="append", help="plain-text reference file, line i = segment i (repeatable)")
    p.add_argument("--stats", action="store_true", help="add m1..mN t1..tN hyp_len ref_len columns")
    p.add_argument("--also-smoothing", default="", metavar="LIST",
                   help="more sentence-BLEU columns from the same counts: comma-separated smoothings (0-7 or "
                        "names) or 'all' (the preset's), as columns bleu_s<n>")
    p.add_argument("--batch-size", type=int, default=65536, help="rows per record batch (bounds memory)")
    p.add_argument("--compression", default="zstd", choices=COMPRESSIONS,
                   help="parquet codec of the output (zstd: smallest; snappy: fastest)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--engine", choices=["local", "spark"], default="local",
                   help="spark: read and write parquet datasets with Apache Spark (pip install 'kbest-bleu[spark]')")
    p.add_argument("--master", default="local[*]", help="Spark master URL (with --engine spark)")
    p.add_argument("--metric", default="bleu", metavar="LIST",
                   help=f"comma-separated metrics, each adding its columns: bleu (always), {', '.join(METRICS)}")
    _scoring_options(p)
    for name in METRICS:
        import_module(f".metrics.{name}.cli", __package__).add_score_options(p.add_argument_group(f"{name} options"))
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("corpus", help="corpus BLEU of plain-text files, like sacrebleu")
    p.add_argument("hypotheses")
    p.add_argument("references", nargs="+")
    p.add_argument("--json", action="store_true")
    _scoring_options(p)
    p.set_defaults(func=_cmd_corpus)

    p = sub.add_parser("convert", help="Moses/Joshua n-best text <-> parquet (direction from the .parquet suffix)")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--refs", nargs="+", help="reference files (text -> parquet), line i = segment i")
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser("export-moses", help="Moses extractor scores (and features) files from a K-best table")
    p.add_argument("input")
    p.add_argument("--scores", required=True)
    p.add_argument("--features")
    _columns_options(p)
    _scoring_options(p)
    p.set_defaults(func=_cmd_export, compat="moses")

    p = sub.add_parser("tune", help="tune feature weights on K-best lists: k-best MIRA, PRO or expected BLEU")
    p.add_argument("input", help="K-best parquet table, or Moses/Joshua n-best text (with --refs)")
    p.add_argument("--refs", nargs="+", help="reference files for n-best text input")
    p.add_argument("--method", choices=["mira", "pro", "ebleu"], default="mira")
    p.add_argument("--features-col", default="features", help="list<double> or Moses/Joshua feature string column")
    p.add_argument("--init", help="starting weights, comma-separated (default: fit to --score-col, else zeros)")
    p.add_argument("--score-col", help="the decoder's model score column, to recover its weights as the start")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--c", type=float, default=0.01, help="MIRA C")
    p.add_argument("--lam", type=float, default=10.0, help="expected BLEU L2 weight")
    p.add_argument("--seed", type=int, default=0)
    _columns_options(p)
    _scoring_options(p)
    p.set_defaults(func=_cmd_tune)

    from .research.cli import add_commands as add_metaeval
    add_metaeval(sub)  # metaeval and its recipes

    p = sub.add_parser("paired", help="paired significance test of systems against a baseline (text files)")
    p.add_argument("baseline")
    p.add_argument("systems", nargs="+")
    p.add_argument("-r", "--refs", nargs="+", required=True, help="reference files, one per stream")
    p.add_argument("--test", choices=["bs", "ar"], default="bs", help="paired bootstrap or approximate randomization")
    p.add_argument("--n-samples", type=int, default=0, help="default: 1000 (bs), 10000 (ar)")
    p.add_argument("--seed", type=int, default=12345)
    _scoring_options(p)
    p.set_defaults(func=_cmd_paired)
    for name in METRICS:  # a metric's own commands (training, table building, its paper's tables)
        module = import_module(f".metrics.{name}.cli", __package__)
        if hasattr(module, "add_commands"):
            module.add_commands(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"kbest-bleu {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the machine, not the input: a full disk, a vanished directory
        print(f"kbest-bleu {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kbest-bleu: interrupted; no output written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
