import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

DATA = Path(os.environ.get("KBEST_BLEU_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
EXTENSIONS = Path(os.environ.get("KBEST_BLEU_EXTENSIONS", DATA.parent / "extensions"))
# The exhaustive sweeps (every real sentence through every tokenizer, the full stress sets) run in
# CI (.ci/run sets KBEST_BLEU_EXHAUSTIVE=1); the README's test command skips them to stay fast.
EXHAUSTIVE = bool(os.environ.get("KBEST_BLEU_EXHAUSTIVE"))

# The suite tests numba's kernels whether or not `kbest-bleu warmup` built the ahead-of-time module
# in this checkout (kbest_bleu.counting.aot); tests/counting/test_aot.py builds its own and turns it on where it runs.
os.environ["KBEST_BLEU_AOT"] = "0"

settings.register_profile("ci", max_examples=150, deadline=None)
settings.register_profile("quick", max_examples=60, deadline=None)
settings.load_profile("ci" if EXHAUSTIVE else "quick")


def pytest_sessionstart(session):
    """Every kernel compiled before the first test, two processes at once (kbest_bleu.warmup), when
    numba's cache lacks any: a cold cache compiles in ~1 min of wall time this way instead of
    ~2.5 min billed to whichever tests first call each kernel. Under pytest-xdist this runs in the
    controller before any worker starts (xdist starts them in a later sessionstart hook), and not
    in the workers (PYTEST_XDIST_WORKER set): they find the cache as the controller left it.
    Nothing to do on a warm cache (the check reads the cache's indexes); never under
    NUMBA_DISABLE_JIT; KBEST_BLEU_TEST_WARMUP=0 turns it off."""
    if (os.environ.get("NUMBA_DISABLE_JIT") == "1" or os.environ.get("KBEST_BLEU_TEST_WARMUP") == "0"
            or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    from kbest_bleu import warmup
    missing, _ = warmup.uncovered()
    if not missing:
        return
    t0 = time.perf_counter()
    sys.stderr.write(f"conftest: {len(missing)} kernels not compiled yet: compiling every area first\n")
    result = warmup.warm_up(processes=2)
    left = f"{len(result.missing)} still missing" if result.missing else "all"
    sys.stderr.write(f"conftest: kernels compiled in {time.perf_counter() - t0:.1f} s ({left})\n")


def pytest_configure(config):
    config.addinivalue_line("markers", "exhaustive: slow sweep, run only with KBEST_BLEU_EXHAUSTIVE=1 (CI)")
    config.addinivalue_line("markers", "jit_free: property tests CI also runs as plain Python (NUMBA_DISABLE_JIT=1)")


def pytest_collection_modifyitems(config, items):
    if EXHAUSTIVE:
        return
    skip = pytest.mark.skip(reason="exhaustive sweep: set KBEST_BLEU_EXHAUSTIVE=1 (CI does)")
    for item in items:
        if "exhaustive" in item.keywords:
            item.add_marker(skip)


def _required(path: Path, what: str) -> Path:
    """Skip when a shared real-data path is absent, fail under CI (KBEST_BLEU_REQUIRE_DATA=1), so
    real-data checks cannot silently disappear there."""
    if not path.exists():
        if os.environ.get("KBEST_BLEU_REQUIRE_DATA"):
            pytest.fail(f"{what} required (KBEST_BLEU_REQUIRE_DATA=1) but not found at {path}")
        pytest.skip(f"{what} not found at {path}; set KBEST_BLEU_DATA")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (or $KBEST_BLEU_DATA)."""
    _required(DATA / "moses_mert_nbest.parquet", "real data")
    return DATA


@pytest.fixture(scope="session")
def extensions() -> Path:
    """../shared/extensions (or $KBEST_BLEU_EXTENSIONS): gold outputs of the Meteor jar and of the
    BLEU2VEC code, toy models, function-word lists, paraphrase tables."""
    return _required(EXTENSIONS, "shared extensions data")
