"""The first run after an install (issue 18): numba compiles the kernels once and caches them;
the CLI says so when it happens, and ``kbest-bleu warmup`` compiles them ahead, after which no
job compiles anything."""

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "kbest_bleu" / "data" / "moses_100best_sample.parquet"

# counts the kbest_bleu functions numba compiles in the process, then runs the code given
COUNTING = """
import sys
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        if ev.data["dispatcher"].py_func.__module__.startswith("kbest_bleu"):
            compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
"""


# a job above the numpy engine's size limit (lowered to 1 byte), reporting which engine counted
MID_SIZE = """
import kbest_bleu.settings as settings
import kbest_bleu.batch.parquet as parquet
import kbest_bleu.counting.numpy_engine as numpy_counting
settings.NUMPY_ENGINE_BYTES = parquet.NUMPY_ENGINE_BYTES = 1
used = []
text_stats = numpy_counting.text_stats
numpy_counting.text_stats = lambda *args: used.append(1) or text_stats(*args)
from kbest_bleu.cli import main
assert main(["score", {sample!r}, "-o", {out!r}]) == 0
print(compiled, "numpy" if used else "kernels")
"""


def _kernel_cache(module: str, path: str):
    """The package's cache class (kbest_bleu.jit) without its __init__, for a kernel of ``module``,
    finding nothing on disk."""
    from kbest_bleu import jit

    cache = object.__new__(jit._cache_class())
    cache._cache_path = path
    cache._py_func = type("F", (), {"__module__": module})()
    cache._load_overload = lambda *_: None  # not in the cache
    return cache


def test_a_cache_miss_is_announced_once_per_area_on_the_kbest_bleu_logger(monkeypatch, caplog):
    from numba.core.registry import cpu_target

    from kbest_bleu import jit
    monkeypatch.setattr(jit, "_announced", set())
    meteor = _kernel_cache("kbest_bleu.metrics.meteor._align", "/some/cache/dir")
    counting = _kernel_cache("kbest_bleu.counting._kernels", "/other/dir")
    with caplog.at_level(logging.INFO, logger="kbest_bleu"):
        for cache in (meteor, meteor, counting, counting):
            assert cache.load_overload(None, cpu_target.target_context) is None
    said = [r.getMessage() for r in caplog.records if r.name == "kbest_bleu"]
    assert len(said) == 2, said
    assert "metrics.meteor" in said[0] and "/some/cache/dir" in said[0] and "kbest-bleu warmup" in said[0]
    assert "counting" in said[1] and "/other/dir" in said[1]


def test_importing_the_kernels_changes_nothing_else_in_the_process(tmp_path):
    """The package's cache and its announcements are its kernels' alone: a caller's own
    ``@njit(cache=True)`` function keeps numba's cache class and is never announced as ours, and
    no environment variable is set (OMP_WAIT_POLICY was, once)."""
    (tmp_path / "mine.py").write_text("from numba import njit\n@njit(cache=True)\ndef mine(x):\n    return x + 1\n")
    code = (f"import os, sys, logging\nsys.path.insert(0, {str(tmp_path)!r})\n"
            "logging.basicConfig(level=logging.INFO)\nbefore = dict(os.environ)\n"
            "import kbest_bleu as kb\nfrom kbest_bleu.counting import _kernels\n"
            "kb.score_kbest(['a b', 'a c'], [['a b c']], [0, 0], tokenize='none')\n"
            "from mine import mine\nprint(mine(1), type(mine._cache).__name__, type(_kernels._ngram_stats._cache).__name__)\n"
            "print(sorted(set(os.environ.items()) ^ set(before.items())))\n")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "2 FunctionCache KernelCache"
    assert lines[1] == "[]"
    assert "mine" not in out.stderr  # the caller's compile is not announced as the package's


def test_a_kernel_is_recompiled_when_a_sibling_module_changes(tmp_path):
    """A kernel's cache entry is keyed by the contents of every module of its folder: a callee in
    a sibling module that changes makes the caller compile again (numba alone keys by the caller's
    file and would serve the stale caller)."""
    pkg = tmp_path / "kbest_bleu_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "callee.py").write_text("from kbest_bleu.jit import njit\n@njit()\ndef f(x):\n    return x + 1\n")
    (pkg / "caller.py").write_text("from kbest_bleu.jit import njit\nfrom .callee import f\n"
                                   "@njit()\ndef g(x):\n    return f(x) * 10\n")
    code = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom kbest_bleu_probe.caller import g\n"
            "print(g(1), len(g.stats.cache_hits))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    assert run() == ["20", "0"]
    assert run() == ["20", "1"]  # loaded from the cache
    (pkg / "callee.py").write_text("from kbest_bleu.jit import njit\n@njit()\ndef f(x):\n    return x + 2\n")
    assert run() == ["30", "0"]  # the callee changed: compiled again, not the stale 20


