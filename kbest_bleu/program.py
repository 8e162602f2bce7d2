"""The ``kbest-bleu`` program: :func:`kbest_bleu.cli.main` in a process of its own, with that
process's settings and a fast exit (README, "Threads" and "Benchmarks"). ``main()`` called from
Python keeps every default: these settings are for a process that runs one command and ends.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from pathlib import Path

from . import collector

__all__ = ["command"]


def _command_process() -> None:
    """Settings for a process that runs one command and exits (README, "Threads"): numba's
    workqueue threading layer unless NUMBA_THREADING_LAYER says otherwise (the command launches
    parallel kernels from its main thread only, and OpenMP's layer cost 20% more CPU on 2 cores
    with the read-ahead and write-behind threads; Spark's Python workers inherit the setting and
    launch from one thread each too), no BLAS probe (:func:`skip_blas_probe`), and one OpenBLAS
    thread unless OPENBLAS_NUM_THREADS says otherwise: numpy's OpenBLAS starts a thread per
    further core when numpy is imported, and each spins ~0.1 s of CPU before it sleeps, whether
    or not any BLAS call follows (a 5,000-row job: 0.31 -> 0.18 s of CPU, 0.22 -> 0.185 s wall,
    medians of 8; README, "Threads"). The commands' linear algebra is small (tuning's ~15
    features, bootstrap resamples of per-segment statistics): one thread serves it. In a
    container whose CPU quota is below its cores, numba's and Arrow's pools are sized to the quota
    (:func:`kbest_bleu._cpus.size_pools_to_quota`), unless NUMBA_NUM_THREADS / OMP_NUM_THREADS say
    otherwise. Malloc keeps what batches free for the next ones
    (:func:`kbest_bleu.memory.keep_freed_memory`), and Arrow's buffers come from its jemalloc pool
    where pyarrow has one (:func:`_arrow_memory_pool`). First of all, Python's garbage collector
    is paused until the job's start-up is over (:mod:`kbest_bleu.collector`: its runs over the
    imports' objects, which live to the end, cost 26 ms of a 200,000-row job)."""
    collector.pause()
    # first of all: a signal while the modules below are imported ends the command in one line
    # too, never in a KeyboardInterrupt traceback (the handlers main() installs come later)
    from .files.temporaries import install_signal_handlers
    install_signal_handlers()
    from .counting.threads import size_pools_to_quota
    from .jit import skip_blas_probe
    from .memory import keep_freed_memory
    if "numba" not in sys.modules:  # numba reads its threading layer when it is imported
        os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
    # idle OpenMP workers sleep instead of spinning: on a busy 2-core machine (load 11) a parallel
    # launch otherwise waited ~16 ms for spinning peers to be descheduled; passive, ~13 us. The
    # program's own setting: a library caller's process keeps its policy
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "numpy" not in sys.modules:  # OpenBLAS reads its thread count when numpy loads it
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    size_pools_to_quota()
    skip_blas_probe()
    keep_freed_memory()
    _arrow_memory_pool()
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        # the summary waits in the text buffer for the flush at exit, where a reader that has gone
        # (`| head`) is ignored, also under PYTHONUNBUFFERED=1 (common in container images), which
        # wrote each line at once and failed the finished job with "Broken pipe"
        sys.stdout.reconfigure(write_through=False)


def _arrow_memory_pool() -> None:
    """Arrow's jemalloc pool for the batches' buffers (README, "Memory"), where this pyarrow
    has one and the user chose no pool (``ARROW_DEFAULT_MEMORY_POOL``). pyarrow's default pool,
    mimalloc, commits and purges memory with system calls as batches come and go, more or less
    from run to run: 2,000,000 rows took 0.52 s of system time against 0.24 s, 1.995 against
    1.870 s wall and 437 against 392 MB at the peak (medians of 8 alternated runs); WMT22 pooled
    0.955 against 0.820 s (16 runs). Arrow reads the variable when it first allocates, so this
    runs before pyarrow is imported; whether pyarrow was built with jemalloc is read from its
    build header, so a build without it keeps its default (Arrow would warn about the choice).
    Only with 4 KiB memory pages: a jemalloc built for them fails on a 64 KiB-page kernel (some
    aarch64 systems), where mimalloc works. Child processes inherit the variable (Spark's local
    Python workers, which then use the same pool)."""
    if ("pyarrow" in sys.modules or "ARROW_DEFAULT_MEMORY_POOL" in os.environ
            or not hasattr(os, "sysconf") or os.sysconf("SC_PAGESIZE") != 4096):
        return
    spec = importlib.util.find_spec("pyarrow")
    if spec is not None and spec.submodule_search_locations and _has_jemalloc(spec.submodule_search_locations[0]):
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "jemalloc"


def _has_jemalloc(pyarrow_dir: "str | os.PathLike") -> bool:
    """Whether the pyarrow installed at ``pyarrow_dir`` was built with jemalloc: its build header
    ``include/arrow/util/config.h`` defines ``ARROW_JEMALLOC`` (False when the header is absent)."""
    try:
        header = (Path(pyarrow_dir) / "include" / "arrow" / "util" / "config.h").read_text(errors="replace")
    except OSError:
        return False
    return re.search(r"^#define ARROW_JEMALLOC\s*$", header, re.MULTILINE) is not None


def command() -> None:
    """The ``kbest-bleu`` program (and ``python -m kbest_bleu``): :func:`main` on the command
    line in a process of its own (:func:`_command_process`), then exit without tearing the
    interpreter down.

    By then every output is written, renamed and closed, and every thread pool joined; the
    teardown that is skipped (freeing numba's and LLVM's objects, Arrow's pools, module by module)
    took 0.3-0.5 s after a 363,000-row job, a fifth of its wall time. Logging and the standard
    streams are flushed first: a reader that has gone is ignored, any other error writing them is
    reported and fails the command (status 1), as Python's own exit would. A Spark job exits the
    usual way (its session is stopped already, but pyspark may keep exit handlers).
    """
    _command_process()
    from .cli import main  # after _command_process's settings, which some of its imports read
    code = main()
    if code == 0:
        from .files.temporaries import job_done
        job_done()  # a signal during the flush below no longer says "no output written"
    if "pyspark" in sys.modules:
        sys.exit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the stream closed
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader has gone (e.g. `| head`): nothing left to tell it
            pass
        except (OSError, ValueError) as exc:  # a full disk behind a redirected stdout: say so, fail
            if stream is sys.stdout and sys.stderr is not None:
                print(f"kbest-bleu: error: writing the output: {exc}", file=sys.stderr, flush=True)
            code = code or 1
    os._exit(code)
