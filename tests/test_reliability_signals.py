"""Issue 15, signals: SIGINT, SIGTERM and SIGHUP in the middle of a large ``kbest-bleu score``
(the real ``python -m kbest_bleu``) exit with 128 + the signal, print one line, leave no
temporary file and keep the previous output."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.files.temporaries import TEMP_MARK
from child import default_signals

OLD = b"previous output, must survive"
ROWS = 400_000


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    """A K-best file large enough that scoring it takes seconds (K = 100, 4,000 segments)."""
    path = tmp_path_factory.mktemp("signals") / "large.parquet"
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(500)])
    hyps = [" ".join(words[rng.integers(0, 500, 25)]) for _ in range(1000)]
    seg = np.arange(ROWS) // 100
    refs = pa.array([[hyps[s % 1000]] for s in range(ROWS // 100)], pa.list_(pa.string())).take(pa.array(seg))
    pq.write_table(pa.table({"segment_id": seg, "hypothesis": pa.array(hyps * (ROWS // 1000)), "references": refs}),
                   path, row_group_size=20_000)
    return path


def _interrupt(large: Path, out: Path, sig: int, ignored: bool = False) -> subprocess.CompletedProcess:
    """Send ``sig`` to a scoring job in the middle of its work (``ignored``: to a job started with
    ``sig`` ignored, as ``nohup`` starts one with SIGHUP ignored)."""
    proc = subprocess.Popen([sys.executable, "-m", "kbest_bleu", "score", str(large), "-o", str(out), "-q",
                             "--seg-col", "segment_id", "--batch-size", "20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=(lambda: signal.signal(sig, signal.SIG_IGN)) if ignored else default_signals)
    deadline = time.monotonic() + 120
    while not list(out.parent.glob(f".{out.name}{TEMP_MARK}*")):  # the job is writing its temporary
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the job never started writing"
        time.sleep(0.02)
    time.sleep(0.3)  # well inside the job (reading, scoring, writing)
    assert proc.poll() is None, "the job ended before the signal: make the input larger"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout.decode(), stderr.decode())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM,
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.exhaustive)], ids=lambda s: s.name)
def test_signal_removes_temporary_and_exits_128_plus_signal(large, tmp_path, sig):
    out = tmp_path / "out.parquet"
    out.write_bytes(OLD)
    done = _interrupt(large, out, sig)
    assert done.returncode == 128 + sig, done.stderr
    assert done.stderr.strip() == f"kbest-bleu: interrupted by {signal.Signals(sig).name}; no output written"
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_a_signal_the_job_was_started_to_ignore_stays_ignored(large, tmp_path):
    """``nohup kbest-bleu ...`` starts the job with SIGHUP ignored: closing the terminal must not end
    it (the handlers replaced the ignored disposition: exit 129, no output)."""
    out = tmp_path / "out.parquet"
    done = _interrupt(large, out, signal.SIGHUP, ignored=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert pq.read_metadata(out).num_rows == ROWS
