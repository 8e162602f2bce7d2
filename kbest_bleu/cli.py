"""``kbest-bleu``: score K-best tables, corpus BLEU of text files as sacrebleu, n-best conversion.

Every heavy import (numba, pyarrow) happens inside the command handlers: ``--help`` and
``--version`` start instantly. Commands print BLEU on sacrebleu's 0-100 scale.

Bad input exits with status 2 and a one-paragraph message (no traceback, no output file).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from importlib import import_module
from pathlib import Path
from typing import Optional, Sequence

from . import _collector
from ._cli_options import Parser, columns_options, config_from, refs_option, scoring_options
from .config import BleuConfig, __version__
from .errors import InputError

SAMPLE = Path(__file__).parent / "data" / "moses_100best_sample.parquet"
# the metrics besides BLEU (kbest_bleu.metrics.base.REGISTRY); their cli modules import only argparse
METRICS = ("bleu2vec", "meteor", "parmesan")
log = logging.getLogger("kbest_bleu")


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


def _logging(quiet: bool) -> None:
    """The package's messages at INFO (WARNING with -q); other libraries' (gensim's lifecycle
    events, py4j) at WARNING, so that no line of theirs passes for one of ours."""
    logging.basicConfig(format="kbest-bleu: %(message)s", level=logging.WARNING)
    log.setLevel(logging.WARNING if quiet else logging.INFO)


def _reference_rows(paths: Sequence[str], option: str) -> list:
    """Reference files (one per stream, line i = segment i) as one list of references per segment;
    ``option``: the option or argument that named them, for messages."""
    from .batch.readers import read_text
    streams = [read_text(p, option) for p in paths]
    for path, s in zip(paths, streams):
        if len(s) != len(streams[0]):
            raise InputError(f"{option} {path}: {len(s)} lines, but {paths[0]} has {len(streams[0])}; "
                             "expected the same number of lines in every reference file, one line per segment")
    return [list(r) for r in zip(*streams)]


def _segment(a: argparse.Namespace, path: "str | Path") -> tuple:
    """--seg-col, else the key stored in the file by our writers, else segment_id."""
    if a.seg_col:
        return tuple(a.seg_col.split(","))
    from .batch.readers import segment_key
    return (segment_key(path) if Path(path).suffix == ".parquet" and Path(path).exists() else None) or ("segment_id",)


def _write_stdout(path: Path) -> None:
    with open(path, "rb") as f:
        import shutil
        shutil.copyfileobj(f, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def _cmd_score(a: argparse.Namespace) -> int:
    import pyarrow as pa

    if a.threads is not None:  # first: the kernels' and Arrow's thread counts, before any scoring runs
        from .stats import set_threads
        pa.set_cpu_count(set_threads(a.threads))
    import tempfile

    import pyarrow.parquet as pq

    from .batch.parquet import score_parquet
    from .batch.readers import input_format, read_kbest, sort_segments
    from .batch.references import Columns, ReferenceTable
    _logging(a.quiet)
    cfg = config_from(a)
    metrics = _metrics(a)
    if metrics or a.engine == "spark":  # long jobs in Python and pyspark: the start-up is a small part
        _collector.resume()
    src = Path(a.input) if a.input else SAMPLE
    if a.input is None:
        log.info("no input given: scoring the bundled sample %s (real Moses 100-best lists, moses-regression-tests, "
                 "LGPL; pre-tokenized, so score it with -t none)", SAMPLE.name)
    fmt, _ = input_format(src, a.format)
    columns = Columns(a.hyp_col, a.ref_col, _segment(a, src), a.score_col)
    refs = None
    if a.ref_table:
        try:
            refs = ReferenceTable.from_table(pq.read_table(a.ref_table), columns, a.ref_table)
        except (OSError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{a.ref_table}: not a readable parquet reference table ({exc})") from None
    elif a.ref_file:
        rows = _reference_rows(a.ref_file, "--refs")
        refs = ReferenceTable(list(range(len(rows))), pa.array(rows, pa.list_(pa.string())), " + ".join(a.ref_file))
    if a.engine == "spark":
        return _score_spark(a, src, cfg, columns, refs, metrics)
    with tempfile.TemporaryDirectory(prefix="kbest_bleu-") as tmp:
        given = str(src)
        if fmt != "parquet":  # read with Arrow's readers, then the one streaming parquet job
            table = read_kbest(src, fmt, hypothesis=a.hyp_col, references=a.ref_col, option="score IN")
            src = Path(tmp) / (src.name + ".parquet")
            pq.write_table(table, src)
        out = Path(tmp) / "out.parquet" if a.output == "-" else a.output
        converted = src
        try:
            if a.sort:
                sort_segments(src, Path(tmp) / "sorted.parquet", columns.segment, batch_size=a.batch_size)
                src = Path(tmp) / "sorted.parquet"
            summary = _score_with_progress(src, out, cfg, a, columns, refs, metrics, score_parquet)
        except InputError as exc:  # name the user's file, not the converted or sorted copy scored
            said, numbered = str(exc), re.search(r"\brows? \d", str(exc)) is not None
            copies = [(src, " (rows counted after --sort)")] if src != converted else []
            copies.append((converted, " (rows counted from 0, header excluded)" if fmt in ("csv", "tsv")
                           else " (rows counted from 0)" if fmt != "parquet" else ""))
            for path, rows in copies:
                said = said.replace(str(path), given + (rows if numbered else ""))
            raise InputError(said) from None
        if a.output == "-":
            _write_stdout(out)
    text = json.dumps(_summary_json(summary, a.width), indent=1) if a.json else str(summary)
    print(text, file=sys.stderr if a.output == "-" else sys.stdout)
    if a.output and a.output != "-":
        log.info("wrote %s", a.output)
    return 0


def _score_with_progress(src, out, cfg, a, columns, refs, metrics, score_parquet):
    """score_parquet with a tqdm bar (total rows from the parquet metadata; off with -q or without a TTY).
    The program's paused garbage collector resumes after the first batch (the start-up is over)."""
    import pyarrow.parquet as pq

    def run(bar_update):
        def on_batch(rows: int) -> None:
            _collector.resume()
            if bar_update:
                bar_update(rows)
        return score_parquet(src, out, cfg, columns=columns, references=refs, stats=a.stats,
                             smoothings=a.also_smoothing, metrics=metrics, batch_size=a.batch_size, quiet=True,
                             **({} if a.batch_bytes is None else {"batch_bytes": a.batch_bytes}),
                             compression=a.compression, on_batch=on_batch,
                             engine=None if a.engine == "local" else a.engine)
    if a.quiet or not sys.stderr.isatty():  # no bar: tqdm is not even imported (40 ms)
        return run(None)
    from tqdm import tqdm
    try:
        total = pq.ParquetFile(src).metadata.num_rows
    except Exception:  # the job reports unreadable files with its own message
        total = None
    with tqdm(total=total, unit="rows", unit_scale=True, file=sys.stderr) as bar:
        return run(bar.update)


