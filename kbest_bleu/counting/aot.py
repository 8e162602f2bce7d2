"""The text path's kernels compiled ahead of time, loaded without numba (README, "Start-up").

A parquet job on the kernels pays ~0.15 s per process before it counts anything: numba's import
(~0.1 s of Python byte code, under the GIL, so nothing runs beside it) and the loading of two
cached kernels. ``kbest-bleu warmup`` therefore also compiles the kernels a text job calls from
Python (:data:`NAMES`), with the signatures the job calls them with, into one extension module
with numba's ahead-of-time compiler (``numba.pycc``: the same Python functions through numba's
typing and LLVM pipeline, for the architecture's generic CPU rather than this machine's model,
numba's runtime built into the module); importing it takes under 1 ms and does not import numba.
Its wrappers are built releasing the GIL (pycc's default keeps it), so the text kernel's runs
still count on every thread.

The module is used only where it was built from the same sources (this package's
``_kernels.py``, ``_split.py``, ``_tables.py`` and ``codes.py``), by the same numba release, for the same Python
and architecture (:func:`_key`); each export's name carries a digest of the argument types it was
compiled for, checked against the signature file beside it, and a call whose arguments match none
of them (dtype, dimensions, layout, alignment, writability) goes to the numba kernel
(:class:`Kernels`). Building needs a C compiler; without one, warmup says so and jobs
load the numba kernels as before. Where it lives: ``NUMBA_CACHE_DIR`` when set, else the
package's ``__pycache__`` (built there when writable), else ``~/.cache/kbest_bleu``
(:func:`_directories`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Optional

import numpy as np

from .. import settings

__all__ = ["NAMES", "Kernels", "build", "loaded", "unload"]

# the kernels a text job calls from Python: the text kernel and its output and run helpers, the
# references' equality check, 13a's rows-with-entities scan
NAMES = ("_new_stats", "_rows_equal_owner", "_rows_with_bytes", "_text_run_stats", "_thread_chunks")
_HERE = Path(__file__).parent
_MODULE_DIGEST = "module"  # the signature file's line holding the module's sha256
_BUILD_PREFIX = ".kbest_bleu_kernels-"  # a build's temporary directory
_STALE_BUILD_S = 3600  # a build directory this old was left by a killed build
_OWN_CACHE = _HERE / "__pycache__"  # this installation's: stale modules are removed from it alone
_found: list = []  # [Kernels or None], once looked for in this process
_finding = threading.Lock()
_building = threading.Lock()  # numba.pycc's temporaries redirected for one build at a time


def _key() -> Optional[str]:
    """What the module must have been built from: the kernels' sources, numba's version (its
    ``_version.py``, read without importing numba: the same release builds the same module,
    wherever it is installed, so a module built at install in the wheel's build environment
    serves the installed package), Python's ABI, the architecture. None without numba."""
    spec = importlib.util.find_spec("numba")
    if spec is None or spec.origin is None:
        return None
    h = hashlib.sha256()
    for name in ("_kernels.py", "_split.py", "_tables.py", "codes.py"):
        h.update((_HERE / name).read_bytes())
    h.update((Path(spec.origin).parent / "_version.py").read_bytes())
    h.update(f"{sys.implementation.cache_tag} {platform.machine()}".encode())
    return h.hexdigest()[:20]


def _directories() -> list:
    """Where the module is looked for (and built: the first writable one): ``NUMBA_CACHE_DIR``
    alone when set, as numba's cache."""
    if settings.numba_cache_dir() is not None:
        return [settings.numba_cache_dir()]
    return [_OWN_CACHE, Path.home() / ".cache" / "kbest_bleu"]  # home: may raise, _load catches


def _module_name(key: str) -> str:
    return f"kbest_bleu_kernels_{key}"