def test_a_load_shares_the_cache_lock_and_a_save_holds_it_alone(tmp_path, monkeypatch):
    """While the package's cache loads an entry, another process may load too (a shared flock on
    the directory's lock file) but not save; while it saves, neither."""
    import fcntl
    import types

    from numba.core import caching
    from numba.core.registry import cpu_target

    from kbest_bleu import jit
    cache = _kernel_cache("kbest_bleu.counting._kernels", str(tmp_path))
    cache._impl = types.SimpleNamespace(locator=types.SimpleNamespace(ensure_cache_path=lambda: None))
    seen = []

    def others_may(*_):  # another open file description, as another process's
        fd = os.open(tmp_path / jit._LOCK_NAME, os.O_RDONLY)
        try:
            for kind in (fcntl.LOCK_SH, fcntl.LOCK_EX):
                try:
                    fcntl.flock(fd, kind | fcntl.LOCK_NB)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    seen.append(True)
                except BlockingIOError:
                    seen.append(False)
        finally:
            os.close(fd)
    cache._load_overload = others_may
    assert cache.load_overload(None, cpu_target.target_context) is None
    monkeypatch.setattr(caching.FunctionCache, "save_overload", others_may)
    cache.save_overload(None, None)
    assert seen == [True, False, False, False]  # load: others load, not save; save: neither
    others_may()
    assert seen[-2:] == [True, True]  # released after each


def test_a_file_system_without_locks_keeps_the_cache(tmp_path, monkeypatch, capsys):
    """Where flock is refused (ENOLCK), entries still load and save, as numba does unlocked: no
    warning, no compile in memory instead."""
    import errno
    import fcntl
    import types

    from numba.core import caching
    from numba.core.registry import cpu_target

    from kbest_bleu import jit

    def refused(*_):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", refused)
    monkeypatch.setattr(jit, "_warned", [])
    cache = _kernel_cache("kbest_bleu.counting._kernels", str(tmp_path))
    cache._impl = types.SimpleNamespace(locator=types.SimpleNamespace(ensure_cache_path=lambda: None))
    cache._load_overload = lambda *_: "loaded"
    saved = []
    monkeypatch.setattr(caching.FunctionCache, "save_overload", lambda self, sig, data: saved.append(data))
    assert cache.load_overload(None, cpu_target.target_context) == "loaded"
    cache.save_overload(None, "data")
    assert saved == ["data"] and capsys.readouterr().err == ""


# numba's save of a cache entry, slowed where it races: after reading the index, and between
# writing the index and writing the data, each step waiting until a given time (seconds after T0)
SLOW_SAVE = """
import os, sys, time
from numba.core import caching
T0 = float(os.environ["T0"])
INDEX_AT, DATA_AT = (float(x) for x in os.environ["AT"].split(","))
saving = []
load_index, save_index, save = (caching.IndexDataCacheFile._load_index, caching.IndexDataCacheFile._save_index,
                                 caching.IndexDataCacheFile.save)
def slow_load_index(self):
    out = load_index(self)
    if saving:
        time.sleep(max(0.0, T0 + INDEX_AT - time.time()))
    return out
def slow_save_index(self, overloads):
    save_index(self, overloads)
    time.sleep(max(0.0, T0 + DATA_AT - time.time()))
def tracked_save(self, key, data):
    saving.append(1)
    try:
        save(self, key, data)
    finally:
        saving.pop()
caching.IndexDataCacheFile._load_index = slow_load_index
caching.IndexDataCacheFile._save_index = slow_save_index
caching.IndexDataCacheFile.save = tracked_save
sys.path.insert(0, os.environ["PROBE"])
from kbest_bleu_probe.kernel import f
print(f(int(sys.argv[1])) if sys.argv[1].isdigit() else f(float(sys.argv[1])))
"""


def test_two_processes_saving_one_kernel_at_once_keep_each_signature_on_its_own_code(tmp_path):
    """Two processes compile one kernel for two signatures into one fresh cache, their saves
    interleaved at the steps numba leaves unlocked (both read the empty index; the int save
    writes its index first and its data last). Unlocked, both pick the first data file and the
    float signature's key ends on the int machine code (f(0.5) read 1). The cache's lock makes
    the second save wait for the first: each signature loads its own code."""
    import time

    pkg = tmp_path / "kbest_bleu_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernel.py").write_text("from kbest_bleu.jit import njit\n@njit()\ndef f(x):\n    return x + 1\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PROBE": str(tmp_path),
           "T0": str(time.time() + 6.0)}  # both compiles done by then: the saves start together
    runs = [subprocess.Popen([sys.executable, "-c", SLOW_SAVE, arg], env={**env, "AT": at}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for arg, at in (("1", "0.5,2.0"), ("0.5", "1.0,1.5"))]
    outs = [r.communicate(timeout=120) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], [o[1] for o in outs]
    assert [o[0].split() for o in outs] == [["2"], ["1.5"]]
    check = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom kbest_bleu_probe.kernel import f\n"
             "print(f(1), f(0.5), len(f.stats.cache_hits), len(f.stats.cache_misses))")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "1.5", "2", "0"]  # both loaded from the cache, each its own code