def _score_spark(a, src, cfg, columns, refs, metrics) -> int:
    from .batch.spark import score_parquet_spark
    if not a.output or a.output == "-" or refs is not None:
        raise InputError("--engine spark: expected IN and -o OUT (a dataset directory) with references in a "
                         "column of the input (-r/--ref-table are single-machine options)")
    summary = score_parquet_spark(str(src), a.output, cfg, columns=columns, stats=a.stats,
                                  smoothings=a.also_smoothing, metrics=metrics, master=a.master,
                                  batch_rows=a.batch_size, compression=a.compression)
    print(json.dumps(_summary_json(summary, a.width), indent=1) if a.json else str(summary))
    log.info("scored with Spark (%s); wrote the dataset %s (row order and metadata: _kbest_bleu.json)",
             a.master, a.output)
    return 0


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


def _summary_json(s, width: int) -> dict:
    """The job summary on sacrebleu's 0-100 scale."""
    return {"rows": s.rows, "segments": s.segments, "mean_sentence_bleu": round(100 * s.mean_bleu, width + 2),
            "one_best": _bleu_json(s.one_best, s.one_best.signature, width),
            "oracle": _bleu_json(s.oracle, s.oracle.signature, width), "signature": s.signature,
            "seconds": s.seconds}


def _bleu_line(r, signature: str, a: argparse.Namespace) -> str:
    if a.format_out == "json" and not a.score_only:
        return json.dumps(_bleu_json(r, signature, a.width), indent=None if a.sentence_level else 1,
                          ensure_ascii=False)
    score = f"{100 * r.score:.{a.width}f}"
    return score if a.score_only else f"BLEU|{signature} = {score} {_verbose(r)}"


