"""Compile every kernel of the package ahead of the first job (``kbest-bleu warmup``; README,
"First run").

numba compiles a kernel on its first use and keeps the machine code in its on-disk cache
(:mod:`kbest_bleu.jit`); compiled code is not shipped (numba's entries are tied to the CPU and
the numba installation). Warm-up runs each area's kernels once (:mod:`.areas`). numba compiles
holding the GIL, so areas run in several processes (:func:`warm_up`); then :func:`uncovered`
checks that every kernel of :data:`kbest_bleu.jit.REGISTRY` is compiled, so that a kernel added
without a warm-up fails the command.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from .. import jit, settings
from .areas import AREAS, NEEDS, STEPS, available_areas, on_step

__all__ = ["AREAS", "NOT_WARMED", "AreaReport", "WarmupResult", "available_areas", "cache_directory", "run_area",
           "uncovered", "warm_up"]

# kernels no public function calls (a job never compiles them), and why
NOT_WARMED = {"kbest_bleu.metrics.meteor._align.align": "called by tests only"}
_PACKAGE = Path(__file__).parents[1]
_DECLARES = re.compile(r"^\s*from\s+(?:\.+|kbest_bleu\.)jit\s+import\s+[^\n]*\bnjit\b", re.M)  # declares kernels

@dataclass(frozen=True)
class AreaReport:
    """One area's news: ``event`` "start", "running" (still, after ``seconds``), "done",
    "skipped" or "failed" (why: ``detail``); ``compiled``: ``module.name`` of the package's kernel
    functions numba compiled for it (cache misses, callees included); ``seconds`` wall, ``cpu``
    its process's CPU."""

    area: str
    event: str
    compiled: tuple = ()
    seconds: float = 0.0
    cpu: float = 0.0
    detail: str = ""

    @property
    def kernels(self) -> int:
        return len(self.compiled)

    def line(self) -> str:
        """One line for the command's output."""
        if self.event in ("start", "running"):
            return f"{self.area}: compiling..." if self.event == "start" else \
                f"{self.area}: still compiling ({self.seconds:.0f} s)"
        took = f"in {self.seconds:.1f} s ({self.cpu:.1f} s of CPU)"
        if self.event == "done":
            return f"{self.area}: {self.kernels} kernels compiled {took}" if self.kernels else \
                f"{self.area}: every kernel was in the cache already ({self.seconds:.1f} s)"
        return f"{self.area}: {self.event} {took}: {self.detail}"


@dataclass(frozen=True)
class WarmupResult:
    """areas: each area's last report; missing: registered kernels without machine code after the
    run (``area: module.name``); not_imported: kernel modules that could not be imported (their
    kernels are not registered); crossed: ``area compiled module.name`` where an area compiled a
    kernel of another area warmed up in the same run (its entry in :data:`.areas.NEEDS` is
    incomplete: two processes may have compiled one function); seconds: wall time, checks included."""

    areas: list
    missing: list
    not_imported: list
    crossed: list
    seconds: float

    @property
    def kernels(self) -> int:
        return sum(r.kernels for r in self.areas)

    @property
    def ok(self) -> bool:
        """No area failed, every registered kernel is compiled, each by its own area."""
        return not self.missing and not self.crossed and all(r.event != "failed" for r in self.areas)


def _listener(names: set) -> Any:
    """A numba compile listener adding ``module.qualname`` of the package's functions to ``names``."""
    from numba.core import event

    class Compiles(event.Listener):
        def on_start(self, ev: Any) -> None:
            func = ev.data["dispatcher"].py_func
            if func.__module__.split(".")[0] == _PACKAGE.name:
                names.add(f"{func.__module__}.{func.__qualname__}")

        def on_end(self, ev: Any) -> None:
            pass
    return Compiles()


def run_area(area: str) -> AreaReport:
    """Run one area's warm-up in this process (numba's kernels serve it from then on: the
    ahead-of-time module is set aside), in a temporary directory removed on every exit. An error
    "skips" an area not in :data:`AREAS` (being written, or a metric built with its defaults),
    and "fails" the others."""
    from numba.core import event

    from ..counting import aot
    warm, names = available_areas()[area], set()
    aot.unload()
    t0, c0 = time.perf_counter(), time.process_time()

    def report(what: str, detail: str = "") -> AreaReport:
        return AreaReport(area, what, tuple(sorted(names)), time.perf_counter() - t0, time.process_time() - c0, detail)
    try:
        with tempfile.TemporaryDirectory(prefix="kbest_bleu-warmup-") as tmp, \
                event.install_listener("numba:compile", _listener(names)):
            warm(Path(tmp))
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return report("failed" if area in AREAS else "skipped",
                      f"{type(exc).__name__}: {exc} at {Path(where.filename).name}:{where.lineno}")
    return report("done")


