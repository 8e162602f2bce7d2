"""``kbest-bleu score --engine spark`` on stderr (issue 34): the command's own lines only, never
Spark's ~100 lines of Java log and stack traces, which go to --spark-log FILE (or out of sight).
Each job runs in a process of its own, as the command does: the JVM inherits the process's stderr
when it starts, and a test process's Spark session would be reused by another test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _spark_job(tmp_path: Path, src: Path, out: str, *options: str) -> subprocess.CompletedProcess:
    pytest.importorskip("pyspark")
    work = tmp_path / "TMPDIR"
    work.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(work), "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # the workers import this tree
    done = subprocess.run([sys.executable, "-m", "kbest_bleu", "score", str(src), "--engine", "spark", "--master",
                           "local[1]", "-o", str(tmp_path / out), *options], capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)
    if "Spark could not start" in done.stderr and "--master" not in options:  # no Java, no ports
        pytest.skip(f"Spark could not start here: {done.stderr.strip()}")
    assert list(work.iterdir()) == [], "a temporary was left in $TMPDIR"
    return done


def _table(tmp_path: Path, hypotheses: list) -> Path:
    path = tmp_path / "k.parquet"
    pq.write_table(pa.table({"segment_id": [0] * len(hypotheses), "hypothesis": hypotheses,
                             "references": [["the cat sat down"]] * len(hypotheses)}), path)
    return path


@pytest.mark.exhaustive  # a Spark start of its own (~18 s): the README's command stays under 5 min cold
def test_a_bad_row_is_one_line_and_sparks_stack_traces_go_to_the_log(tmp_path):
    src = _table(tmp_path, ["the cat sat", None])
    before = src.read_bytes()
    log = tmp_path / "spark.log"
    done = _spark_job(tmp_path, src, "out", "--spark-log", str(log))
    assert done.returncode == 2
    # the single-machine job's message, independently: the same table scored without Spark
    local = subprocess.run([sys.executable, "-m", "kbest_bleu", "score", str(src), "-o", str(tmp_path / "local.parquet")],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert local.returncode == 2 and local.stderr.count("\n") == 1
    assert done.stderr == local.stderr, done.stderr  # exactly that one line, nothing of Spark's
    # Spark's own lines were kept, not lost: the Java log with the worker's stack trace
    said = log.read_text(errors="replace")
    assert "log4j" in said and "PythonException" in said and "Traceback" in said
    assert src.read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.exhaustive  # two more Spark starts (~40 s on 2 busy cores)
def test_a_good_run_and_a_bogus_master_show_no_java_lines(tmp_path):
    src = _table(tmp_path, ["the cat sat", "a cat sat"])
    done = _spark_job(tmp_path, src, "out")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() and all(line.startswith("kbest-bleu: ") for line in done.stderr.splitlines()), \
        done.stderr  # our log line only: no WARN lines, no progress bars
    assert pq.read_table(tmp_path / "out").num_rows == 2
    done = _spark_job(tmp_path, src, "out2", "--master", "bogus://x")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    # the JVM's reason, from its log: pyspark itself only says that the gateway exited
    assert done.stderr.startswith("kbest-bleu score: error: --master 'bogus://x': Spark could not start "
                                  "(SparkException: Master must"), done.stderr


def _dataset(tmp_path: Path) -> Path:
    """A directory of two parquet files, segment 2 cut between them; and the same rows as one
    file, ``whole.parquet``, read in name order by pyarrow."""
    data = tmp_path / "in"
    data.mkdir()
    seg = [0] * 3 + [1] * 4 + [2] * 5 + [3] * 3
    hyps = ["the cat sat", "a cat", "the cat sat down", "the dog", "a cat sat down", "sat", "the cat",
            "the cat sat down", "cat", "a dog sat", "the", "cat sat down", "a cat sat", "dog", "the cat sat"]
    table = pa.table({"segment_id": seg, "hypothesis": hyps, "references": [["the cat sat down"]] * len(seg)})
    pq.write_table(table.slice(0, 9), data / "part 1.parquet")
    pq.write_table(table.slice(9), data / "part 2.parquet")
    pq.write_table(pq.read_table(data), tmp_path / "whole.parquet")
    return data


def test_a_directory_is_refused_by_the_single_machine_job_in_one_line(tmp_path, capsys):
    """The local job reads one file: a directory is said to be one (not 'a named pipe or
    device'), with the engine that reads it; before --sort opens it too."""
    from kbest_bleu.batch.parquet import score_parquet
    from kbest_bleu.cli import main
    from kbest_bleu.errors import InputError
    data = _dataset(tmp_path)
    for extra in ([], ["--format", "parquet"], ["--sort"], ["--engine", "numpy"]):
        assert main(["score", str(data), "-o", str(tmp_path / "out.parquet"), *extra]) == 2
        assert capsys.readouterr().err == (f"kbest-bleu score: error: {data}: is a directory; expected a parquet "
                                           "file, or --engine spark to read a directory of parquet files (a dataset)\n")
    assert main(["score", str(data), "-o", str(tmp_path / "out"), "--engine", "spark", "--format", "csv"]) == 2
    assert "leave --format csv out" in capsys.readouterr().err
    with pytest.raises(InputError, match=f"^{data}: is a directory; expected a parquet file$"):
        score_parquet(data, None)
    assert not (tmp_path / "out.parquet").exists() and not (tmp_path / "out").exists()
    # a text or CSV input went to Spark's parquet reader: exit 1 and a page of Java stack
    (tmp_path / "k.csv").write_text("segment_id,hypothesis,references\n0,a b,a b\n")
    assert main(["score", str(tmp_path / "k.csv"), "-o", str(tmp_path / "out"), "--engine", "spark"]) == 2
    err = capsys.readouterr().err
    assert "--engine spark: reads parquet" in err and "kbest-bleu convert" in err and err.count("\n") == 1


@pytest.mark.exhaustive  # a Spark start of its own (~30 s)
def test_a_directory_is_scored_by_spark_as_a_dataset(tmp_path):
    """docs/cli.md's `kbest-bleu score IN_DIR -o OUT_DIR --engine spark`, no --format: the rows and
    the summary of the local job on the same rows in one file."""
    data = _dataset(tmp_path)
    done = _spark_job(tmp_path, data, "out", "--json")
    assert done.returncode == 0, done.stderr
    local = subprocess.run([sys.executable, "-m", "kbest_bleu", "score", str(tmp_path / "whole.parquet"), "-o",
                            str(tmp_path / "local.parquet"), "--json"], capture_output=True, text=True, timeout=300,
                           cwd=ROOT)
    assert local.returncode == 0, local.stderr
    got, want = json.loads(done.stdout), json.loads(local.stdout)
    for key in ("rows", "segments", "one_best", "oracle", "signature"):
        assert got[key] == want[key], key
    assert pq.read_table(tmp_path / "out").equals(pq.read_table(tmp_path / "local.parquet"))
