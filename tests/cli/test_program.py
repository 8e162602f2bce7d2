"""The ``kbest-bleu`` program as a process of its own (``kbest_bleu.program.command``): its settings
(numba's workqueue layer, no BLAS probe, one OpenBLAS thread, malloc reusing freed blocks, the
garbage collector paused at start-up) and its fast exit, which must lose no output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    """``-o -``: the whole parquet file through stdout before the process exits."""
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "--stats", "-o", str(tmp_path / "m.parquet")]) == 0
    out = _run(["score", str(SAMPLE), "-t", "none", "--stats", "-o", "-"])
    assert out.returncode == 0, out.stderr
    assert pq.read_table(pa.BufferReader(out.stdout)).equals(pq.read_table(tmp_path / "m.parquet"))
    assert b"rows 5,000" in out.stderr  # the summary goes to stderr when the data takes stdout


def test_a_summary_reader_that_has_gone_is_not_an_error(tmp_path):
    """`kbest-bleu score ... | head -1` with PYTHONUNBUFFERED=1: the job is done and its output
    written; the summary's reader has gone before it is printed: exit 0, no message."""
    cmd = [sys.executable, "-m", "kbest_bleu", "score", str(SAMPLE), "-t", "none", "-q", "-o", str(tmp_path / "o.parquet")]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})
    job.stdout.close()  # the reader goes before the summary is written
    err = job.stderr.read().decode()
    assert job.wait() == 0 and err == "", err
    assert pq.read_table(tmp_path / "o.parquet").num_rows == 5000


@pytest.mark.parametrize("to", ["-", "fifo"])
def test_a_data_reader_that_has_gone_stops_the_job_as_sigpipe_would(tmp_path, to):
    """`kbest-bleu score ... -o - | head -c 100` (or a FIFO whose reader goes): the scored parquet
    cannot all be delivered; the job stops with 128 + SIGPIPE (what `cat` reports under `set -o
    pipefail`), no message and no traceback (it used to say "error: [Errno 32] Broken pipe" and
    exit 1)."""
    import threading

    out = "-"
    if to == "fifo":
        out = str(tmp_path / "fifo")
        os.mkfifo(out)

        def read_a_little() -> None:
            with open(out, "rb") as f:
                f.read(100)
        threading.Thread(target=read_a_little, daemon=True).start()
    job = subprocess.Popen(PROGRAM + ["score", str(SAMPLE), "-t", "none", "-q", "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if to == "-":
        job.stdout.read(100)
    job.stdout.close()
    err = job.stderr.read().decode()
    assert job.wait(timeout=60) == 128 + 13 and err == "", err
    assert [p.name for p in tmp_path.iterdir()] == (["fifo"] if to == "fifo" else [])


def test_the_program_keeps_its_exit_status_and_message(tmp_path):
    out = _run(["score", str(tmp_path / "missing.parquet"), "-q"], text=True)
    assert out.returncode == 2
    assert "missing.parquet: no such file" in out.stderr


def _settings(code: str, env: dict | None = None, unset: tuple = ("NUMBA_THREADING_LAYER",)) -> list:
    """The words a fresh Python process prints running ``code``; the variables ``unset`` removed
    unless ``env`` sets them."""
    base = {k: v for k, v in os.environ.items() if k not in unset}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**base, **(env or {})})
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


SCORE = ("import os, sys\nfrom kbest_bleu.cli import main\n"
         f"main(['score', {str(SAMPLE)!r}, '-t', 'none', '-q', '--engine', 'kernels'])\n")
# a compile (one small kernel, with an empty numba cache), then what numba's probe found
COMPILE = ("from kbest_bleu.counting import kernels\nkernels()._table_capacity(5)\n"
           "import numba.np.arraymath as am\nprint(am._HAVE_BLAS, 'scipy.linalg' in sys.modules)\n")
PROCESS = "from kbest_bleu.program import _command_process\n_command_process()\n"


