"""The toolkits' formats read what was written and write what they read (docs/formats.md): lists
numbered by their line keep their references, a hypothesis holding ' ||| ' or a file in another
format is refused rather than read differently, convert writes BLEU where the table has it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kbest_bleu.cli import main

# fairseq-generate prints its samples as they finish: ids out of order
FAIRSEQ = ("S-2\tsrc two\nH-2\t-0.5\tref two\nD-2\t-0.5\tref two\nS-0\tsrc zero\nH-0\t-0.7\tref zero\n"
           "D-0\t-0.7\tref zero\nS-1\tsrc one\nH-1\t-0.2\tref one\nD-1\t-0.2\tref one\n")
REFS = "ref zero\nref one\nref two\n"


@pytest.fixture()
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("fs.out").write_text(FAIRSEQ)
    Path("ref3.txt").write_text(REFS)
    return tmp_path


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("fmt", ["opennmt-py", "opennmt-tf", "nested", "sockeye"])
def test_lists_numbered_by_their_line_keep_their_references(here, capsys, fmt):
    """These formats have no id on a line (list i is segment i, line i of -r): a table whose ids
    are not 0, 1, 2, ... in order is refused (it read back paired with other references: BLEU 0.5
    instead of 1.0), and written once sorted."""
    assert main(["score", "fs.out", "-r", "ref3.txt", "-o", "sc.parquet", "-q"]) == 0
    assert pq.read_table("sc.parquet")["bleu"].to_pylist() == [1.0, 1.0, 1.0]
    assert main(["convert", "sc.parquet", "x.txt", "--to", fmt]) == 2
    assert "list 0 has segment id 2" in _err(capsys) and not Path("x.txt").exists()
    assert main(["score", "fs.out", "-r", "ref3.txt", "-o", "sorted.parquet", "-q", "--sort"]) == 0
    assert main(["convert", "sorted.parquet", "x.txt", "--to", fmt]) == 0
    again = ["--nbest-size", "1"] if fmt.startswith("opennmt") else []
    assert main(["score", "x.txt", "--format", fmt, *again, "-r", "ref3.txt", "-o", "back.parquet", "-q"]) == 0
    assert pq.read_table("back.parquet")["bleu"].to_pylist() == [1.0, 1.0, 1.0]


def test_sockeye_from_another_format_keeps_source_and_references(here):
    """docs/formats.md: a table from elsewhere is written from its source and references too (they
    were dropped), as the input's pass-through keys that the reader takes back."""
    Path("ft.out").write_text("".join(f"S-{i}\tsrc {w}\nT-{i}\tref {w}\nH-{i}\t-0.5\tref {w}\nD-{i}\t-0.5\tref {w}\n"
                                      for i, w in enumerate(["zero", "one", "two"])))
    assert main(["score", "ft.out", "-o", "s.parquet", "-q", "-t", "none"]) == 0
    assert main(["convert", "s.parquet", "s.json", "--to", "sockeye"]) == 0
    lines = [json.loads(x) for x in Path("s.json").read_text().splitlines()]
    assert [(x["text"], x["refs"], x["translation"]) for x in lines] == [
        ("src zero", ["ref zero"], "ref zero"), ("src one", ["ref one"], "ref one"), ("src two", ["ref two"], "ref two")]


def test_convert_to_nbest_writes_bleu_where_the_table_has_it(here):
    Path("mo.nbest").write_text("0 ||| ref zero ||| F0= -1 ||| -1.5\n1 ||| ref one ||| F0= -1 ||| -0.5\n"
                                "2 ||| ref two ||| F0= -1 ||| -0.25\n")
    assert main(["score", "mo.nbest", "-r", "ref3.txt", "-o", "sc.parquet", "-q"]) == 0
    assert main(["convert", "sc.parquet", "o.nbest", "--to", "nbest"]) == 0
    assert [ln.rsplit(" ||| ", 1)[1] for ln in Path("o.nbest").read_text().splitlines()] == ["1.0"] * 3
    assert main(["convert", "sc.parquet", "m.nbest", "--score-field", "model_score"]) == 0  # the model's, as read
    assert Path("m.nbest").read_text() == Path("mo.nbest").read_text()


@pytest.mark.parametrize("text, fmt, words", [
    ("0 ||| a ||| b ||| F0= -1.5 ||| -0.5\n", "marian", "'b' after the translation is neither alignments"),
    ("-1.5 ||| a ||| b\n", "opennmt-tf", "'b' after the hypothesis is neither token scores nor alignments"),
    ("0 ||| text ||| F0= -1 ||| -1.5\n", "opennmt-tf", "neither token scores nor alignments"),  # Moses as OpenNMT-tf
    ("0 ||| a ||| 0-0 ||| F0= -1 ||| -1\n", "fairseq", "no H- (hypothesis) line in its 1 line(s)"),
    ("99999999999999999999 ||| a ||| 0-0 ||| F0= -1 ||| -1\n", "marian", "is not a sentence number"),
    ("1_0 ||| a ||| F0= -1 ||| -1\n", "marian", "'1_0' is not a sentence number"),
    ("H-99999999999999999999\t-1\ta\n", "fairseq", "does not fit a 64-bit integer"),
    ("0 ||| a ||| F0= -1 F1= -2 ||| -1\n0 ||| b ||| F0= -2 F1= ||| -1\n", "marian", "the same scorers on every line"),
])
def test_a_line_another_format_wrote_is_refused_not_read_differently(here, capsys, text, fmt, words):
    Path("in.txt").write_text(text)
    extra = ["--nbest-size", "1"] if fmt.startswith("opennmt") else []
    assert main(["convert", "in.txt", "o.parquet", "--format", fmt, *extra]) == 2
    assert words in _err(capsys) and not Path("o.parquet").exists()
    ok = {"marian": "0 ||| a ||| 0-0 1-1 ||| F0= -1.5 ||| -0.5\n0 ||| c ||| 0.9,0.1 0.2,0.8 ||| F0= -2 ||| -0.7\n",
          "opennmt-tf": "-1.5 ||| a b ||| -0.5 -1.0\n", "fairseq": "H-0\t-1\ta\nD-0\t-1\ta\n"}[fmt]
    Path("ok.txt").write_text(ok)  # the fields those formats do have
    assert main(["convert", "ok.txt", "o.parquet", "--format", fmt, *extra]) == 0


def test_references_on_later_lines_only_are_refused_not_dropped(here, capsys):
    Path("n.jsonl").write_text('{"id": "a", "hyps": ["x y"]}\n{"id": "b", "refs": ["x y"], "hyps": ["x y"]}\n')
    assert main(["convert", "n.jsonl", "o.parquet", "--format", "nested"]) == 2
    assert "line 2: 'refs', but the first line has none" in _err(capsys) and not Path("o.parquet").exists()


@pytest.mark.parametrize("fmt", ["nested", "sockeye"])
def test_score_field_is_refused_where_every_score_is_kept(here, capsys, fmt):
    assert main(["score", "fs.out", "-r", "ref3.txt", "-o", "sc.parquet", "-q", "--sort"]) == 0
    assert main(["convert", "sc.parquet", "x.json", "--to", fmt, "--score-field", "bleu"]) == 2
    assert f"--score-field bleu: {fmt} keeps the model scores" in _err(capsys) and not Path("x.json").exists()
