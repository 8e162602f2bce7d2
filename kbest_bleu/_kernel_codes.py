"""The codes the counting kernels take as arguments, and the kernels module loaded on first use.

Importing :mod:`kbest_bleu._counting` imports numba and, at the first call, loads its cached
kernels: ~0.2 s per process, more than a small job's whole scoring. The core modules reach the
kernels through :func:`kernels`, so that a job run by the numpy engine
(:mod:`kbest_bleu._numpy_counting`) never pays that cost.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

from . import _collector

__all__ = ["BYTE_DIGIT", "BYTE_DOT", "BYTE_HYPHEN", "BYTE_MAY_SPACE", "BYTE_ORDINARY", "BYTE_PUNCT", "BYTE_SPACE",
           "REF_AVERAGE", "REF_CLOSEST", "REF_SHORTEST", "RULES_13A", "RULES_NONE", "RULES_ZH", "before_compile",
           "blas_probe_skipped", "kernels", "python_function", "skip_blas_probe"]

# effective reference length policies (README, "Presets")
REF_CLOSEST = 0
REF_SHORTEST = 1
REF_AVERAGE = 2

# byte classes of the token splitter (kbest_bleu._counting._split)
BYTE_ORDINARY = 0
BYTE_SPACE = 1  # an ASCII whitespace byte
BYTE_MAY_SPACE = 2  # lead byte of a multi-byte character that may be whitespace
# bytes the 13a/zh regex rules look at (ordinary bytes when no rules apply)
BYTE_PUNCT = 3  # rule 1's class [{-~[-` -&(-+:-@/] (space excepted)
BYTE_DOT = 4  # '.' and ','
BYTE_HYPHEN = 5
BYTE_DIGIT = 6

# what the splitter does besides str.split()
RULES_NONE = 0  # plain str.split()
RULES_ZH = 1  # sacrebleu TokenizerRegexp's four rules, then str.split()
RULES_13A = 2  # the same on the line padded with a space on each side (Tokenizer13a)


_BLAS = "scipy.linalg.cython_blas"
_blas_probe = [True]


def skip_blas_probe() -> None:
    """Let numba skip its BLAS probe in this process: for a process that runs no jitted linear
    algebra of its own (the ``kbest-bleu`` command; no kernel of the package calls ``np.dot``).

    numba's numpy registry, when imported, imports ``scipy.linalg`` to see whether ``np.dot`` may
    use BLAS: 0.3 s per process where scipy is installed. It is imported before a compile, and
    while a cached kernel loads if the kernel's environment lives in it and numba's loader is
    not the one :mod:`kbest_bleu._numba_cache` knows; both happen under
    :func:`blas_probe_skipped`, so the probe finds no BLAS:
    numba's jitted ``np.dot`` of vectors uses its own loop; anything that needs BLAS later
    imports it then. A library caller keeps numba's default.
    """
    _blas_probe[0] = False


@contextmanager
def blas_probe_skipped() -> Iterator[None]:
    """While numba may import its numpy registry (loading a kernel whose environment lives in it,
    or compiling one): with the probe skipped (:func:`skip_blas_probe`), scipy's BLAS cannot be
    imported, so the probe finds none; otherwise nothing changes."""
    if _blas_probe[0] or "numba.np.arraymath" in sys.modules or _BLAS in sys.modules:
        yield
        return
    sys.modules[_BLAS] = None  # the probe's import fails: numba records "no BLAS"
    try:
        yield
    finally:
        del sys.modules[_BLAS]


def before_compile() -> None:
    """Called when numba is about to compile one of the package's kernels (a cache miss): the
    module that probes is imported under :func:`blas_probe_skipped`, and the program's paused
    garbage collector resumes (:mod:`kbest_bleu._collector`)."""
    _collector.resume()
    with blas_probe_skipped():
        import numba.np.arraymath  # noqa: F401 (the module that probes, at its import)


def python_function(kernel: Any) -> Any:
    """The Python function of a jitted kernel (the kernel itself under NUMBA_DISABLE_JIT): for
    numpy-only helpers called from Python, where loading the compiled code (~10 ms a kernel per
    process) costs more than the call saves."""
    return getattr(kernel, "py_func", kernel)


def kernels() -> Any:
    """The kernels: those that ``kbest-bleu warmup`` compiled ahead of time for this installation
    (:mod:`kbest_bleu._aot`: loaded without numba; any other kernel taken from
    :mod:`kbest_bleu._counting`), else :mod:`kbest_bleu._counting` (imports numba on the first call)."""
    from . import _aot

    compiled = _aot.loaded()
    if compiled is not None:
        return compiled
    from . import _counting

    return _counting
