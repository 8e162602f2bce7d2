"""``kbest-bleu score``: a K-best table in any format scored into parquet (or Spark), with BLEU
and the metrics of ``--metric``."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from dataclasses import replace
from importlib import import_module
from pathlib import Path

from .. import collector
from ..errors import InputError
from ..files.formats import TOOL_FORMATS, WRITABLE
from .options import (
    METRICS,
    _bleu_json,
    _logging,
    _reference_rows,
    _segment,
    block_bytes_option,
    columns_options,
    config_from,
    decimals_int,
    positive_int,
    reads,
    refs_option,
    scoring_options,
    threads_int,
    writes,
)

__all__ = []

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "moses_100best_sample.parquet"
log = logging.getLogger("kbest_bleu")


def _metrics(a: argparse.Namespace) -> tuple[bool, list]:
    """Whether ``--metric`` asks for BLEU, and its other metrics built from their own options
    (DESIGN.md section 6), in the order given; any metric may come alone or in any order."""
    from ..metrics.base import REGISTRY, load_metric
    names = [m.strip() for m in a.metric.split(",") if m.strip()]
    unknown = [m for m in names if m not in REGISTRY]
    if unknown or not names:
        raise InputError(f"--metric: expected a comma-separated list of metrics from {', '.join(REGISTRY)} "
                         f"(any order, any one alone); found {a.metric!r}")
    read = {dest for n in names if n in REGISTRY and n != "bleu"  # options of other metrics' groups it reads
            for dest in getattr(import_module(f"kbest_bleu.metrics.{n}.cli"), "OPTIONS_FROM", ())}
    for metric, options in getattr(a, "metric_options", {}).items():
        given = [option for dest, option, default in options if getattr(a, dest) != default and dest not in read]
        if metric not in names and given:  # it would be ignored: a typo in --metric, or a leftover
            raise InputError(f"{given[0]}: an option of {metric}, which --metric {a.metric!r} does not select; add "
                             f"{metric} to --metric or leave {given[0]} out")
    if "bleu" not in names and a.also_smoothing:
        raise InputError("--also-smoothing: adds BLEU columns, but --metric has no bleu; add it (--metric "
                         f"bleu,{a.metric}) or leave --also-smoothing out")
    return "bleu" in names, [load_metric(m, **import_module(f"kbest_bleu.metrics.{m}.cli").metric_options(a))
                             for m in dict.fromkeys(names) if m != "bleu"]


def _cmd_score(a: argparse.Namespace) -> int:
    import time
    t0 = time.perf_counter()  # the summary's wall time: the whole command, imports and reading included
    import pyarrow as pa

    if a.threads is not None:  # first: the kernels' and Arrow's thread counts, before any scoring runs
        from ..counting.threads import set_threads
        pa.set_cpu_count(set_threads(a.threads))
    import pyarrow.parquet as pq

    from ..batch.parquet import score_parquet
    from ..files.temporaries import temporary_directory
    from ..files.inputs import register_input
    from ..files.readers import check_output_format, input_format, kbest_to_parquet, unreadable
    from ..files.sorting import sort_segments
    from ..files.references import Columns, ReferenceTable
    _logging(a.quiet)
    if a.engine != "spark" and (a.master != "local[*]" or a.spark_log):  # options of the Spark engine alone
        raise InputError(f"{'--master' if a.master != 'local[*]' else '--spark-log'}: an option of --engine spark; "
                         "add --engine spark or leave it out")
    cfg = config_from(a)
    if a.output and a.engine != "spark":  # (Spark writes a dataset directory)
        check_output_format(a.output, a.to or "parquet", "-o", "name it for that format, or choose the format with "
                            "--to FORMAT")
    bleu, metrics = _metrics(a)
    if a.plot:
        from ..plots import check_plot_path
        if a.engine == "spark":  # (the -o file itself is refused as a second output on one path, before)
            raise InputError("--plot: draws a single-machine job's scored table, not with --engine spark; leave "
                             "--engine spark out, or --plot")
        check_plot_path(a.plot, bleu, cfg)
        a.stats = True  # the pictures' corpus BLEU sums the statistics columns
    if metrics or a.engine == "spark":  # long jobs in Python and pyspark: the start-up is a small part
        collector.resume()
    src = Path(a.input) if a.input else SAMPLE
    if a.input is None:
        log.info("no input given: scoring the bundled sample %s (real Moses 100-best lists, moses-regression-tests, "
                 "LGPL; pre-tokenized, so score it with -t none)", SAMPLE.name)
    if src.is_dir():  # a parquet dataset, which only Spark reads (refused before --sort or --ref-table opens it)
        if a.engine != "spark":
            raise InputError(f"{unreadable(src, a.format or 'parquet', IsADirectoryError(src))}, or --engine spark "
                             "to read a directory of parquet files (a dataset)")
        if a.format not in (None, "parquet"):
            raise InputError(f"{src}: is a directory, which --engine spark reads as a parquet dataset; leave "
                             f"--format {a.format} out")
        fmt = "parquet"
    else:
        fmt, _ = input_format(src, a.format)
    a.to = None if a.to == "parquet" else a.to  # parquet: the job's own output
    if a.to and not a.output:
        raise InputError(f"--to {a.to}: expected -o OUTPUT, the file to write the scored lists to")
    if a.nbest_size and fmt == "parquet":
        raise InputError("--nbest-size: for text, opennmt-tf and opennmt-py input (K lines per source); a parquet "
                         "table names its segments in a column (--seg-col)")
    columns = Columns(a.hyp_col, a.ref_col, _segment(a, src), a.score_col)
    refs = None
    if a.ref_table:
        try:
            register_input(a.ref_table, "--ref-table")
            refs = ReferenceTable.from_table(pq.read_table(a.ref_table), columns, a.ref_table)
        except FileNotFoundError:
            raise InputError(f"--ref-table {a.ref_table}: no such file; expected a parquet table of segment ids and "
                             "references") from None
        except (OSError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"--ref-table {a.ref_table}: not a readable parquet reference table ({exc})") from None
    elif a.ref_file:
        rows = _reference_rows(a.ref_file, "--refs")
        refs = ReferenceTable(list(range(len(rows))), pa.array(rows, pa.list_(pa.string())), " + ".join(a.ref_file))
    if a.engine == "spark":
        if not bleu:
            raise InputError("--engine spark: scores BLEU beside the other metrics; add bleu to --metric "
                             f"(--metric bleu,{a.metric})")
        if fmt != "parquet":  # Spark's reader would fail on it with a page of Java stack
            raise InputError(f"--engine spark: reads parquet (a file, or a directory of parquet files), found {fmt} "
                             f"input {src}; convert it first (kbest-bleu convert {src} table.parquet) or score it "
                             "without --engine spark")
        return _score_spark(a, src, cfg, columns, refs, metrics)
    with temporary_directory() as tmp:  # removed on every exit, signals included
        given = str(src)
        if fmt != "parquet":  # read with Arrow's readers, then the one streaming parquet job
            src = Path(tmp) / (src.name + ".parquet")
            kbest_to_parquet(given, src, fmt, hypothesis=a.hyp_col, references=a.ref_col, option="score IN",
                             nbest_size=a.nbest_size, block_bytes=a.block_bytes)  # batch by batch (bounded memory)
            if a.ref_file and fmt not in ("csv", "tsv", "jsonl"):  # a K-best file's segment i = reference line i:
                # a reference left over (an output cut short) is an error, as in sacrebleu
                ids = pq.read_table(src, columns=["segment_id"])["segment_id"]
                found = len(ids.unique())
                if found != len(refs.index):
                    unit = "lines" if fmt == "text" else "hypotheses"
                    raise InputError(f"{given}: {found} segments ({len(ids)} {unit}), but --refs {a.ref_file[0]} has "
                                     f"{len(refs.index)} lines; expected one reference line per segment (is the output "
                                     "cut short?)")
        # a table with a references column and references given apart: which ones? (a toolkit's output keeps
        # -r over its own references, fairseq's T- lines: detokenized references are the usual choice)
        if refs is not None and fmt in ("parquet", "csv", "tsv", "jsonl") and a.ref_col in pq.read_schema(src).names:
            raise InputError(f"{'--ref-table' if a.ref_table else '--refs'}: {given} has references already (column "
                             f"{a.ref_col!r}), which they would replace; leave the option out, or drop or rename the "
                             "column (--ref-col names another)")
        out = Path(tmp) / "out.parquet" if a.output == "-" or a.to else a.output
        converted = src
        try:
            if a.sort:
                sort_segments(src, Path(tmp) / "sorted.parquet", columns.segment, batch_size=a.batch_size)
                src = Path(tmp) / "sorted.parquet"
            if a.plot and a.output in (None, "-"):  # the pictures read the scored table
                out = Path(tmp) / "out.parquet"
            summary = _score_with_progress(src, out, cfg, a, columns, refs, metrics, score_parquet, bleu)
        except InputError as exc:  # name the user's file, not the converted or sorted copy scored
            said, numbered = str(exc), re.search(r"\brows? \d", str(exc)) is not None
            copies = [(src, " (rows counted after --sort)")] if src != converted else []
            copies.append((converted, " (rows counted from 0, header excluded)" if fmt in ("csv", "tsv")
                           else " (rows counted from 0)" if fmt != "parquet" else ""))
            for path, rows in copies:
                said = said.replace(str(path), given + (rows if numbered else ""))
            raise InputError(said) from None
        if a.to:  # the scored table in a toolkit's format (docs/formats.md, "Writing back")
            from ..files.formats import write_format
            try:
                write_format(out, a.output, a.to, score_field=a.score_field, inputs=[given], option="-o")
            except InputError as exc:  # the scored table is a temporary: named as what it is, not by its path
                raise InputError(str(exc).replace(str(out), "the scored table")) from None
        elif a.output == "-":
            from ..files.output import copy_to_stdout
            copy_to_stdout(out, "-o")
        if a.plot:
            from ..plots import plot_scored
            plot_scored(out, a.plot, columns.segment, columns.score, name=Path(given).name)
    summary = replace(summary, seconds=time.perf_counter() - t0)
    if a.json or not a.quiet:  # -q: nothing but errors, unless --json asks for the summary
        text = json.dumps(_summary_json(summary, a.width), indent=1) if a.json else str(summary)
        print(text, file=sys.stderr if a.output == "-" else sys.stdout)
    if a.output and a.output != "-":
        log.info("wrote %s", a.output)
    if a.plot:
        log.info("drew %s", a.plot)
    return 0


def _score_with_progress(src, out, cfg, a, columns, refs, metrics, score_parquet, bleu=True):
    """score_parquet with a tqdm bar (total rows from the parquet metadata; off with -q or without a TTY).
    The program's paused garbage collector resumes after the first batch (the start-up is over)."""
    import pyarrow.parquet as pq

    def run(bar_update):
        def on_batch(rows: int) -> None:
            collector.resume()
            if bar_update:
                bar_update(rows)
        return score_parquet(src, out, cfg, columns=columns, references=refs, stats=a.stats,
                             smoothings=a.also_smoothing, metrics=metrics, batch_size=a.batch_size, quiet=True,
                             **({} if a.batch_bytes is None else {"batch_bytes": a.batch_bytes}),
                             compression=a.compression, on_batch=on_batch,
                             engine=None if a.engine == "local" else a.engine, bleu=bleu)
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
    from ..batch.spark import score_parquet_spark
    if not a.output or a.output == "-" or refs is not None:
        raise InputError("--engine spark: expected IN and -o OUT (a dataset directory) with references in a "
                         "column of the input (-r/--ref-table are single-machine options)")
    summary = score_parquet_spark(str(src), a.output, cfg, columns=columns, stats=a.stats,
                                  smoothings=a.also_smoothing, metrics=metrics, master=a.master,
                                  batch_rows=a.batch_size, compression=a.compression, spark_log=a.spark_log)
    if a.json or not a.quiet:
        print(json.dumps(_summary_json(summary, a.width), indent=1) if a.json else str(summary))
    log.info("scored with Spark (%s); wrote the dataset %s (row order and metadata: _kbest_bleu.json)",
             a.master, a.output)
    return 0


