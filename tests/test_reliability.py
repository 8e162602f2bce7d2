"""Issue 15, one test per failure class: no wrong number, no lost file, no traceback.

The CLI runs in-process through ``main`` (exit status and stderr through capsys; each
subprocess costs seconds on the shared machine), the API directly; tests/test_reliability_signals.py
runs the real ``python -m kbest_bleu`` for signals. Every failing run is checked for: exit 2, a
message naming what it must, no output (or temporary) left, and the previous output intact.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.files.output import atomic_output, check_output
from kbest_bleu.files.temporaries import TEMP_MARK
from kbest_bleu.batch.parquet import score_parquet
from kbest_bleu.cli import main
from kbest_bleu.config import BleuConfig
from kbest_bleu.errors import InputError
from kbest_bleu.files.nbest import read_nbest
from kbest_bleu.stats import ngram_stats

OLD = b"previous output, must survive"


def _table(**over) -> pa.Table:
    cols = {"segment_id": [0, 0, 1], "hypothesis": ["a b c", "a b d", "x y"],
            "references": [["a b c"], ["a b c"], ["x y z"]]}
    cols.update(over)
    return pa.table(cols)


@pytest.fixture
def kbest(tmp_path) -> Path:
    path = tmp_path / "in.parquet"
    pq.write_table(_table(), path)
    return path


@pytest.fixture
def old_output(tmp_path) -> Path:
    path = tmp_path / "out.parquet"
    path.write_bytes(OLD)
    return path


def _run(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def _no_temporaries(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if TEMP_MARK in p.name]


def _bad_utf8_strings(values: list) -> pa.Array:
    """A string array holding raw bytes (possibly not UTF-8), as a foreign writer may produce."""
    raw = pa.array(values, pa.binary())
    return pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())


def _failed(rc, err, out: Path, *must_name) -> None:
    assert rc == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for name in must_name:
        assert str(name) in err, (name, err)
    assert out.read_bytes() == OLD if out.exists() else True
    assert _no_temporaries(out.parent)


# ---- data destroyed -------------------------------------------------------------------------

def test_device_target_is_written_directly_not_replaced(kbest, capsys):
    rc, err = _run(capsys, "score", kbest, "-o", os.devnull, "-q")
    assert rc == 0, err
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_fifo_target_stays_a_fifo_and_receives_the_parquet(kbest, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", fifo.read_bytes()))
    reader.start()
    rc, err = _run(capsys, "score", kbest, "-o", fifo, "-q")
    reader.join(10)
    assert rc == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    data = got["data"]
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    assert pq.read_table(pa.BufferReader(data))["bleu"].to_pylist()[0] == pytest.approx(1.0)


@pytest.mark.parametrize("suffixes", [(".nbest", ".nbest"), (".parquet", ".parquet")])
def test_convert_refuses_its_input_as_output(tmp_path, capsys, suffixes):
    src = tmp_path / f"x{suffixes[0]}"
    if suffixes[0] == ".nbest":
        src.write_text("0 ||| a b ||| lm= -1 ||| -1\n")
    else:
        pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["a"], "features": ["lm= -1"]}), src)
    before = src.read_bytes()
    link = tmp_path / "link"
    link.symlink_to(src)  # the same file after resolving links
    rc, err = _run(capsys, "convert", src, link)
    assert rc == 2 and "is the input file" in err and str(link) in err
    assert src.read_bytes() == before and link.is_symlink()


def test_score_refuses_its_input_as_output(kbest, capsys):
    before = kbest.read_bytes()
    rc, err = _run(capsys, "score", kbest, "-o", kbest)
    assert rc == 2 and "is the input file" in err
    assert kbest.read_bytes() == before


def test_write_error_keeps_the_old_file_and_names_it(tmp_path):
    target = tmp_path / "scores.txt"
    target.write_bytes(OLD)
    with pytest.raises(OSError, match=str(target)) as info:
        with atomic_output(target) as tmp:
            tmp.write_bytes(b"partial")
            raise OSError(28, "No space left on device")
    assert "No space left on device" in str(info.value) and info.value.errno == 28
    assert target.read_bytes() == OLD and _no_temporaries(tmp_path)


def test_disk_full_during_score_exits_1_naming_the_file(kbest, old_output, capsys, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(pq.ParquetWriter, "write_batch", full)
    rc, err = _run(capsys, "score", kbest, "-o", old_output, "-q")
    assert rc == 1 and str(old_output) in err and "No space left" in err and err.count("\n") == 1
    assert old_output.read_bytes() == OLD and _no_temporaries(old_output.parent)


def test_export_moses_failure_keeps_old_scores(tmp_path, capsys):
    src = tmp_path / "k.parquet"
    pq.write_table(_table(hypothesis=pa.array(["a", None, "b"], pa.string())), src)
    scores = tmp_path / "scores.txt"
    scores.write_bytes(OLD)
    rc, err = _run(capsys, "export-moses", src, "--scores", scores, "--seg-col", "segment_id")
    _failed(rc, err, scores, "row 1")


def test_stale_temporary_of_a_dead_process_is_removed(kbest, tmp_path, capsys):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.parquet{TEMP_MARK}{dead.pid}"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".out.parquet{TEMP_MARK}{os.getppid()}"  # a process that exists: kept
    live.write_bytes(b"y")
    rc, err = _run(capsys, "score", kbest, "-o", tmp_path / "out.parquet", "-q")
    assert rc == 0, err
    assert not stale.exists() and live.exists()


# ---- wrong numbers --------------------------------------------------------------------------

def test_nan_segment_id_is_an_input_error(tmp_path, old_output, capsys):
    src = tmp_path / "nan.parquet"
    pq.write_table(_table(segment_id=[0.0, float("nan"), 1.0]), src)
    rc, err = _run(capsys, "score", src, "-o", old_output, "--seg-col", "segment_id")
    _failed(rc, err, old_output, src, "row 1", "NaN")


def test_null_segment_id_names_the_row(tmp_path, old_output, capsys):
    src = tmp_path / "nat.parquet"
    pq.write_table(_table(segment_id=pa.array([0, 0, None], pa.int64())), src)
    rc, err = _run(capsys, "score", src, "-o", old_output, "--seg-col", "segment_id")
    _failed(rc, err, old_output, "row 2", "segment")
    assert "expected a string" not in err


@pytest.mark.parametrize("option", [["--weights", "inf,1,1,1"], ["--weights", "1e308,1,1,1"], ["--epsilon", "inf"],
                                    ["--alpha", "inf"], ["--add-k", "inf"], ["--add-k", "nan"],
                                    ["--compat", "moses", "--add-k", "inf"], ["--epsilon", "2"]])
def test_non_finite_or_overflowing_options_are_refused(kbest, old_output, capsys, option):
    rc, err = _run(capsys, "score", kbest, "-o", old_output, "--json", *option)
    name = option[-2].lstrip("-").replace("-", "_")
    _failed(rc, err, old_output, name, "finite")
    assert "NaN" not in capsys.readouterr().out


def test_invalid_utf8_names_file_row_and_byte(tmp_path, old_output, capsys):
    src = tmp_path / "bad.parquet"
    pq.write_table(_table(hypothesis=_bad_utf8_strings([b"a b c", b"ok", b"x \xff y"])), src)
    rc, err = _run(capsys, "score", src, "-o", old_output, "--seg-col", "segment_id")
    _failed(rc, err, old_output, src, "row 2", "byte offset 2", "UTF-8")


def test_invalid_utf8_in_references_via_the_api():
    refs = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), _bad_utf8_strings([b"fine", b"\xc3("]))
    with pytest.raises(InputError, match=r"references: row 1 is not valid UTF-8 \(byte offset 0"):
        ngram_stats(["a", "b"], refs, None, BleuConfig())


def test_interleaved_nbest_ids_are_ranked_per_list(tmp_path):
    path = tmp_path / "mixed.nbest"
    lines = ["7 ||| a ||| lm= -1 ||| -1", "3 ||| b ||| lm= -2 ||| -2", "7 ||| c ||| lm= -3 ||| -3",
             "3 ||| d ||| lm= -4 ||| -4", "7 ||| e ||| lm= -5 ||| -5"]
    path.write_text("\n".join(lines) + "\n")
    assert read_nbest(path)["rank"].to_pylist() == [0, 0, 1, 1, 2]


# ---- tracebacks -> one clear error ----------------------------------------------------------

@pytest.mark.parametrize("target", ["", ".", "/", "DIR", "missing/x.parquet"])
def test_bad_output_paths_fail_before_the_job(kbest, tmp_path, capsys, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    rc, err = _run(capsys, "score", kbest, "-o", target)
    assert rc == 2 and "Traceback" not in err and "-o" in err
    assert "rows" not in capsys.readouterr().out  # refused before scoring, not after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR", "in.parquet"]


@pytest.mark.parametrize("table, option, words", [
    (_table(model_score=["high", "low", "mid"]), ["--score-col", "model_score"], ["model_score", "numbers"]),
    (_table(segment_id=[[0], [0], [1]]), ["--seg-col", "segment_id"], ["segment_id", "scalar"]),
    (_table(segment_id=[{"a": 0}, {"a": 0}, {"a": 1}]), ["--seg-col", "segment_id"], ["segment_id", "scalar"]),
])
def test_unusable_column_types(tmp_path, old_output, capsys, table, option, words):
    src = tmp_path / "t.parquet"
    pq.write_table(table, src)
    rc, err = _run(capsys, "score", src, "-o", old_output, *option)
    _failed(rc, err, old_output, src, *words)


def test_zero_row_file_schema_is_checked(tmp_path, old_output, capsys):
    src = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"segment_id": pa.array([], pa.int64()), "hypothesis": pa.array([], pa.int64())}), src)
    rc, err = _run(capsys, "score", src, "-o", old_output, "--seg-col", "segment_id")
    _failed(rc, err, old_output, src, "references", "--ref-file")


@pytest.mark.parametrize("command", ["convert", "export-moses", "tune"])
@pytest.mark.parametrize("problem", ["missing", "not parquet", "truncated"])
def test_unreadable_parquet_inputs(kbest, tmp_path, capsys, command, problem):
    src = tmp_path / "in2.parquet"
    if problem == "not parquet":
        src.write_text("hello\n")
    elif problem == "truncated":
        src.write_bytes(kbest.read_bytes()[:-30])
    argv = {"convert": ["convert", src, tmp_path / "o.nbest"],
            "export-moses": ["export-moses", src, "--scores", tmp_path / "s.txt"], "tune": ["tune", src]}[command]
    rc, err = _run(capsys, *argv)
    assert rc == 2 and "Traceback" not in err and str(src) in err, err
    assert not (tmp_path / "o.nbest").exists() and not (tmp_path / "s.txt").exists()


def test_tune_init_not_numbers(tmp_path, capsys):
    src = tmp_path / "l.nbest"
    src.write_text("0 ||| a ||| lm= -1 ||| -1\n0 ||| b ||| lm= -2 ||| -2\n")
    ref = tmp_path / "ref.txt"
    ref.write_text("a\n")
    rc, err = _run(capsys, "tune", src, "-r", ref, "--init", "a,b")
    assert rc == 2 and "--init" in err and "'a,b'" in err


def test_paired_negative_samples(tmp_path, capsys):
    f = tmp_path / "s.txt"
    f.write_text("a b\n")
    with pytest.raises(SystemExit) as exc:  # a usage error: argparse's exit, named option, one line + --help
        main(["paired", str(f), str(f), "-r", str(f), "--n-samples", "-3"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--n-samples" in err and "-3" in err


def test_missing_reference_file_names_file(kbest, old_output, capsys):
    rc, err = _run(capsys, "score", kbest, "-o", old_output, "--ref-file", "nowhere.txt")
    _failed(rc, err, old_output, "nowhere.txt", "not found")


@pytest.mark.parametrize("options", [dict(max_order=True), dict(weights="0.25,0.25,0.25,0.25"), dict(weights=0.25),
                                     dict(epsilon="0.1"), dict(k=1j), dict(alpha=float("inf")),
                                     dict(weights=(1e308, 1, 1, 1))])
def test_api_bad_options_raise_input_error(options):
    name = next(iter(options))
    with pytest.raises(InputError, match=name):
        BleuConfig(**options)


@pytest.mark.parametrize("segments", [{0: 0, 1: 1}, [[0], [1]], [0.0, float("nan")]])
def test_api_bad_segments_raise_input_error(segments):
    with pytest.raises(InputError, match="segment"):
        ngram_stats(["a", "b"], [["a"], ["b"]], segments, BleuConfig())


def test_api_bare_string_references_say_so():
    with pytest.raises(InputError, match="bare string"):
        ngram_stats(["a"], "the reference", None, BleuConfig())


# ---- wording ----------------------------------------------------------------------------------

def test_null_reference_list_wording():
    with pytest.raises(InputError, match=r"row 1 is null; expected a list of reference strings"):
        ngram_stats(["a", "b"], [["a"], None], None, BleuConfig())


def test_null_in_ref_table_names_that_file(kbest, tmp_path, old_output, capsys):
    refs = tmp_path / "refs.parquet"
    pq.write_table(pa.table({"segment_id": [0, 1], "references": [["a b c"], None]}), refs)
    rc, err = _run(capsys, "score", kbest, "-o", old_output, "--ref-table", refs, "--seg-col", "segment_id")
    _failed(rc, err, old_output, refs, "row 1")


def test_check_output_allows_a_new_file_beside_the_input(kbest, tmp_path):
    assert check_output(tmp_path / "new.parquet", [kbest]) == tmp_path / "new.parquet"
    assert np.isfinite(score_parquet(kbest, tmp_path / "new.parquet").mean_bleu)


# ---- numba cache ------------------------------------------------------------------------------

@pytest.fixture
def broken_cache(monkeypatch):
    """A numba FunctionCache (no __init__) whose disk operations raise as a full disk or a
    corrupted file would; the warning state is reset so each test sees its warning."""
    import pickle

    from kbest_bleu import jit
    monkeypatch.setattr(jit, "_warned", [])
    cache = object.__new__(jit._cache_class())  # the package's kernels' cache, without its __init__
    cache._cache_path = "/some/cache/dir"
    cache._impl = types.SimpleNamespace(locator=types.SimpleNamespace(ensure_cache_path=lambda: None))

    def full(*_):
        raise OSError(28, "No space left on device")

    def corrupt(*_):
        raise pickle.UnpicklingError("invalid load key, '\\x00'")
    cache._save_overload, cache._load_overload = full, corrupt
    return cache


def test_full_numba_cache_warns_once_and_does_not_fail(broken_cache, capsys):
    broken_cache.save_overload(None, None)
    broken_cache.save_overload(None, None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/some/cache/dir" in err and "NUMBA_CACHE_DIR" in err and "Errno 28" in err


def test_corrupted_numba_cache_compiles_instead(broken_cache, capsys):
    from numba.core.registry import cpu_target
    assert broken_cache.load_overload(None, cpu_target.target_context) is None  # None: numba compiles the kernel
    err = capsys.readouterr().err
    assert "UnpicklingError" in err and "NUMBA_CACHE_DIR" in err


@pytest.mark.exhaustive
def test_corrupted_cache_files_still_give_the_right_score(tmp_path):
    """Real numba: fill a cache directory, overwrite every cache file with garbage, score again."""
    code = ("from kbest_bleu import sentence_bleu; "
            "print(round(sentence_bleu('the cat sat on the mat', ['the cat sat on a mat']), 6))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    files = list((tmp_path / "cache").rglob("*.nbc"))  # data files; the index stays valid and points to them
    assert files
    for p in files:
        p.write_bytes(b"\x00garbage")
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout == "0.537285\n"  # sacrebleu 2.x: sentence_bleu(...).score 53.7284966
    assert "NUMBA_CACHE_DIR" in again.stderr and "Traceback" not in again.stderr


# ---- tuning entry points ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_lists():
    from kbest_bleu.tuning import KbestLists
    table = pa.table({"segment_id": [0, 0, 1, 1], "hypothesis": ["a b", "a c", "x", "x y"],
                      "references": [["a b"], ["a b"], ["x y"], ["x y"]],
                      "features": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]]})
    return KbestLists.from_table(table)


@pytest.mark.parametrize("w0", [[1.0], [1.0, 2.0, 3.0], [1.0, float("nan")], "1,2", [[1.0, 2.0]]])
def test_tuners_refuse_bad_start_weights(tiny_lists, w0):
    from kbest_bleu.tuning import tune_expected_bleu, tune_mira, tune_pro
    for tune in (lambda: tune_mira(tiny_lists, w0, epochs=1), lambda: tune_pro(tiny_lists, w0),
                 lambda: tune_expected_bleu([tiny_lists], w0, epochs=1)):
        with pytest.raises(InputError, match=r"w0: expected 2 (finite weights, one per feature \(f0, f1\)|numbers)"):
            tune()


def test_expected_bleu_without_lists():
    from kbest_bleu.tuning import tune_expected_bleu
    with pytest.raises(InputError, match="at least one KbestLists"):
        tune_expected_bleu([], [0.0])


def test_tuning_vectors_of_the_wrong_length(tiny_lists):
    from kbest_bleu.tuning import background_bleu, mbr_select
    with pytest.raises(InputError, match=r"bg: expected 9"):
        background_bleu(tiny_lists, np.ones(5))
    with pytest.raises(InputError, match="start: expected one row per segment"):
        tiny_lists.corpus_oracle(start=np.array([0, 0]))  # row 0 is not in segment 1
    with pytest.raises(InputError, match="probabilities: expected 3"):
        mbr_select(["a", "b", "c"], [0, 0, 0], probabilities=[0.5, 0.5])


# ---- Spark ------------------------------------------------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.parametrize("bad", ["null hypothesis", "differing references"])
def test_spark_bad_row_gives_the_single_machine_message(tmp_path, bad):
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from kbest_bleu.batch.spark import score_parquet_spark
    os.environ["PYSPARK_PYTHON"] = sys.executable
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")  # workers import this tree
    n = 40
    hyps = [f"h {i}" for i in range(n)]
    refs = [[f"r {i // 4}"] for i in range(n)]
    if bad == "null hypothesis":
        hyps[29] = None
        row = 29
    else:
        refs[29] = ["something else"]
        row = 29
    src, out = tmp_path / "in.parquet", tmp_path / "out"
    pq.write_table(pa.table({"segment_id": [i // 4 for i in range(n)], "hypothesis": pa.array(hyps, pa.string()),
                             "references": refs}), src)
    with pytest.raises(InputError) as spark_error:
        spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
        score_parquet_spark(str(src), str(out), spark=spark)
    with pytest.raises(InputError) as local_error:
        score_parquet(src, None)
    assert str(spark_error.value) == str(local_error.value) and f"row {row}" in str(spark_error.value)
    assert "Traceback" not in str(spark_error.value) and not out.exists() and _no_temporaries(tmp_path)


def test_pandas_missing_hypothesis_names_the_row():
    pd = pytest.importorskip("pandas")
    with pytest.raises(InputError, match="hypotheses: row 2 is NaN"):
        ngram_stats(pd.Series(["a", "b", float("nan")]), [["a"], ["b"], ["c"]], None, BleuConfig())
