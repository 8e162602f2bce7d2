"""Exit codes across commands (README, "Failure behaviour"): 0 done, 2 bad input (the message names
the option or argument that named the file), 1 the machine (a full device), 128 + n on signal n;
and the summary's signature names nrefs."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbest_bleu.cli import SAMPLE, main
from child import default_signals

HYPS = ["the cat sat on the mat", "hello world", "a b c d"]
REFS = ["the cat is on the mat", "hello there world", "a b c d e"]
NBEST = "".join(f"{i} ||| {h} ||| d= 1 ||| -1\n" for i, h in enumerate(HYPS))


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("hyp.txt").write_text("\n".join(HYPS) + "\n")
    Path("sys2.txt").write_text("\n".join(reversed(HYPS)) + "\n")
    Path("ref.txt").write_text("\n".join(REFS) + "\n")
    Path("k.nbest").write_text(NBEST)
    return tmp_path


# (argv, exit status, words the error message must hold); paths relative to the fixture's folder
CASES = [
    (["score", str(SAMPLE), "-t", "none", "-q"], 0, []),
    (["score", "hyp.txt", "-r", "ref.txt", "-q"], 0, []),
    (["score", "missing.txt", "-r", "ref.txt", "-q"], 2, ["score IN missing.txt", "not found"]),
    (["score", "hyp.txt", "-r", "missing.txt", "-q"], 2, ["--refs missing.txt", "not found"]),
    (["score", "hyp.txt", "-r", "ref.txt", "-q", "-o", "/dev/full"], 1, ["No space left"]),
    (["corpus", "ref.txt", "-i", "hyp.txt"], 0, []),
    (["corpus", "ref.txt", "-i", "hyp.txt", "sys2.txt"], 0, []),
    (["corpus", "missing.txt", "-i", "hyp.txt"], 2, ["corpus REF missing.txt", "not found"]),
    (["corpus", "ref.txt", "-i", "missing.txt"], 2, ["-i missing.txt", "not found"]),
    (["corpus", "ref.txt", "-i", "missing.txt.gz"], 2, ["-i missing.txt.gz", "not found"]),
    (["paired", "hyp.txt", "sys2.txt", "-r", "ref.txt", "--n-samples", "20"], 0, []),
    (["paired", "hyp.txt", "missing.txt", "-r", "ref.txt"], 2, ["paired SYSTEM missing.txt", "not found"]),
    (["paired", "hyp.txt", "sys2.txt", "-r", "missing.txt"], 2, ["--refs missing.txt", "not found"]),
    (["convert", "k.nbest", "k.parquet", "-r", "ref.txt"], 0, []),
    (["convert", "missing.nbest", "k.parquet"], 2, ["convert IN missing.nbest", "not found"]),
    (["convert", "k.nbest", "k.parquet", "-r", "missing.txt"], 2, ["--refs missing.txt", "not found"]),
    (["convert", "k.nbest", "/dev/full", "-r", "ref.txt"], 1, ["No space left"]),
    (["export-moses", str(SAMPLE), "--scores", "/dev/full", "-t", "none"], 1, ["No space left"]),
    (["export-moses", "missing.parquet", "--scores", "s.txt"], 2, ["missing.parquet"]),
    (["tune", "missing.nbest", "-r", "ref.txt"], 2, ["tune IN missing.nbest", "not found"]),
]


@pytest.mark.parametrize("argv, status, words", CASES, ids=[" ".join(c[0][:3]) + f"->{c[1]}" for c in CASES])
def test_exit_status_and_message(files, capsys, argv, status, words):
    assert main(argv) == status
    err = capsys.readouterr().err
    for w in words:
        assert w in err, (w, err)
    if status:
        assert f"kbest-bleu {argv[0]}: error: " in err and "Traceback" not in err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # a failed write to a device leaves the device


@pytest.mark.parametrize("command", ["score", "corpus", "paired", "convert", "export-moses", "tune"])
def test_unknown_option_is_a_usage_error_exit_2(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "x", "--no-such-option"])
    err = capsys.readouterr().err
    # one paragraph: the error and where the options are, not argparse's ~30-line usage block
    lines = err.splitlines()
    assert exc.value.code == 2 and len(lines) == 2 and lines[0].startswith("kbest-bleu") and ": error: " in lines[0]
    assert lines[1].endswith("--help lists the options")


def test_a_bad_option_value_names_the_command_in_one_paragraph(capsys):
    for argv, said in ((["score", "-t", "bogus"], "kbest-bleu score: error: argument -t/-tok/--tokenize: invalid choice"),
                       (["score", "--threads", "abc"], "kbest-bleu score: error: argument --threads: expected a number of "
                                                       "threads from 1 to 4096, found 'abc'")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith(said) and err.count("\n") == 2, err
        assert err.endswith("kbest-bleu score --help lists the options\n")


def test_score_summary_signature_names_nrefs(files, capsys):
    Path("ref2.txt").write_text("\n".join(r.upper() for r in REFS) + "\n")
    for refs, nrefs in ((["ref.txt"], "1"), (["ref.txt", "ref2.txt"], "2")):
        assert main(["score", "hyp.txt", "-r", *refs, "-q", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["signature"].startswith(f"kbest_bleu|nrefs:{nrefs}|")
        assert out["one_best"]["nrefs"] == out["oracle"]["nrefs"] == nrefs
        assert "eff:no" in out["one_best"]["signature"]  # the corpus scores carry the corpus signature


def test_summary_signature_nrefs_var_when_segments_differ(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"segment_id": [0, 1], "hypothesis": ["a b", "c d"],
                             "references": [["a b"], ["c d", "c e"]]}), tmp_path / "k.parquet")
    assert main(["score", str(tmp_path / "k.parquet"), "-q", "--json"]) == 0
    assert "|nrefs:var|" in json.loads(capsys.readouterr().out)["signature"]


def _blocked_on_stdin(pid: int) -> bool:
    try:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc to see the process wait")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_reading_stdin_exits_128_plus_n(files, sig):
    proc = subprocess.Popen([sys.executable, "-m", "kbest_bleu", "corpus", "ref.txt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=files, preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not _blocked_on_stdin(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert b"Traceback" not in err


def _shape(parser) -> list:
    """Every option, default and subcommand of a parser, recursively, as comparable values."""
    out = []
    for a in parser._actions:
        out.append((type(a).__name__, tuple(a.option_strings), a.dest, repr(a.default), repr(a.choices)
                    if not isinstance(a.choices, dict) else sorted(a.choices), a.help))
        if isinstance(a.choices, dict):
            out += [(name, _shape(p)) for name, p in sorted(a.choices.items())]
    out.append(sorted(parser._defaults.items(), key=str))
    return out


def test_a_run_builds_its_command_alone_and_the_same_as_the_full_parser():
    """main() builds only the command it runs (the other parsers cost ~10 ms of a small job): each
    command so built equals its part of the full parser, option for option."""
    from kbest_bleu.cli import build_parser
    full = build_parser()._subparsers._group_actions[0].choices
    assert len(full) >= 10
    for name, parser in full.items():
        alone = build_parser(name)._subparsers._group_actions[0].choices
        assert list(alone) == [name]
        assert _shape(alone[name]) == _shape(parser), name
    assert build_parser("meteor")._subparsers._group_actions[0].choices.keys() == full.keys()  # no commands of its own


def test_main_builds_the_command_it_runs_and_errors_as_the_full_parser(monkeypatch, capsys, tmp_path):
    """main() adds the parser of its command alone; an unknown option still gets the full
    parser's message."""
    from kbest_bleu import cli
    built = []
    for name, add in list(cli._COMMANDS.items()):
        monkeypatch.setitem(cli._COMMANDS, name, lambda sub, _add=add, _name=name: built.append(_name) or _add(sub))
    assert main(["score", str(tmp_path / "missing.parquet"), "-q"]) == 2
    assert built == ["score"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["score", "x", "--no-such-option"])
    err = capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["score", "x", "--no-such-option"])
    assert exc.value.code == 2 and err == capsys.readouterr().err and "unrecognized arguments: --no-such-option" in err