@pytest.mark.exhaustive
def test_warmup_compiles_ahead_and_then_no_job_compiles(tmp_path):
    """A fresh numba cache: a small job (numpy engine) compiles nothing; so does a bigger one,
    which runs on the numpy engine too and says why; a kernels job announces its compile. Warmup
    on another fresh cache compiles the kernels; a second warmup finds everything cached; then
    the common jobs and calls compile nothing, and the bigger job takes the kernels."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(*args):
        out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out

    small = run("-c", COUNTING + f"""
from kbest_bleu.cli import main
assert main(["score", {str(SAMPLE)!r}, "-o", {str(tmp_path / "a.parquet")!r}]) == 0
print(compiled)
""")
    assert small.stdout.strip().splitlines()[-1] == "[]"  # the numpy engine: nothing to compile
    assert "compiling the counting kernels" not in small.stderr
    mid = run("-c", COUNTING + MID_SIZE.format(sample=str(SAMPLE), out=str(tmp_path / "m.parquet")))
    assert mid.stdout.strip().splitlines()[-1] == "[] numpy"  # not compiled yet: numpy engine, no compile
    assert "not compiled yet (a first run): this job runs on the numpy engine" in mid.stderr
    job = run("-m", "kbest_bleu", "score", str(SAMPLE), "-o", str(tmp_path / "a.parquet"), "--engine", "kernels")
    assert "compiling the counting kernels for this machine" in job.stderr
    # warmup on a fresh cache: the kernels job above compiled its own kernels, which warmup must
    # compile for the jobs below by itself (a parquet file's read-only buffers once needed more)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "warmed")
    first = run("-m", "kbest_bleu", "warmup")
    assert int(re.search(r"compiled (\d+) kernel functions", first.stdout).group(1)) > 0
    again = run("-m", "kbest_bleu", "warmup")
    assert "every kernel was in the cache already" in again.stdout
    code = COUNTING + f"""
from kbest_bleu.cli import main
import kbest_bleu as kb
for tok in ("none", "13a", "char"):
    assert main(["score", {str(SAMPLE)!r}, "-o", {str(tmp_path / "b.parquet")!r}, "-t", tok, "--engine", "kernels"]) == 0
    kb.sentence_bleu("the cat", ["the cat sat"], tokenize=tok)
kb.score_kbest([["a", "b"], ["a"]], [[["a", "b"]]], [0, 0], tokenize="none")
print(compiled)
"""
    jobs = run("-c", code)
    assert jobs.stdout.strip().splitlines()[-1] == "[]"
    assert "compiling the counting kernels" not in jobs.stderr
    mid = run("-c", COUNTING + MID_SIZE.format(sample=str(SAMPLE), out=str(tmp_path / "m.parquet")))
    assert mid.stdout.strip().splitlines()[-1] == "[] kernels"  # compiled now: the same job takes the kernels


def test_cached_kernels_load_without_numbas_compiler_registries(tmp_path):
    """A job on cached kernels skips numba's registries (typed containers, polynomials, ...: ~0.2 s
    a process) and the numba modules that only lend globals to its library functions'
    environments (``numba.np.arrayobj``: ~0.07 s); its output equals the in-process job's. Later
    in the same process a compile still finds every registry (numba's compiler refreshes them
    itself), and a function calling the same library functions (np.zeros, np.empty, min) compiles,
    raises their errors, is saved to its cache and loads from it in the next process."""
    from kbest_bleu.cli import main
    assert main(["score", str(SAMPLE), "-t", "13a", "-q", "--engine", "kernels", "-o",
                 str(tmp_path / "a.parquet")]) == 0
    (tmp_path / "later.py").write_text(
        "import numpy as np\nfrom numba import njit, typed\n"
        "@njit(cache=True)\ndef later(a, n):\n    d = typed.Dict()\n    d[1] = np.sum(a)\n"
        "    z = np.zeros(n, np.int64)\n    e = np.empty(n, np.int32)\n    e[:] = 2\n"
        "    return d[1] + z.sum() + min(e.min(), 5)\n")
    code = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom kbest_bleu.cli import main\n"
            f"assert main(['score', {str(SAMPLE)!r}, '-t', '13a', '-q', '--engine', 'kernels', '-o', "
            f"{str(tmp_path / 'b.parquet')!r}]) == 0\n"
            "print('numba.typed.typeddict' in sys.modules, 'numba.np.polynomial' in sys.modules, "
            "'numba.np.arrayobj' in sys.modules)\n"
            "import numpy as np\nfrom later import later\n"
            "print(later(np.arange(5.0), 3), len(later.stats.cache_hits))\n"
            "try:\n    later(np.arange(5.0), -1)\nexcept ValueError as exc:\n    print(str(exc).replace(' ', '_'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-6:] == ["False", "False", "False", "12.0", "0", "negative_dimensions_not_allowed"]
    again = subprocess.run([sys.executable, "-c", f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
                            "import numpy as np\nfrom later import later\n"
                            "print(later(np.arange(5.0), 3), len(later.stats.cache_hits))\n"],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["12.0", "1"]  # saved by the first process, loaded here
    import pyarrow.parquet as pq
    assert pq.read_table(tmp_path / "a.parquet").equals(pq.read_table(tmp_path / "b.parquet"))