class Kernels:
    """The kernels of :data:`NAMES` from the compiled module, each choosing its export by the
    arguments' types (:func:`_fits`); any other name, or arguments of other types,
    go to :mod:`kbest_bleu.counting._kernels` (importing numba then)."""

    def __init__(self, module: ModuleType, signatures: dict) -> None:
        self._exports: dict = {}
        for export, text in signatures.items():
            kernel, _, digest = export.rpartition("__")
            if digest != _digest(text):
                raise ValueError(f"{export}: its signature file does not match it")
            self._exports.setdefault(kernel, []).append((_signature_of(text), getattr(module, export)))

    def __getattr__(self, name: str) -> Any:
        exports = self.__dict__.get("_exports", {}).get(name)
        if exports is None:
            from . import _kernels
            return getattr(_kernels, name)

        def call(*args: Any) -> Any:
            for want, fn in exports:
                if len(want) == len(args) and all(map(_fits, args, want)):
                    return fn(*args)
            from . import _kernels
            return getattr(_kernels, name)(*args)
        call.__name__ = name
        return call


def _fits(value: Any, want: tuple) -> bool:
    """Whether ``value`` is what an export's argument was compiled for: an integer, or a native
    byte-order array of the dtype, dimensions and layout, aligned, and writable where the kernel
    may write (a 2-D array contiguous both ways fits either layout, as numba types it)."""
    if want == ("int",):
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not isinstance(value, np.ndarray):
        return False
    dtype, ndim, layout, access = want
    flags = value.flags
    return (value.dtype.str == dtype and value.ndim == ndim and flags.aligned
            and (flags.c_contiguous if layout == "C" else flags.f_contiguous if layout == "F" else False)
            and (access == "ro" or flags.writeable))


def _signature_of(text: str) -> tuple:
    """The argument types an export was compiled for, from the module's signature file (written
    by :func:`build`): 'dtype ndim layout ro|rw' per array, 'int' per integer, ';' between them."""
    out = []
    for t in text.split(";"):
        parts = t.split()
        out.append((parts[0], int(parts[1]), parts[2], parts[3]) if len(parts) == 4 else (t,))
    return tuple(out)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def loaded() -> Optional[Kernels]:
    """The compiled kernels when a module built for this package, numba, Python and architecture exists;
    else None. Looked for once per process (a few file reads; numba is not imported)."""
    with _finding:
        if not _found:
            _found.append(_load())
        return _found[0]


def unload() -> None:
    """numba's kernels serve this process from now on (warmup compiles them, then builds)."""
    with _finding:
        _found[:] = [None]


def _load() -> Optional[Kernels]:
    # pure-Python kernels asked for, or the compiled module turned off
    if not settings.aot_enabled():
        return None
    try:
        key = _key()
        if key is None:
            return None
        name = _module_name(key)
        for d in _directories():
            path = d / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
            if path.is_file():
                signatures = dict(line.split("\t") for line in (d / (name + ".signatures")).read_text().splitlines())
                # a truncated or altered module would crash the process when loaded (SIGBUS): its
                # digest, written at build, must match
                if signatures.pop(_MODULE_DIGEST, None) != hashlib.sha256(path.read_bytes()).hexdigest():
                    return None
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return Kernels(module, signatures)
    except Exception:  # unreadable, foreign or half-replaced files, no home directory: numba's kernels serve
        return None
    return None


def _describe(args: tuple) -> Optional[str]:
    """'dtype ndim layout ro|rw' per array argument (every export is compiled for aligned arrays),
    'int' per integer one (see :func:`_signature_of`); None for a signature with other types
    (not exported: numba serves it)."""
    from numba.core import types
    out = []
    for t in args:
        if isinstance(t, types.Array) and t.aligned:
            out.append(f"{np.dtype(str(t.dtype)).str} {t.ndim} {t.layout} {'rw' if t.mutable else 'ro'}")
        elif isinstance(t, types.Integer):
            out.append("int")
        else:
            return None
    return ";".join(out)


