"""The one way the package's kernels are compiled (DESIGN.md section 5).

Every numba function of the package is declared with :func:`njit` (numba's options, the cache
always on). Importing this module imports no numba and changes nothing in the process; a kernel
module imports numba when it is imported itself. What :func:`njit` adds to numba's ``njit``:

- **A cache keyed by contents, scoped to the package.** Each kernel gets its own cache object
  (:func:`_cache_class`), not a patched numba class: a caller's own ``@njit(cache=True)``
  functions keep numba's behaviour. The entry is still numba's (same directory, same key of
  signature, CPU and numba version), but its freshness stamp is a digest of the *contents* of
  every module in the kernel's folder, where numba uses the file's timestamp: a kernel that
  calls a kernel of a sibling module is recompiled when either changes (numba alone would serve a
  stale caller), and an install that rewrites timestamps keeps valid entries. Rule: jitted code
  calls only jitted code of its own folder.
- **A broken cache never fails a job.** A full or read-only directory, a corrupted index or data
  file: the kernel compiles in memory instead (the same machine code), and one warning line names
  the directory and ``NUMBA_CACHE_DIR``.
- **Loading is not compiling.** numba refreshes its target context before it loads a cached
  function: ~40 modules of compiler registries, ~0.2 s per process, which only compiling needs.
  The package's kernels load without it (numba's runtime, NRT, is initialised here instead), and
  the environments of numba's library functions they call (``np.empty``, ``min``) are rebuilt
  without importing the modules that only lend them globals (:data:`_GLOBALS_ONLY`, ~0.07 s).
  A nopython function never reads those globals (only object mode's lowering does).
- **Compiles are announced.** The first cache miss of an area (``counting``, ``metrics.meteor``,
  ``tuning``...) logs one INFO line on the ``kbest_bleu`` logger naming the area and the cache;
  ``kbest-bleu warmup`` compiles every area ahead (:mod:`kbest_bleu.warmup`).
- **Saves and loads are locked across processes.** numba saves an entry by reading the index,
  picking a free data file name, then writing the index and the data, unlocked: two processes
  compiling signatures of one kernel at once (parallel jobs or Spark workers on a fresh cache,
  test workers) can both pick one name and leave a signature's key on the other's machine code,
  a wrong number later; and a load between a save's index and its data can read a stale data
  file. A save holds an exclusive ``flock`` on the cache directory's lock file, a load a shared
  one (:func:`_locked`).
- **A registry** of every kernel by area (:data:`REGISTRY`), which warm-up checks for coverage.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

from . import collector

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, numba's unlocked saves (:func:`_locked`)
    fcntl = None

__all__ = ["REGISTRY", "area_of", "before_compile", "blas_probe_skipped", "compiled", "njit", "python_function",
           "skip_blas_probe"]

_PACKAGE = __name__.rsplit(".", 1)[0]
# area ("counting", "metrics.meteor", ...) -> the kernels declared there, in declaration order
REGISTRY: dict[str, list] = {}
# numba modules whose import only lends globals to the environments of the library functions the
# kernels call (measured: arrayobj alone ~0.065 s). Not numba.cpython.hashing and the like, whose
# import also adds LLVM symbols that a kernel's machine code may need
_GLOBALS_ONLY = frozenset({"numba.np.arrayobj", "numba.np.arraymath", "numba.np.npyimpl"})
_BLAS = "scipy.linalg.cython_blas"
_blas_probe = [True]
_warned: list = []
_announced: set = set()
# the lock file of a cache directory (:func:`_locked`), and the directories this process holds locked
_LOCK_NAME = "kbest_bleu.lock"
_held: set = set()


def area_of(module: str) -> str:
    """The area of a kernel module: its folder inside the package (``kbest_bleu.counting._kernels``
    -> ``counting``, ``kbest_bleu.metrics.meteor._align`` -> ``metrics.meteor``); ``core`` at the top."""
    parts = module.split(".")[1:-1]
    return ".".join(parts) or "core"


@lru_cache(maxsize=None)
def _folder_stamp(folder: str) -> str:
    """Digest of the contents of every ``.py`` module in ``folder`` (sorted by name): the freshness
    stamp of the cache entries of the kernels defined there."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):  # all: a kernel also bakes in the constants it imports
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def njit(**options: Any) -> Callable[[Callable], Any]:
    """numba's ``njit`` with the package's cache (module docstring). ``options``: numba's
    (``parallel``, ``nogil``, ``inline``, ``fastmath``, ``error_model``); ``cache`` is always on.

    Under ``NUMBA_DISABLE_JIT=1`` numba returns the Python function, which is registered as it is.
    """
    options.pop("cache", None)

    def decorate(func: Callable) -> Any:
        from numba import njit as numba_njit

        kernel = numba_njit(**options)(func)
        if hasattr(kernel, "py_func"):
            kernel._cache = _cache_class()(func)
        REGISTRY.setdefault(area_of(func.__module__), []).append(kernel)
        return kernel

    return decorate


def python_function(kernel: Any) -> Any:
    """The Python function of a jitted kernel (the kernel itself under NUMBA_DISABLE_JIT): for
    numpy-only helpers called from Python, where loading the compiled code (~10 ms a kernel per
    process) costs more than the call saves."""
    return getattr(kernel, "py_func", kernel)


def compiled(kernel: Any) -> bool:
    """Whether ``kernel`` has machine code in this process or an entry in the on-disk cache for
    its current sources (reads the index only: compiles and loads nothing). True for a plain
    Python function (JIT disabled)."""
    if not hasattr(kernel, "py_func"):
        return True
    if kernel.signatures:
        return True
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # numba's private cache API moved: assume compiled (a compile is announced)
        return True


