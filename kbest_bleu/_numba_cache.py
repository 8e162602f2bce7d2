"""Numba's on-disk cache never fails a job (README, "Failure behaviour").

``@njit(cache=True)`` loads compiled kernels from, and saves them to, the cache directory (beside
the sources, or ``NUMBA_CACHE_DIR``). A full or unwritable directory makes saving raise
(``[Errno 28]``), a corrupted index or data file makes loading raise (``UnpicklingError``,
``EOFError``). Importing this module wraps numba's ``Cache.load_overload`` / ``save_overload``:
on such an error the kernel is compiled in memory instead (the same machine code, so the same
numbers) and one warning line names the directory and ``NUMBA_CACHE_DIR``.

A kernel missing from the cache (a first run after install, a new numba or CPU) is compiled:
~12 s for a parquet job's kernels on 2 cores. One INFO line on the ``kbest_bleu`` logger (the
CLI shows it unless ``-q``) says so the first time, and names ``kbest-bleu warmup``, which
compiles them ahead (README, "First run").

Loading the package's own kernels skips numba's refresh of the target context: that refresh
imports and installs numba's compiler registries (~40 modules, ~0.2 s per process), which
compiling needs and loading machine code does not. What loading does need, numba's runtime (NRT:
the kernels allocate arrays), is initialised here. A compile still refreshes (numba's compiler
does it first), and other packages' cached functions load as numba loads them. The limit: a
registry module that adds LLVM symbols when imported (``numba.cpython.hashing``: hashing of
strings, as typed dicts with string keys do) is not loaded, so a kernel that needs such a symbol
must import that module first (none does; the warmup test loads every common kernel in fresh
processes).

Loading them also skips importing the numba modules that only lend their globals to the
environments of numba's own library functions that the kernels call (``np.empty``'s and
``np.zeros``'s in ``numba.np.arrayobj``, ``min``/``sum`` in ``numba.np.arraymath``, ~0.07 s per
process, a seventh of a 200,000-row job): such an environment is built with globals that name the
module and hold nothing else. A nopython function never reads its environment's globals (only
object mode's lowering does, and numba's library has no object-mode code; the consts, which
exceptions and boxing use, are restored as numba restores them). The kernels' own environments
keep the package module's globals, a module already imported lends its globals as usual, and
modules whose import does more (``numba.cpython.hashing`` adds LLVM symbols) are imported as numba
imports them.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from numba.core import caching, environment
from numba.core.compiler_lock import global_compiler_lock
from numba.core.runtime import nrt

from ._kernel_codes import before_compile, blas_probe_skipped

_original_load = caching.Cache.load_overload
_original_rebuild_env = getattr(environment, "_rebuild_env", None)
# numba modules whose import only lends globals to the environments of the library functions the
# kernels call (measured: arrayobj alone ~0.065 s). Not numba.cpython.hashing and the like, whose
# import also adds LLVM symbols that a kernel's machine code may need
_GLOBALS_ONLY = frozenset({"numba.np.arrayobj", "numba.np.arraymath", "numba.np.npyimpl"})
_original_save = caching.Cache.save_overload
_warned: list = []
_announced: list = []


def _warn(cache: Any, exc: BaseException) -> None:
    if _warned:
        return
    _warned.append(True)
    path = getattr(cache, "_cache_path", "(unknown)")
    sys.stderr.write(f"kbest-bleu: warning: the numba cache {path} is unusable ({type(exc).__name__}: {exc}); "
                     "compiling without it (set NUMBA_CACHE_DIR to a writable directory to keep compiled "
                     "kernels)\n")


def _announce(cache: Any) -> None:
    if _announced:
        return
    _announced.append(True)
    logging.getLogger("kbest_bleu").info(
        "compiling the scoring kernels for this machine, once (~12 s for a parquet job on 2 cores); later runs "
        "load them from %s; 'kbest-bleu warmup' compiles them ahead", getattr(cache, "_cache_path", "numba's cache"))


def _rebuild_env(modname: str, consts: list, env_name: str) -> Any:
    """numba's ``environment._rebuild_env`` (what unpickling a cached environment calls), for
    the package's kernels: the environment of a function from one of :data:`_GLOBALS_ONLY`, not
    imported yet, gets globals that name the module, without importing it (see the module
    docstring)."""
    if modname not in _GLOBALS_ONLY or modname in sys.modules:
        return _original_rebuild_env(modname, consts, env_name)
    env = environment.lookup_environment(env_name)
    if env is None:
        env = environment.Environment({"__name__": modname})  # "__name__": numba may still cache it
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
    return env


def _load(cache: Any, sig: Any, target_context: Any) -> Any:
    """numba's ``load_overload``, without the registries and the library modules (:func:`_rebuild_env`)
    for the package's own kernels."""
    own = str(getattr(getattr(cache, "_py_func", None), "__module__", "")).startswith("kbest_bleu.")
    if not (own and hasattr(cache, "_load_overload") and hasattr(cache, "_guard_against_spurious_io_errors")):
        return _original_load(cache, sig, target_context)
    nrt.rtsys.initialize(target_context)  # once per process; later calls return at once
    # numba's own function, else (numba moved it, or another package wrapped it) no swap
    swap = _original_rebuild_env is not None and getattr(environment, "_rebuild_env", None) is _original_rebuild_env
    # the swap is seen by this load's unpickling alone: every load and save holds numba's lock
    with global_compiler_lock, blas_probe_skipped(), cache._guard_against_spurious_io_errors():
        if swap:
            environment._rebuild_env = _rebuild_env
        try:
            return cache._load_overload(sig, target_context)
        finally:
            if swap:
                environment._rebuild_env = _original_rebuild_env
    return None  # the guard swallowed a spurious I/O error: compile, as numba does


def _load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    try:
        loaded = _load(self, sig, target_context)
    except Exception as exc:  # any unreadable cache entry: compile instead
        _warn(self, exc)
        before_compile()
        return None
    if loaded is None:  # not in the cache: numba compiles it now
        _announce(self)
        before_compile()
    return loaded


def _save_overload(self: Any, sig: Any, data: Any) -> None:
    try:
        _original_save(self, sig, data)
    except Exception as exc:  # full disk, read-only directory: keep the in-memory kernel
        _warn(self, exc)


if getattr(caching.Cache.load_overload, "__module__", None) != __name__:
    caching.Cache.load_overload = _load_overload
    caching.Cache.save_overload = _save_overload
