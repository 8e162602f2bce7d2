"""Issue 34, property: commands driven in-process (``kbest_bleu.cli.main``) with generated hostile
inputs: bytes that are not UTF-8, quotes (CSV-quoted TSV too), tabs, ``|||`` and line breaks in
text, empty and truncated files, NaN/inf/huge numbers in n-best scores and features, ids past
2^63, and an output that is one of the inputs or a directory. Whatever the input, a command
either exits 0 with a valid output or exits 2 with one line (argparse's usage errors add the line
pointing to --help); every input is byte-identical afterwards; no temporary is left beside the
files or in $TMPDIR; no parquet output holds NaN or inf.

The default run tries 40 jobs; KBEST_BLEU_EXHAUSTIVE=1 (CI) tries 300.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kbest_bleu.cli import main
from kbest_bleu.files.nbest import read_nbest
from kbest_bleu.files.temporaries import TEMP_MARK

EXAMPLES = 300 if os.environ.get("KBEST_BLEU_EXHAUSTIVE") else 40

# hostile pieces among ordinary ones, so that half the jobs or so still succeed
NORMAL = [b"the", b"cat", b"a", b"sat", b"mat", b"caf\xc3\xa9"]
HOSTILE = [b'"', b'say "hi"', b"\t", b"|||", b"\xff", b"\xc3(", b"\xe9", b"", b"\r", b",", b"'"]
TEXT = st.lists(st.sampled_from(NORMAL * 4 + HOSTILE), min_size=0, max_size=5).map(b" ".join)
NUMBER = st.sampled_from([b"-1", b"-2.5", b"0.5"] * 4 + [b"nan", b"inf", b"-inf", b"1e400", b"x", b"",
                                                        b"9223372036854775808"])
SEGMENT = st.sampled_from([b"0", b"1", b"2", b"-3", b"18446744073709551616", b"x", b""])


@st.composite
def rows(draw):
    """(segment id, hypothesis, reference, feature value, score) of up to 5 rows, 2 per segment."""
    n = draw(st.integers(0, 5))
    refs = [draw(TEXT) for _ in range(3)]  # one reference per segment (rows of a segment agree), mostly
    return [(draw(SEGMENT) if draw(st.integers(0, 4)) == 0 else str(i // 2).encode(), draw(TEXT),
             refs[i // 2] if draw(st.integers(0, 5)) else draw(TEXT), draw(NUMBER), draw(NUMBER)) for i in range(n)]


def _quoted(field: bytes) -> bytes:
    return b'"' + field.replace(b'"', b'""') + b'"'


def _serialize(fmt: str, data: list, pandas_quoting: bool) -> bytes:
    if fmt == "nbest":
        return b"".join(b" ||| ".join([s, h, b"lm= " + f, sc]) + b"\n" for s, h, _, f, sc in data)
    if fmt == "text":
        return b"".join(h + b"\n" for _, h, *_ in data)
    if fmt == "jsonl":
        return b"".join(b'{"segment_id": ' + (s or b"null") + b', "hypothesis": "' + h + b'", "references": ["' + r
                        + b'"]}\n' for s, h, r, *_ in data)
    sep = b"\t" if fmt == "tsv" else b","
    quote = _quoted if (fmt == "csv" or pandas_quoting) else (lambda x: x)
    return sep.join([b"segment_id", b"hypothesis", b"references"]) + b"\n" + b"".join(
        sep.join([s, quote(h), quote(r)]) + b"\n" for s, h, r, *_ in data)


@st.composite
def jobs(draw):
    """(files {name: bytes}, argv with {name} placeholders, output name or None)."""
    data = draw(rows())
    kind = draw(st.sampled_from(["score", "score", "score", "convert", "convert-back", "corpus", "export-moses"]))
    files = {"ref.txt": b"".join(r + b"\n" for _, _, r, *_ in data)}
    if draw(st.integers(0, 5)) == 0:  # a truncated or empty file
        files["ref.txt"] = files["ref.txt"][:draw(st.integers(0, 3))]
    target = draw(st.sampled_from(["out"] * 5 + ["same", "refs", "dir/"]))
    if kind in ("score", "convert", "corpus"):
        fmt = {"score": draw(st.sampled_from(["tsv", "csv", "jsonl", "nbest", "text"])), "convert": "nbest",
               "corpus": "text"}[kind]
        name = f"in.{ {'text': 'txt'}.get(fmt, fmt) }"
        files[name] = _serialize(fmt, data, pandas_quoting=draw(st.booleans()))
        if draw(st.integers(0, 5)) == 0:
            files[name] = files[name][:draw(st.integers(0, 20))]
        if kind == "corpus":
            return files, ["corpus", "{ref.txt}", "-i", "{%s}" % name], None
        out = {"out": "out.parquet", "same": name, "refs": "ref.txt", "dir/": "dir/"}[target]
        refs = ["-r", "{ref.txt}"] if fmt in ("text", "nbest") and draw(st.booleans()) or fmt == "text" else []
        if kind == "convert":
            return files, ["convert", "{%s}" % name, "{%s}" % out, *refs], out
        return files, ["score", "{%s}" % name, "-o", "{%s}" % out, "-t", "none", "-q", *refs], out
    # from parquet: convert back to n-best text, export Moses files
    table = {"segment_id": pa.array([i // 2 for i in range(len(data))], pa.int64()),
             "hypothesis": pa.array([h.decode("utf-8", "replace") if draw(st.integers(0, 6)) else None
                                     for _, h, *_ in data], pa.string()),
             "features": pa.array([f"lm= {f.decode('utf-8', 'replace')}" for *_, f, _ in data], pa.string()),
             "model_score": pa.array([float(x) if _float(x) else 0.0 for *_, x in data], pa.float64()),
             "references": pa.array([[r.decode("utf-8", "replace")] for _, _, r, *_ in data], pa.list_(pa.string()))}
    sink = io.BytesIO()
    pq.write_table(pa.table(table), sink)
    files["in.parquet"] = sink.getvalue()
    out = {"out": "out.nbest", "same": "in.parquet", "refs": "ref.txt", "dir/": "dir/"}[target]
    if kind == "convert-back":
        return files, ["convert", "{in.parquet}", "{%s}" % out], out
    out = "scores.txt" if out == "out.nbest" else out
    return files, ["export-moses", "{in.parquet}", "--scores", "{%s}" % out, "--seg-col", "segment_id"], out


def _float(text: bytes) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _finite_or_null(path: Path, names: "tuple | None" = None) -> None:
    """The float columns ``names`` (default: all) of a parquet output hold no NaN or infinity (the
    input's own columns are passed through as they are: docs/failure_behaviour.md)."""
    table = pq.read_table(path)
    for name in names or table.column_names:
        t = table.schema.field(name).type
        col = table[name]
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            col, t = pa.chunked_array([c.flatten() for c in col.chunks], t.value_type), t.value_type
        if pa.types.is_floating(t):
            assert all(v is None or math.isfinite(v) for v in col.to_pylist()), (name, col)


@contextlib.contextmanager
def _tmpdir(path: Path):
    old = tempfile.tempdir
    tempfile.tempdir = str(path)
    try:
        yield
    finally:
        tempfile.tempdir = old


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(job=jobs())
def test_hostile_inputs_exit_0_with_valid_output_or_2_with_one_line(tmp_path_factory, capsys, job):
    argv, d, rc, out = _drive(tmp_path_factory, capsys, job)
    target = d / job[2] if job[2] else None
    if rc == 0 and target is not None and target.is_file():
        if target.suffix == ".parquet":
            _finite_or_null(target)
        elif target.suffix == ".nbest":
            assert read_nbest(target).num_rows == len(target.read_text().splitlines())
    if rc == 0 and argv[0] == "corpus":
        assert out.strip()


def _drive(tmp_path_factory, capsys, job) -> tuple:
    """Run one job in a directory of its own with $TMPDIR (Python's) in it; the checks every
    command passes. Returns (argv, the directory, exit status, stdout)."""
    files, argv, out_name = job
    d = tmp_path_factory.mktemp("job")
    work = d / "TMPDIR"
    work.mkdir()
    for name, data in files.items():
        (d / name).write_bytes(data)
    named = [a[1:-1] for a in argv if a.startswith("{")]
    inputs = {n for n in named if n in files and (n != out_name or named.count(n) > 1)}  # what the command reads
    before = {name: (d / name).read_bytes() for name in inputs}
    args = [str(d / a[1:-1]) + ("/" if a.endswith("/}") else "") if a.startswith("{") else a for a in argv]
    capsys.readouterr()
    with _tmpdir(work), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rc = main(args)
        except SystemExit as exc:  # argparse
            rc = exc.code
    out, err = capsys.readouterr()
    # numpy's RuntimeWarnings (NaN from 0/0, inf - inf) would reach the user's stderr as extra lines
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    lines = err.splitlines()
    event(f"{' '.join(argv[:2]) if argv[0] in ('metaeval', 'bleu2vec') else argv[0]} exit {rc}")
    assert rc in (0, 2), (args, err)
    assert "Traceback" not in err, err
    if rc == 2:
        assert len(lines) == 1 or (len(lines) == 2 and lines[1].endswith("--help lists the options")), err
    assert {name: (d / name).read_bytes() for name in inputs} == before, "an input was changed"
    assert not [p for p in d.rglob("*") if TEMP_MARK in p.name] and not list(work.iterdir()), "a temporary was left"
    if out_name in inputs:
        assert rc == 2, "an input was accepted as the output"
    return argv, d, rc, out


# ---- tune, mbr, metaeval judged, bleu2vec train ------------------------------------------------

MORE_EXAMPLES = 200 if os.environ.get("KBEST_BLEU_EXHAUSTIVE") else 24
# option values: ordinary, then hostile (NaN, infinities, out of range, not a number)
OPTION = st.sampled_from([None] * 24 + ["nan", "inf", "-inf", "-1", "0", "1e400", "x", ""])


def _number(text: bytes) -> "float | None":
    return float(text) if _float(text) else None


def _parquet(columns: dict) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


def _option(draw, name: str, ordinary: str) -> list:
    value = draw(OPTION)
    return [name, ordinary if value is None else value]


def _hostile_file(draw, data: bytes) -> bytes:
    """``data``, else truncated or empty now and then."""
    return data[:draw(st.integers(0, 20))] if draw(st.integers(0, 5)) == 0 else data


@st.composite
def more_jobs(draw):
    """(files, argv, output name or None) of tune, mbr, metaeval judged, bleu2vec train, paired or
    parmesan build-table."""
    data = draw(rows())
    kind = draw(st.sampled_from(["tune", "mbr", "judged", "bleu2vec", "paired", "build-table"]))
    target = draw(st.sampled_from(["out"] * 5 + ["same", "refs", "dir/"]))
    files = {"ref.txt": _hostile_file(draw, b"".join(r + b"\n" for _, _, r, *_ in data))}
    ids = pa.array([i // 2 for i in range(len(data))], pa.int64())
    texts = {"hypothesis": pa.array([h.decode("utf-8", "replace") for _, h, *_ in data], pa.string()),
             "references": pa.array([[r.decode("utf-8", "replace")] for _, _, r, *_ in data], pa.list_(pa.string()))}
    if kind == "tune":
        if draw(st.booleans()):  # n-best text and its references
            files["in.nbest"] = _hostile_file(draw, _serialize("nbest", data, False))
            src, refs, score = "in.nbest", ["-r", "{ref.txt}"], []
        else:  # parquet: dense features with NaN, infinities, huge values, model scores
            files["in.parquet"] = _parquet({"segment_id": ids, **texts,
                                            "features": pa.array([[_number(f), 1.0] for *_, f, _ in data],
                                                                 pa.list_(pa.float64())),
                                            "model_score": pa.array([_number(x) for *_, x in data], pa.float64())})
            src, refs, score = "in.parquet", [], ["--score-col", "model_score"] if draw(st.booleans()) else []
        argv = ["tune", "{%s}" % src, *refs, *score, "--method", draw(st.sampled_from(["mira", "pro", "ebleu"])),
                "-t", "none", "--epochs", "2"]
        if draw(st.integers(0, 2)) == 0:  # option values too (argparse takes the last --epochs)
            argv += [*_option(draw, "--epochs", "2"), *_option(draw, "--c", "0.01"), *_option(draw, "--lam", "1"),
                     *_option(draw, "--init", "0.5,0.5")]
        return files, argv, None
    if kind == "mbr":
        fmt = draw(st.sampled_from(["tsv", "jsonl", "nbest", "parquet"]))
        src = f"in.{fmt}"
        files[src] = _hostile_file(draw, _parquet({"segment_id": ids, **texts, "model_score": pa.array(
            [_number(x) for *_, x in data], pa.float64())}) if fmt == "parquet" else _serialize(fmt, data, False))
        out = {"out": "out.parquet", "same": src, "refs": "ref.txt", "dir/": "dir/"}[target]
        score = ["--score-col", "model_score"] if fmt in ("parquet", "nbest") and draw(st.booleans()) else []
        extra = (["--aggregate"] if draw(st.booleans()) else []) + (["-r", "{ref.txt}"] if fmt == "nbest" else [])
        return files, ["mbr", "{%s}" % src, "-o", "{%s}" % out, "-q", "-t", "none", *score, *extra,
                       "--utility", draw(st.sampled_from(["bleu", "chrf"])),
                       *_option(draw, "--temperature", "1")], out
    if kind == "judged":
        columns = {"lp": pa.array(["de-en"] * len(data)), "segment_id": ids,
                   "system": pa.array([f"s{i % 2}" for i in range(len(data))]),
                   "m": pa.array([_number(f) for *_, f, _ in data], pa.float64()),
                   "h": pa.array([_number(x) for *_, x in data], pa.float64())}
        if draw(st.integers(0, 4)) == 0:  # a missing column
            del columns[draw(st.sampled_from(sorted(columns)))]
        files["table.parquet"] = _hostile_file(draw, _parquet(columns))
        judge = ["--human", "h"]
        if draw(st.booleans()):
            files["pairs.parquet"] = _hostile_file(draw, _parquet(
                {"lp": pa.array(["de-en"] * len(data)), "segment_id": ids,
                 "better_system": pa.array(["s0"] * len(data)), "worse_system": pa.array(["s1"] * len(data))}))
            judge = ["--pairs", "{pairs.parquet}"]
        style = ["--wmt-style", *_option(draw, "--n-perm", "5"), *_option(draw, "--pval", "0.05")] \
            if draw(st.booleans()) else [*_option(draw, "--n-boot", "5"), *_option(draw, "--level", "0.9")]
        return files, ["metaeval", "judged", "{table.parquet}", "--metric", "m", *judge, *style,
                       *_option(draw, "--seed", "1")], None
    if kind == "paired":  # text files of systems against references (invalid UTF-8, lengths that differ)
        files["base.txt"] = _hostile_file(draw, b"".join(h + b"\n" for _, h, *_ in data))
        files["sys.txt"] = _hostile_file(draw, b"".join(r + b"\n" for _, _, r, *_ in data[::-1]))
        return files, ["paired", "-r", "{ref.txt}", "{base.txt}", "{sys.txt}", "-t", "none",
                       "--test", draw(st.sampled_from(["bs", "ar"])), *_option(draw, "--n-samples", "20"),
                       *_option(draw, "--seed", "1")], None
    if kind == "build-table":  # Meteor's pairs (prob<TAB>word<TAB>paraphrase) with hostile probabilities
        lines = b"".join(f + b"\t" + h.split(b" ")[0] + b"\t" + r.split(b" ")[0] + b"\n"
                         for _, h, r, *_, f, _ in data)
        name = "pairs.tsv.gz" if draw(st.booleans()) else "pairs.tsv"
        files[name] = _hostile_file(draw, gzip.compress(lines) if name.endswith(".gz") else lines)
        out = {"out": "table.tsv", "same": name, "refs": "ref.txt", "dir/": "dir/"}[target]
        return files, ["parmesan", "build-table", "{%s}" % name, "-o", "{%s}" % out, "--analyzer", "lower",
                       *_option(draw, "--min-prob", "0")], out
    # bleu2vec train: a tiny corpus of hypotheses, plain or gzip (truncated now and then)
    corpus = b"the cat sat on the mat\n" + b"".join(h + b"\n" for _, h, *_ in data)  # a sentence at least
    name = "corpus.txt.gz" if draw(st.booleans()) else "corpus.txt"
    files[name] = _hostile_file(draw, gzip.compress(corpus) if name.endswith(".gz") else corpus)
    out = {"out": "model", "same": name, "refs": "ref.txt", "dir/": "dir/"}[target]
    return files, ["bleu2vec", "train", "{%s}" % name, "-o", "{%s}" % out, "-q", "--vector-size", "4",
                   "--workers", "1", *_option(draw, "--epochs", "1"),
                   "--orders", draw(st.sampled_from(["1"] * 4 + ["1,2"] * 2 + ["0", "1,99", "x"])),
                   "--min-counts", draw(st.sampled_from(["1,1"] * 6 + ["nan,1", "-1,1", "1e400,1", "1"]))], out


def _finite_json(text: str) -> None:
    """Every number of tune's JSON finite (json writes NaN and Infinity, and reads them back)."""
    def refuse(name):
        raise AssertionError(f"tune printed {name}")
    json.loads(text, parse_constant=refuse)


@settings(max_examples=MORE_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(job=more_jobs())
def test_hostile_inputs_to_more_commands(tmp_path_factory, capsys, job):
    argv, d, rc, out = _drive(tmp_path_factory, capsys, job)
    if rc != 0:
        return
    if argv[0] == "tune":
        _finite_json(out)
    elif argv[0] == "mbr":
        _finite_or_null(d / job[2], ("mbr_utility",))
    elif argv[0] in ("metaeval", "paired"):  # tables of numbers: an undefined statistic is a dash
        assert not re.search(r"\b(nan|inf)\b", out, re.IGNORECASE), out
    elif argv[0] == "parmesan":  # every probability written finite and non-negative
        for line in (d / job[2]).read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#") and line.split("\t")[4]:
                assert 0 <= float(line.split("\t")[4]) < math.inf, line
    else:
        from kbest_bleu.metrics.bleu2vec.models import _read_word2vec
        models = sorted((d / job[2]).iterdir())
        assert models and all(np.isfinite(_read_word2vec(m)[1]).all() for m in models)
