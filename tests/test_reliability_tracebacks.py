"""Issue 34, class 6: inputs that used to end in a Python traceback, each now one line (exit 2)
that names the option or file, with every input left as it was and nothing written.

Side files of every kind (paraphrase tables, synonyms, function words, training corpora, models)
go through one guard, :func:`kbest_bleu.files.inputs.reading`: the same hostile bytes (not
UTF-8, a truncated .gz, a header that claims more than memory holds) are tried on each.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.cli import main

NOT_UTF8 = "caf\xe9 au lait\n".encode("latin-1")


def _run(capsys, *argv) -> tuple[int, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def _one_line(rc: int, err: str, *words) -> None:
    assert rc == 2 and "Traceback" not in err and err.count("\n") == 1, err
    for w in words:
        assert str(w) in err, (w, err)


def _bad_files(tmp_path: Path, name: str) -> dict:
    """The hostile versions of one side file: not UTF-8, a truncated gzip, an empty file."""
    good = "cat\tfeline\tNOUN\tmeteor\t0.5\n".encode()
    plain, gz, empty = tmp_path / f"{name}.latin1", tmp_path / f"{name}.gz", tmp_path / f"{name}.empty"
    plain.write_bytes(NOT_UTF8 + good)
    gz.write_bytes(gzip.compress(good * 200)[:40])
    empty.write_bytes(b"")
    return {"not UTF-8": plain, "truncated gzip": gz, "empty": empty}


@pytest.fixture
def kbest(tmp_path) -> Path:
    path = tmp_path / "k.parquet"
    pq.write_table(pa.table({"segment_id": [0, 0], "hypothesis": ["the cat sat", "a cat sat"],
                             "references": [["the cat sat down"]] * 2}), path)
    return path


@pytest.mark.parametrize("problem", ["not UTF-8", "truncated gzip"])
@pytest.mark.parametrize("option, metric", [("--paraphrases", "parmesan"), ("--meteor-function-words", "meteor")])
def test_metric_side_files(kbest, tmp_path, capsys, option, metric, problem):
    bad = _bad_files(tmp_path, "side")[problem]
    if option == "--meteor-function-words" and problem == "truncated gzip":
        bad = bad.rename(tmp_path / "words.txt")  # function words are plain text: a gzip's bytes are not UTF-8
    before = bad.read_bytes()
    rc, err = _run(capsys, "score", kbest, "--metric", f"bleu,{metric}", option, bad, "--analyzer", "lower",
                   "-o", tmp_path / "o.parquet")
    _one_line(rc, err, option)
    assert bad.read_bytes() == before and not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("problem", ["not UTF-8", "truncated gzip", "empty"])
def test_build_table_inputs(tmp_path, capsys, problem):
    bad = _bad_files(tmp_path, "pairs")[problem]
    rc, err = _run(capsys, "parmesan", "build-table", bad, "-o", tmp_path / "t.tsv", "--analyzer", "lower")
    _one_line(rc, err, bad.name)
    assert not (tmp_path / "t.tsv").exists()


def test_build_table_synonyms_not_utf8(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("0.5\tcat\tfeline\n")
    synonyms = tmp_path / "english.synsets"
    synonyms.write_bytes(NOT_UTF8 + b"1 2\n")
    rc, err = _run(capsys, "parmesan", "build-table", pairs, "-o", tmp_path / "t.tsv", "--synonyms", synonyms,
                   "--analyzer", "lower")
    _one_line(rc, err, "--synonyms", "UTF-8")


def test_build_table_reads_a_line_longer_than_arrows_block(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("0.5\tcat\tfeline\n0.25\t" + "x" * 3_000_000 + "\ty\n")  # 3 MB: over Arrow's 1 MiB block
    rc, err = _run(capsys, "parmesan", "build-table", pairs, "-o", tmp_path / "t.tsv", "--analyzer", "lower")
    assert rc == 0, err
    assert "cat\tfeline" in (tmp_path / "t.tsv").read_text()


@pytest.mark.parametrize("problem", ["not UTF-8", "truncated gzip"])
def test_bleu2vec_training_corpus(tmp_path, capsys, problem):
    pytest.importorskip("gensim")
    bad = _bad_files(tmp_path, "corpus")[problem]
    rc, err = _run(capsys, "bleu2vec", "train", bad, "-o", tmp_path / "models", "-q")
    _one_line(rc, err, "corpus")
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").iterdir())


def test_bleu2vec_model_header_claiming_more_than_memory(kbest, tmp_path, capsys):
    pytest.importorskip("gensim")
    models = tmp_path / "models"
    models.mkdir()
    (models / "m.1gram.w2v.bin").write_bytes(b"1000000000000 300\nthe " + b"\0" * 1200)
    rc, err = _run(capsys, "score", kbest, "--metric", "bleu,bleu2vec", "--embeddings", models, "-o", tmp_path / "o.pq")
    _one_line(rc, err, "m.1gram.w2v.bin")


def test_sort_of_an_unreadable_parquet(tmp_path, capsys, kbest):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(kbest.read_bytes()[:-40])
    rc, err = _run(capsys, "score", broken, "--sort", "-o", tmp_path / "o.parquet")
    _one_line(rc, err, "broken.parquet")


def test_float16_segment_ids(tmp_path, capsys):
    src = tmp_path / "f16.parquet"
    pq.write_table(pa.table({"segment_id": pa.array(np.array([0, 0, 1], np.float16)), "hypothesis": ["a", "b", "c"],
                             "references": [["a"], ["a"], ["c"]]}), src)
    rc, err = _run(capsys, "score", src, "-o", tmp_path / "o.parquet", "-q", "-t", "none")
    assert rc == 0, err  # half floats compare as the float32 they hold exactly: segments {0: a, b}, {1: c}
    bleu = pq.read_table(tmp_path / "o.parquet")["bleu"].to_pylist()
    assert bleu[0] == bleu[2] == 1.0 and bleu[1] < 1.0


def test_spm_model_that_is_text(kbest, tmp_path, capsys):
    pytest.importorskip("sentencepiece")
    model = tmp_path / "not.model"
    model.write_text("hello\n")
    rc, err = _run(capsys, "score", kbest, "-t", "spm", "--spm-model", model, "-o", tmp_path / "o.parquet")
    _one_line(rc, err, "SentencePiece", "not.model")


def test_spacy_missing_is_one_line(kbest, tmp_path, capsys):
    try:
        import spacy  # noqa: F401
        pytest.skip("spaCy is installed here")
    except ImportError:
        pass
    table = tmp_path / "t.tsv"
    table.write_text("cat\tfeline\tNOUN\tmeteor\t0.5\n")
    rc, err = _run(capsys, "score", kbest, "--metric", "bleu,parmesan", "--paraphrases", table,
                   "--analyzer", "spacy:en_core_web_sm", "-o", tmp_path / "o.parquet")
    _one_line(rc, err, "spaCy")


@pytest.mark.exhaustive
def test_spark_bogus_master(kbest, tmp_path):
    """In a process of its own, as the command runs: in the test process a Spark session of an
    earlier test would be reused whatever the master (pyspark's getOrCreate)."""
    pytest.importorskip("pyspark")
    done = subprocess.run([sys.executable, "-m", "kbest_bleu", "score", str(kbest), "--engine", "spark", "--master",
                           "bogus://x", "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("kbest-bleu score: error: --master 'bogus://x'")


def test_closed_stdout(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat\n")
    done = subprocess.run([sys.executable, "-m", "kbest_bleu", "corpus", str(ref), "-i", str(ref)],
                          preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "standard output is closed" in done.stderr


# ---- class 8: messages that say where ----------------------------------------------------------

@pytest.mark.parametrize("compressed", [False, True])
def test_invalid_utf8_in_a_csv_names_the_line_and_byte(tmp_path, capsys, compressed):
    data = "segment_id,hypothesis,references\n0,ok,ok\n0,fine,ok\n".encode() + b"1,ca\xfft,cat\n"
    src = tmp_path / ("k.csv.gz" if compressed else "k.csv")
    src.write_bytes(gzip.compress(data) if compressed else data)
    offset = data.index(b"\xff")  # 55: counted independently of the reader
    rc, err = _run(capsys, "score", src, "-o", tmp_path / "o.parquet")
    _one_line(rc, err, "line 4", f"offset {offset}", "0xff", "UTF-8")


@pytest.mark.parametrize("name", ["pipe.csv", "pipe.parquet"])
def test_a_named_pipe_input_says_so(kbest, tmp_path, capsys, name):
    import threading
    fifo = tmp_path / name
    os.mkfifo(fifo)
    data = kbest.read_bytes() if name.endswith(".parquet") else b"segment_id,hypothesis,references\n0,a,a\n"

    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    rc, err = _run(capsys, "score", fifo, "-o", tmp_path / "o.parquet")
    _one_line(rc, err, "named pipe", name)
    if writer.is_alive():  # the reader failed before opening the pipe: let the writer go
        with open(fifo, "rb") as f:
            f.read()
    writer.join(5)


@pytest.mark.parametrize("suffix, text", [
    ("jsonl", b'{"segment_id": 0, "hypothesis": "a b", "references": ["a b"], "x\xff": 1}\n'),
    ("csv", b"segment_id,hypothesis,references,x\xff\n0,a b,a b,1\n"),
    ("tsv", b"segment_id\thypothesis\treferences\tx\xff\n0\ta b\ta b\t1\n")])
@pytest.mark.parametrize("command", ["score", "convert"])
def test_a_column_name_that_is_not_utf8(tmp_path, capsys, suffix, text, command):
    """Arrow takes any bytes as a header field or JSON key: scoring ended in a UnicodeDecodeError
    traceback, and convert wrote a parquet file whose column name was not UTF-8."""
    src = tmp_path / f"k.{suffix}"
    src.write_bytes(text)
    out = tmp_path / "out.parquet"
    rc, err = _run(capsys, command, src, *(["-o"] if command == "score" else []), out)
    _one_line(rc, err, src.name, "line 1 is not valid UTF-8", "0xff")
    assert not out.exists()


def test_a_parquet_column_name_that_is_not_utf8(tmp_path, capsys):
    from pyarrow import json as pj
    src = tmp_path / "k.jsonl"
    src.write_bytes(b'{"segment_id": 0, "hypothesis": "a b", "references": ["a b"], "x\xff": 1}\n')
    pq.write_table(pj.read_json(src), tmp_path / "k.parquet")  # a tool that lets the bytes through
    for argv in (["score", tmp_path / "k.parquet", "-o", tmp_path / "o.parquet"], ["mbr", tmp_path / "k.parquet", "-o",
                                                                                   tmp_path / "o.parquet"]):
        rc, err = _run(capsys, *argv)
        _one_line(rc, err, "k.parquet", "not valid UTF-8", "byte ff")
    assert not (tmp_path / "o.parquet").exists()


def test_tune_model_score_and_feature_columns(tmp_path, capsys):
    """tune: a text --score-col gave `could not convert string to float`, a null or malformed
    feature string an AttributeError or ValueError traceback."""
    def table(features):
        path = tmp_path / "t.parquet"
        pq.write_table(pa.table({"segment_id": [0, 0, 1], "hypothesis": ["a b", "a c", "d e"],
                                 "references": [["a b"]] * 2 + [["d e"]], "features": features,
                                 "model_score": [1.0, 0.5, 2.0]}), path)
        return path
    good = table(["lm= -1 tm= 2", "lm= -2 tm= 1", "lm= -3 tm= 0"])
    rc, err = _run(capsys, "tune", good, "--score-col", "hypothesis")
    _one_line(rc, err, "'hypothesis'", "expected numbers")
    rc, err = _run(capsys, "tune", table(["lm= -1 tm= 2", None, "lm= -3 tm= 0"]))
    _one_line(rc, err, "'features' row 1", "null")
    rc, err = _run(capsys, "tune", table(["lm= -1 tm= 2", "lm= -2 tm= 1", "lm= x"]))
    _one_line(rc, err, "'features' row 2", "'x'")
    rc, err = _run(capsys, "export-moses", table(["lm= -1", None, "lm= 0"]), "--scores", tmp_path / "s.dat",
                   "--features", tmp_path / "f.dat")
    _one_line(rc, err, "--features", "row 1", "null")
    assert not (tmp_path / "s.dat").exists() and not (tmp_path / "f.dat").exists()


def test_messages_say_what_was_wrong(tmp_path, capsys, kbest):
    """Messages found unclear by a review: each now names the problem (and the option)."""
    import pyarrow as pa
    dup = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([0]), pa.array(["a"]), pa.array([["a"]]), pa.array(["b"])],
                                        names=["segment_id", "hypothesis", "references", "hypothesis"]), dup)
    judged_table = tmp_path / "judged.parquet"
    pq.write_table(pa.table({"lp": ["xx"] * 6, "segment_id": [0, 0, 0, 1, 1, 1], "system": ["A", "B", "C"] * 2,
                             "m": [0.5, 0.25, 0.3, 0.1, 0.4, 0.2], "h": [3.0, 1.0, 2.0, 1.0, 3.0, 2.0]}), judged_table)
    link = tmp_path / "scatter.png"
    link.symlink_to(judged_table)
    cases = [(["score", dup, "-o", tmp_path / "o.parquet"], "column 'hypothesis' appears 2 times"),
             (["score", kbest, "--ref-table", tmp_path / "none.parquet", "-o", tmp_path / "o.parquet"],
              "--ref-table", "no such file"),
             (["metaeval", "judged", judged_table, "--metric", "m", "--pairs", tmp_path / "none.parquet"],
              "--pairs", "better_system, worse_system"),
             (["metaeval", "judged", judged_table, "--metric", "m", "--human", "h", "--compare", "m,z"],
              "--compare: expected two different --metric columns"),
             (["metaeval", "judged", judged_table, "--metric", "m", "--human", "h", "--plot", link],
              "--plot", "the output path is the input file")]
    for argv, *words in cases:
        rc, err = _run(capsys, *argv)
        _one_line(rc, err, *words)
        assert capsys.readouterr().out == ""  # refused before any table is printed


def test_an_nbest_file_opening_with_a_byte_order_mark(tmp_path, capsys):
    """n-best lines start with a number: a BOM (an editor's) said `invalid literal for int()`."""
    text = "0 ||| the cat sat ||| lm= -1 ||| -1\n0 ||| a cat sat ||| lm= -2 ||| -2\n"
    (tmp_path / "plain.nbest").write_text(text)
    (tmp_path / "bom.nbest").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "ref.txt").write_text("the cat sat down\n")
    outs = []
    for name in ("plain", "bom"):
        out = tmp_path / f"{name}.parquet"
        rc, err = _run(capsys, "score", tmp_path / f"{name}.nbest", "-r", tmp_path / "ref.txt", "-o", out, "-q")
        assert rc == 0, err
        outs.append(pq.read_table(out))
    assert outs[0].equals(outs[1])


@pytest.mark.parametrize("option", [["--chrf-beta", "nan"], ["--chrf-char-order", "-3"], ["--bleu2vec-weights", "nan"],
                                    ["--chrf-lowercase"]])
def test_an_option_of_a_metric_not_selected_is_refused(kbest, tmp_path, capsys, option):
    """--chrf-beta nan without chrf in --metric was accepted and ignored (exit 0)."""
    rc, err = _run(capsys, "score", kbest, "-o", tmp_path / "o.parquet", *option)
    _one_line(rc, err, option[0], "which --metric 'bleu' does not select")
    assert not (tmp_path / "o.parquet").exists()


def test_options_that_would_be_ignored_are_refused(kbest, tmp_path, capsys):
    """Each of these ran with exit 0 and the option silently dropped (or, for -r on a table with
    references, the table's references silently replaced: BLEU 14.50 -> 0.0)."""
    refs = tmp_path / "refs.txt"
    refs.write_text("something else entirely\n")
    out = tmp_path / "o.parquet"
    cases = [(["score", kbest, "-o", out, "--seg-col", ""], "--seg-col: expected comma-separated column names"),
             (["score", kbest, "-o", out, "--master", "local[2]"], "--master: an option of --engine spark"),
             (["score", kbest, "-o", out, "--spark-log", tmp_path / "s.log"], "--spark-log: an option of --engine"),
             (["score", kbest, "-o", out, "-r", refs], "--refs", "has references already"),
             (["mbr", kbest, "-o", out, "--temperature", "0.5"], "--temperature: softens the model scores")]
    for argv, *words in cases:
        rc, err = _run(capsys, *argv)
        _one_line(rc, err, *words)
        assert not out.exists()


@pytest.mark.parametrize("suffix, sep", [("csv", ","), ("tsv", "\t")])
def test_a_row_with_a_field_too_many_names_its_line(tmp_path, capsys, suffix, sep):
    """Arrow's message quoted the row, cut short, without saying where it is."""
    rows = [["segment_id", "hypothesis", "references"]] + [[str(i // 2), f"h {i}", f"r {i // 2}"] for i in range(40)]
    rows[23].append("one more")  # line 24 of the file
    src = tmp_path / f"k.{suffix}"
    src.write_text("".join(sep.join(r) + "\n" for r in rows))
    rc, err = _run(capsys, "score", src, "-o", tmp_path / "o.parquet", "-t", "none")
    _one_line(rc, err, f"k.{suffix}: line 24 has 4 fields where the header has 3")


def test_review_follow_ups(kbest, tmp_path, capsys):
    """Parmesan does not read --meteor-norm (refused without meteor); with --pseudo-refs the
    weights come from --pseudo-score-col only, so --temperature with --score-col alone is ignored."""
    rc, err = _run(capsys, "score", kbest, "-o", tmp_path / "o.parquet", "--metric", "bleu,parmesan",
                   "--paraphrases", tmp_path / "t.tsv", "--meteor-norm")
    _one_line(rc, err, "--meteor-norm: an option of meteor")
    scored = tmp_path / "s.parquet"
    pq.write_table(pa.table({"segment_id": [0, 0], "hypothesis": ["a b", "a c"], "references": [["a b"]] * 2,
                             "model_score": [-1.0, -2.0]}), scored)
    rc, err = _run(capsys, "mbr", scored, "-o", tmp_path / "m.parquet", "--pseudo-refs", scored, "--score-col",
                   "model_score", "--temperature", "0.5")
    _one_line(rc, err, "--temperature", "--pseudo-score-col with --pseudo-refs")


def test_fairseq_output_with_target_lines_keeps_taking_reference_files(tmp_path, capsys):
    """fairseq-generate writes T- lines (tokenized targets); scoring its D- lines against detokenized
    references given with -r is the usual practice: -r wins over a toolkit's own references, a
    table's references column (parquet, CSV, JSON Lines) with -r is refused."""
    gen = tmp_path / "gen.out"
    gen.write_text("S-0\tdie Katze\nT-0\tthe cat sat\nH-0\t-0.5\tthe cat sat\nD-0\t-0.5\tthe cat sat\n"
                   "S-1\tder Hund\nT-1\tthe dog ran\nH-1\t-0.7\tthe dog ran\nD-1\t-0.7\tthe dog ran\n")
    refs = tmp_path / "detok.txt"
    refs.write_text("a cat sat down\na dog ran off\n")
    out = tmp_path / "o.parquet"
    rc, err = _run(capsys, "score", gen, "--format", "fairseq", "-r", refs, "-o", out, "-q", "-t", "none")
    assert rc == 0, err
    import kbest_bleu as kb
    want = kb.score_kbest(["the cat sat", "the dog ran"], [["a cat sat down"], ["a dog ran off"]], tokenize="none")
    assert pq.read_table(out)["bleu"].to_pylist() == want.tolist()
