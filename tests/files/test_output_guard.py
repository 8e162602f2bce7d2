"""Issue 34, classes 1-3: the output guard (kbest_bleu/files/output.py) for every command.

Class 1: no command's output may replace a file it reads, whatever named it (the input in any
format, --sort, --refs, --ref-table, side files of the metrics, a table's own input), by path, by
symbolic link or by hard link; symbolic-link outputs are written through; ``-o new/`` is refused.
Class 2: outputs are atomic, ``-o -`` retries short writes, export-moses writes both files or
neither. Class 3: temporaries are registered and removed on every exit path; stale ones of killed
runs are removed by the next run. Commands run in-process (``main``); each refusal is checked for
exit status 2, one line naming the option, and every input byte-identical afterwards.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.files import inputs, output, temporaries
from kbest_bleu.files.temporaries import TEMP_MARK
from child import default_signals

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "extensions"
ROWS = [(0, "the cat sat on the mat", "the cat sat on a mat"), (0, "a cat sat on the mat", "the cat sat on a mat"),
        (1, 'he said "yes" to it', 'he said "yes" to that'), (1, "he said no", 'he said "yes" to that')]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """$TMPDIR of the commands: a directory of this test's own, to see what they leave there."""
    work = tmp_path / "TMPDIR"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    return work


@pytest.fixture
def files(tmp_path, private_tmp) -> dict:
    """The same 4-row K-best table in every input format, plus reference and hypothesis text."""
    d = tmp_path
    seg, hyp, ref = zip(*ROWS)
    (d / "k.tsv").write_text("segment_id\thypothesis\treferences\n" + "".join(f"{s}\t{h}\t{r}\n" for s, h, r in ROWS))
    (d / "k.csv").write_text("segment_id,hypothesis,references\n" + "".join(
        f'{s},"{h.replace(chr(34), 2 * chr(34))}","{r.replace(chr(34), 2 * chr(34))}"\n' for s, h, r in ROWS))
    (d / "k.jsonl").write_text("".join(json.dumps({"segment_id": s, "hypothesis": h, "references": [r]}) + "\n"
                                       for s, h, r in ROWS))
    (d / "k.nbest").write_text("".join(f"{s} ||| {h} ||| lm= -{i}.5 tm= 1 ||| -{i}\n" for i, (s, h, _) in enumerate(ROWS)))
    with gzip.open(d / "k.tsv.gz", "wt") as f:
        f.write((d / "k.tsv").read_text())
    pq.write_table(pa.table({"segment_id": list(seg), "hypothesis": list(hyp), "references": [[r] for r in ref]}),
                   d / "k.parquet")
    pq.write_table(pa.table({"segment_id": [0, 1], "references": [[ROWS[0][2]], [ROWS[2][2]]]}), d / "refs.parquet")
    (d / "ref.txt").write_text(f"{ROWS[0][2]}\n{ROWS[2][2]}\n")
    (d / "hyp.txt").write_text(f"{ROWS[0][1]}\n{ROWS[2][1]}\n")
    return {p.name: p for p in d.iterdir() if p.is_file()}


def _snapshot(directory: Path) -> dict:
    return {p: p.read_bytes() for p in directory.rglob("*") if p.is_file() and not p.is_symlink()}