def _summary_json(s, width: int) -> dict:
    """The job summary on sacrebleu's 0-100 scale (the BLEU fields only when BLEU was scored; the
    other metrics' means of sentence scores under ``metrics``, and the corpus scores of those that
    have one); ``seconds``: the job's wall time."""
    out: dict = {"rows": s.rows, "segments": s.segments}
    if s.one_best is not None:
        out.update({"mean_sentence_bleu": round(100 * s.mean_bleu, width + 2),
                    "one_best": _bleu_json(s.one_best, s.one_best.signature, width),
                    "oracle": _bleu_json(s.oracle, s.oracle.signature, width), "signature": s.signature})
    if s.metrics:
        out["metrics"] = {}
        for name, m in s.metrics.items():
            out["metrics"][name] = {"mean": round(100 * m.mean, width + 2),
                                    "one_best_mean": round(100 * m.one_best, width + 2),
                                    "oracle_mean": round(100 * m.oracle, width + 2), "signature": m.signature}
            if m.corpus_one_best is not None:  # chrF: corpus scores from summed statistics
                out["metrics"][name].update(one_best_corpus=round(100 * m.corpus_one_best, width + 2),
                                            oracle_corpus=round(100 * m.corpus_oracle, width + 2))
    out["seconds"] = s.seconds
    return out