def test_the_program_runs_workqueue_and_loads_no_scipy():
    """The program's process on cached kernels: numba's workqueue threading layer, and no
    scipy.linalg (0.3 s) imported, though loading a kernel may import numba's numpy registry (a
    kernel's environment can live there); nothing of the BLAS trick stays in sys.modules."""
    pytest.importorskip("scipy")
    words = _settings("import sys\n" + PROCESS + SCORE.split("\n", 1)[1] + "import numba\n"
                      "print(numba.threading_layer(), 'scipy.linalg' in sys.modules, "
                      "'scipy.linalg.cython_blas' in sys.modules)\n")
    assert words[-3:] == ["workqueue", "False", "False"]


def test_the_program_compiles_without_the_blas_probe(tmp_path):
    """A compile in the program's process (a cache miss) loads numba's numpy registry with the
    BLAS probe failing: no scipy.linalg; a library caller's compile probes as numba does."""
    pytest.importorskip("scipy")
    cold = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    assert _settings("import sys\n" + PROCESS + COMPILE, cold)[-2:] == ["False", "False"]
    assert _settings("import sys\n" + COMPILE, {"NUMBA_CACHE_DIR": str(tmp_path / "cache2")})[-2:] == ["True", "True"]


def test_a_library_caller_keeps_numbas_threading_layer():
    """main() called from Python sets no threading layer for numba."""
    assert _settings(SCORE + "print(os.environ.get('NUMBA_THREADING_LAYER', '-'))")[-1] == "-"


def test_the_users_threading_layer_wins():
    code = "import os\n" + PROCESS + "print(os.environ['NUMBA_THREADING_LAYER'])"
    assert _settings(code, {"NUMBA_THREADING_LAYER": "omp"}) == ["omp"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
def test_the_program_starts_no_openblas_threads():
    """The program's process imports numpy with one OpenBLAS thread: no thread besides the main
    one (OpenBLAS's would spin ~0.1 s of CPU each); a library caller's numpy keeps its threads,
    and the user's OPENBLAS_NUM_THREADS wins."""
    count = "import numpy, os\nprint(os.environ.get('OPENBLAS_NUM_THREADS', '-'), len(os.listdir('/proc/self/task')))"
    unset = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    assert _settings(PROCESS + count, unset=unset) == ["1", "1"]
    assert _settings(PROCESS + count, {"OPENBLAS_NUM_THREADS": "2"}, unset)[0] == "2"
    assert _settings("import kbest_bleu.cli\n" + count, unset=unset)[0] == "-"  # a library caller: numpy's BLAS as it comes


def _full_stdout(code: str) -> subprocess.CompletedProcess:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True)


def test_an_output_error_fails_the_program():
    """stdout on a full device: the command's own write fails, the program exits 1 with the error."""
    out = _full_stdout("import sys\nsys.argv = ['kbest-bleu', 'score', " + repr(str(SAMPLE)) +
                       ", '-t', 'none', '-q', '--json']\nfrom kbest_bleu.program import command\ncommand()")
    assert out.returncode == 1
    assert "No space left" in out.stderr