class _Schedule:
    """The areas left, each handed out once what it needs (:data:`NEEDS`) is done; reports go to
    ``progress`` one at a time, and "running" ones when nothing was said for a while."""

    def __init__(self, pending: list, requested: set, progress: Optional[Callable[[AreaReport], None]]) -> None:
        self.pending, self.requested, self.progress = pending, requested, progress
        self.finished: dict = {}
        self.running: dict = {}
        self.said = time.monotonic()
        self.cond = threading.Condition()

    def _ready(self, area: str) -> bool:
        needs = {n: STEPS.get(n, n) for n in NEEDS.get(area, {"counting"})}  # need -> its area
        return all(n in self.finished or a in self.finished or a not in self.requested or a == area
                   for n, a in needs.items())

    def take(self, wait: bool) -> Optional[str]:
        with self.cond:
            while self.pending:
                ready = [a for a in self.pending if self._ready(a)]
                if ready:
                    self.pending.remove(ready[0])
                    return ready[0]
                if not wait:
                    return None
                self.cond.wait(1.0)
            return None

    def reached(self, step: str) -> None:
        with self.cond:
            self.finished[step] = True
            self.cond.notify_all()

    def report(self, r: AreaReport) -> None:
        with self.cond:
            if r.event == "start":
                self.running[r.area] = time.monotonic()
            elif r.event != "running":
                self.running.pop(r.area, None)
                self.finished[r.area] = r
                self.cond.notify_all()
            self.said = time.monotonic()
            if self.progress is not None:
                self.progress(r)

    def remind(self, every: float) -> None:
        if time.monotonic() - self.said >= every:
            for area, t0 in list(self.running.items()):
                self.report(AreaReport(area, "running", seconds=time.monotonic() - t0))

    def run_here(self, area: str) -> None:
        self.report(AreaReport(area, "start"))
        self.report(run_area(area))


def _exit_on_term(*_: Any) -> None:
    """SIGTERM's handler during warm-up: SystemExit, so that temporary directories are removed."""
    sys.exit(143)


def _serve(tasks: Any, events: Any, wid: int) -> None:
    """A worker process: runs the areas it is sent until None, reporting on ``events``; ends
    (SIGTERM to itself) when the process that started it ends."""
    signal.signal(signal.SIGTERM, _exit_on_term)
    parent = multiprocessing.parent_process()
    threading.Thread(target=lambda: (parent.join(), os.kill(os.getpid(), signal.SIGTERM)), daemon=True).start()
    for area in iter(tasks.get, None):
        events.put((wid, AreaReport(area, "start")))
        events.put((wid, run_area(area)))


class _Workers:
    """``n`` worker processes (``spawn``: never ``fork`` after numba's threads started), fed by a
    thread of this process that relays their reports and the reminders until :meth:`join`."""

    def __init__(self, n: int, schedule: _Schedule, remind_every: float) -> None:
        self.schedule, self.remind_every, self.closing = schedule, remind_every, threading.Event()
        ctx = multiprocessing.get_context("spawn")
        self.events = ctx.Queue() if n else queue.Queue()
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.procs = [ctx.Process(target=_serve, args=(q, self.events, i), daemon=True, name=f"kbest-bleu warmup {i}")
                      for i, q in enumerate(self.tasks)]
        self.busy: list = [None] * n  # the area each worker runs; None idle, False ended
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        for p in self.procs:
            p.start()
        self.thread.start()

    def _run(self) -> None:
        while not (self.closing.is_set() and all(b is False for b in self.busy)):
            for i, area in enumerate(self.busy):
                if area is None and ((area := self.schedule.take(wait=False)) or not self.schedule.pending):
                    self.busy[i] = area or False
                    self.tasks[i].put(area)  # None: the worker ends
            try:
                i, r = self.events.get(timeout=0.2)
            except queue.Empty:
                for i, p in enumerate(self.procs):
                    if self.busy[i] and not p.is_alive():  # killed, or crashed in a kernel
                        self.schedule.report(AreaReport(self.busy[i], "failed",
                                                        detail=f"its process ended (exit code {p.exitcode})"))
                        self.busy[i] = False
                self.schedule.remind(self.remind_every)
                continue
            self.schedule.report(r)
            self.busy[i] = self.busy[i] if r.event == "start" else None

    def join(self) -> None:
        self.closing.set()
        self.thread.join()
        for q, p in zip(self.tasks, self.procs):
            q.put(None)  # ends a worker whatever became of the thread
            p.join()
        self._close()

    def stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.terminate()  # SIGTERM: the worker removes its temporary directory
            p.join()
        self._close()

    def _close(self) -> None:
        """The queues' semaphores released now: the program exits without teardown."""
        for q in self.tasks + ([self.events] if self.procs else []):
            q.close()
            q.join_thread()
        self.tasks, self.events = [], None