def _cmd_corpus(a: argparse.Namespace) -> int:
    from .batch.readers import read_text
    from .bleu import corpus_score
    from .stats import ngram_stats
    cfg = config_from(a)
    a.format_out = a.format_out or ("text" if a.sentence_level else "json")
    paths = a.input or ["-"]
    if "-" in paths and sys.stdin.isatty():
        raise InputError("expected hypotheses after -i (or piped on stdin); found neither. Usage, as sacrebleu: "
                         "kbest-bleu corpus REF [REF ...] -i HYP [HYP ...]")
    refs = _reference_rows(a.references, "corpus REF")
    systems = [read_text(p, "-i") for p in paths]
    for path, hyps in zip(paths, systems):
        if len(hyps) != len(refs):
            raise InputError(f"{path}: {len(hyps)} lines, but {a.references[0]} has {len(refs)}; expected one "
                             "hypothesis line per reference line (usage: corpus REF [REF ...] -i HYP)")
    nrefs = len(a.references)
    if a.sentence_level:
        if len(systems) > 1:
            raise InputError(f"--sentence-level: expected one system, found {len(systems)}")
        sent = BleuConfig.make(cfg, effective_order=True) if cfg.compat == "sacrebleu" else cfg
        stats = ngram_stats(systems[0], refs, None, cfg)
        sig = sent.signature("sentence", nrefs=nrefs)
        for i in range(len(stats)):
            print(_bleu_line(corpus_score(stats[i:i + 1], sent), sig, a))
        return 0
    sig = cfg.signature("corpus", nrefs=nrefs)
    results = [corpus_score(ngram_stats(h, refs, None, cfg), cfg) for h in systems]
    if len(results) == 1:
        print(_bleu_line(results[0], sig, a))
    elif a.format_out == "json":
        print(json.dumps([{"system": p, "BLEU": f"{100 * r.score:.{a.width}f}"} for p, r in zip(paths, results)],
                         indent=1))
    else:
        width = max(len(p) for p in paths)
        lines = [f"{p:<{width}}  {100 * r.score:.{a.width}f}" for p, r in zip(paths, results)]
        print("\n".join(lines if a.score_only else [f"{'system':<{width}}  BLEU"] + lines + [f"signature: {sig}"]))
    return 0


def _cmd_convert(a: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from .batch.output import atomic_output, check_output
    from .batch.parquet import read_parquet_table
    from .interop.nbest import read_nbest, write_nbest
    src, dst = Path(a.input), Path(a.output)
    check_output(dst, [src, *(a.refs or ())], "output")  # before reading: convert X X must not destroy X
    if src.suffix == ".parquet":
        write_nbest(read_parquet_table(src, "convert IN"), dst, [src], "output")
    else:
        table = read_nbest(src, a.refs or (), "convert IN")
        # an open file, not a path: pyarrow deletes a path it failed to write (a device node too)
        with atomic_output(dst, [src, *(a.refs or ())], "output") as tmp, open(tmp, "wb") as sink:
            pq.write_table(table, sink, compression="zstd")
    print(f"wrote {dst}", file=sys.stderr)
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    from .batch.output import check_output
    from .batch.parquet import read_parquet_table
    from .batch.references import Columns
    from .interop.nbest import export_moses
    cfg = config_from(a)
    check_output(a.scores, [a.input], "--scores")  # before the job runs
    if a.features:
        check_output(a.features, [a.input, a.scores], "--features")
    table = read_parquet_table(a.input, "export-moses IN")
    columns = Columns(a.hyp_col, a.ref_col, _segment(a, a.input))
    n = export_moses(table, a.scores, a.features, cfg, columns, [a.input])
    print(f"wrote {n} segments to {a.scores}" + (f" and {a.features}" if a.features else ""), file=sys.stderr)
    return 0


def _cmd_paired(a: argparse.Namespace) -> int:
    from .research.cli import markdown
    from .research.significance import approximate_randomization, bootstrap_ci, paired_bootstrap
    from .stats import ngram_stats
    if a.n_samples < 0:
        raise InputError(f"--n-samples: expected a positive number of resamples (0: the default), found {a.n_samples}")
    cfg = config_from(a)
    refs = _reference_rows(a.refs, "--refs")
    from .batch.readers import read_text
    systems = [read_text(p, "paired SYSTEM") for p in [a.baseline] + a.systems]
    for path, lines in zip([a.baseline] + a.systems, systems):
        if len(lines) != len(refs):
            raise InputError(f"{path}: {len(lines)} lines; expected {len(refs)} like the references")
    stats = [ngram_stats(h, refs, None, cfg) for h in systems]
    test = paired_bootstrap if a.test == "bs" else approximate_randomization
    n = a.n_samples or (1000 if a.test == "bs" else 10000)
    sig = cfg.signature("corpus", nrefs=len(a.refs), test=a.test, n_samples=n, seed=a.seed)
    base = test(stats[0], stats[0], cfg, 1, a.seed)
    mean, ci = bootstrap_ci(stats[0], cfg, n, a.seed) if a.test == "bs" else (float("nan"), float("nan"))
    rows = [{"system": a.baseline, "baseline": True, "score": 100 * base.score, "mean": 100 * mean, "ci": 100 * ci,
             "p_value": None}]
    for path, st in zip(a.systems, stats[1:]):
        r = test(stats[0], st, cfg, n, a.seed)
        rows.append({"system": path, "baseline": False, "score": 100 * r.score, "mean": 100 * r.mean,
                     "ci": 100 * r.ci, "p_value": r.p_value})
    if a.json:  # what a test does not give (ar: no bootstrap mean or interval) is null, valid JSON
        nulled = [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()} for r in rows]
        print(json.dumps({"name": "BLEU", "signature": sig, "systems": nulled}, indent=1, allow_nan=False))
        return 0
    # p-values with sacrebleu's precision; * marks p < 0.05 as sacrebleu does
    table = [(("Baseline: " if r["baseline"] else "") + r["system"], f"{r['score']:.2f}",
              "—" if r["mean"] != r["mean"] else f"{r['mean']:.2f} ± {r['ci']:.2f}",
              "" if r["p_value"] is None else f"{r['p_value']:.4f}{'*' if r['p_value'] < 0.05 else ''}")
             for r in rows]
    print(f"test {a.test}, {n} samples, seed {a.seed}; {sig}")
    print(markdown(["system", "BLEU", "mean ± 95% CI", "p-value"], table))
    return 0


