"""glibc malloc's thresholds for a long-running process: the ``kbest-bleu`` program sets them
(:mod:`kbest_bleu.program`); a library caller's process only when it asks
(:func:`keep_freed_memory`: a training loop scoring a batch every step). Importing this module
changes nothing.
"""

from __future__ import annotations

import ctypes
import sys

from . import settings

__all__ = ["keep_freed_memory"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Set glibc's malloc to reuse what a call frees for the next one: blocks up to
    :data:`~kbest_bleu.settings.MMAP_THRESHOLD` (64 MiB) from the heap, freed memory kept up to
    :data:`~kbest_bleu.settings.TRIM_THRESHOLD` (128 MiB). Returns whether it was set.

    By default glibc maps each block above its threshold (128 KiB, rising with the blocks freed up
    to 32 MiB) afresh and returns freed memory at the heap's top to the system, so a process that
    scores a batch again and again faults the pages of every batch's arrays in again, each fault
    costing system time (more on a VM). Measured: the ``kbest-bleu`` program on 2,000,000 rows,
    115,000-120,000 -> 33,000-38,000 page faults, median wall 2.24 -> 2.05 s, the same peak
    memory; ``token_bleu`` on 256 x 1,024 ids in a loop (2 threads) 9.4-13.4 -> 6.6-10.4 ms a call,
    the machine's load moving during the runs (docs/token_ids.md, "Speed"). Left alone (False)
    where the user tunes malloc (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, or
    ``GLIBC_TUNABLES`` naming malloc), off Linux, and where the C library has no ``mallopt``
    (musl's accepts and ignores it).
    """
    if not sys.platform.startswith("linux") or settings.user_tunes_malloc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt(_M_MMAP_THRESHOLD, settings.MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, settings.TRIM_THRESHOLD)
    return True