def _run(capsys, *argv) -> tuple[int, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    return rc, capsys.readouterr().err


def _refused(rc: int, err: str, *words) -> None:
    assert rc == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for w in words:
        assert str(w) in err, (w, err)


def _clean(directory: Path, private_tmp: Path) -> None:
    assert not [p for p in directory.rglob("*") if TEMP_MARK in p.name]
    assert not list(private_tmp.iterdir())


# ---- class 1: an input destroyed by the output -------------------------------------------------

@pytest.mark.parametrize("name", ["k.tsv", "k.csv", "k.jsonl", "k.nbest", "k.tsv.gz", "k.parquet", "hyp.txt"])
@pytest.mark.parametrize("sort", [False, True])
def test_score_refuses_its_input_in_every_format(files, tmp_path, private_tmp, capsys, name, sort):
    before = _snapshot(tmp_path)
    extra = ["-r", files["ref.txt"]] if name == "hyp.txt" else []
    rc, err = _run(capsys, "score", files[name], "-o", files[name], "-t", "none", *extra, *(["--sort"] if sort else []))
    _refused(rc, err, "-o", name, "the output path is the input file")
    assert _snapshot(tmp_path) == before
    _clean(tmp_path, private_tmp)


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_link_to_the_input_is_the_input(files, tmp_path, private_tmp, capsys, how):
    link = tmp_path / "alias.parquet"
    (link.symlink_to if how == "symlink" else link.hardlink_to)(files["k.csv"])
    before = _snapshot(tmp_path)
    rc, err = _run(capsys, "score", files["k.csv"], "-o", link, "-t", "none")
    _refused(rc, err, "alias.parquet", "k.csv")
    assert _snapshot(tmp_path) == before and (link.is_symlink() == (how == "symlink"))


@pytest.mark.parametrize("option, name", [("-r", "ref.txt"), ("--ref-table", "refs.parquet")])
def test_score_refuses_its_reference_files(files, tmp_path, private_tmp, capsys, option, name):
    before = _snapshot(tmp_path)
    rc, err = _run(capsys, "score", files["k.parquet"], option, files[name], "-o", files[name], "-t", "none",
                   "--seg-col", "segment_id")
    _refused(rc, err, option if option != "-r" else "--refs", name)
    assert _snapshot(tmp_path) == before


def test_score_refuses_metric_side_files(files, tmp_path, private_tmp, capsys):
    words = tmp_path / "function.words"
    words.write_text("the\na\n")
    table = tmp_path / "table.tsv"
    table.write_text("cat\tfeline\tNOUN\tmeteor\t0.5\n")
    before = _snapshot(tmp_path)
    for option, path, metric in (("--meteor-function-words", words, "meteor"), ("--paraphrases", table, "parmesan")):
        rc, err = _run(capsys, "score", files["k.parquet"], "--metric", f"bleu,{metric}", option, path, "-o", path,
                       "--analyzer", "lower")
        _refused(rc, err, option, path.name)
    assert _snapshot(tmp_path) == before


def test_an_input_read_during_the_job_is_refused_at_the_rename(tmp_path):
    """The second check, right before the rename: a file the command registers after its output was
    opened (a model loaded late) still cannot be replaced, and the target is left as it was."""
    target = tmp_path / "model.bin"
    target.write_bytes(b"weights")
    with inputs.command_scope():
        with pytest.raises(InputError, match="--embeddings"):
            with output.atomic_output(target) as tmp:
                tmp.write_bytes(b"scores")
                inputs.register_input(target, "--embeddings")
    assert target.read_bytes() == b"weights" and sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]


def test_registration_is_scoped_to_one_command(tmp_path):
    src = tmp_path / "x.txt"
    src.write_text("x\n")
    inputs.register_input(src, "outside")  # a library call: nothing recorded
    assert output.check_output(src) == src  # (the library's own `inputs` argument is what counts there)
    with inputs.command_scope():
        inputs.register_input(src, "--refs")
        assert inputs.registered_inputs() == [(str(src), "--refs")]
        with pytest.raises(InputError, match="--refs"):
            output.check_output(tmp_path / "." / "x.txt")
    assert inputs.registered_inputs() == []


def test_convert_export_and_tune_refuse_their_inputs(files, tmp_path, private_tmp, capsys):
    before = _snapshot(tmp_path)
    cases = [(["convert", files["k.nbest"], files["k.nbest"]], "output"),
             (["convert", files["k.nbest"], files["ref.txt"], "-r", files["ref.txt"]], "--refs"),
             (["export-moses", files["k.parquet"], "--scores", files["k.parquet"]], "--scores"),
             (["export-moses", files["k.parquet"], "--scores", tmp_path / "s.txt", "--features", files["k.parquet"]],
              "--features")]
    for argv, option in cases:
        rc, err = _run(capsys, *argv)
        _refused(rc, err, option)
    assert _snapshot(tmp_path) == before
    _clean(tmp_path, private_tmp)


@pytest.mark.parametrize("mode", ["r+b", "ab"])  # the shell's 1<> FILE and >> FILE
@pytest.mark.parametrize("argv, name", [
    (["score", "{k.parquet}", "-t", "none", "-q", "-o", "-"], "k.parquet"),
    (["score", "{hyp.txt}", "-r", "{ref.txt}", "-t", "none", "-q", "-o", "-"], "ref.txt"),
    (["convert", "{k.nbest}", "-", "--to", "parquet"], "k.nbest"),
    (["corpus", "{ref.txt}", "-i", "{hyp.txt}"], "hyp.txt")])
