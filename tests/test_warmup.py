"""``kbest-bleu warmup`` (kbest_bleu.warmup): every kernel an area registers is compiled by its
warm-up, a kernel nobody warms up fails the command, temporary files go on every exit.

Each test runs in a subprocess on a fresh NUMBA_CACHE_DIR: what was compiled is read back from
numba's cache files on disk (one index file per kernel), not from the module under test.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child import default_signals

PACKAGE = Path(__file__).resolve().parents[1] / "kbest_bleu"


def _declared_kernels(folder: Path) -> set:
    """(module file stem, function name) of every function decorated with njit(...) in ``folder``,
    other than inline="always" ones (never compiled alone), read from the source."""
    out = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and getattr(dec.func, "id", getattr(dec.func, "attr", "")) == "njit":
                    inline = [k for k in dec.keywords if k.arg == "inline"]
                    if not (inline and getattr(inline[0].value, "value", None) == "always"):
                        out.add((path.stem, node.name))
    return out


def _cached(cache: Path) -> set:
    """(module file stem, function name) of every kernel with an index file in numba's cache
    (``<module>.<function>-<line>.py<ver>.nbi``)."""
    out = set()
    for index in cache.rglob("*.nbi"):
        module, _, rest = index.name.partition(".")
        out.add((module, rest.split("-")[0]))
    return out


def _python(code: str, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.exhaustive  # ~35 s of CPU compiling the counting area afresh: CI runs it
def test_counting_and_research_areas_compile_every_kernel_they_register(tmp_path):
    """On an empty cache every counting and research kernel is reported missing; after warm-up
    with two processes (research in a worker) none is, each area said when it started, that it
    was still running, and when it ended; numba's cache files hold every kernel declared in the
    two folders."""
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    code = """
import json
from kbest_bleu.warmup import uncovered, warm_up
before = uncovered(["counting", "research"])[0]
said = []
if __name__ == "__main__":
    r = warm_up(["counting", "research"], processes=2, progress=lambda e: said.append([e.area, e.event]),
                remind_every=0.5)
    print(json.dumps({"before": before, "missing": r.missing, "ok": r.ok, "said": said,
                      "areas": {a.area: [a.event, a.kernels] for a in r.areas}}))
"""
    out = _python(code, env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    declared = _declared_kernels(PACKAGE / "counting") | _declared_kernels(PACKAGE / "research")
    assert {tuple(m.split(".")[-2:]) for m in got["before"]} == declared  # nothing cached yet
    assert got["missing"] == [] and got["ok"]
    assert got["areas"]["counting"][0] == "done" and got["areas"]["counting"][1] > 0
    assert got["areas"]["research"] == ["done", len(_declared_kernels(PACKAGE / "research"))]
    assert declared <= _cached(cache)
    for area in ("counting", "research"):
        events = [e for a, e in got["said"] if a == area]
        assert events[0] == "start" and events[-1] == "done"
    assert "running" in [e for a, e in got["said"] if a == "counting"]


def _forgotten_probe(root: Path) -> None:
    """A package whose module ``probe.research.extra`` registers, in area ``research``, a kernel
    no warm-up calls and an inlined one (never compiled alone)."""
    folder = root / "probe" / "research"
    folder.mkdir(parents=True)
    (root / "probe" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "extra.py").write_text("from kbest_bleu.jit import njit\n\n"
                                     "@njit()\ndef forgotten(x):\n    return x + 1\n\n"
                                     "@njit(inline='always')\ndef inlined(x):\n    return x * 2\n")


def test_a_registered_kernel_that_no_warm_up_calls_fails_the_command(tmp_path):
    """The command lists the forgotten kernel (not the inlined one, nor research's own, which it
    compiled) and exits 1; once the kernel is compiled, the same command exits 0."""
    _forgotten_probe(tmp_path)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    run = ("import sys\nimport probe.research.extra as extra\nfrom kbest_bleu.cli import main\n"
           "if __name__ == '__main__':\n    {call}\n    sys.exit(main(['warmup', '--area', 'research', '-j', '1']))\n")
    out = _python(run.format(call="pass"), env)
    assert out.returncode == 1, out.stderr
    said = out.stdout + out.stderr
    assert "probe.research.extra.forgotten" in said
    assert "inlined" not in said and "_kendall_tau_b" not in said
    assert "research: 3 kernels compiled" in out.stdout
    out = _python(run.format(call="extra.forgotten(1)"), env)
    assert out.returncode == 0, out.stderr
    assert "forgotten" not in out.stdout + out.stderr


def test_sigterm_removes_the_temporary_directory(tmp_path):
    """An area's temporary directory (where the paraphrase table and parquet files go) is removed
    when the process is terminated in the middle of the area."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = """
import time
import kbest_bleu.warmup as w
def slow(folder):
    (folder / "table.tsv").write_text("x")
    print("started", flush=True)
    time.sleep(60)
w.AREAS["slow"] = slow
w.warm_up(["slow"], processes=1)
"""
    env = {**os.environ, "TMPDIR": str(tmp), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    assert proc.stdout.readline().strip() == "started"
    assert any(tmp.rglob("table.tsv"))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert list(tmp.iterdir()) == []


@pytest.mark.exhaustive
def test_whole_package_warm_up_leaves_no_kernel_uncompiled(tmp_path):
    """Every area, two processes, an empty cache: nothing fails, nothing is left uncompiled, and
    every kernel declared in a kernel folder of the package has an entry in numba's cache."""
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "kbest_bleu", "warmup", "-j", "2"], env=env, capture_output=True,
                         text=True, timeout=3600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "skipped" not in out.stdout + out.stderr  # an area's warm-up that raises says so
    from kbest_bleu.warmup import NOT_WARMED
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "from ..jit import njit" in p.read_text()
               or "from ...jit import njit" in p.read_text()}
    declared = set().union(*(_declared_kernels(f) for f in folders))
    declared -= {tuple(name.split(".")[-2:]) for name in NOT_WARMED}  # no public function calls them
    assert declared <= _cached(cache), (declared - _cached(cache), time.perf_counter() - t0)
