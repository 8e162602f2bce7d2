"""The ``kbest-bleu`` program as a process of its own (``kbest_bleu.program.command``): its settings
(numba's workqueue layer, no BLAS probe) and its fast exit, which must lose no output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.cli import SAMPLE, main

PROGRAM = [sys.executable, "-m", "kbest_bleu"]


def _run(args, **kwargs):
    return subprocess.run(PROGRAM + args, capture_output=True, **kwargs)


def test_the_program_writes_what_main_writes_and_its_summary(tmp_path, capsys):
    """Exit without teardown: the output file and the JSON summary on stdout are whole."""
    out = _run(["score", str(SAMPLE), "-t", "none", "-q", "--json", "--engine", "kernels", "-o",
                str(tmp_path / "p.parquet")], text=True)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "--json", "--engine", "kernels", "-o",
                 str(tmp_path / "m.parquet")]) == 0
    want = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in summary.items() if k != "seconds"} == {k: v for k, v in want.items() if k != "seconds"}
    assert pq.read_table(tmp_path / "p.parquet").equals(pq.read_table(tmp_path / "m.parquet"))


def test_the_program_flushes_a_parquet_file_written_to_a_pipe(tmp_path):
    """``-o -``: megabytes of parquet through stdout, all of them before the process exits."""
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "--stats", "-o", str(tmp_path / "m.parquet")]) == 0
    out = _run(["score", str(SAMPLE), "-t", "none", "-q", "--stats", "-o", "-"])
    assert out.returncode == 0, out.stderr
    assert pq.read_table(pa.BufferReader(out.stdout)).equals(pq.read_table(tmp_path / "m.parquet"))
    assert b"rows 5,000" in out.stderr  # the summary goes to stderr when the data takes stdout


def test_the_program_keeps_its_exit_status_and_message(tmp_path):
    out = _run(["score", str(tmp_path / "missing.parquet"), "-q"], text=True)
    assert out.returncode == 2
    assert "missing.parquet: no such file" in out.stderr


def _settings(code: str, env: dict | None = None) -> list:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


SCORE = f"main(['score', {str(SAMPLE)!r}, '-t', 'none', '-q', '--engine', 'kernels'])\n"
REPORT = ("import numba, numba.np.arraymath as am\n"
          "print(numba.threading_layer(), am._HAVE_BLAS, 'scipy.linalg' in sys.modules, "
          "'scipy.linalg.cython_blas' in sys.modules)\n")


def test_the_program_runs_workqueue_without_the_blas_probe():
    """The settings of the program's process: numba's workqueue threading layer, and numba's
    BLAS probe skipped, so scipy.linalg (0.3 s) is not imported; nothing of the probe's trick
    stays in sys.modules."""
    pytest.importorskip("scipy")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    run = subprocess.run([sys.executable, "-c", "import sys\nfrom kbest_bleu.program import _command_process\nfrom kbest_bleu.cli import main\n"
                          "_command_process()\n" + SCORE + REPORT], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-4:] == ["workqueue", "False", "False", "False"]


def test_a_library_caller_keeps_numbas_defaults():
    """main() called from Python changes nothing of numba: BLAS probed (scipy present), no
    threading layer chosen for it."""
    pytest.importorskip("scipy")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    run = subprocess.run([sys.executable, "-c", "import os, sys\nfrom kbest_bleu.cli import main\n" + SCORE + REPORT
                          + "print(os.environ.get('NUMBA_THREADING_LAYER', '-'))"], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-4:] == ["True", "True", "True", "-"]  # probed: scipy.linalg imported


def test_the_users_threading_layer_wins():
    code = "import os\nfrom kbest_bleu.program import _command_process\n_command_process()\n" \
           "print(os.environ['NUMBA_THREADING_LAYER'])"
    assert _settings(code, {"NUMBA_THREADING_LAYER": "omp"}) == ["omp"]