def _cmd_warmup(a: argparse.Namespace) -> int:  # noqa: ARG001 (no options)
    import time

    from . import _aot
    from .batch.warmup import warm_up
    compiled, seconds, cache = warm_up()
    done = f"compiled {compiled} kernel functions" if compiled else "every kernel was in the cache already"
    print(f"kbest-bleu warmup: kernels ready in {seconds:.1f} s ({done}; numba cache {cache})")
    t0 = time.perf_counter()
    try:
        path = _aot.build()
    except Exception as exc:  # no C compiler, no writable directory: jobs load numba's kernels instead
        print(f"kbest-bleu warmup: the text kernels were not compiled ahead of time ({type(exc).__name__}: "
              f"{str(exc)[:300]}); jobs load numba's kernels instead, ~0.15 s more a process")
    else:
        print(f"kbest-bleu warmup: text kernels compiled ahead of time in {time.perf_counter() - t0:.1f} s "
              f"(they load without numba): {path}")
    return 0


def _cmd_tune(a: argparse.Namespace) -> int:
    import numpy as np

    from .batch.parquet import read_parquet_table
    from .interop.nbest import read_nbest
    from .tuning import KbestLists, tune_expected_bleu, tune_mira, tune_pro
    cfg = config_from(a)
    try:  # before the lists are read and the kernels compiled
        w0 = np.array([float(x) for x in a.init.split(",")]) if a.init else None
    except ValueError:
        raise InputError(f"--init: expected comma-separated numbers, one per feature, found {a.init!r}") from None
    table = (read_parquet_table(a.input, "tune IN") if Path(a.input).suffix == ".parquet"
             else read_nbest(a.input, a.refs or (), "tune IN"))
    segment = a.seg_col or "segment_id"  # not the stored key: it tells iterations apart, tuning merges them
    if "," in segment:
        raise InputError(f"--seg-col: tune groups its lists by one integer segment column, found {segment!r}; the "
                         "lists a segment has from several decoding iterations are merged (as Moses' extractor "
                         "does), so leave an iteration column out; tune each language pair apart")
    lists = KbestLists.from_table(table, cfg, segment=segment, hypothesis=a.hyp_col, references=a.ref_col,
                                  features=a.features_col, score=a.score_col)
    n_feat = lists.features.shape[1]
    if a.init:
        if len(w0) != n_feat or not np.isfinite(w0).all():
            raise InputError(f"--init: expected {n_feat} weights ({', '.join(lists.feature_names)}), found {len(w0)}")
    elif a.score_col:
        w0 = lists.decoder_weights()
        off = float(np.abs(lists.model_scores(w0) - lists.model_score).max()) if len(lists) else 0.0
        if off > 0.01 * max(1.0, float(np.abs(lists.model_score).mean())):  # one run: ~1e-4 (rounding)
            print(f"kbest-bleu tune: warning: no one weight vector gives --score-col's model scores (off by up to "
                  f"{off:.3g}): the lists come from decoding runs with different weights, and the start is their "
                  "least-squares blend; start from the last run's weights (--init) for a meaningful start",
                  file=sys.stderr)
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




