"""kbest_bleu.memory: malloc's thresholds, in the program's process and in a library caller's
process only when asked."""

import ctypes
import os
import subprocess
import sys

import pytest

MAPPED = """
import ctypes
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
before = libc.mallinfo2().hblkhd
a = bytearray(4 << 20)
print(libc.mallinfo2().hblkhd - before >= 4 << 20)
"""
UNSET = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
PROCESS = "from kbest_bleu.program import _command_process\n_command_process()\n"


def _has_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


def _run(code: str, env: dict | None = None) -> list:
    base = {k: v for k, v in os.environ.items() if k not in UNSET}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**base, **(env or {})})
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


GLIBC = pytest.mark.skipif(not sys.platform.startswith("linux") or not _has_mallinfo2(),
                           reason="glibc's malloc statistics")


@GLIBC
def test_the_program_keeps_batch_sized_blocks_on_the_heap():
    """The program's process takes blocks up to 64 MiB from the heap (reused batch after batch),
    not from fresh mappings; a library caller's process keeps glibc's default (a 4 MiB block is
    mapped), and so does a program whose user tunes malloc."""
    assert _run(PROCESS + MAPPED) == ["False"]
    assert _run(MAPPED) == ["True"]
    assert _run(PROCESS + MAPPED, {"MALLOC_MMAP_THRESHOLD_": "131072"}) == ["True"]
    assert _run(PROCESS + MAPPED, {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}) == ["True"]


@GLIBC
def test_keep_freed_memory_only_when_asked_and_not_against_the_user():
    """Importing the package leaves glibc's default (a 4 MiB block is mapped); asking takes such
    blocks from the heap; a user who tunes malloc keeps the user's setting (and is told so)."""
    ask = "import kbest_bleu\nprint(kbest_bleu.keep_freed_memory())\n"
    assert _run("import kbest_bleu, kbest_bleu.token_ids\n" + MAPPED) == ["True"]
    assert _run(ask + MAPPED) == ["True", "False"]
    assert _run(ask + MAPPED, {"MALLOC_TRIM_THRESHOLD_": "131072"}) == ["False", "True"]
    assert _run(ask + MAPPED, {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}) == ["False", "True"]
