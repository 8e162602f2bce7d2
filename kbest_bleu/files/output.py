"""The output guard: one place for every file a command writes (docs/failure_behaviour.md).

- **Inputs are never overwritten.** An output that is one of the command's inputs
  (:mod:`kbest_bleu.files.inputs`: by resolved path or by the same inode, hard links too) is
  refused with one line (exit status 2): when the output is opened, and again right before it is
  renamed into place, so an input read during the job is covered too.
- **Atomic outputs.** An output goes to a temporary name beside its target and is renamed over it
  only when the job succeeds, so a failed, interrupted or disk-full job leaves the old file (or
  nothing) behind; a replaced file keeps its permission bits.
- **Links and directories.** A symbolic link whose target exists is written through: the target is
  replaced atomically (its temporary beside the target) and the link stays a link; a dangling link
  is refused (writing through it would create a file somewhere the command was not told about). A
  path ending in ``/`` or naming an existing directory is refused where a file is expected.
- **Devices, FIFOs, sockets, stdout.** Written directly, never renamed over (``-o /dev/null``,
  a named pipe). ``-o -``: the output is written whole to a temporary, then copied to standard
  output with short writes retried (:func:`write_all`), so a full disk behind stdout is an error
  (exit 1), never a truncated file with status 0.
- **Temporaries.** Output temporaries are ``.NAME.kbest-tmp-PID.HOST``; work directories
  (:func:`temporary_directory`) ``$TMPDIR/kbest_bleu-...kbest-tmp-PID.HOST-XXXX``. Both are
  registered while they live and removed on every exit path: success, exception, and SIGINT /
  SIGTERM / SIGHUP (:func:`install_signal_handlers`). SIGKILL cannot be caught: the next run removes
  what a killed one left (:func:`remove_stale_temporaries`): a temporary of this host whose process
  no longer exists, or any temporary older than :data:`~kbest_bleu.settings.STALE_TEMPORARY_S`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator, Optional, Sequence

from .. import settings
from ..errors import InputError
from .inputs import clash, describe, refuse

__all__ = ["TEMP_MARK", "atomic_output", "check_finite", "check_output", "copy_to_stdout", "install_signal_handlers",
           "live_temporaries", "open_log", "remove_stale_temporaries", "temporary_directory", "write_all"]

TEMP_MARK = ".kbest-tmp-"
_OWNER = re.compile(re.escape(TEMP_MARK) + r"(\d+)(?:\.([0-9a-f]{8}))?")
_LIVE: set = set()  # temporaries of this process not yet renamed or removed (files or directories)


def _host() -> str:
    """8 hex digits naming this machine in temporaries (a shared directory holds other hosts' PIDs)."""
    return f"{zlib.crc32(os.uname().nodename.encode()) if hasattr(os, 'uname') else 0:08x}"


def _owner_tag() -> str:
    return f"{TEMP_MARK}{os.getpid()}.{_host()}"


def live_temporaries() -> frozenset:
    """The temporary paths this process is writing now (removed on a signal)."""
    return frozenset(_LIVE)


# ---- output paths -------------------------------------------------------------------------------

def _stdout_fd() -> Optional[int]:
    """stdout's file descriptor; None for a stream without one (an in-process caller's capture)."""
    if sys.stdout is None or getattr(sys.stdout, "closed", False):  # started with >&-
        raise InputError("-o -: standard output is closed; give an output file with -o FILE, or run the command "
                         "with stdout open")
    try:
        return sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        return None


def check_output(target: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (), option: str = "-o",
                 directory: bool = False, append: bool = False) -> Path:
    """Validate an output path before the job runs; returns it as a Path.

    Refuses an empty path, a path ending in ``/`` or naming an existing directory (a ``directory``
    output, a Spark dataset, must not exist yet), a missing parent directory, a dangling symbolic
    link, a directory the output's temporary cannot be made in (``append``: an existing file
    written in place, a log, needs only its own write permission), and a path that is one of
    ``inputs`` or of the inputs registered in the running command
    (:func:`~kbest_bleu.files.inputs.register_input`; the same resolved path or inode). ``-`` is
    standard output. ``option`` names the command-line option in messages.
    """
    text = os.fspath(target)
    if not text.strip():
        raise InputError(f"{option}: expected an output file path, found an empty string; name a file to write")
    if text == "-":
        _stdout_fd()
        return Path(text)
    dst = Path(text)
    if text.endswith(("/", os.sep)) and not directory and not dst.is_dir():
        raise InputError(f"{option} {text!r}: ends with '/', which names a directory; expected a file path "
                         f"(e.g. {text.rstrip('/' + os.sep) or '.'}/scored.parquet, the directory created first)")
    if dst.is_symlink() and not dst.exists():
        raise InputError(f"{option} {text!r}: is a symbolic link to {os.readlink(dst)!r}, which does not exist; an output "
                         "is written through a link only to an existing file; remove the link or create its target")
    if dst.is_dir():
        kind = "a dataset directory that does not exist yet" if directory else "a file path"
        raise InputError(f"{option} {describe(dst)}: is an existing directory; expected {kind} "
                         f"(e.g. {os.path.join(text, 'scored.parquet') if not directory else text.rstrip('/') + '_new'})")
    if directory and dst.exists():
        raise InputError(f"{option} {describe(dst)}: already exists; choose a new output directory")
    real = Path(os.path.realpath(dst)) if dst.is_symlink() else dst
    parent = real.parent if str(real.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{option} {describe(dst)}: the directory {str(parent)!r} does not exist; create it first "
                         "or choose another output path")
    # the temporary is made and renamed in the directory: checked now, not after the job (an
    # existing device or FIFO is written in place)
    # (an existing file appended to, a log, needs only its own write permission)
    writable = os.access(dst, os.W_OK) if append and dst.exists() else os.access(parent, os.W_OK | os.X_OK)
    if not (_is_special(dst) and not directory) and not writable:
        raise InputError(f"{option} {describe(dst)}: the directory {str(parent)!r} is not writable (permissions or a "
                         "read-only file system); choose a writable output path")
    found = clash(dst, inputs)
    if found is not None:
        refuse(dst, option, found)
    return dst


# ---- what is written ------------------------------------------------------------------------------

def open_log(path: "Optional[str | os.PathLike]", inputs: Sequence["str | os.PathLike"] = (),
             option: str = "--log") -> BinaryIO:
    """A log for a child process's output (its file descriptor handed on), open for appending in
    binary: ``path``, checked as an output (:func:`check_output`: never one of ``inputs`` or of the
    command's inputs; ``-`` is refused, a log is not standard output), or, for None, an unnamed
    temporary file (nothing is left behind, whatever ends the process). Not atomic: a log grows
    while the job runs and is worth keeping when it fails."""
    if path is None:
        return tempfile.TemporaryFile()
    if os.fspath(path) == "-":
        raise InputError(f"{option}: expected a file path, found '-' (standard output carries no log here; "
                         "/dev/stderr shows it on the terminal)")
    check_output(path, inputs, option, append=True)
    return open(path, "a+b")


def check_finite(batch: "object", names: Sequence[str], where: str, row0: int = 0) -> None:
    """Raise :class:`InputError` naming the first NaN or infinite value in the floating-point
    columns ``names`` of an Arrow record batch (the columns a job adds; null is allowed, each
    column documents what its nulls mean): no output holds NaN or inf. ``row0``: the batch's first
    row in the input, for the message."""
    import pyarrow as pa

    from .. import arrow_compute as pc
    from ..arrays import to_numpy
    for name in names:
        col = batch.column(name)
        if not pa.types.is_floating(col.type):
            continue
        finite = pc.is_finite(col)
        if finite.true_count + col.null_count == len(col):
            continue
        row = int(to_numpy(pc.indices_nonzero(pc.invert(finite)))[0])
        raise InputError(f"{where}: column {name!r}, row {row0 + row}: the score is {col[row].as_py()!r}, which an "
                         "output never holds; this input reaches a case the metric does not define (please report "
                         "it with the row); the output was not written")


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


def _remove(path: Path) -> None:
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
            _remove(path)
            removed += 1
    return removed


@contextlib.contextmanager
def temporary_directory(prefix: str = "kbest_bleu-", directory: "Optional[str | os.PathLike]" = None) -> Iterator[Path]:
    """A new work directory (in ``directory``, default ``$TMPDIR``), registered with the guard:
    removed when the block ends, whether it raises or not, and on SIGINT/SIGTERM/SIGHUP. Stale work
    directories of killed runs in the same place are removed first."""
    where = Path(directory) if directory is not None else Path(tempfile.gettempdir())
    remove_stale_temporaries(where, prefix)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{_owner_tag()}-", dir=where))
    _LIVE.add(path)
    try:
        yield path
    finally:
        _LIVE.discard(path)
        _remove(path)


# ---- writing ------------------------------------------------------------------------------------

def write_all(fd: int, data: "bytes | memoryview") -> None:
    """Write every byte of ``data`` to the file descriptor ``fd``: a short write (a pipe, a nearly
    full disk) is followed by another for the rest; an error (ENOSPC, EPIPE) raises OSError."""
    view = memoryview(data).cast("B")
    while view:
        n = os.write(fd, view)
        if n <= 0:  # a zero-byte write of a non-empty buffer makes no progress: the device is full
            raise OSError(28, "No space left on device (a write made no progress)")
        view = view[n:]


def copy_to_stdout(path: "str | os.PathLike", option: str = "-o", chunk: int = 1 << 20) -> None:
    """Copy a finished file to standard output whole (:func:`write_all`), after what Python's
    ``sys.stdout`` holds. A failed write (a full disk behind a redirection) raises OSError naming
    ``option -`` (standard output), not the temporary; a reader that has gone, BrokenPipeError."""
    try:
        _copy_to_stdout(path, chunk)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, f"{option} - (standard output): could not write the output "
                      f"({exc.strerror or exc}); free space or choose another output") from None


