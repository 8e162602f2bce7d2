"""The README's quickstart and the session of docs/cli.md that continues it show real output: their
``console`` blocks run in order (the README's, then the page's) as one shell session in a fresh
directory (the installed ``kbest-bleu`` and ``sacrebleu`` commands), and every command's output is
what the block shows; only the summary's time and rate may differ."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "docs" / "cli.md"]  # the session runs through them in this order
TIMING = re.compile(r"wall time [0-9.]+ s \([0-9,]+ rows/s, whole job\)")


def _session(text: str) -> list:
    """(command, expected output) of every ``$`` line of the console blocks, in order."""
    steps = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append([line[2:], []])
            else:
                steps[-1][1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in steps if not cmd.startswith("pip install")]


def _ours(cmd: str, cwd: Path, capfd, monkeypatch) -> str:
    """A ``kbest-bleu`` command (optionally fed by ``cat FILE |``) run by ``main`` in this process."""
    from kbest_bleu.cli import main
    feed, _, argv = cmd.rpartition("| ")
    if feed:
        monkeypatch.setattr(sys, "stdin", open(cwd / shlex.split(feed)[1], encoding="utf-8"))
    capfd.readouterr()
    assert main(shlex.split(argv)[1:]) == 0, cmd
    return capfd.readouterr().out


def test_quickstart_session_prints_what_the_doc_shows(tmp_path, capfd, monkeypatch):
    per_page = [_session(doc.read_text(encoding="utf-8")) for doc in DOCS]
    assert all(len(page) >= 3 for page in per_page)  # each page still shows a session of its own
    steps = [step for page in per_page for step in page]
    assert len(steps) >= 8
    monkeypatch.chdir(tmp_path)
    bin_dir = str(Path(sys.executable).parent)  # sacrebleu of this environment
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    for cmd, want in steps:
        if re.match(r"(cat \S+ \| )?kbest-bleu ", cmd):
            out = _ours(cmd, tmp_path, capfd, monkeypatch)
        else:  # printf, and sacrebleu's own command line as a process
            run = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, (cmd, run.stderr)
            out = run.stdout
        assert TIMING.sub("time", out.rstrip("\n")) == TIMING.sub("time", want), cmd