def test_standard_output_redirected_to_an_input_is_refused(files, tmp_path, private_tmp, argv, name, mode):
    """``-o -`` (or a printed table) with stdout on an input file wrote over it (1<>) or into it
    (>>), exit 0: the input is refused before anything is read or written."""
    before = _snapshot(tmp_path)
    args = [str(files[a[1:-1]]) if a.startswith("{") else a for a in argv]
    with open(files[name], mode) as out:
        done = subprocess.run([sys.executable, "-m", "kbest_bleu", *args], stdout=out, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "TMPDIR": str(private_tmp)})
    _refused(done.returncode, done.stderr, name, "standard output is redirected to")
    assert _snapshot(tmp_path) == before
    _clean(tmp_path, private_tmp)


@pytest.mark.parametrize("same", ["{out}", "./{out}", "-"])
def test_two_outputs_on_one_path_are_refused_before_the_job(files, tmp_path, private_tmp, capsys, monkeypatch, same):
    """mbr -o X --matrix X failed at the end but had replaced X with the matrix; -o - --matrix -
    wrote two parquet files one after the other on stdout."""
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "m.parquet"
    old.write_bytes(b"previous")
    out = "-" if same == "-" else "m.parquet"
    rc, err = _run(capsys, "mbr", files["k.parquet"], "-o", out, "--matrix", same.format(out=out), "-t", "none")
    _refused(rc, err, "--matrix", "is also the output of -o")
    assert old.read_bytes() == b"previous"
    _clean(tmp_path, private_tmp)


def test_export_moses_features_equal_to_scores_writes_neither(files, tmp_path, private_tmp, capsys):
    same = tmp_path / "same.txt"
    rc, err = _run(capsys, "export-moses", files["k.parquet"], "--scores", same, "--features", same)
    _refused(rc, err, "--features")
    assert not same.exists()


def test_parmesan_build_table_refuses_its_input_and_keeps_the_old_table(tmp_path, private_tmp, capsys):
    src = tmp_path / "pairs.tsv"
    src.write_text("0.5\tcat\tfeline\n0.25\tdog\thound\n")
    before = src.read_bytes()
    rc, err = _run(capsys, "parmesan", "build-table", src, "-o", src, "--analyzer", "lower")
    _refused(rc, err, "-o", "pairs.tsv")
    assert src.read_bytes() == before
    old = tmp_path / "table.tsv"
    old.write_bytes(b"previous table")
    bad = tmp_path / "bad.tsv"
    bad.write_text("not a probability\tcat\tfeline\n")
    rc, err = _run(capsys, "parmesan", "build-table", bad, "-o", old, "--analyzer", "lower")
    assert rc == 2 and old.read_bytes() == b"previous table"
    _clean(tmp_path, private_tmp)