def warm_up(areas: Optional[Sequence[str]] = None, processes: int = 2,
            progress: Optional[Callable[[AreaReport], None]] = None,
            after_counting: Optional[Callable[[], None]] = None, remind_every: float = 30.0) -> WarmupResult:
    """Compile the kernels of ``areas`` (default: :func:`available_areas`) in up to ``processes``
    processes at once, then check that every kernel registered for them is compiled (:func:`uncovered`).

    The calling process runs ``counting``, then ``after_counting`` (the command builds the
    ahead-of-time module there, from the counting kernels just compiled), then takes areas left;
    ``processes - 1`` worker processes (``spawn``: a script calling this needs the
    ``if __name__ == "__main__":`` guard) take the others, each once the areas whose kernels it
    calls are done. ``progress`` gets an :class:`AreaReport` as each area starts and ends, and
    "running" ones after ``remind_every`` seconds of silence; one call at a time, from the calling
    thread or the thread relaying the workers' reports.
    """
    from ..errors import InputError
    t0 = time.perf_counter()
    known = available_areas()
    names = list(known) if areas is None else list(dict.fromkeys(areas))
    if any(a not in known for a in names):
        raise InputError(f"warmup areas: expected some of {', '.join(known)}, found {names}")
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise InputError(f"warmup processes: expected a positive number, found {processes!r}")
    schedule = _Schedule([a for a in names if a != "counting"], set(names), progress)
    workers = _Workers(min(processes - 1, len(schedule.pending)), schedule, remind_every)
    here = threading.current_thread() is threading.main_thread()  # signal handlers are set there only
    handler = signal.signal(signal.SIGTERM, _exit_on_term) if here else None
    on_step(schedule.reached)
    workers.start()
    try:
        if "counting" in names:
            schedule.run_here("counting")
            if after_counting is not None:
                after_counting()
        while (area := schedule.take(wait=True)) is not None:  # the areas no worker took
            schedule.run_here(area)
        workers.join()
    except BaseException:
        workers.stop()
        raise
    finally:
        on_step(None)
        if here:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if handler is None else handler)
    missing, not_imported = uncovered(names)
    reports = [schedule.finished[a] for a in names if a in schedule.finished]
    crossed = [f"{r.area} compiled {k}" for r in reports for k in r.compiled
               if jit.area_of(k.rsplit(".", 1)[0]) in set(names) - {r.area}]
    return WarmupResult(reports, missing, not_imported, crossed, time.perf_counter() - t0)


def _kernel_modules() -> list[str]:
    """The package's modules that declare kernels with :func:`kbest_bleu.jit.njit` (by their source)."""
    out = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        rel = path.relative_to(_PACKAGE.parent).with_suffix("")
        if "__pycache__" not in rel.parts and _DECLARES.search(path.read_text(encoding="utf-8", errors="replace")):
            out.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return out


def uncovered(areas: Optional[Iterable[str]] = None) -> tuple[list[str], list[str]]:
    """Kernels without machine code: every module declaring kernels (of ``areas``, default all)
    is imported, then each kernel of :data:`kbest_bleu.jit.REGISTRY` that is not
    ``inline="always"`` (never compiled alone) nor in :data:`NOT_WARMED` must be
    :func:`kbest_bleu.jit.compiled`. Returns (``area: module.name`` of each kernel not compiled,
    ``module (error)`` of each module that could not be imported)."""
    wanted = None if areas is None else set(areas)
    not_imported = []
    for module in _kernel_modules():
        if wanted is None or jit.area_of(module) in wanted:
            try:
                importlib.import_module(module)
            except Exception as exc:
                not_imported.append(f"{module} ({type(exc).__name__}: {exc})")
    missing = []
    for area, kernels in jit.REGISTRY.items():
        for kernel in kernels if wanted is None or area in wanted else ():
            func = jit.python_function(kernel)
            name = f"{func.__module__}.{func.__qualname__}"
            if not (getattr(kernel, "targetoptions", {}).get("inline") == "always" or name in NOT_WARMED
                    or jit.compiled(kernel)):
                missing.append(f"{area}: {name}")
    return missing, not_imported


def cache_directory() -> str:
    """Where numba keeps the compiled kernels, for messages."""
    return str(settings.numba_cache_dir() or "numba's default (__pycache__ beside the package's modules)")