def _copy_to_stdout(path: "str | os.PathLike", chunk: int) -> None:
    fd = _stdout_fd()
    sys.stdout.flush()
    sink = getattr(sys.stdout, "buffer", None) if fd is None else None
    if fd is None and sink is None:
        raise InputError("-o -: standard output takes text only (a caller's text stream); give -o FILE")
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            if not data:
                break
            if fd is not None:
                write_all(fd, data)
            else:  # a Python binary stream (BufferedWriter retries short writes itself)
                sink.write(data)
    if sink is not None:
        sink.flush()


def _is_special(path: Path) -> bool:
    """An existing target that is not a regular file (after links): a device, FIFO or socket."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class _WriteFailed(OSError):
    """A failed write whose message names its output already (:func:`atomic_output`)."""


@contextlib.contextmanager
def atomic_output(target: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (), option: str = "-o",
                  directory: bool = False) -> Iterator[Path]:
    """Context manager yielding the path to write instead of ``target``.

    A regular (or new) target: a temporary ``.NAME.kbest-tmp-PID.HOST`` beside it (beside the
    link's target for a symbolic link), renamed over the target when the block ends without an
    exception, after the inputs are checked again, and removed when it raises; an ``OSError`` (full
    disk) is raised again with a message naming the target. ``-``: a temporary in a work
    directory, copied to standard output on success. A device, FIFO or socket: the target itself
    (written directly, nothing to rename). ``directory``: the output is a new directory (Spark
    datasets), written and renamed the same way.
    """
    dst = check_output(target, inputs, option, directory)
    if str(dst) == "-":
        with temporary_directory() as work:
            out = work / "stdout"
            yield out
            if not out.exists():
                raise InputError(f"{option} -: nothing was written")
            copy_to_stdout(out, option)
        return
    if not directory and _is_special(dst):
        yield dst  # /dev/null, a FIFO: replacing the node would destroy it
        return
    real = Path(os.path.realpath(dst)) if dst.is_symlink() else dst
    remove_stale_temporaries(real.parent if str(real.parent) else ".")
    tmp = real.with_name(f".{real.name}{_owner_tag()}")
    _remove(tmp)
    _LIVE.add(tmp)
    try:
        yield tmp
        if not tmp.exists():
            raise InputError(f"{option} {describe(dst)}: nothing was written")
        if not directory:  # an input read during the job is refused too
            check_output(dst, inputs, option)
        with contextlib.suppress(OSError):  # a replaced file keeps its permission bits
            if real.exists() and not directory:
                os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
        os.replace(tmp, real)
    except _WriteFailed:  # an output written inside this one's block (export-moses' second file) named itself
        raise
    except OSError as exc:  # the machine, not the input (exit 1): the message names the file
        raise _WriteFailed(exc.errno, f"{option} {describe(dst)}: could not write the output ({exc.strerror or exc}); "
                           "the previous file, if any, is unchanged; free space or choose a writable path") from None
    finally:
        _LIVE.discard(tmp)
        _remove(tmp)


# ---- signals ------------------------------------------------------------------------------------

def _on_signal(signum: int, _frame: object) -> None:
    for tmp in list(_LIVE):
        _remove(tmp)
    name = signal.Signals(signum).name
    try:
        sys.stderr.write(f"kbest-bleu: interrupted by {name}; no output written\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed with the terminal (SIGHUP)
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