def _score_parser(sub) -> None:
    p = sub.add_parser("score", help="score a K-best table: parquet, CSV/TSV, JSON Lines, n-best or text "
                                     "(no input: the bundled real sample)")
    p.add_argument("input", nargs="?", type=reads("score IN"),
                   help="input file (format from the extension, or --format); a directory: a parquet dataset, "
                        "read by --engine spark")
    p.add_argument("--format", choices=["parquet", "csv", "tsv", "jsonl", "nbest", "text", *TOOL_FORMATS], default=None,
                   help="input format (default: from the extension, the toolkits' formats from the content; "
                        ".gz/.bz2/.zst decompressed; docs/formats.md)")
    p.add_argument("--nbest-size", type=positive_int, default=None, metavar="K",
                   help="text, opennmt-tf, opennmt-py: K consecutive lines per source (segment = line // K)")
    block_bytes_option(p)
    p.add_argument("--to", choices=["parquet", *WRITABLE], default=None,
                   help="write -o in this format instead of parquet: the scored lists back in the toolkit's "
                        "layout (docs/formats.md)")
    p.add_argument("--score-field", default=None, metavar="COL",
                   help="with --to fairseq/marian/nbest/opennmt-*: the column written in the format's score field "
                        "(default: bleu); the JSON formats add every score column instead")
    p.add_argument("-o", "--output", type=writes("-o"), help="output parquet file (input columns + bleu); '-': stdout; omit for the "
                                          "summary only")
    columns_options(p)
    p.add_argument("--score-col", default=None, help="model score column: the summary's 1-best is its argmax")
    p.add_argument("--ref-table", type=reads("--ref-table"), help="parquet file with the segment column(s) and the references column")
    refs_option(p, dest="ref_file")
    p.add_argument("--sort", action="store_true",
                   help="stably sort by the segment key first (external sort, bounded memory) when a segment's "
                        "rows are not contiguous")
    p.add_argument("--stats", action="store_true", help="add m1..mN t1..tN hyp_len ref_len columns")
    p.add_argument("--also-smoothing", default="", metavar="LIST",
                   help="more sentence-BLEU columns from the same counts: comma-separated smoothings (0-7 or "
                        "names) or 'all' (the preset's), as columns bleu_s<n>")
    p.add_argument("--batch-size", type=positive_int, default=65536, help="rows per record batch (bounds memory)")
    p.add_argument("--batch-bytes", type=positive_int, default=None,
                   help="bytes of hypothesis text per record batch (bounds memory; default 16 MiB)")
    p.add_argument("--threads", type=threads_int, default=None, help="threads for the kernels and Arrow (default: every "
                   "core; jobs under 64 KB score on one); with 2 or more, reading and writing overlap the "
                   "scoring on background threads; 1 runs the whole job on one thread")
    p.add_argument("--compression", default="zstd",
                   help="parquet codec of the output: zstd (smallest), snappy (fastest), lz4, gzip, brotli, none")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing but errors: no progress bar, no log lines, no summary (unless --json)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (scores 0-100), also with -q")
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", default=None, type=writes("--plot"),
                   help="draw the scored table: oracle BLEU vs K, where the oracle sits in the list, 1-best vs "
                        "oracle per segment, sentence BLEU by rank; adds the --stats columns to -o's table "
                        "(needs bleu in --metric; pip install '.[plot]')")
    p.add_argument("-w", "--width", type=decimals_int, default=2, help="decimals of the JSON scores")
    p.add_argument("--engine", choices=["local", "kernels", "numpy", "spark"], default="local",
                   help="local: this machine, the numpy engine below 4 MiB of text (below 64 MiB until the "
                   "kernels are compiled: no numba start-up, no compiling), numba's kernels above; "
                   "kernels/numpy: force one (the same numbers); spark: read and write parquet datasets with "
                   "Apache Spark (pip install '.[spark]')")
    p.add_argument("--master", default="local[*]", help="Spark master URL (with --engine spark)")
    p.add_argument("--spark-log", type=writes("--spark-log"), default=None, metavar="FILE",
                   help="with --engine spark: append Spark's own log, warnings and Java stack traces to FILE "
                        "(/dev/stderr: on the terminal, as Spark prints them); default: kept out of sight, its "
                        "last lines shown only when Spark itself fails")
    p.add_argument("--metric", default="bleu", metavar="LIST",
                   help=f"comma-separated metrics, each adding its columns, any order, any one alone: bleu, "
                        f"{', '.join(METRICS)}")
    scoring_options(p)
    own = {}  # each metric's options: (dest, option string, default), for _metrics' check
    for name in METRICS:
        group = p.add_argument_group(f"{name} options")
        import_module(f"kbest_bleu.metrics.{name}.cli").add_score_options(group)
        own[name] = [(x.dest, x.option_strings[0], x.default) for x in group._group_actions]
    p.set_defaults(func=_cmd_score, metric_options=own)
