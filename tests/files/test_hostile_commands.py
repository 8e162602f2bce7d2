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
import io
import math
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kbest_bleu.cli import main
from kbest_bleu.files.nbest import read_nbest
from kbest_bleu.files.output import TEMP_MARK

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


def _finite_or_null(path: Path) -> None:
    table = pq.read_table(path)
    for name in table.column_names:
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
    with _tmpdir(work):
        try:
            rc = main(args)
        except SystemExit as exc:  # argparse
            rc = exc.code
    out, err = capsys.readouterr()
    lines = err.splitlines()
    event(f"{argv[0]} exit {rc}")
    assert rc in (0, 2), (args, err)
    assert "Traceback" not in err, err
    if rc == 2:
        assert len(lines) == 1 or (len(lines) == 2 and lines[1].endswith("--help lists the options")), err
    assert {name: (d / name).read_bytes() for name in inputs} == before, "an input was changed"
    assert not [p for p in d.rglob("*") if TEMP_MARK in p.name] and not list(work.iterdir()), "a temporary was left"
    if out_name in inputs:
        assert rc == 2, "an input was accepted as the output"
    target = d / out_name if out_name else None
    if rc == 0 and target is not None and target.is_file():
        if target.suffix == ".parquet":
            _finite_or_null(target)
        elif target.suffix == ".nbest":
            assert read_nbest(target).num_rows == len(target.read_text().splitlines())
    if rc == 0 and argv[0] == "corpus":
        assert out.strip()
