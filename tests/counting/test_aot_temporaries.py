"""The ahead-of-time build leaves nothing in $TMPDIR (issue 34): numba.pycc's C compiler check
made two directories there on every ``kbest-bleu warmup`` and never removed them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from kbest_bleu.counting import aot

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None,
                                reason="no C compiler: the ahead-of-time kernels cannot be built")

# a build in a fresh process (pycc checks the compiler once per process), then what the caller sees
BUILD = """
import json, os, sys, tempfile
from pathlib import Path
from kbest_bleu.counting import aot
path = aot.build(Path(sys.argv[1]))
import numba.pycc.cc, numba.pycc.platform
print(json.dumps({"path": str(path), "gettempdir": tempfile.gettempdir(), "tempdir": tempfile.tempdir,
                  "TMPDIR": os.environ.get("TMPDIR"),
                  "restored": numba.pycc.platform.mkdtemp is tempfile.mkdtemp and numba.pycc.cc.tempfile is tempfile}))
"""


@pytest.mark.exhaustive  # a build in a process of its own: ~16 s on 2 busy cores
def test_the_ahead_of_time_build_leaves_no_temporary_and_the_callers_tempfile_as_it_was(tmp_path):
    work, out = tmp_path / "TMPDIR", tmp_path / "module"
    work.mkdir()
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", BUILD, str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(work)})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(p.name for p in out.iterdir()) == sorted([os.path.basename(seen["path"]),
                                                            os.path.basename(seen["path"]).split(".")[0] + ".signatures"])
    assert list(work.iterdir()) == [], "the build left temporaries in $TMPDIR"
    # the caller's temporaries still go to its $TMPDIR: nothing of the process was left redirected
    assert seen["gettempdir"] == str(work) and seen["TMPDIR"] == str(work) and seen["restored"], seen


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPendingDeprecationWarning")  # pycc's
def test_pyccs_compiler_check_makes_its_directories_in_the_builds_own(tmp_path, monkeypatch):
    """The check itself (numba caches its answer per process: its uncached function here), in
    the block that :func:`aot.build` runs pycc in: $TMPDIR stays empty, what the check left is in
    the build's directory (removed with it), and pycc's temporaries go where they went after it."""
    import numba.pycc.cc as pycc_cc
    import numba.pycc.platform as pycc_platform
    work, own = tmp_path / "TMPDIR", tmp_path / "build"
    work.mkdir()
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    with aot._pycc_temporaries(str(own)):
        assert pycc_platform.external_compiler_works.__wrapped__()
    assert list(work.iterdir()) == []
    assert sorted(f.suffix for d in own.iterdir() for f in d.iterdir()) == [".c", ".cxx", ".o", ".o"]
    assert pycc_platform.mkdtemp is tempfile.mkdtemp and pycc_cc.tempfile is tempfile
