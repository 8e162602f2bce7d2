"""Python's cyclic garbage collector, paused while the ``kbest-bleu`` program starts a job.

Starting a scoring job imports pyarrow, numpy and numba and loads the compiled kernels: some
100,000 container objects (modules, classes, numba's type registries) that live until the
process exits. The collector runs after every 700 new ones, and each run traverses the young
ones again, the full runs everything: a 200,000-row job's start-up ran it 138-146 times, 26 ms
of a 0.5 s process, freeing ~1,050 objects in all (benchmarks/RESULTS.md, "Start-up").

The program pauses it when it starts (:func:`pause`). :func:`resume` moves everything allocated
so far into the collector's permanent generation (``gc.freeze``: later runs skip it) and turns it
back on; it is called once the start-up is over: after a scoring job's first output batch,
before any other command runs, and before a kernel compiles (numba's compiler leaves reference
cycles behind: a first run's peak memory grew 55 MB without the collector). The start-up's own
garbage cycles (~1,500 objects, ~340 KB: argparse's, the standard library's) are frozen with
the rest and kept until the process exits. A library caller's collector is never touched:
:func:`resume` does nothing unless :func:`pause` paused it.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_paused = [False]


def pause() -> None:
    """Turn the collector off until :func:`resume` (unless it is off already)."""
    if gc.isenabled():
        gc.disable()
        _paused[0] = True


def resume() -> None:
    """Freeze what the start-up allocated and turn the collector back on, if :func:`pause`
    turned it off; otherwise nothing. Called from several threads (a compile on the reader thread,
    the first batch on the main one), two calls may both freeze and enable: both are idempotent."""
    if _paused[0]:
        _paused[0] = False
        gc.freeze()
        gc.enable()
