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
- **Temporaries and signals** (:mod:`kbest_bleu.files.temporaries`): every temporary is removed on
  every exit path, signals included; a signal while outputs are renamed into place waits for the renames.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator, Optional, Sequence

from ..errors import InputError
from .inputs import clash, describe, refuse, same_file
from .temporaries import owner_tag, register, remove, remove_stale_temporaries, signals_deferred, temporary_directory, \
    unregister

__all__ = ["atomic_output", "atomic_outputs", "check_finite", "check_output", "copy_to_stdout", "open_log",
           "write_all"]

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
    """A failed write whose message names its output already (:func:`atomic_outputs`)."""


def _temporary_name(real: Path, suffix: str = "") -> Path:
    """``.NAME.kbest-tmp-PID.HOST`` beside ``real``, NAME cut so that the whole name fits the file
    system's limit (a legal 250-byte output name must not fail on its temporary's longer one)."""
    tag = f"{owner_tag()}{suffix}"
    try:
        limit = os.pathconf(real.parent if str(real.parent) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    name = real.name
    if 1 + len(name.encode()) + len(tag.encode()) > limit:  # cut, and told apart by a hash of the whole name
        mark = f"~{zlib.crc32(name.encode()):08x}"
        room = max(1, limit - 1 - len(tag.encode()) - len(mark))
        name = name.encode()[:room].decode(errors="ignore") + mark
    return real.with_name(f".{name}{tag}")


class _Output:
    """One output of :func:`atomic_outputs`: its checked path, where it is written, how it lands."""

    def __init__(self, target: "str | os.PathLike", inputs: Sequence, option: str, directory: bool) -> None:
        self.dst = check_output(target, inputs, option, directory)
        self.inputs, self.option, self.directory = inputs, option, directory
        self.stdout = str(self.dst) == "-"
        self.special = not self.stdout and not directory and _is_special(self.dst)  # /dev/null, a FIFO
        self.real = Path(os.path.realpath(self.dst)) if self.dst.is_symlink() else self.dst
        self.tmp = self.dst
        self.backup: Optional[Path] = None

    @property
    def renamed(self) -> bool:
        """Written to a temporary beside the target and renamed over it."""
        return not (self.stdout or self.special)

    def failed(self, exc: OSError, what: str = "could not write the output") -> _WriteFailed:
        return _WriteFailed(exc.errno, f"{self.option} {describe(self.dst)}: {what} ({exc.strerror or exc}); no "
                            "output was changed; free space or choose a writable path")


@contextlib.contextmanager
def atomic_output(target: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (), option: str = "-o",
                  directory: bool = False) -> Iterator[Path]:
    """Context manager yielding the path to write instead of ``target`` (:func:`atomic_outputs`
    of one output).

    A regular (or new) target: a temporary ``.NAME.kbest-tmp-PID.HOST`` beside it (beside the
    link's target for a symbolic link), renamed over the target when the block ends without an
    exception, after the inputs are checked again, and removed when it raises; an ``OSError`` (full
    disk) is raised again with a message naming the target. ``-``: a temporary in a work
    directory, copied to standard output on success. A device, FIFO or socket: the target itself
    (written directly, nothing to rename). ``directory``: the output is a new directory (Spark
    datasets), written and renamed the same way.
    """
    with atomic_outputs([(target, option, directory)], inputs) as (path,):
        yield path


@contextlib.contextmanager
def atomic_outputs(outputs: Sequence[tuple], inputs: Sequence["str | os.PathLike"] = ()) -> Iterator[list]:
    """Several outputs of one job, written as :func:`atomic_output` writes one and put in place
    together: the paths to write (a list, in the order of ``outputs``) are renamed over their
    targets only when the block ends without an exception, all of them or none. Where a rename
    fails (a directory moved away during the job), the targets already replaced get their previous
    files back (kept as hard links, or copies, until every rename is done) and new ones are removed.
    A signal during the renames waits for their end (:func:`signals_deferred`).

    ``outputs``: ``(target, option)`` or ``(target, option, directory)`` tuples; each is checked
    against ``inputs``, the command's registered inputs and the other outputs.
    """
    items: list = []
    for target, option, *rest in outputs:
        out = _Output(target, inputs, option, bool(rest and rest[0]))
        for other in items:
            if not (out.stdout or out.special) and same_file(out.dst, other.dst):
                raise InputError(f"{option} {describe(out.dst)}: is also the {other.option} output; give each output "
                                 "its own path")
        items.append(out)
    with contextlib.ExitStack() as stack:
        for out in items:
            if out.stdout:
                out.tmp = stack.enter_context(temporary_directory()) / "stdout"
            elif out.renamed:
                remove_stale_temporaries(out.real.parent if str(out.real.parent) else ".")
                out.tmp = _temporary_name(out.real)
                remove(out.tmp)
                register(out.tmp)
        try:
            try:
                yield [out.tmp for out in items]
            except _WriteFailed:  # an output written inside this block (a nested one) named itself
                raise
            except OSError as exc:  # a full disk while writing: the output(s) it concerns named
                raise _write_error(items, exc) from None
            _commit(items)
        finally:
            for out in items:
                if out.renamed:
                    unregister(out.tmp)
                    remove(out.tmp)


def _write_error(items: list, exc: OSError) -> OSError:
    """The error of a failed write in an :func:`atomic_outputs` block, naming the output written to
    (the temporary it names, or the only output; a failed write names no file, so several are all
    named); an error naming another file is no output's, and is left as it is, as are a reader that
    has gone (BrokenPipeError: the program exits as SIGPIPE would) and the errors of a lone device,
    FIFO or standard output (no previous file to keep; the program names stdout's work files)."""
    if isinstance(exc, BrokenPipeError) or (len(items) == 1 and not items[0].renamed):
        return exc
    if exc.filename is not None:
        named = [out for out in items if os.fspath(exc.filename) == os.fspath(out.tmp)]
        if not named:
            return exc
        return named[0].failed(exc)
    if len(items) == 1:
        return items[0].failed(exc)
    names = ", ".join(f"{out.option} {describe(out.dst)}" for out in items)
    return _WriteFailed(exc.errno, f"{names}: could not write the outputs ({exc.strerror or exc}); no output was "
                        "changed; free space or choose a writable path")


def _commit(items: list) -> None:
    """Rename every written temporary of ``items`` over its target (:func:`atomic_outputs`), then
    copy a standard-output one out."""
    for out in items:
        if out.special or out.tmp.exists():
            continue
        if out.renamed and not out.tmp.parent.is_dir():  # the machine, not the input: exit 1
            raise out.failed(OSError(2, f"the directory {str(out.tmp.parent)!r} was removed or moved during the job"),
                             "could not write the output")
        raise InputError(f"{out.option} {describe(out.dst)}: nothing was written")
    files = [out for out in items if out.renamed]
    for out in files:
        if not out.directory:  # an input read during the job is refused too
            check_output(out.dst, out.inputs, out.option)
            with contextlib.suppress(OSError):  # a replaced file keeps its permission bits
                if out.real.exists():
                    os.chmod(out.tmp, stat.S_IMODE(os.stat(out.real).st_mode))
    done: list = []
    # a signal during the renames is acted on after them; standard output is copied after that
    landed = "the output files were put in place" + (", standard output not written" if any(
        out.stdout for out in items) else "")
    with signals_deferred(landed):
        try:
            for out in files:
                if len(files) > 1 and out.real.exists() and not out.directory:
                    _keep(out)
                os.replace(out.tmp, out.real)
                done.append(out)
        except _WriteFailed:
            _put_back(done)
            raise
        except OSError as exc:
            _put_back(done)
            raise files[len(done)].failed(exc) from None
        except BaseException:  # a KeyboardInterrupt in a Python caller's process: all or none still
            _put_back(done)
            raise
        finally:
            for out in files:
                if out.backup is not None:
                    unregister(out.backup)
                    remove(out.backup)
    for out in items:
        if out.stdout:
            copy_to_stdout(out.tmp, out.option)


def _keep(out: _Output) -> None:
    """Keep the target's present file beside it (``out.backup``) until the other outputs are in
    place: a hard link (no copy), or a copy where the file system has none."""
    out.backup = _temporary_name(out.real, ".old")  # set first: removed whatever happens next
    remove(out.backup)
    register(out.backup)
    try:
        try:
            os.link(out.real, out.backup)
        except OSError:
            shutil.copy2(out.real, out.backup)
    except OSError as exc:
        raise out.failed(exc, "could not keep the previous file while the outputs are put in place") from None


def _put_back(done: list) -> None:
    """Undo the renames of ``done``: each target gets its kept file back, or is removed if it is new."""
    for out in reversed(done):
        with contextlib.suppress(OSError):
            if out.backup is not None:
                os.replace(out.backup, out.real)
                out.backup = None
            else:
                remove(out.real)

