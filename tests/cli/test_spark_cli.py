"""``kbest-bleu score --engine spark`` on stderr (issue 34): the command's own lines only, never
Spark's ~100 lines of Java log and stack traces, which go to --spark-log FILE (or out of sight).
Each job runs in a process of its own, as the command does: the JVM inherits the process's stderr
when it starts, and a test process's Spark session would be reused by another test."""

from __future__ import annotations

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
