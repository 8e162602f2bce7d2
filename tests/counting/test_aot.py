"""The text path's kernels compiled ahead of time (kbest_bleu._aot): built from numba's kernels by
numba's ahead-of-time compiler, loaded without importing numba, the same numbers as numba's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyarrow.compute as pc

from kbest_bleu.counting.codes import REF_CLOSEST
from kbest_bleu.encode import list_offsets
from kbest_bleu.stats import text_kernel_stats
from kbest_bleu.tokenize import prepare
from kbest_bleu.counting import aot as _aot
from kbest_bleu.warmup import run_area
from kbest_bleu.cli import SAMPLE, main

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None,
                                reason="no C compiler: the ahead-of-time kernels cannot be built")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The module, built in a directory of its own from this process's numba kernels."""
    run_area("counting")  # every counting path compiled (or loaded from the numba cache) in this process
    return _aot.build(tmp_path_factory.mktemp("aot"))


@pytest.fixture
def compiled(built, monkeypatch) -> _aot.Kernels:
    """This process's jobs on the ahead-of-time kernels (what loaded() finds in ``built``)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(built.parent))
    monkeypatch.delenv("KBEST_BLEU_AOT")
    monkeypatch.setattr(_aot, "_found", [])
    found = _aot.loaded()
    assert isinstance(found, _aot.Kernels)
    return found


# a job whose numba imports fail (the meta path finder refuses them), then the numba-free check
NO_NUMBA = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        frame, callers = sys._getframe(1), set()
        while frame is not None:
            callers.add(frame.f_code.co_name)
            frame = frame.f_back
        if name.split(".")[0] == "numba" and "_key" not in callers:  # _aot._key locates numba only
            raise ImportError("numba refused: " + name)
sys.meta_path.insert(0, Refuse())
from kbest_bleu.cli import main
code = main(sys.argv[1:])
assert "numba" not in sys.modules, "numba was imported"
sys.exit(code)
"""