def _score_parser(sub) -> None:
    p = sub.add_parser("score", help="score a K-best table: parquet, CSV/TSV, JSON Lines, n-best or text "
                                     "(no input: the bundled real sample)")
    p.add_argument("input", nargs="?", help="input file (format from the extension, or --format)")
    p.add_argument("--format", choices=["parquet", "csv", "tsv", "jsonl", "nbest", "text"], default=None,
                   help="input format (default: from the extension; .gz/.bz2/.zst decompressed)")
    p.add_argument("-o", "--output", help="output parquet file (input columns + bleu); '-': stdout; omit for the "
                                          "summary only")
    columns_options(p)
    p.add_argument("--score-col", default=None, help="model score column: the summary's 1-best is its argmax")
    p.add_argument("--ref-table", help="parquet file with the segment column(s) and the references column")
    refs_option(p, dest="ref_file")
    p.add_argument("--sort", action="store_true",
                   help="stably sort by the segment key first (external sort, bounded memory) when a segment's "
                        "rows are not contiguous")
    p.add_argument("--stats", action="store_true", help="add m1..mN t1..tN hyp_len ref_len columns")
    p.add_argument("--also-smoothing", default="", metavar="LIST",
                   help="more sentence-BLEU columns from the same counts: comma-separated smoothings (0-7 or "
                        "names) or 'all' (the preset's), as columns bleu_s<n>")
    p.add_argument("--batch-size", type=int, default=65536, help="rows per record batch (bounds memory)")
    p.add_argument("--batch-bytes", type=int, default=None,
                   help="bytes of hypothesis text per record batch (bounds memory; default 16 MiB)")
    p.add_argument("--threads", type=int, default=None, help="threads for the kernels and Arrow (default: every "
                   "core; jobs under 64 KB score on one); with 2 or more, reading and writing overlap the "
                   "scoring on background threads; 1 runs the whole job on one thread")
    p.add_argument("--compression", default="zstd",
                   help="parquet codec of the output: zstd (smallest), snappy (fastest), lz4, gzip, brotli, none")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no log lines")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (scores 0-100)")
    p.add_argument("-w", "--width", type=int, default=2, help="decimals of the JSON scores")
    p.add_argument("--engine", choices=["local", "kernels", "numpy", "spark"], default="local",
                   help="local: this machine, the numpy engine below 4 MiB of text (below 64 MiB until the "
                   "kernels are compiled: no numba start-up, no compiling), numba's kernels above; "
                   "kernels/numpy: force one (the same numbers); spark: read and write parquet datasets with "
                   "Apache Spark (pip install '.[spark]')")
    p.add_argument("--master", default="local[*]", help="Spark master URL (with --engine spark)")
    p.add_argument("--metric", default="bleu", metavar="LIST",
                   help=f"comma-separated metrics, each adding its columns: bleu (always), {', '.join(METRICS)}")
    scoring_options(p)
    for name in METRICS:
        import_module(f".metrics.{name}.cli", __package__).add_score_options(p.add_argument_group(f"{name} options"))
    p.set_defaults(func=_cmd_score)


def _corpus_parser(sub) -> None:
    p = sub.add_parser("corpus", help="corpus BLEU of plain-text files, as sacrebleu: corpus REF [REF ...] -i HYP")
    p.add_argument("references", nargs="+", metavar="REF", help="reference files, one per stream")
    p.add_argument("-i", "--input", nargs="+", metavar="HYP",
                   help="hypothesis file(s), one per system; '-' or absent: stdin")
    p.add_argument("-f", "--format", dest="format_out", choices=["text", "json"], default=None,
                   help="default as sacrebleu: json, text with --sentence-level")
    p.add_argument("--json", dest="format_out", action="store_const", const="json", help="same as -f json")
    p.add_argument("--sentence-level", action="store_true", help="one score per hypothesis line")
    p.add_argument("-w", "--width", type=int, default=1, help="decimals of the score")
    p.add_argument("-b", "--score-only", action="store_true", help="print the score only")
    scoring_options(p)
    p.set_defaults(func=_cmd_corpus)


