"""Temporaries and signals: what every command's files leave behind, whatever ends it
(docs/failure_behaviour.md). :mod:`kbest_bleu.files.output` writes outputs through these.

- **Temporaries.** Output temporaries are ``.NAME.kbest-tmp-PID.HOST``; work directories
  (:func:`temporary_directory`) ``$TMPDIR/kbest_bleu-...kbest-tmp-PID.HOST-XXXX``. Both are
  registered while they live and removed on every exit path: success, exception, and SIGINT /
  SIGTERM / SIGHUP (:func:`install_signal_handlers`). SIGKILL cannot be caught: the next run removes
  what a killed one left (:func:`remove_stale_temporaries`): a temporary of this host whose process
  no longer exists, or any temporary older than :data:`~kbest_bleu.settings.STALE_TEMPORARY_S`.
- **Directories made for outputs** (:func:`created_directories`) are removed again, when empty, if
  the job fails or a signal ends it.
- **Signals** end the process with one line and status 128 + N, except while outputs are renamed
  into place: the signal then waits for the renames' end (:func:`signals_deferred`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Iterator, Optional

from .. import settings
from ..errors import InputError
from .inputs import describe

__all__ = ["TEMP_MARK", "created_directories", "install_signal_handlers", "job_done", "live_temporaries", "owner_tag",
           "register", "remove", "remove_stale_temporaries", "signals_deferred", "temporary_directory", "unregister"]

TEMP_MARK = ".kbest-tmp-"
_OWNER = re.compile(re.escape(TEMP_MARK) + r"(\d+)(?:\.([0-9a-f]{8}))?")
_LIVE: set = set()  # temporaries of this process not yet renamed or removed (files or directories)


def _host() -> str:
    """8 hex digits naming this machine in temporaries (a shared directory holds other hosts' PIDs)."""
    return f"{zlib.crc32(os.uname().nodename.encode()) if hasattr(os, 'uname') else 0:08x}"


def owner_tag() -> str:
    """``.kbest-tmp-PID.HOST``: the part of a temporary's name that says whose it is."""
    return f"{TEMP_MARK}{os.getpid()}.{_host()}"


def register(path: Path) -> None:
    """Record a temporary this process is writing: a signal removes it (:func:`install_signal_handlers`)."""
    _LIVE.add(path)


def unregister(path: Path) -> None:
    """Forget a temporary that was renamed into place or removed."""
    _LIVE.discard(path)


def live_temporaries() -> frozenset:
    """The temporary paths this process is writing now (removed on a signal)."""
    return frozenset(_LIVE)


# ---- temporaries --------------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OverflowError:
        return False
    return True


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError, PermissionError, IsADirectoryError):
            path.unlink()


def _stale(path: Path, now: float) -> bool:
    """Left by a killed process: this host's with its process gone (one alive keeps its temporaries,
    whatever their age), or another host's (or an unnamed owner's) older than STALE_TEMPORARY_S."""
    found = _OWNER.search(path.name)
    if found and (found.group(2) in (None, _host())):
        return not _pid_alive(int(found.group(1)))
    try:
        return now - path.lstat().st_mtime > settings.STALE_TEMPORARY_S and path not in _LIVE
    except OSError:
        return False


def remove_stale_temporaries(directory: "str | os.PathLike", prefix: str = ".") -> int:
    """Remove from ``directory`` the temporaries (names starting with ``prefix`` and holding
    :data:`TEMP_MARK`) that killed runs left; returns how many were removed. Another live process's
    temporaries on this host are kept whatever their age; another host's are judged by age."""
    now, removed = time.time(), 0
    try:
        entries = [p for p in Path(directory).iterdir() if p.name.startswith(prefix) and TEMP_MARK in p.name]
    except OSError:  # an unreadable directory: nothing to clean
        return 0
    for path in entries:
        if _stale(path, now):
            remove(path)
            removed += 1
    return removed