def test_bleu2vec_train_refuses_its_corpus_as_output(tmp_path, private_tmp, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\n")
    rc, err = _run(capsys, "bleu2vec", "train", corpus, "-o", corpus)
    _refused(rc, err, "-o", "corpus.txt")
    assert corpus.read_text() == "a b c\n"


def test_symlink_output_is_written_through_atomically(files, tmp_path, private_tmp, capsys):
    target = tmp_path / "scores" / "v1.parquet"
    target.parent.mkdir()
    target.write_bytes(b"old scores")
    link = tmp_path / "latest.parquet"
    link.symlink_to(target)
    rc, err = _run(capsys, "score", files["k.csv"], "-o", link, "-t", "none", "-q")
    assert rc == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert pq.read_table(target).num_rows == len(ROWS)
    _clean(tmp_path, private_tmp)


@pytest.mark.parametrize("target, words", [("dangling", ["symbolic link", "does not exist"]),
                                           ("new/", ["ends with '/'"]), ("DIR", ["existing directory"])])
def test_unusable_output_paths_are_refused_before_the_job(files, tmp_path, private_tmp, capsys, monkeypatch,
                                                          target, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x.parquet")
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, err = _run(capsys, "score", files["k.csv"], "-o", target, "-t", "none")
    _refused(rc, err, "-o", *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not (tmp_path / "new").exists()



@pytest.mark.skipif(not os.path.isdir("/sys/fs"), reason="needs Linux sysfs, where nobody may create files (root included)")
def test_an_unwritable_output_directory_names_the_output(files, tmp_path, private_tmp, capsys):
    """A directory the output cannot be created in (sysfs refuses new files even to root, where
    chmod would not) is reported for -o, one line, exit 1 (an I/O failure), nothing left behind."""
    rc, err = _run(capsys, "score", files["k.csv"], "-o", "/sys/fs/out.parquet", "-t", "none")
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "-o '/sys/fs/out.parquet': could not write the output" in err and TEMP_MARK not in err, err
    _clean(tmp_path, private_tmp)


def _without_root_override() -> list:
    """The command prefix that runs a child without root's permission override (setpriv), so that
    a mode-555 directory is read-only to it; [] for another user; the test is skipped for root
    without setpriv."""
    import shutil
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: a mode-555 directory is writable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def test_an_output_directory_without_write_permission_is_refused_before_the_job(files, tmp_path, private_tmp):
    """Mode 555: refused up front (exit 2), where it used to fail after the whole job (exit 1).
    Run without root's permission override (setpriv) when this test runs as root."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    done = subprocess.run([*_without_root_override(), sys.executable, "-m", "kbest_bleu", "score", str(files["k.csv"]), "-t", "none",
                           "-o", str(locked / "o.parquet")], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(private_tmp)})
    locked.chmod(0o755)
    _refused(done.returncode, done.stderr, "-o", "is not writable")
    assert not list(locked.iterdir())


# ---- class 2: atomic, whole outputs -----------------------------------------------------------

def test_write_all_retries_short_writes(monkeypatch, tmp_path):
    real_write = os.write
    sizes = []

    def short(fd, data):
        sizes.append(len(data))
        return real_write(fd, bytes(data)[:7])  # a pipe or a nearly full disk takes a few bytes at a time
    monkeypatch.setattr(os, "write", short)
    payload = bytes(range(256)) * 3
    with open(tmp_path / "out", "wb") as f:
        output.write_all(f.fileno(), payload)
    assert (tmp_path / "out").read_bytes() == payload and len(sizes) == -(-len(payload) // 7)


def test_write_all_without_progress_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    with open(tmp_path / "out", "wb") as f, pytest.raises(OSError, match="No space left"):
        output.write_all(f.fileno(), b"data")


def test_stdout_output_is_the_whole_file_through_short_writes(files, tmp_path, private_tmp):
    """``-o -`` on a real file descriptor taking 1,000 bytes per write (the child's os.write cut
    short, as a pipe or a nearly full disk does): the parquet arrives whole."""
    sink = tmp_path / "stdout.bin"
    code = ("import os, sys; real = os.write; os.write = lambda fd, data: real(fd, bytes(data)[:1000]); "
            "from kbest_bleu.cli import main; raise SystemExit(main(sys.argv[1:]))")
    with open(sink, "wb") as f:
        done = subprocess.run([sys.executable, "-c", code, "score", str(files["k.csv"]), "-t", "none", "-q", "-o", "-"],
                              stdout=f, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(private_tmp)})
    assert done.returncode == 0, done.stderr
    assert pq.read_table(sink).num_rows == len(ROWS)
    main_out = tmp_path / "direct.parquet"
    assert main(["score", str(files["k.csv"]), "-t", "none", "-q", "-o", str(main_out)]) == 0
    assert pq.read_table(sink).equals(pq.read_table(main_out))
    _clean(tmp_path, private_tmp)


def test_a_replaced_output_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    with output.atomic_output(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640


# ---- class 3: temporaries ---------------------------------------------------------------------

def test_work_directories_are_removed_on_every_exit(private_tmp):
    with temporaries.temporary_directory() as d:
        (d / "copy.parquet").write_bytes(b"x" * 100)
        assert d in temporaries.live_temporaries() and d.parent == private_tmp and TEMP_MARK in d.name
    assert not d.exists() and d not in temporaries.live_temporaries()
    with pytest.raises(RuntimeError), temporaries.temporary_directory() as d2:
        raise RuntimeError("the job failed")
    assert not d2.exists()


def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def test_stale_temporaries_are_removed_by_age_and_owner(private_tmp):
    host = temporaries.owner_tag().rsplit(".", 1)[1]
    dead, alive = _dead_pid(), os.getppid()
    names = {"dead": f"kbest_bleu-{TEMP_MARK}{dead}.{host}-a", "alive": f"kbest_bleu-{TEMP_MARK}{alive}.{host}-b",
             "old_foreign": f"kbest_bleu-{TEMP_MARK}{alive}.0000beef-c",
             "young_foreign": f"kbest_bleu-{TEMP_MARK}{alive}.0000beef-d", "unrelated": "kbest_bleu-user-file"}
    for name in names.values():
        (private_tmp / name).mkdir()
    old = time.time() - temporaries.settings.STALE_TEMPORARY_S - 60
    os.utime(private_tmp / names["old_foreign"], (old, old))
    os.utime(private_tmp / names["alive"], (old, old))  # its process lives: kept whatever its age
    with temporaries.temporary_directory():
        left = {k for k, v in names.items() if (private_tmp / v).exists()}
    assert left == {"alive", "young_foreign", "unrelated"}


_SLEEPER = """
import sys, time
from kbest_bleu.files import output, temporaries
temporaries.install_signal_handlers()
with temporaries.temporary_directory() as d, output.atomic_output(sys.argv[1]) as tmp:
    (d / "tokens.txt").write_text("x")
    tmp.write_text("partial")
    print(d, tmp, flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_removes_work_directories_and_temporaries(tmp_path, private_tmp, sig):
    target = tmp_path / "out.txt"
    target.write_text("previous")
    proc = subprocess.Popen([sys.executable, "-c", _SLEEPER, str(target)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(private_tmp)},
                            preexec_fn=default_signals)
    work, tmp = proc.stdout.readline().split()
    assert Path(work).is_dir() and Path(tmp).exists()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig and err.strip().endswith("no output written"), err
    assert not Path(work).exists() and not Path(tmp).exists() and target.read_text() == "previous"
    _clean(tmp_path, private_tmp)


def test_a_log_is_appended_to_checked_as_an_output_or_unnamed(tmp_path):
    """open_log: a named log keeps what it held and grows (not atomic: it is worth reading when the
    job fails); it is never an input nor '-'; without a name it is a temporary file with no name in
    any directory, gone when closed."""
    log = tmp_path / "job.log"
    log.write_bytes(b"earlier run\n")
    with output.open_log(log, [], "--spark-log") as f:
        f.write(b"this run\n")
    assert log.read_bytes() == b"earlier run\nthis run\n"
    src = tmp_path / "in.parquet"
    src.write_bytes(b"data")
    for bad, message in ((src, "--spark-log .*: the output path is the input file"), ("-", "found .-.")):
        with pytest.raises(InputError, match=message):
            output.open_log(bad, [src], "--spark-log")
    assert src.read_bytes() == b"data"
    before = set(tmp_path.iterdir())
    with output.open_log(None) as f:
        f.write(b"x")
        assert os.fstat(f.fileno()).st_nlink == 0  # unnamed
    assert set(tmp_path.iterdir()) == before


def test_a_nested_output_that_fails_is_named_once(tmp_path, private_tmp):
    """export-moses writes --features inside --scores' block: a failed --features was reported as
    '--scores ...: could not write the output (--features ...: could not write ...)'."""
    with pytest.raises(OSError) as failed:
        with output.atomic_output(tmp_path / "scores.txt", (), "--scores") as a:
            a.write_text("x")
            with output.atomic_output(tmp_path / "features.txt", (), "--features") as b:
                b.write_text("y")
                raise OSError(28, "No space left on device")
    said = str(failed.value)
    assert said.count("could not write") == 1 and "--features" in said and "--scores" not in said, said
    assert [p.name for p in tmp_path.iterdir()] == ["TMPDIR"]  # neither file, no temporary


def test_a_log_appended_in_a_read_only_directory(tmp_path, private_tmp):
    """A log is appended in place: its own write permission is enough (the check for the
    directory, where outputs make their temporary, refused it)."""
    locked = tmp_path / "logs"
    locked.mkdir()
    (locked / "app.log").write_text("earlier\n")
    (locked / "app.log").chmod(0o666)
    locked.chmod(0o555)
    prefix = _without_root_override()
    code = ("import sys; from kbest_bleu.files.output import open_log, check_output\n"
            "f = open_log(sys.argv[1]); f.write(b'more\\n'); f.close()\n"
            "try:\n    check_output(sys.argv[2])\nexcept Exception as e:\n    print(type(e).__name__, e)")
    done = subprocess.run([*prefix, sys.executable, "-c", code, str(locked / "app.log"), str(locked / "new.parquet")],
                          capture_output=True, text=True)
    locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert (locked / "app.log").read_text() == "earlier\nmore\n"
    assert "InputError" in done.stdout and "is not writable" in done.stdout  # a new output there still is refused
