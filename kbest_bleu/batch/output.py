"""One place for every output a command writes (README, "Failure behaviour").

- An output goes to a temporary name beside its target and is renamed over it only when the job
  succeeds, so a failed, interrupted or disk-full job leaves the old file (or nothing) behind.
- Only regular files are replaced: a device, FIFO or socket target (``-o /dev/null``) is written
  directly, never renamed over.
- An output that is one of the command's inputs (the same file after resolving links) is
  refused before anything is read.
- Temporaries are named ``.NAME.kbest-tmp-PID``: a later run to the same target removes the stale
  temporary of a process that no longer exists (SIGKILL cannot be caught).
- :func:`install_signal_handlers`: SIGINT, SIGTERM and SIGHUP remove the live temporaries, print
  one line and exit with status 128 + signal number.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import InputError

__all__ = ["TEMP_MARK", "atomic_output", "check_output", "install_signal_handlers", "live_temporaries"]

TEMP_MARK = ".kbest-tmp-"
_LIVE: set = set()  # temporaries of this process not yet renamed (files or directories)


def live_temporaries() -> frozenset:
    """The temporary paths this process is writing now (removed on a signal)."""
    return frozenset(_LIVE)


def _describe(path: Path) -> str:
    return "the current directory" if str(path) == "." else f"{str(path)!r}"


def check_output(target: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (), option: str = "-o",
                 directory: bool = False) -> Path:
    """Validate an output path before the job runs; returns it as a Path.

    Refuses an empty path, an existing directory (unless ``directory`` outputs are replaced:
    never, a dataset directory must be new), a missing parent directory, and a path that is
    one of ``inputs`` (``os.path.samefile``). ``option`` names the command-line option in messages.
    """
    text = os.fspath(target)
    if not text.strip():
        raise InputError(f"{option}: expected an output file path, found an empty string; name a file to write")
    dst = Path(text)
    if dst.is_dir():
        kind = "a dataset directory that does not exist yet" if directory else "a file path"
        raise InputError(f"{option} {_describe(dst)}: is an existing directory; expected {kind} "
                         f"(e.g. {os.path.join(text, 'scored.parquet') if not directory else text.rstrip('/') + '_new'})")
    if directory and dst.exists():
        raise InputError(f"{option} {_describe(dst)}: already exists; choose a new output directory")
    parent = dst.parent if str(dst.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{option} {_describe(dst)}: the directory {str(parent)!r} does not exist; create it first "
                         "or choose another output path")
    if dst.exists():
        for src in inputs:
            if src is not None and os.path.exists(src) and os.path.samefile(src, dst):
                raise InputError(f"{option} {_describe(dst)}: the output path is the input file {str(src)!r} (same file "
                                 "after resolving links); writing it would destroy the input; choose a new output path")
    return dst


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _remove_stale(dst: Path) -> None:
    """Remove temporaries of ``dst`` left by processes that no longer exist (killed by SIGKILL)."""
    parent = dst.parent if str(dst.parent) else Path(".")
    for tmp in parent.glob(f".{dst.name}{TEMP_MARK}*"):
        pid = tmp.name.rsplit(TEMP_MARK, 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            _remove(tmp)


@contextlib.contextmanager
def atomic_output(target: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (), option: str = "-o",
                  directory: bool = False) -> Iterator[Path]:
    """Context manager yielding the path to write instead of ``target``.

    A regular (or new) target: a temporary ``.NAME.kbest-tmp-PID`` beside it, renamed over the
    target when the block ends without an exception and removed when it raises; an ``OSError``
    (full disk) is raised again with a message naming the target. A device, FIFO
    or socket: the target itself (written directly, nothing to rename). ``directory``: the
    output is a new directory (Spark datasets), written and renamed the same way.
    """
    dst = check_output(target, inputs, option, directory)
    if dst.exists() and not directory and not stat.S_ISREG(os.stat(dst).st_mode):
        yield dst  # /dev/null, a FIFO: replacing the node would destroy it
        return
    _remove_stale(dst)
    tmp = dst.with_name(f".{dst.name}{TEMP_MARK}{os.getpid()}")
    _remove(tmp)
    _LIVE.add(tmp)
    try:
        yield tmp
        if not tmp.exists():
            raise InputError(f"{option} {_describe(dst)}: nothing was written")
        os.replace(tmp, dst)
    except OSError as exc:  # the machine, not the input (exit 1): the message names the file
        raise OSError(exc.errno, f"{option} {_describe(dst)}: could not write the output ({exc.strerror or exc}); "
                      "the previous file, if any, is unchanged; free space or choose a writable path") from None
    finally:
        _LIVE.discard(tmp)
        _remove(tmp)


def _on_signal(signum: int, _frame: object) -> None:
    for tmp in list(_LIVE):
        _remove(tmp)
    name = signal.Signals(signum).name
    try:
        sys.stderr.write(f"kbest-bleu: interrupted by {name}; no output written\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed with the terminal (SIGHUP)
        pass
    # os._exit: no exception is raised into whatever runs (a numba dispatcher turns a
    # KeyboardInterrupt into a SystemError traceback), and worker threads are not waited for.
    os._exit(128 + signum)


def install_signal_handlers() -> dict:
    """SIGINT, SIGTERM and SIGHUP (where it exists): remove this process's temporaries, print one
    line and exit with 128 + the signal number. Returns the previous handlers
    ``{signal: handler}`` to put back (``signal.signal``); outside the main thread, where Python
    cannot set handlers, nothing is changed and ``{}`` is returned."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            number = getattr(signal, name)
            previous[number] = signal.signal(number, _on_signal)
    return previous