def test_an_output_error_at_exit_fails_the_program():
    """Output still buffered when the command returns, on a stream whose writes fail (a full disk):
    the flush before the fast exit fails, and the program says so and exits 1 (as Python's own
    exit would fail), not 0 with the output lost."""
    code = ("import errno, io, sys\nimport kbest_bleu.program as program\n"
            "class Full(io.RawIOBase):\n    def writable(self):\n        return True\n"
            "    def write(self, b):\n        raise OSError(errno.ENOSPC, 'No space left on device')\n"
            "sys.stdout = io.TextIOWrapper(io.BufferedWriter(Full()))\n"
            "import kbest_bleu.cli\nkbest_bleu.cli.main = lambda: print('text left in the buffer') or 0\n"
            "program.command()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert "writing the output" in out.stderr and "No space left" in out.stderr


GC_STATE = "import gc\nprint(gc.isenabled(), gc.get_freeze_count() > 0)\n"


# records, at the collector's first resume, how many times it has run and whether the job's
# first batch has been scored yet (its kernels imported numba)
FIRST_RESUME = ("import gc, sys\nimport kbest_bleu.collector as collector\nruns, seen = [], []\n"
                "gc.callbacks.append(lambda phase, info: phase == 'start' and runs.append(1))\n"
                "resume = collector.resume\n"
                "def first_resume():\n    if not seen:\n        seen.append(1)\n"
                "        print('resume', len(runs), 'numba' in sys.modules)\n    resume()\n"
                "collector.resume = first_resume\n")


def test_the_program_starts_a_scoring_job_without_the_collector_then_resumes_it():
    """The program's process runs a scoring job's start-up with the cyclic collector off: it has
    not run once when it resumes, and it resumes after the first batch (the kernels, hence numba,
    are loaded by then; a resume as the command starts would come before). Afterwards it is on,
    with the start-up's objects frozen out of its runs."""
    words = _settings(PROCESS + GC_STATE + FIRST_RESUME + SCORE.split("\n", 1)[1] + GC_STATE)
    assert words[:2] == ["False", "False"] and words[-2:] == ["True", "True"]
    assert words[words.index("resume") + 1:words.index("resume") + 3] == ["0", "True"]


def test_other_commands_and_compiles_run_with_the_collector():
    """Every command but score resumes the collector before it runs; a compile resumes it (numba's
    compiler leaves cycles behind); a library caller's collector is never paused or frozen."""
    corpus = f"from kbest_bleu.cli import main\nmain(['corpus', {str(SAMPLE)!r}, '-t', 'none', '--json'])\n"
    assert _settings(PROCESS + corpus + GC_STATE)[-2:] == ["True", "True"]
    compile_ = PROCESS + "from kbest_bleu.jit import before_compile\nbefore_compile()\n" + GC_STATE
    assert _settings(compile_)[-2:] == ["True", "True"]
    assert _settings(SCORE + GC_STATE)[-2:] == ["True", "False"]


POOL = "import pyarrow as pa\nprint(pa.default_memory_pool().backend_name)\n"


def test_the_program_takes_arrows_jemalloc_pool_unless_told():
    """The program's Arrow buffers come from jemalloc where pyarrow has it (mimalloc's commits and
    purges cost system time); the user's ARROW_DEFAULT_MEMORY_POOL wins, and a library caller
    keeps pyarrow's default."""
    import pyarrow as pa

    from kbest_bleu.program import _has_jemalloc
    if not _has_jemalloc(Path(pa.__file__).parent) or os.sysconf("SC_PAGESIZE") != 4096:
        pytest.skip("the program keeps pyarrow's default pool here (no jemalloc in its build header, or not 4 KiB pages)")
    unset = ("ARROW_DEFAULT_MEMORY_POOL",)
    assert _settings(PROCESS + POOL, unset=unset) == ["jemalloc"]
    assert _settings(PROCESS + POOL, {"ARROW_DEFAULT_MEMORY_POOL": "system"}, unset) == ["system"]
    assert _settings(SCORE + "print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL', '-'))", unset=unset)[-1] == "-"


def test_jemalloc_is_read_from_pyarrows_build_header(tmp_path):
    """A pyarrow built without jemalloc (or without its headers) keeps its default pool: asking
    Arrow for one it lacks would print a warning on every command."""
    from kbest_bleu.program import _has_jemalloc
    util = tmp_path / "include" / "arrow" / "util"
    assert not _has_jemalloc(tmp_path)  # no header
    util.mkdir(parents=True)
    (util / "config.h").write_text("#define ARROW_JEMALLOC_VENDORED\n#define ARROW_MIMALLOC\n")
    assert not _has_jemalloc(tmp_path)
    (util / "config.h").write_text("#define ARROW_S3\n#define ARROW_JEMALLOC\n#define ARROW_JEMALLOC_VENDORED\n")
    assert _has_jemalloc(tmp_path)