def test_other_libraries_info_logs_do_not_pass_for_ours(tmp_path):
    """The package's INFO messages show; another library's INFO (gensim's lifecycle events) does
    not, under the 'kbest-bleu:' prefix."""
    code = (f"import logging, sys; from kbest_bleu.cli import main; "
            f"code = main(['score', '-t', 'none', '-o', {str(tmp_path / 'o.parquet')!r}]); "
            "logging.getLogger('gensim.models').info('KeyedVectors lifecycle event'); "
            "logging.getLogger('gensim.models').warning('a real warning'); sys.exit(code)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "kbest-bleu: wrote" in out.stderr and "kbest-bleu: a real warning" in out.stderr
    assert "lifecycle" not in out.stderr


def test_a_full_work_directory_is_named(files, capsys, monkeypatch, tmp_path):
    """Arrow's write error names no file ("[Errno 28] Error writing bytes to file."): the message
    said neither the work directory nor TMPDIR, which chooses it."""
    import tempfile

    import kbest_bleu.files.readers as readers

    def full(*args, **kwargs):
        raise OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device")
    monkeypatch.setattr(readers, "kbest_to_parquet", full)
    assert main(["score", "hyp.txt", "-r", "ref.txt", "-q", "-o", str(tmp_path / "o.parquet")]) == 1
    err = capsys.readouterr().err
    assert f"work files in {tempfile.gettempdir()} (TMPDIR" in err and err.count("\n") == 1


@pytest.mark.parametrize("bad", [float("nan"), None, float("inf"), float("-inf")])
def test_score_refuses_a_model_score_that_is_not_a_number(capsys, tmp_path, bad):
    """The summary's 1-best is each segment's highest model score: a NaN, null or infinite score
    would choose it by accident (NaN rows were passed over: 1-best BLEU 0 instead of 100, exit 0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = {"segment_id": [0, 0, 1, 1], "hypothesis": ["a b c d", "x y", "e f g h", "z w"],
             "references": [["a b c d"]] * 2 + [["e f g h"]] * 2}
    pq.write_table(pa.table({**table, "model_score": [1.0, 0.0, 1.0, 0.0]}), tmp_path / "ok.parquet")
    assert main(["score", str(tmp_path / "ok.parquet"), "--score-col", "model_score", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["one_best"]["score"] == 100.0
    pq.write_table(pa.table({**table, "model_score": pa.array([1.0, 0.0, bad, 1.0], pa.float64())}),
                   tmp_path / "bad.parquet")
    assert main(["score", str(tmp_path / "bad.parquet"), "--score-col", "model_score", "-q", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "column 'model_score', row 2: the model score is" in err and "--score-col" in err


@pytest.mark.parametrize("argv, words", [
    (["convert", "k.parquet", "c.nbest.gz"], ["output 'c.nbest.gz': a compressed file's name", "uncompressed (nbest)"]),
    (["convert", "k.nbest", "c2.nbest"], ["output 'c2.nbest': the name says nbest, but the output is parquet", "--to"]),
    (["convert", "k.nbest", "c.csv", "--to", "fairseq"], ["the name says csv, but the output is fairseq"]),
    (["score", "hyp.txt", "-r", "ref.txt", "-q", "-o", "s.csv"], ["-o 's.csv': the name says csv, but the output is "
                                                                 "parquet"]),
    (["mbr", str(SAMPLE), "-t", "none", "-q", "--matrix", "m.tsv"], ["--matrix 'm.tsv': the name says tsv"]),
])
def test_an_output_named_for_another_format_is_refused(files, capsys, argv, words):
    """An output is written in one format: a name that says another (or compression) is refused
    before anything runs, not written under a name that no reader reads back."""
    assert main(["convert", "k.nbest", "k.parquet", "-r", "ref.txt"]) == 0
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    assert not any(Path(p).exists() for p in ("c.nbest.gz", "c2.nbest", "c.csv", "s.csv", "m.tsv"))
    assert main(["convert", "k.parquet", "c.txt"]) == 0 and main(["convert", "k.nbest", "c3.pq"]) == 0  # names it takes


def test_convert_dispatches_on_the_format_read_not_the_suffix(files, capsys):
    """A .pq table is parquet (it was read as n-best text); parquet to parquet converts nothing (it
    wrote n-best text into the .parquet name)."""
    assert main(["convert", "k.nbest", "k.parquet", "-r", "ref.txt"]) == 0
    Path("k.pq").write_bytes(Path("k.parquet").read_bytes())
    assert main(["convert", "k.parquet", "a.nbest"]) == 0 and main(["convert", "k.pq", "b.nbest"]) == 0
    assert Path("a.nbest").read_text() == Path("b.nbest").read_text() != ""
    capsys.readouterr()
    assert main(["convert", "k.parquet", "c.parquet", "--to", "parquet"]) == 2
    assert "'k.parquet' is parquet already" in capsys.readouterr().err and not Path("c.parquet").exists()



def test_column_and_option_mistakes_are_one_line_not_a_traceback(tmp_path, capsys):
    """Columns of the wrong type, -r beside a table's own references, a metric named twice, an
    empty table, an output named for another format: exit 2 and one line each (they were
    ValueError/KeyError tracebacks, a silently ignored -r, a mean over no list, a misnamed file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    small = tmp_path / "small.parquet"
    pq.write_table(pq.read_table(SAMPLE).slice(0, 30), small)
    pq.write_table(pq.read_table(SAMPLE).slice(0, 0), tmp_path / "empty.parquet")
    t = pq.read_table(small)
    hyps = t["hypothesis"].to_pylist()
    pq.write_table(t.set_column(t.schema.get_field_index("hypothesis"), "hypothesis",
                                pa.array([hyps[0], None] + hyps[2:], pa.large_string())), tmp_path / "null.parquet")
    (tmp_path / "ref.txt").write_text("x\n")
    judged = tmp_path / "judged.parquet"
    pq.write_table(pa.table({"lp": ["de-en"] * 4, "segment_id": [0, 0, 1, 1], "system": ["a", "b"] * 2,
                             "bleu": [0.1, 0.2, 0.3, 0.4], "human": [1.0, 2.0, 3.0, 5.0]}), judged)
    cases = [
        (["tune", small, "--features-col", "references", "-t", "none"], "features column 'references' has Arrow type"),
        (["tune", small, "--hyp-col", "segment_id", "-t", "none"], "hypothesis column 'segment_id' has Arrow type"),
        (["tune", small, "-r", tmp_path / "ref.txt", "-t", "none"], "-r/--refs: "),
        (["tune", tmp_path / "null.parquet", "-t", "none"], "hypothesis column 'hypothesis' row 1 is null"),
        (["mbr", small, "--score-col", "hypothesis", "-t", "none", "-q"], "--score-col hypothesis: has Arrow type"),
        (["mbr", small, "--hyp-col", "references", "-t", "none", "-q"], "hypothesis column 'references' has Arrow"),
        (["mbr", tmp_path / "empty.parquet", "-t", "none", "-q", "-o", tmp_path / "o.parquet"], "no rows"),
        (["metaeval", "judged", judged, "--metric", "bleu,bleu", "--human", "human"], "'bleu' is given twice"),
        (["metaeval", "judged", judged, "--metric", "human", "--human", "human"], "'human' is given twice"),
        (["export-moses", small, "--scores", tmp_path / "sc.txt.gz", "-t", "none"], "--scores"),
        (["export-moses", small, "--scores", tmp_path / "sc.parquet", "-t", "none"], "the name says parquet"),
        # Moses' BleuScorer reads 9 statistics (kBleuNgramOrder = 4): other orders wrote files it misreads
        (["export-moses", small, "--scores", tmp_path / "sc.txt", "--max-order", "16"], "max order 16: Moses'"),
        # options another choice would ignore: refused, not dropped
        (["mbr", small, "-t", "none", "-q", "--chrf-beta", "3"], "--chrf-beta: a chrF option, but --utility is bleu"),
        (["tune", small, "-t", "none", "--method", "pro", "--c", "5"], "--c: not an option of --method pro"),
        (["tune", small, "-t", "none", "--method", "mira", "--lam", "3"], "--lam: not an option of --method mira"),
        (["metaeval", "judged", judged, "--metric", "bleu", "--human", "human", "--n-perm", "9"],
         "--n-perm: an option of --wmt-style"),
    ]
    for argv, words in cases:
        assert main([str(x) for x in argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err, (argv, err)
    assert not any((tmp_path / n).exists() for n in ("o.parquet", "sc.txt.gz", "sc.parquet", "sc.txt"))