def skip_blas_probe() -> None:
    """Let numba skip its BLAS probe in this process: for a process that runs no jitted linear
    algebra of its own (the ``kbest-bleu`` program; no kernel of the package calls ``np.dot``).

    numba's numpy registry, when imported, imports ``scipy.linalg`` to see whether ``np.dot`` may
    use BLAS: 0.3 s per process where scipy is installed. It is imported before a compile, and
    while a cached kernel loads if its environment lives there; both happen under
    :func:`blas_probe_skipped`, so the probe finds no BLAS. A library caller keeps numba's default.
    """
    _blas_probe[0] = False


@contextmanager
def blas_probe_skipped() -> Iterator[None]:
    """While numba may import its numpy registry: with the probe skipped (:func:`skip_blas_probe`),
    scipy's BLAS cannot be imported, so the probe finds none; otherwise nothing changes."""
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
    garbage collector resumes (:mod:`kbest_bleu.collector`)."""
    collector.resume()
    with blas_probe_skipped():
        import numba.np.arraymath  # noqa: F401 (the module that probes, at its import)


def _warn(cache: Any, exc: BaseException) -> None:
    if _warned:
        return
    _warned.append(True)
    path = getattr(cache, "_cache_path", "(unknown)")
    sys.stderr.write(f"kbest-bleu: warning: the numba cache {path} is unusable ({type(exc).__name__}: {exc}); "
                     "compiling without it (set NUMBA_CACHE_DIR to a writable directory to keep compiled "
                     "kernels)\n")


def _announce(cache: Any) -> None:
    area = area_of(getattr(getattr(cache, "_py_func", None), "__module__", _PACKAGE + ".x"))
    if area in _announced:
        return
    _announced.add(area)
    logging.getLogger(_PACKAGE).info(
        "compiling the %s kernels for this machine, once; later runs load them from %s "
        "('kbest-bleu warmup' compiles every kernel ahead)", area, getattr(cache, "_cache_path", "numba's cache"))


@contextmanager
def _locked(cache: Any, exclusive: bool) -> Iterator[None]:
    """Hold the advisory lock (``fcntl.flock``) of the kernel cache's directory: exclusive for a
    save, shared for a load (module docstring). Not taken again in a process that holds it
    already (numba's compiler lock serializes its loads and saves); no lock where there is no
    ``fcntl``, the lock file cannot be opened (no cache directory yet: nothing to read) or the
    file system refuses locks."""
    path = os.path.join(getattr(cache, "_cache_path", ""), _LOCK_NAME)
    fd = None
    if fcntl is not None and path not in _held:
        for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):  # a read-only directory may hold the file
            try:
                fd = os.open(path, flags, 0o666)
                break
            except OSError:
                pass
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:  # a file system without locks (ENOLCK): numba's unlocked way, not no cache
            os.close(fd)
            fd = None
    if fd is None:
        yield
        return
    _held.add(path)
    try:
        yield
    finally:
        _held.discard(path)
        os.close(fd)  # releases the lock


@lru_cache(maxsize=1)
def _cache_class() -> type:
    """numba's ``FunctionCache`` for the package's kernels (module docstring); built on first use,
    so that importing this module imports no numba."""
    from numba.core import caching, environment
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import nrt

    original_rebuild_env = getattr(environment, "_rebuild_env", None)

    def rebuild_env(modname: str, consts: list, env_name: str) -> Any:
        # numba's environment._rebuild_env, for a library module of _GLOBALS_ONLY not imported
        # yet: globals that name the module, without importing it
        if modname not in _GLOBALS_ONLY or modname in sys.modules:
            return original_rebuild_env(modname, consts, env_name)
        env = environment.lookup_environment(env_name)
        if env is None:
            env = environment.Environment({"__name__": modname})
            env.consts[:] = consts
            env.env_name = env_name
            environment.Environment._memo[env_name] = env
        return env

    class KernelCache(caching.FunctionCache):
        def __init__(self, py_func: Callable) -> None:
            super().__init__(py_func)
            self._cache_file._source_stamp = _folder_stamp(str(Path(inspect.getfile(py_func)).resolve().parent))

        def _load(self, sig: Any, target_context: Any) -> Any:
            nrt.rtsys.initialize(target_context)  # once per process; later calls return at once
            # numba's own function, else (numba moved it, or another package wrapped it) no swap
            swap = original_rebuild_env is not None and environment._rebuild_env is original_rebuild_env
            # the swap is seen by this load's unpickling alone: every load and save holds numba's lock
            with global_compiler_lock, blas_probe_skipped(), self._guard_against_spurious_io_errors():
                if swap:
                    environment._rebuild_env = rebuild_env
                try:
                    with _locked(self, exclusive=False):
                        return self._load_overload(sig, target_context)
                finally:
                    if swap:
                        environment._rebuild_env = original_rebuild_env
            return None  # the guard swallowed a spurious I/O error: compile, as numba does

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            try:
                loaded = self._load(sig, target_context)
            except Exception as exc:  # any unreadable cache entry: compile instead
                _warn(self, exc)
                before_compile()
                return None
            if loaded is None:  # not in the cache: numba compiles it now
                _announce(self)
                before_compile()
            return loaded

        def save_overload(self, sig: Any, data: Any) -> None:
            try:
                self._impl.locator.ensure_cache_path()  # the lock file's directory
                with _locked(self, exclusive=True):
                    super().save_overload(sig, data)
            except Exception as exc:  # full disk, read-only directory: keep the in-memory kernel
                _warn(self, exc)

    return KernelCache
