"""What a command reads, registered so that no output of the command replaces it
(docs/failure_behaviour.md, "Inputs are never outputs"); :mod:`kbest_bleu.files.output` checks
every output against it.

While a command runs (:func:`command_scope`, entered by ``cli.main``), every reader of
:mod:`kbest_bleu.files` and of the metrics registers the path it opens (:func:`register_input`,
:func:`reading` for side files), keyed by resolved path and by (``st_dev``, ``st_ino``). The
outputs named on the command line are declared (:func:`declare_output`) and checked before
anything is read (:func:`check_declared_outputs`): against the inputs, against each other, and
standard output against the inputs when it is redirected to a file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import zlib
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ..errors import InputError

__all__ = ["check_declared_outputs", "clash", "command_scope", "declare_output", "describe", "reading", "refuse",
           "register_input", "registered_inputs", "same_file"]

_LOCK = threading.Lock()
_SCOPE = {"depth": 0, "checked": False}
_INPUTS: dict = {}  # realpath or (st_dev, st_ino) -> (path as given, option that named it)
_OUTPUTS: list = []  # (path, option) of the outputs named on the command line


@contextlib.contextmanager
def command_scope() -> Iterator[None]:
    """The span of one command: paths given to :func:`register_input` inside it are the inputs
    every output is checked against. Outside any scope (a library call) registration does nothing
    and only the ``inputs`` passed to :func:`check_output` count."""
    with _LOCK:
        _SCOPE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _SCOPE["depth"] -= 1
            if not _SCOPE["depth"]:
                _INPUTS.clear()
                _OUTPUTS.clear()
                _SCOPE["checked"] = False


def _keys(path: "str | os.PathLike") -> list:
    """The resolved path and, for an existing file, its (device, inode)."""
    keys: list = [os.path.realpath(path)]
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return keys
    keys.append((st.st_dev, st.st_ino))
    return keys


def same_file(a: "str | os.PathLike", b: "str | os.PathLike") -> bool:
    """Whether two paths name one file: the same resolved path, or the same (device, inode)."""
    return bool(set(_keys(a)) & set(_keys(b)))


def register_input(path: "Optional[str | os.PathLike]", option: str = "input") -> None:
    """Record that the running command reads ``path`` (named by ``option`` on the command line), so
    that no output may replace it. ``None`` and ``-`` (stdin) are ignored, and so is everything
    outside :func:`command_scope`."""
    if path is None or not _SCOPE["depth"]:
        return
    text = os.fspath(path)
    if text in ("", "-"):
        return
    keys = _keys(text)
    for key in keys:
        with _LOCK:
            _INPUTS.setdefault(key, (text, option))
    if _SCOPE["checked"]:  # read after the early check (check_declared_outputs): checked against stdout now
        _check_stdout(text, option, keys)


def _stdout_file() -> Optional[tuple]:
    """(st_dev, st_ino) of standard output when it is a regular file (``> FILE``, ``>> FILE``,
    ``1<> FILE``), else None (a terminal, a pipe, a caller's capture)."""
    try:
        st = os.fstat(sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):  # closed, or a stream without a descriptor
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _check_stdout(text: str, option: str, keys: list) -> None:
    """Refuse an input that is the file standard output is redirected to: what the command prints
    (``-o -``, a results table) would be written over it (``1<>``) or appended to it (``>>``)."""
    out = _stdout_file()
    if out is not None and out in keys:
        named = "" if option == "input" else f" ({option})"
        raise InputError(f"{text!r}{named}: is the file standard output is redirected to; what the command "
                         "prints would be written into the input; redirect standard output to another file")


def declare_output(path: "Optional[str | os.PathLike]", option: str = "-o") -> None:
    """Record an output named on the command line (inside :func:`command_scope`), so that
    :func:`check_declared_outputs` can refuse it before anything is read."""
    if path is not None and _SCOPE["depth"] and os.fspath(path) != "":
        with _LOCK:
            _OUTPUTS.append((os.fspath(path), option))


def check_declared_outputs() -> None:
    """The early check, before the command reads anything (:func:`atomic_output` checks again
    later): raise :class:`InputError` for the first declared output that is a registered input,
    for two outputs that are one file (or both standard output), and for an input that standard
    output is redirected to. Inputs registered from now on are checked against standard output
    as they are registered."""
    with _LOCK:
        outputs = list(_OUTPUTS)
        inputs = dict(_INPUTS)
        _SCOPE["checked"] = True
    written: dict = {}
    for path, option in outputs:
        keys = ["-"] if path == "-" else _keys(path)
        if path != "-":
            found = clash(Path(path), ())
            if found is not None:
                refuse(path, option, found)
        for key in keys:
            if key in written and written[key][1] != option:
                first, by = written[key]
                raise InputError(f"{option} {describe(path)}: is also the output of {by} ({describe(first)}); "
                                 "each output needs a path of its own")
            written.setdefault(key, (path, option))
    out = _stdout_file()
    if out is not None and out in inputs:
        _check_stdout(*inputs[out], [out])


def refuse(dst: "Path | str", option: str, found: tuple) -> None:
    """Raise the one-line :class:`InputError` of an output ``dst`` that is the input ``found``
    ((path, option) from :func:`clash`)."""
    src, named = found
    by = "" if named == "input" else f"{named}; "
    raise InputError(f"{option} {describe(dst)}: the output path is the input file {src!r} ({by}the same file "
                     "after resolving links); writing it would destroy the input; choose a new output path")


@contextlib.contextmanager
def reading(path: "str | os.PathLike", what: str, expected: str = "a readable UTF-8 text file") -> Iterator[None]:
    """The one guard for reading a side file (paraphrase tables, synonyms, function words, corpora,
    models): ``path`` is registered as an input (:func:`register_input`), and what reading it
    raises for a bad file (invalid UTF-8, a truncated or corrupt .gz/.bz2/.xz/zip, a file too big for
    memory, a missing or unreadable file, Arrow's parse errors) becomes one :class:`InputError`
    naming ``what`` (the option), the file and ``expected``."""
    import gzip
    import lzma
    import zipfile
    register_input(path, what)
    where = f"{what} {os.fspath(path)!r}"
    try:
        yield
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: is not valid UTF-8 (byte {exc.object[exc.start:exc.start + 1].hex()} where text "
                         f"was expected); expected {expected}; re-encode it as UTF-8") from None
    except (EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError, zipfile.BadZipFile) as exc:
        raise InputError(f"{where}: could not be decompressed ({type(exc).__name__}: {exc}); expected a complete "
                         f"compressed file holding {expected}") from None
    except MemoryError:
        raise InputError(f"{where}: does not fit in memory (a corrupt header or a file far larger than expected); "
                         f"expected {expected}") from None
    except OSError as exc:
        raise InputError(f"{where}: could not read it ({exc.strerror or exc}); expected {expected}") from None
    except ValueError as exc:  # pyarrow's ArrowInvalid (a parse error), numbers that do not parse
        raise InputError(f"{where}: could not be read ({str(exc).splitlines()[0][:200]}); expected "
                         f"{expected}") from None


def registered_inputs() -> list:
    """(path, option) of every input registered in the running command, in no particular order."""
    with _LOCK:
        return sorted(set(_INPUTS.values()))


def clash(target: Path, inputs: Sequence) -> Optional[tuple]:
    """(path, option) of the input that ``target`` would overwrite, or None."""
    mine = _keys(target)
    for src in inputs:
        if src is not None and str(src) != "-" and set(_keys(src)) & set(mine):
            return str(src), "input"
    with _LOCK:
        for key in mine:
            if key in _INPUTS:
                return _INPUTS[key]
    return None


def describe(path: "Path | str") -> str:
    return "the current directory" if str(path) == "." else f"{str(path)!r}"