@contextlib.contextmanager
def temporary_directory(prefix: str = "kbest_bleu-", directory: "Optional[str | os.PathLike]" = None) -> Iterator[Path]:
    """A new work directory (in ``directory``, default ``$TMPDIR``), registered with the guard:
    removed when the block ends, whether it raises or not, and on SIGINT/SIGTERM/SIGHUP. Stale work
    directories of killed runs in the same place are removed first."""
    where = Path(directory) if directory is not None else Path(tempfile.gettempdir())
    remove_stale_temporaries(where, prefix)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-", dir=where))
    _LIVE.add(path)
    try:
        yield path
    finally:
        _LIVE.discard(path)
        remove(path)


_MADE: list = []  # output directories this process made for a job that has not ended (removed on a signal)


@contextlib.contextmanager
def created_directories(path: "str | os.PathLike", option: str = "-o") -> Iterator[Path]:
    """``path`` as a directory, made with its missing parents; those made here are removed again
    (when empty: only this job's temporaries were in them) if the block raises or a signal ends the
    process, and kept when it ends well."""
    path = Path(path)
    made = [d for d in (path, *path.parents) if not d.exists()][::-1]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {describe(path)}: could not create the directory ({exc.strerror or exc}); create it "
                         "first or choose another path") from None
    _MADE.extend(made)
    try:
        yield path
    except BaseException:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    finally:
        for d in made:
            _MADE.remove(d)


# ---- signals ------------------------------------------------------------------------------------

_DEFERRING = [False]  # True while outputs are renamed into place (signals_deferred)
_PENDING: list = []  # the signals that arrived meanwhile


@contextlib.contextmanager
def signals_deferred(landed: str = "the output files were put in place") -> Iterator[None]:
    """A signal arriving in the block is acted on when it ends (the renames of
    :func:`kbest_bleu.files.output.atomic_outputs` all done, or all undone), never between two of
    them; its line then says ``landed`` when the block ended well."""
    _PENDING.clear()
    _DEFERRING[0] = True
    done = False
    try:
        yield
        done = True
    finally:
        _DEFERRING[0] = False  # first: a signal from here on is acted on at once, none is lost
        if _PENDING:
            _exit_on_signal(_PENDING[0], landed if done else "no output written")


_OUTCOME = ["no output written"]  # what a signal's line says; job_done() changes it


def job_done() -> None:
    """The command has written its outputs: a signal from now on (during the program's last
    flush) says so instead of "no output written"."""
    _OUTCOME[0] = "the job had ended, its outputs are written"


def _on_signal(signum: int, _frame: object) -> None:
    if _DEFERRING[0]:
        _PENDING.append(signum)
        return
    _exit_on_signal(signum, _OUTCOME[0])


def _exit_on_signal(signum: int, outcome: str) -> None:
    for tmp in list(_LIVE):
        remove(tmp)
    for d in reversed(_MADE):  # the deepest first; one no longer empty stays
        with contextlib.suppress(OSError):
            d.rmdir()
    name = signal.Signals(signum).name
    try:
        sys.stderr.write(f"kbest-bleu: interrupted by {name}; {outcome}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed with the terminal (SIGHUP)
        pass
    # os._exit: no exception is raised into whatever runs (a numba dispatcher turns a
    # KeyboardInterrupt into a SystemError traceback), and worker threads are not waited for.
    os._exit(128 + signum)


def install_signal_handlers() -> dict:
    """SIGINT, SIGTERM and SIGHUP (where it exists, and unless the process ignores it, as under
    ``nohup``): remove this process's temporaries, print one line and exit with 128 + the signal
    number. Returns the previous handlers ``{signal: handler}`` to put back (``signal.signal``); outside the main thread, where Python
    cannot set handlers, nothing is changed and ``{}`` is returned."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        # a signal the process was started to ignore stays ignored: `nohup kbest-bleu ...` must
        # outlive its terminal (SIGHUP), `... &` in a non-interactive shell its Ctrl-C (SIGINT)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, _on_signal)
    return previous

