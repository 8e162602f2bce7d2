"""Issue 34, class 2/3: a ``kbest-bleu score`` killed with SIGKILL (which no handler sees) at a random
moment never leaves a partial file under the output's name: the output is the previous file or
the whole new one; and the next run removes what the killed one left (its temporary beside the
output, its work directory with the converted CSV in $TMPDIR).

Each kill is a real process (``python -m kbest_bleu``); the default run kills 3 times at seeded
random moments, KBEST_BLEU_EXHAUSTIVE=1 12 times.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kbest_bleu.files.temporaries import TEMP_MARK

OLD = b"previous output, must survive"
KILLS = 12 if os.environ.get("KBEST_BLEU_EXHAUSTIVE") else 3


@pytest.fixture(scope="module")
def csv_input(tmp_path_factory) -> Path:
    """A CSV K-best table of 60,000 rows: converting and scoring it takes about a second."""
    path = tmp_path_factory.mktemp("kill") / "k.csv"
    rng = random.Random(0)
    words = [f"w{i}" for i in range(300)]
    with open(path, "w") as f:
        f.write("segment_id,hypothesis,references\n")
        for seg in range(600):
            ref = " ".join(rng.choice(words) for _ in range(20))
            for _ in range(100):
                f.write(f"{seg},{' '.join(rng.choice(words) for _ in range(20))},{ref}\n")
    return path


def _command(src: Path, out: Path) -> list:
    return [sys.executable, "-m", "kbest_bleu", "score", str(src), "-o", str(out), "-q", "-t", "none",
            "--engine", "numpy"]


def test_sigkill_at_random_moments_leaves_old_or_whole_output(csv_input, tmp_path):
    work = tmp_path / "TMPDIR"
    work.mkdir()
    env = {**os.environ, "TMPDIR": str(work)}
    out = tmp_path / "out.parquet"
    reference = tmp_path / "reference.parquet"
    t0 = time.monotonic()
    subprocess.run(_command(csv_input, reference), env=env, check=True)
    whole = time.monotonic() - t0
    expected = pq.read_table(reference)
    rng = random.Random(34)
    out.write_bytes(OLD)
    for _ in range(KILLS):
        proc = subprocess.Popen(_command(csv_input, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 0.9) * whole)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert out.read_bytes() == OLD or pq.read_table(out).equals(expected), "a partial file under the output's name"
    # one kill for certain while the output is being written: its temporary and work directory stay behind
    out.write_bytes(OLD)
    proc = subprocess.Popen(_command(csv_input, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not [p for p in tmp_path.iterdir() if TEMP_MARK in p.name]:
        assert proc.poll() is None and time.monotonic() < deadline, "the job never started writing"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert out.read_bytes() == OLD
    assert [p for p in tmp_path.iterdir() if TEMP_MARK in p.name] and list(work.iterdir())
    # the next run: the output whole, and nothing the killed runs left
    subprocess.run(_command(csv_input, out), env=env, check=True)
    assert pq.read_table(out).equals(expected)
    assert not [p for p in tmp_path.iterdir() if TEMP_MARK in p.name]
    assert not list(work.iterdir())