@pytest.mark.parametrize("tok", ["none", "13a"])
def test_a_job_on_the_compiled_kernels_imports_no_numba_and_scores_as_numba(built, tmp_path, tok):
    """The bundled real sample and a table with entities, empty and repeated hypotheses and
    segments cut across batches, scored in a process where importing numba fails: the same output,
    to the bit, as numba's kernels in this process."""
    rng = np.random.default_rng(3)
    words = ["a", "b", "&amp;", "c.", "1-2", "é", "x,y"]
    n = 900
    hyps = [" ".join(rng.choice(words, rng.integers(0, 9))) for _ in range(n)]
    seg = np.arange(n) // 30
    refs = [[" ".join(rng.choice(words, 6)) for _ in range(1 + s % 3)] for s in range(n // 30)]
    table = pa.table({"segment_id": seg, "hypothesis": hyps, "references": [refs[s] for s in seg]})
    pq.write_table(table, tmp_path / "mixed.parquet", row_group_size=250)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(built.parent)}
    env.pop("KBEST_BLEU_AOT")
    for src in (SAMPLE, tmp_path / "mixed.parquet"):
        args = ["score", str(src), "-t", tok, "-q", "--stats", "--batch-size", "200", "-o"]
        run = subprocess.run([sys.executable, "-c", NO_NUMBA, *args, str(tmp_path / "aot.parquet")],
                             env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert main([*args, str(tmp_path / "numba.parquet"), "--engine", "kernels"]) == 0
        assert pq.read_table(tmp_path / "aot.parquet").equals(pq.read_table(tmp_path / "numba.parquet"))


WORDS = st.lists(st.sampled_from(["a", "b", "c", "a.", "1-2", "&quot;"]), max_size=8).map(" ".join)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixture holds no example's state
@given(hyps=st.lists(WORDS, min_size=1, max_size=12), refs=st.lists(st.lists(WORDS, min_size=1, max_size=3),
                                                                 min_size=1, max_size=4),
       tok=st.sampled_from(["none", "13a"]), per=st.integers(1, 4))
def test_compiled_kernels_count_as_numbas(compiled, monkeypatch, hyps, refs, tok, per):
    """Tiny vocabularies (clipping and overlaps happen): the text kernel's statistics (matches,
    totals, lengths) on the compiled kernels equal numba's, on one thread and on two."""
    n_seg = min(len(refs), -(-len(hyps) // per))
    ptr = np.minimum(np.arange(n_seg + 1) * per, len(hyps)).astype(np.int64)
    ptr[-1] = len(hyps)
    hyps, refs = pa.array(hyps, pa.string()), pa.array(refs[:n_seg], pa.list_(pa.string()))
    for threads in (1, 2):
        got = _counts(hyps, refs, ptr, tok, threads)
        monkeypatch.setattr(_aot, "_found", [None])
        want = _counts(hyps, refs, ptr, tok, threads)
        monkeypatch.setattr(_aot, "_found", [compiled])
        for g, w in zip(got, want):
            assert np.array_equal(g, w)


def _counts(hyps: pa.Array, refs: pa.Array, ptr: np.ndarray, tok: str, threads: int) -> tuple:
    """matches, totals, hyp_len, ref_len of the text kernel (closest reference length, 4 orders)."""
    hyp_text, rules = prepare(hyps, tok, False, "kernels")
    ref_text, _ = prepare(pc.list_flatten(refs), tok, False, "kernels")
    return text_kernel_stats(hyp_text, ref_text, ptr, list_offsets(refs), 4, REF_CLOSEST, rules, threads)


def test_arguments_of_other_types_go_to_numbas_kernel(compiled):
    """An export runs only for the argument types it was compiled for: int32 offsets (no export)
    take numba's kernel, with its result."""
    from kbest_bleu.counting import _kernels as _counting
    data = np.frombuffer(b"abab", np.uint8)
    args = (data, np.array([0, 2, 4], np.int32), np.array([0, 1, 2], np.int32), np.array([0, 0], np.int64))
    assert np.array_equal(compiled._rows_equal_owner(*args), _counting._rows_equal_owner(*args))
    wide = (data, np.array([0, 2, 4], np.int64), np.array([0, 1, 2], np.int64), np.array([0, 0], np.int64))
    assert np.array_equal(compiled._rows_equal_owner(*wide), _counting._rows_equal_owner(*wide))
    assert compiled._split is _counting._split  # not compiled ahead: numba's


@pytest.mark.exhaustive  # builds the module twice (~10 s): CI runs it
def test_a_module_built_for_other_sources_is_not_loaded(built, monkeypatch):
    """The module's name carries the key of the sources, numba, Python and architecture it was
    built for: another key finds nothing (numba's kernels serve). A rebuild removes stale modules
    from the installation's own cache directory, never from a shared one (NUMBA_CACHE_DIR,
    ~/.cache/kbest_bleu), where other installations' modules live."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(built.parent))
    monkeypatch.delenv("KBEST_BLEU_AOT")
    with monkeypatch.context() as m:
        m.setattr(_aot, "_found", [])
        m.setattr(_aot, "_key", lambda: "0" * 20)
        assert _aot.loaded() is None
    stale = built.parent / "kbest_bleu_kernels_00000000000000000000.signatures"
    stale.write_text("")
    assert _aot.build(built.parent) == built and stale.exists() and built.exists()  # a shared directory
    monkeypatch.setattr(_aot, "_OWN_CACHE", built.parent)
    assert _aot.build(built.parent) == built and not stale.exists() and built.exists()


def test_a_signature_file_that_does_not_match_its_module_is_not_used(built, tmp_path, monkeypatch):
    """Each export's name carries a digest of the argument types it was compiled for: a signature
    file whose types do not hash to the names (another build's, half replaced) loads nothing."""
    for f in built.parent.glob(built.name.split(".")[0] + ".*"):
        shutil.copy(f, tmp_path / f.name)
    sig = tmp_path / (built.name.split(".")[0] + ".signatures")
    sig.write_text(sig.read_text().replace(" F rw", " C rw"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KBEST_BLEU_AOT")
    monkeypatch.setattr(_aot, "_found", [])
    assert _aot.loaded() is None


def test_warmup_without_the_ahead_of_time_compiler_reports_it_and_succeeds(monkeypatch, capsys):
    """A numba without pycc (or no C compiler): warmup still compiles numba's kernels, says the
    text kernels were not compiled ahead of time and why, and exits 0; jobs then take numba's."""
    def no_pycc(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'numba.pycc'")
    monkeypatch.setattr(_aot, "build", no_pycc)
    assert main(["warmup", "--area", "counting", "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "kernels ready" in out
    assert "not compiled ahead of time (ModuleNotFoundError: No module named 'numba.pycc')" in out
    assert "jobs load numba's kernels instead" in out


@pytest.mark.parametrize("size", [0, 1000, 100_000])
def test_a_truncated_module_is_refused_not_loaded(built, tmp_path, size):
    """A module cut short (a full disk, a copy interrupted) once killed every job with SIGBUS when
    loaded; its digest, written in the signature file at build, no longer matches: nothing is
    loaded and numba's kernels serve. Checked in a child process, which a load would crash."""
    for f in built.parent.glob(built.name.split(".")[0] + ".*"):
        shutil.copy(f, tmp_path / f.name)
    module = tmp_path / built.name
    module.write_bytes(module.read_bytes()[:size])
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("KBEST_BLEU_AOT", None)
    out = subprocess.run([sys.executable, "-c", "from kbest_bleu.counting import aot; print(aot.loaded())"],
                         capture_output=True, text=True, env=env)
    assert (out.returncode, out.stdout.strip()) == (0, "None"), out.stderr
    intact = tmp_path / "intact"
    intact.mkdir()
    for f in built.parent.glob(built.name.split(".")[0] + ".*"):
        shutil.copy(f, intact / f.name)
    env["NUMBA_CACHE_DIR"] = str(intact)
    out = subprocess.run([sys.executable, "-c", "from kbest_bleu.counting import aot; print(type(aot.loaded()).__name__)"],
                         capture_output=True, text=True, env=env)
    assert (out.returncode, out.stdout.strip()) == (0, "Kernels"), out.stderr  # the same files, whole, load
