"""The commands besides ``score``: ``corpus`` and ``paired`` (text files, as sacrebleu), ``convert``
and ``export-moses`` (n-best text), ``tune``, ``metaeval``, ``warmup``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .. import settings
from ..config import BleuConfig
from ..errors import InputError
from ..files.formats import TOOL_FORMATS, WRITABLE
from .options import (
    _bleu_line,
    _reference_rows,
    _segment,
    columns_options,
    config_from,
    decimals_int,
    int_range,
    nonnegative_float,
    positive_float,
    positive_int,
    reads,
    refs_option,
    scoring_options,
    seed_int,
    writes,
)

__all__ = []

log = logging.getLogger("kbest_bleu")


def _stdin_systems(lines: list) -> list:
    """Hypotheses piped on stdin as sacrebleu reads them: a bare CR ends a line too (Python's
    universal newlines); each line's trailing whitespace is removed, then its tab-separated fields
    are systems, as many as the first line has, each with its trailing whitespace removed. (So a
    trailing tab goes with the line's whitespace, and an empty last system makes the line one field
    short, refused as sacrebleu refuses it.)"""
    fields = [part.rstrip().split("\t") for ln in lines for part in ln.split("\r")]
    n_sys = len(fields[0]) if fields else 1
    bad = next((i for i, f in enumerate(fields) if len(f) != n_sys), None)
    if bad is not None:
        raise InputError(f"stdin: line {bad + 1} has {len(fields[bad])} tab-separated systems, line 1 has {n_sys}; "
                         "expected the same number on every line (or give each system's file with -i)")
    return [[f[i].rstrip() for f in fields] for i in range(n_sys)] if fields else [[]]


def _cmd_corpus(a: argparse.Namespace) -> int:
    from ..bleu import corpus_score, sentence_results
    from ..files.readers import read_text
    from ..stats import ngram_stats
    cfg = config_from(a)
    a.format_out = a.format_out or ("text" if a.sentence_level else "json")
    paths = a.input or ["-"]
    if "-" in paths and sys.stdin.isatty():
        raise InputError("expected hypotheses after -i (or piped on stdin); found neither. Usage, as sacrebleu: "
                         "kbest-bleu corpus REF [REF ...] -i HYP [HYP ...]")
    refs = _reference_rows(a.references, "corpus REF")
    if not refs:  # sacrebleu refuses it too ("contains no sentence")
        raise InputError(f"corpus REF {a.references[0]}: holds no sentence; expected one reference per line")
    twice = next((p for i, p in enumerate(paths) if p in paths[:i]), None)
    if twice is not None:  # as sacrebleu: each system is named by its file
        raise InputError(f"-i: {twice!r} is given twice; give each system's file once")
    if paths != ["-"]:
        systems = [read_text(p, "-i") for p in paths]
    else:
        systems = _stdin_systems(read_text("-", "stdin", strip=False))
        paths = [f"System {i + 1}" for i in range(len(systems))] if len(systems) > 1 else paths
    for path, hyps in zip(paths, systems):
        if len(hyps) != len(refs):
            raise InputError(f"{path}: {len(hyps)} lines, but {a.references[0]} has {len(refs)}; expected one "
                             "hypothesis line per reference line (usage: corpus REF [REF ...] -i HYP)")
    nrefs = len(a.references)
    if a.sentence_level:
        if len(systems) > 1:
            raise InputError(f"--sentence-level: expected one system, found {len(systems)}")
        sent = BleuConfig.make(cfg, effective_order=True) if cfg.compat == "sacrebleu" else cfg
        sig = sent.signature("sentence", nrefs=nrefs)
        lines = sentence_results(ngram_stats(systems[0], refs, None, cfg), sent)
        print("\n".join(_bleu_line(r, sig, a) for r in lines))
        return 0
    sig = cfg.signature("corpus", nrefs=nrefs)
    results = [corpus_score(ngram_stats(h, refs, None, cfg), cfg) for h in systems]
    if len(results) == 1:
        print(_bleu_line(results[0], sig, a))
    elif a.format_out == "json":
        print(json.dumps([{"system": p, "BLEU": f"{100 * r.score:.{a.width}f}"} for p, r in zip(paths, results)],
                         indent=4))  # as sacrebleu prints several systems
    else:
        width = max(len(p) for p in paths)
        lines = [f"{p:<{width}}  {100 * r.score:.{a.width}f}" for p, r in zip(paths, results)]
        print("\n".join(lines if a.score_only else [f"{'system':<{width}}  BLEU"] + lines + [f"signature: {sig}"]))
    return 0


def _cmd_convert(a: argparse.Namespace) -> int:
    import shutil

    from ..files.nbest import nbest_to_parquet
    from ..files.output import atomic_output, check_output
    from ..files.temporaries import temporary_directory
    from ..files.readers import check_output_format, input_format
    src, dst = Path(a.input), Path(a.output)
    check_output(dst, [src, *(a.refs or ())], "output")  # before reading: convert X X must not destroy X
    fmt = "parquet" if src.suffix == ".parquet" and not a.format else None
    if fmt is None:
        try:
            fmt = input_format(src, a.format)[0]
        except InputError:
            if a.format or a.nbest_size:
                raise
            fmt = "nbest"  # as before: a file that is not parquet is read as n-best text
    to = a.to or ("nbest" if fmt == "parquet" else "parquet")
    if to == fmt:
        raise InputError(f"convert: {str(src)!r} is {fmt} already; --to names another format (convert writes "
                         f"{'n-best text' if fmt == 'parquet' else 'parquet'} from it by default)")
    check_output_format(dst, to, "output", "name it for that format, or choose the format with --to FORMAT")
    if not (fmt == "nbest" and to == "parquet" and a.score_field is None and not a.nbest_size):
        # (a table written back: the score field is BLEU where the table has it, as score --to writes it)
        return _convert_formats(a, src, dst, fmt, to)
    # n-best text into parquet, with its references (-r): streamed into a work file (memory: one batch),
    # then copied through the output guard
    with temporary_directory() as tmp:
        work = Path(tmp) / "table.parquet"
        compression = input_format(src, "nbest")[1]  # .gz/.bz2/.zst, as score reads them
        nbest_to_parquet(src, work, compression, reference_paths=a.refs or (), option="convert IN", codec="zstd")
        with atomic_output(dst, [src, *(a.refs or ())], "output") as out:
            shutil.copyfile(work, out)
    print(f"wrote {dst}", file=sys.stderr)
    return 0


def _convert_formats(a: argparse.Namespace, src: Path, dst: Path, fmt: str, to: str) -> int:
    """convert between the toolkits' formats and parquet (docs/formats.md): the input streamed into
    a parquet work file, then copied or written in ``to``."""
    import shutil

    from ..files.formats import write_format
    from ..files.output import atomic_output
    from ..files.temporaries import temporary_directory
    from ..files.readers import kbest_to_parquet
    if a.refs:
        raise InputError("-r/--refs: convert adds references to Moses n-best text only; give them to 'score' instead")
    with temporary_directory() as tmp:
        table = src
        if fmt == "parquet":  # a missing or broken table said as the other inputs are (write_format trusts its table)
            from ..batch.parquet import open_parquet
            open_parquet(src)
        else:
            table = Path(tmp) / "table.parquet"
            kbest_to_parquet(src, table, fmt, option="convert IN", nbest_size=a.nbest_size)
        if to == "parquet":
            with atomic_output(dst, [src], "output") as out:
                shutil.copyfile(table, out)
        else:
            write_format(table, dst, to, score_field=a.score_field, inputs=[src], option="output")
    print(f"wrote {dst}", file=sys.stderr)
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    from ..batch.moses import export_moses
    from ..batch.parquet import read_parquet_table
    from ..files.output import check_output
    from ..files.references import Columns
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
    from ..research.cli import markdown
    from ..research.significance import approximate_randomization, bootstrap_ci, paired_bootstrap
    from ..stats import ngram_stats
    if a.n_samples < 0:
        raise InputError(f"--n-samples: expected a positive number of resamples (0: the default), found {a.n_samples}")
    cfg = config_from(a)
    refs = _reference_rows(a.refs, "--refs")
    if not refs:  # sacrebleu refuses it too: a test over no sentence would report p = 1 / (n + 1)
        raise InputError(f"--refs {a.refs[0]}: holds no sentence; expected one reference per line, the systems' "
                         "lines matching")
    from ..files.readers import read_text
    systems = [read_text(p, "paired SYSTEM") for p in [a.baseline] + a.systems]
    for path, lines in zip([a.baseline] + a.systems, systems):
        if len(lines) != len(refs):
            raise InputError(f"{path}: {len(lines)} lines; expected {len(refs)} like the references")
    n = a.n_samples or (1000 if a.test == "bs" else 10000)
    if n * len(refs) > settings.MAX_RESAMPLE_CELLS:  # each resample holds a row of segment draws
        raise InputError(f"--n-samples: {n:,} resamples of {len(refs):,} segments take ~{n * len(refs) * 24 / 2**30:.0f} "
                         f"GiB; expected resamples x segments <= {settings.MAX_RESAMPLE_CELLS:,}; lower --n-samples")
    stats = [ngram_stats(h, refs, None, cfg) for h in systems]
    test = paired_bootstrap if a.test == "bs" else approximate_randomization
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


def _cmd_warmup(a: argparse.Namespace) -> int:
    import time

    from ..counting import aot as _aot
    from ..warmup import cache_directory, warm_up

    def say(line: str) -> None:  # one write per line: the workers' reports come from another thread
        sys.stdout.write(f"kbest-bleu warmup: {line}\n")
        sys.stdout.flush()

    def build_ahead() -> None:  # in this process, which has just compiled the counting kernels
        t0 = time.perf_counter()
        try:
            path = _aot.build()
        except Exception as exc:  # no C compiler, no writable directory: jobs load numba's kernels instead
            say(f"the text kernels were not compiled ahead of time ({type(exc).__name__}: {str(exc)[:300]}); "
                "jobs load numba's kernels instead, ~0.15 s more a process")
        else:
            say(f"text kernels compiled ahead of time in {time.perf_counter() - t0:.1f} s (they load without "
                f"numba): {path}")
    r = warm_up(a.area, a.processes, lambda report: say(report.line()), build_ahead)
    done = f"compiled {r.kernels} kernel functions" if r.kernels else "every kernel was in the cache already"
    say(f"kernels ready in {r.seconds:.1f} s ({done}; numba cache {cache_directory()})")
    for module in r.not_imported:
        say(f"skipped kernels that could not be imported: {module}")
    if r.missing:
        print("kbest-bleu warmup: error: no warm-up compiles these kernels (add them to kbest_bleu/warmup/areas.py): "
              + ", ".join(r.missing), file=sys.stderr)
    if r.crossed:
        print("kbest-bleu warmup: error: an area compiled another area's kernels (complete NEEDS in "
              "kbest_bleu/warmup/areas.py): " + ", ".join(r.crossed), file=sys.stderr)
    return 0 if r.ok else 1


def _cmd_tune(a: argparse.Namespace) -> int:
    import numpy as np

    from ..batch.parquet import read_parquet_table
    from ..files.nbest import read_nbest
    from ..tuning import KbestLists, tune_expected_bleu, tune_mira, tune_pro
    cfg = config_from(a)
    used = {"mira": ("epochs", "c"), "pro": (), "ebleu": ("epochs", "lam")}[a.method]
    ignored = [name for name in ("epochs", "c", "lam") if getattr(a, name) is not None and name not in used]
    if ignored:  # it would be ignored
        raise InputError(f"--{ignored[0]}: not an option of --method {a.method} (--epochs: mira, ebleu; --c: mira; "
                         f"--lam: ebleu); leave it out")
    epochs, c, lam = a.epochs or 60, a.c if a.c is not None else 0.01, a.lam if a.lam is not None else 10.0
    try:  # before the lists are read and the kernels compiled
        w0 = np.array([float(x) for x in a.init.split(",")]) if a.init else None
    except ValueError:
        raise InputError(f"--init: expected comma-separated numbers, one per feature, found {a.init!r}") from None
    parquet = Path(a.input).suffix == ".parquet"
    if parquet and a.refs:  # a table holds its references (--ref-col): -r would be left unread
        raise InputError(f"-r/--refs: {a.input} is a parquet table, whose references are its column {a.ref_col!r}; "
                         "leave -r out (it adds references to Moses/Joshua n-best text)")
    table = read_parquet_table(a.input, "tune IN") if parquet else read_nbest(a.input, a.refs or (), "tune IN")
    segment = a.seg_col or "segment_id"  # not the stored key: it tells iterations apart, tuning merges them
    if "," in segment:
        raise InputError(f"--seg-col: tune groups its lists by one integer segment column, found {segment!r}; the "
                         "lists a segment has from several decoding iterations are merged (as Moses' extractor "
                         "does), so leave an iteration column out; tune each language pair apart")
    lists = KbestLists.from_table(table, cfg, segment=segment, hypothesis=a.hyp_col, references=a.ref_col,
                                  features=a.features_col, score=a.score_col)
    n_feat = lists.features.shape[1]
    warning = None
    if a.init:
        if len(w0) != n_feat or not np.isfinite(w0).all():
            found = len(w0) if len(w0) != n_feat else f"{int((~np.isfinite(w0)).sum())} not finite (NaN or inf)"
            raise InputError(f"--init: expected {n_feat} finite weights ({', '.join(lists.feature_names)}), "
                             f"found {found}")
    elif a.score_col:
        w0 = lists.decoder_weights()
        off = float(np.abs(lists.model_scores(w0) - lists.model_score).max()) if len(lists) else 0.0
        if off > 0.01 * max(1.0, float(np.abs(lists.model_score).mean()) if len(lists) else 0.0):  # one run: ~1e-4
            warning = (f"kbest-bleu tune: warning: no one weight vector gives --score-col's model scores (off by up "
                       f"to {off:.3g}): the lists come from decoding runs with different weights, and the start is "
                       "their least-squares blend; start from the last run's weights (--init) for a meaningful start")
    else:
        w0 = np.zeros(n_feat)
    start = lists.corpus_bleu(lists.one_best(w0), cfg)
    if a.method == "mira":
        res = tune_mira(lists, w0, c=c, epochs=epochs, seed=a.seed, config=cfg)
    elif a.method == "pro":
        res = tune_pro(lists, w0, seed=a.seed, config=cfg)
    else:
        res = tune_expected_bleu([lists], w0, lam=lam, epochs=epochs, seed=a.seed, config=cfg)
    if warning:  # after the run: a tuning that fails says so in one line
        print(warning, file=sys.stderr)
    out = {"method": a.method, "feature_names": lists.feature_names, "weights": res.weights.tolist(),
           "start_bleu": start, "bleu": res.bleu, "history": res.history, "segments": len(lists.seg_ptr) - 1,
           "hypotheses": len(lists), "signature": cfg.signature("corpus")}
    print(json.dumps(out, indent=1))
    return 0


def _corpus_parser(sub) -> None:
    p = sub.add_parser("corpus", help="corpus BLEU of plain-text files, as sacrebleu: corpus REF [REF ...] -i HYP")
    p.add_argument("references", nargs="+", metavar="REF", type=reads("corpus REF"), help="reference files, one per stream")
    p.add_argument("-i", "--input", nargs="+", metavar="HYP", type=reads("-i"),
                   help="hypothesis file(s), one per system; '-' or absent: stdin")
    p.add_argument("-f", "--format", dest="format_out", choices=["text", "json"], default=None,
                   help="default as sacrebleu: json, text with --sentence-level")
    p.add_argument("--json", dest="format_out", action="store_const", const="json", help="same as -f json")
    p.add_argument("-sl", "--sentence-level", action="store_true", help="one score per hypothesis line")
    p.add_argument("-w", "--width", type=decimals_int, default=1, help="decimals of the score")
    p.add_argument("-b", "--score-only", action="store_true", help="print the score only")
    p.add_argument("--force", action="store_true",  # sacrebleu's: score tokenized input without its warning
                   help="accepted as sacrebleu accepts it (kbest-bleu never refuses or warns on tokenized input)")
    scoring_options(p)
    p.set_defaults(func=_cmd_corpus)


def _convert_parser(sub) -> None:
    p = sub.add_parser("convert", help="K-best files <-> parquet: Moses/Joshua n-best (direction from the .parquet "
                                       "suffix), the toolkits' formats with --format/--to (docs/formats.md)")
    p.add_argument("input", type=reads("convert IN"))
    p.add_argument("output", type=writes("output"))
    refs_option(p)
    p.add_argument("--format", choices=["parquet", "csv", "tsv", "jsonl", "nbest", "text", *TOOL_FORMATS],
                   default=None, help="input format (default: from the extension and the content)")
    p.add_argument("--to", choices=["parquet", *WRITABLE], default=None,
                   help="output format (default: nbest for a parquet input, else parquet)")
    p.add_argument("--nbest-size", type=positive_int, default=None, metavar="K",
                   help="text, opennmt-tf, opennmt-py input: K consecutive lines per source")
    p.add_argument("--score-field", default=None, metavar="COL",
                   help="the column written in the score field of fairseq, marian, nbest and opennmt-* output "
                        "(default: bleu when the table has it, else the model score)")
    p.set_defaults(func=_cmd_convert)


def _export_parser(sub) -> None:
    p = sub.add_parser("export-moses", help="Moses extractor scores (and features) files from a K-best table")
    p.add_argument("input", type=reads("export-moses IN"))
    p.add_argument("--scores", required=True, type=writes("--scores"))
    p.add_argument("--features", type=writes("--features"))
    columns_options(p)
    scoring_options(p)
    # Moses' extractor splits on spaces and keeps case: its statistics need -t none, not 13a
    p.set_defaults(func=_cmd_export, compat="moses", tokenize="none")


def _tune_parser(sub) -> None:
    p = sub.add_parser("tune", help="tune feature weights on K-best lists: k-best MIRA, PRO or expected BLEU")
    p.add_argument("input", type=reads("tune IN"), help="K-best parquet table, or Moses/Joshua n-best text (with -r)")
    refs_option(p)
    p.add_argument("--method", choices=["mira", "pro", "ebleu"], default="mira")
    p.add_argument("--features-col", default="features", help="list<double> or Moses/Joshua feature string column")
    p.add_argument("--init", help="starting weights, comma-separated (default: fit to --score-col, else zeros)")
    p.add_argument("--score-col", help="the decoder's model score column, to recover its weights as the start")
    # (None: not given; the method's default, and an option of another method is refused)
    p.add_argument("--epochs", type=int_range(1, 100_000, "a number of epochs from 1 to 100000"), default=None,
                   help="training epochs of MIRA and of expected BLEU (default 60, Moses kbmira's)")
    p.add_argument("--c", type=positive_float, default=None, help="MIRA C (default 0.01)")
    p.add_argument("--lam", type=nonnegative_float, default=None, help="expected BLEU L2 weight (default 10)")
    p.add_argument("--seed", type=seed_int, default=0)
    columns_options(p, "the integer segment id column; default: segment_id (the lists of a segment from every "
                        "decoding iteration in the file are merged, repeated candidates dropped)")
    scoring_options(p)
    p.set_defaults(func=_cmd_tune)


def _metaeval_parser(sub) -> None:
    from ..research.cli import add_commands
    add_commands(sub)  # metaeval and its recipes


def _warmup_parser(sub) -> None:
    p = sub.add_parser("warmup", help="compile every kernel ahead of the first jobs (once per machine and "
                                      "installation; e.g. in a container build)")
    p.add_argument("-j", "--processes", type=int_range(1, 64, "a number of processes from 1 to 64"), default=2,
                   help="compile in up to N processes at once (default 2)")
    p.add_argument("--area", action="append", default=None,
                   help="only this area's kernels (counting, metrics.meteor, tuning, ...; repeatable)")
    p.set_defaults(func=_cmd_warmup)


def _paired_parser(sub) -> None:
    p = sub.add_parser("paired", help="paired significance test of systems against a baseline (text files)")
    p.add_argument("baseline", type=reads("paired BASELINE"))
    p.add_argument("systems", nargs="+", type=reads("paired SYSTEM"))
    refs_option(p, required=True)
    p.add_argument("--test", choices=["bs", "ar"], default="bs", help="paired bootstrap or approximate randomization")
    p.add_argument("--n-samples", type=int_range(0, 1_000_000, "a number of resamples from 0 (the default) to 1000000"),
                   default=0, help="resamples of the test (default: 1000 for bs, 10000 for ar, as sacrebleu; "
                                   "0 means that default)")
    p.add_argument("--seed", type=seed_int, default=12345)
    p.add_argument("--json", action="store_true", help="print the results as JSON (scores 0-100)")
    scoring_options(p)
    p.set_defaults(func=_cmd_paired)
