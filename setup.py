"""Compile the package's kernels at install (issue 33, "First run"): the wheel's build runs
``kbest-bleu warmup`` on the built package, so numba's cache files of every kernel (and the text
kernels' ahead-of-time module) are installed beside the modules, and the first run of any command
compiles nothing. The cache entries are keyed to this machine's CPU and numba version: installed
elsewhere they are ignored and the kernels compile on first use, as without them. Set
``KBEST_BLEU_COMPILE_AT_INSTALL=0`` to skip it (a faster install, a slower first run). A failure
here never fails the install: it is reported, and the kernels compile on first use."""

import os
import subprocess
import sys
import time

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildAndCompile(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get("KBEST_BLEU_COMPILE_AT_INSTALL", "1") == "0" or getattr(self, "editable_mode", False):
            return
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "KBEST_BLEU_AOT")}
        # the built package first; pip's isolated build environment reaches its packages through
        # PYTHONPATH too, so that stays after it
        env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(self.build_lib)] + ([env["PYTHONPATH"]]
                                                                                 if env.get("PYTHONPATH") else []))
        t0 = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "kbest_bleu", "warmup", "-j", "2"], env=env,
                                  cwd=os.path.abspath(self.build_lib), timeout=900)
            status = f"exit {done.returncode}"
        except (OSError, subprocess.SubprocessError) as exc:
            status = f"not run ({exc})"
        print(f"kbest_bleu: kernels compiled at install in {time.perf_counter() - t0:.0f} s ({status}); "
              "KBEST_BLEU_COMPILE_AT_INSTALL=0 skips this", file=sys.stderr)


setup(cmdclass={"build_py": BuildAndCompile})