def build(directory: Optional[Path] = None) -> Path:
    """Compile :data:`NAMES` with every signature numba has compiled them for in this process
    (``kbest-bleu warmup`` runs the common paths first) into the extension module, in
    ``directory`` or the first writable of :func:`_directories`; returns its path. Built in a
    temporary directory beside it and renamed into place (the signature file first). Raises
    OSError when no directory is writable, and what the C compiler raises (none installed)."""
    import tempfile
    import warnings

    from numba.core import types
    from numba.core.compiler import Flags
    from numba.core.typing import signature
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation
        import numba.pycc.compiler as pycc_compiler
        from numba.pycc import CC

    from . import _kernels as _counting
    # the helpers Python callers run as Python, compiled here for the module's callers
    _counting._new_stats(1, 4)
    _counting._thread_chunks(np.zeros(2, np.int64), 1)
    key = _key()
    if directory is None:
        directory = next((d for d in _directories() if _writable(d)), None)
        if directory is None:
            raise OSError("no writable directory for the compiled kernels (set NUMBA_CACHE_DIR)")
    directory = Path(directory)
    name = _module_name(key)
    filename = name + importlib.machinery.EXTENSION_SUFFIXES[0]

    used = []

    class GilFree(Flags):  # pycc builds its wrappers holding the GIL unless told otherwise
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True
            used.append(True)

    _remove_stale_builds(directory)
    with tempfile.TemporaryDirectory(dir=directory, prefix=_BUILD_PREFIX) as tmp, _pycc_temporaries(tmp):
        cc = CC(name)
        cc.output_dir = tmp
        cc.verbose = False
        signatures = {}
        for kernel in NAMES:
            for sig in getattr(_counting, kernel).nopython_signatures:
                # a constant argument numba typed as a literal is compiled for any value here
                args = tuple(types.unliteral(t) for t in sig.args)
                text = _describe(args)
                export = text and f"{kernel}__{_digest(text)}"
                if text is None or export in signatures:
                    continue
                cc.export(export, signature(sig.return_type, *args))(getattr(_counting, kernel).py_func)
                signatures[export] = text
        original = pycc_compiler.Flags
        pycc_compiler.Flags = GilFree
        try:
            cc.compile()
        finally:
            pycc_compiler.Flags = original
        if not used:  # a numba whose pycc no longer reads its Flags there: wrappers holding the GIL
            raise RuntimeError("numba.pycc did not take the GIL-releasing flags; not built")
        signatures[_MODULE_DIGEST] = hashlib.sha256((Path(tmp) / filename).read_bytes()).hexdigest()
        (Path(tmp) / "signatures").write_text("".join(f"{e}\t{t}\n" for e, t in signatures.items()))
        os.replace(Path(tmp) / "signatures", directory / (name + ".signatures"))
        os.replace(Path(tmp) / filename, directory / filename)
    if directory == _OWN_CACHE:  # this installation's own: earlier sources' modules go (not from
        # a shared directory, where other installations' modules live)
        for old in directory.glob("kbest_bleu_kernels_*"):
            if not old.name.startswith(name + "."):
                old.unlink(missing_ok=True)
    with _finding:
        _found.clear()
    return directory / filename


@contextlib.contextmanager
def _pycc_temporaries(directory: str) -> Iterator[None]:
    """numba.pycc's temporary directories made in ``directory`` (the build's own, removed with
    it) while the block runs: its C compiler check leaves two in ``$TMPDIR`` on every build (it
    removes its file with ``os.remove`` of the open file object, which fails silently, so the
    directory is never removed), and a failed or killed compile leaves its object files'. Only
    pycc's two module globals are swapped, and put back: the process's ``tempfile`` settings and
    environment stay as the caller set them. One build at a time (the swap is process-wide)."""
    import functools
    import tempfile
    from types import SimpleNamespace

    import numba.pycc.cc as pycc_cc
    import numba.pycc.platform as pycc_platform

    here = functools.partial(tempfile.mkdtemp, dir=directory)
    with _building:
        saved = pycc_platform.mkdtemp, pycc_cc.tempfile
        pycc_platform.mkdtemp = here  # the compiler check (from tempfile import mkdtemp)
        pycc_cc.tempfile = SimpleNamespace(mkdtemp=here)  # CC.compile's tempfile.mkdtemp
        try:
            yield
        finally:
            pycc_platform.mkdtemp, pycc_cc.tempfile = saved


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK)


def _remove_stale_builds(directory: Path) -> None:
    """Remove the temporary directories that killed builds left in ``directory`` (older than
    :data:`_STALE_BUILD_S`: a build takes seconds, and a concurrent one's directory is young)."""
    import shutil
    import time

    for old in directory.glob(_BUILD_PREFIX + "*"):
        try:
            if time.time() - old.stat().st_mtime > _STALE_BUILD_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