def _convert_parser(sub) -> None:
    p = sub.add_parser("convert", help="Moses/Joshua n-best text <-> parquet (direction from the .parquet suffix)")
    p.add_argument("input")
    p.add_argument("output")
    refs_option(p)
    p.set_defaults(func=_cmd_convert)


def _export_parser(sub) -> None:
    p = sub.add_parser("export-moses", help="Moses extractor scores (and features) files from a K-best table")
    p.add_argument("input")
    p.add_argument("--scores", required=True)
    p.add_argument("--features")
    columns_options(p)
    scoring_options(p)
    p.set_defaults(func=_cmd_export, compat="moses")


def _tune_parser(sub) -> None:
    p = sub.add_parser("tune", help="tune feature weights on K-best lists: k-best MIRA, PRO or expected BLEU")
    p.add_argument("input", help="K-best parquet table, or Moses/Joshua n-best text (with -r)")
    refs_option(p)
    p.add_argument("--method", choices=["mira", "pro", "ebleu"], default="mira")
    p.add_argument("--features-col", default="features", help="list<double> or Moses/Joshua feature string column")
    p.add_argument("--init", help="starting weights, comma-separated (default: fit to --score-col, else zeros)")
    p.add_argument("--score-col", help="the decoder's model score column, to recover its weights as the start")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--c", type=float, default=0.01, help="MIRA C")
    p.add_argument("--lam", type=float, default=10.0, help="expected BLEU L2 weight")
    p.add_argument("--seed", type=int, default=0)
    columns_options(p, "the integer segment id column; default: segment_id (the lists of a segment from every "
                        "decoding iteration in the file are merged, repeated candidates dropped)")
    scoring_options(p)
    p.set_defaults(func=_cmd_tune)


def _metaeval_parser(sub) -> None:
    from .research.cli import add_commands
    add_commands(sub)  # metaeval and its recipes


def _warmup_parser(sub) -> None:
    p = sub.add_parser("warmup", help="compile the scoring kernels ahead of the first big job (~15-35 s on 2 "
                                      "cores, once per machine; e.g. in a container build)")
    p.set_defaults(func=_cmd_warmup)


def _paired_parser(sub) -> None:
    p = sub.add_parser("paired", help="paired significance test of systems against a baseline (text files)")
    p.add_argument("baseline")
    p.add_argument("systems", nargs="+")
    refs_option(p, required=True)
    p.add_argument("--test", choices=["bs", "ar"], default="bs", help="paired bootstrap or approximate randomization")
    p.add_argument("--n-samples", type=int, default=0, help="default: 1000 (bs), 10000 (ar)")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--json", action="store_true", help="print the results as JSON (scores 0-100)")
    scoring_options(p)
    p.set_defaults(func=_cmd_paired)


def _metric_parser(name: str):
    """A metric's own commands (training, table building, its paper's tables), under its name."""
    def add(sub) -> None:
        module = import_module(f".metrics.{name}.cli", __package__)
        if hasattr(module, "add_commands"):
            module.add_commands(sub)
    return add


# each top-level command and the function that adds it (and its subcommands), in --help's order
_COMMANDS = {"score": _score_parser, "corpus": _corpus_parser, "convert": _convert_parser,
             "export-moses": _export_parser, "tune": _tune_parser, "metaeval": _metaeval_parser,
             "warmup": _warmup_parser, "paired": _paired_parser, **{m: _metric_parser(m) for m in METRICS}}


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
    import signal

    from .batch.output import install_signal_handlers
    argv = sys.argv[1:] if argv is None else list(argv)
    args, unknown = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None).parse_known_args(argv)
    if unknown:  # the full parser says so, its usage line listing every command
        args = build_parser().parse_args(argv)
    # SIGINT/SIGTERM/SIGHUP: temporaries removed, one line, exit 128+signal (README, "Failure
    # behaviour"); the previous handlers come back when main returns (main called in-process)
    previous = install_signal_handlers()
    if args.command != "score":
        _collector.resume()  # only a scoring job's start-up runs without the collector
    try:
        return args.func(args)
    except InputError as exc:
        print(f"kbest-bleu {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the output's reader has gone (`-o - | head -c 100`): exit as SIGPIPE would
        return 128 + 13
    except OSError as exc:  # the machine, not the input: a full disk, a vanished directory
        where = f"{exc.filename}: " if exc.filename and str(exc.filename) not in str(exc) else ""
        print(f"kbest-bleu {args.command}: error: {where}{exc}", file=sys.stderr)
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


if __name__ == "__main__":
    from .program import command
    command()
