"""How many CPUs this process can use: the cores its affinity allows, capped by the CPU
bandwidth quota of its cgroup (``docker run --cpus``, a Kubernetes CPU limit, a systemd
``CPUQuota``).

numba and Arrow size their thread pools by the affinity alone, so in a container given 2 CPUs on
a 64-core host they would start 64 threads each, and the kernel's scheduler throttles the
container every period once the 64 have spent its 2 CPUs' time. Measured on this project's
2-core machine in a cgroup of 1 CPU (``cpu.cfs_quota_us`` = period), 2,000,000 rows: pools of 2
(one per core) 3.18-3.69 s against pools sized to the quota 2.93-3.15 s (README, "Threads").

The ``kbest-bleu`` program sizes its pools so (:func:`size_pools_to_quota`); a library caller's
process is the caller's to configure (``NUMBA_NUM_THREADS``, :func:`set_threads`, which changes
no environment variable).

The kernels' thread count: :func:`set_threads` (``--threads``, ``kbest_bleu.set_threads``),
:func:`thread_count`, and :func:`threads_for` (one thread for a small job).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .. import settings
from ..errors import InputError

__all__ = ["affinity_cpus", "apply_requested", "cpu_quota", "quota_cpus", "set_threads", "size_pools_to_quota",
           "thread_count", "threads", "threads_for"]

_requested: list = [None]  # set_threads' count
_pending: list = [False]  # asked for before numba was imported: applied once when the kernels load

PROC_SELF = Path("/proc/self")


def affinity_cpus() -> int:
    """The cores this process may run on (its affinity; all cores where it cannot be read)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def cpu_quota(proc: Path = PROC_SELF) -> Optional[int]:
    """Whole CPUs of the tightest CPU bandwidth limit on this process's cgroup and its
    ancestors: floor(quota / period), at least 1 (a fractional CPU gives no room for a second
    busy thread). cgroup v2: ``cpu.max`` ("max 100000" = no limit, "150000 100000" = 1.5 CPUs);
    v1: ``cpu.cfs_quota_us`` (-1 = no limit) over ``cpu.cfs_period_us``. None when no limit is
    set or the cgroup files cannot be read (not Linux, no cgroup file system mounted).

    ``proc``: the ``/proc/self`` to read (``mountinfo`` and ``cgroup``), for tests.
    """
    limits = [cpus for cpus in (_limit(d, version) for d, version in _cpu_cgroup_dirs(proc)) if cpus is not None]
    return min(limits) if limits else None


def quota_cpus(proc: Path = PROC_SELF) -> Optional[int]:
    """The CPUs this process can use where its cgroup's quota (:func:`cpu_quota`) leaves fewer
    than its affinity allows (:func:`affinity_cpus`); None elsewhere (the pools' defaults stand)."""
    quota = cpu_quota(proc)
    return quota if quota is not None and quota < affinity_cpus() else None


def size_pools_to_quota(proc: Path = PROC_SELF) -> Optional[int]:
    """For a process of its own (the ``kbest-bleu`` program): numba's and Arrow's thread pools
    sized to :func:`quota_cpus` through ``NUMBA_NUM_THREADS`` and ``OMP_NUM_THREADS`` (which
    Arrow's CPU pool reads), each unless the user set it or its library is imported already (its
    pool sized). ``--threads`` later sets both again (:func:`kbest_bleu.stats.set_threads`).
    Returns the quota applied, or None."""
    n = quota_cpus(proc)
    if n is None:
        return None
    for var, library in (("NUMBA_NUM_THREADS", "numba"), ("OMP_NUM_THREADS", "pyarrow")):
        if var not in os.environ and library not in sys.modules:
            os.environ[var] = str(n)
    return n


def _cpu_cgroup_dirs(proc: Path) -> Iterator[tuple[Path, int]]:
    """(directory, cgroup version) of this process's cgroup and of each ancestor up to the mount
    point, in each hierarchy that has the cpu controller."""
    try:
        mounts = (proc / "mountinfo").read_text().splitlines()
        groups = (proc / "cgroup").read_text().splitlines()
    except OSError:
        return
    for line in mounts:
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if len(fields) < sep + 4 or sep < 5:
            continue
        fs, options = fields[sep + 1], fields[sep + 3].split(",")
        if fs == "cgroup2":
            version = 2
        elif fs == "cgroup" and "cpu" in options:
            version = 1
        else:
            continue
        root, point = _unescape(fields[3]), Path(_unescape(fields[4]))
        for path in _group_paths(groups, version):
            below = _below(path, root)
            if below is None:
                continue
            directory = point / below
            for d in (directory, *directory.parents):
                if d != point and point not in d.parents:
                    break
                yield d, version


def _below(path: str, root: str) -> Optional[str]:
    """A cgroup path relative to the root of the mount that shows it, or None where the mount
    does not show it (a path outside the mount's root, or outside the cgroup namespace: "/.."):
    no limit is read rather than another cgroup's. In a container without a cgroup namespace the
    mount's root is the container's own cgroup, named the same in /proc."""
    if path.startswith("/..") or "/../" in path:
        return None
    if root == "/":
        return path.lstrip("/")
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return path[len(root):].lstrip("/")
    return None


def _group_paths(lines: list, version: int) -> Iterator[str]:
    """The process's cgroup paths in /proc/self/cgroup ("id:controllers:path") for a hierarchy of
    ``version``: v2 is the line "0::path", v1 the lines whose controllers include cpu."""
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if version == 2 and parts[0] == "0" and parts[1] == "":
            yield parts[2]
        elif version == 1 and "cpu" in parts[1].split(","):
            yield parts[2]


def _limit(directory: Path, version: int) -> Optional[int]:
    """Whole CPUs of the limit set on one cgroup directory, None where none is set or readable."""
    try:
        if version == 2:
            quota, period = (directory / "cpu.max").read_text().split()[:2]
            if quota == "max":
                return None
        else:
            quota = (directory / "cpu.cfs_quota_us").read_text().strip()
            period = (directory / "cpu.cfs_period_us").read_text().strip()
        q, p = int(quota), int(period)
    except (OSError, ValueError):
        return None
    return max(1, q // p) if q > 0 and p > 0 else None


def _unescape(field: str) -> str:
    """A path of /proc/self/mountinfo, whose spaces, tabs, newlines and backslashes are octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def set_threads(n: int) -> int:
    """Use ``n`` threads for the kernels (the CLI's ``--threads``); returns the count in effect.

    Sets the count of the calling thread, capped at numba's pool size; before numba is imported,
    the count is remembered and applied when the kernels load (:func:`apply_requested`). The
    process's environment is left alone (the ``kbest-bleu`` program sizes numba's pool itself).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"threads: expected a positive integer, found {n!r}; pass e.g. --threads 2")
    _requested[0] = n
    if "numba" not in sys.modules:
        _pending[0] = True
        return n
    import numba

    n = min(n, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(n)
    return n


@contextmanager
def threads(n: int) -> Iterator[int]:
    """``with kbest_bleu.threads(2): ...``: the kernels' thread count set to ``n`` for the block
    (:func:`set_threads`; yields the count in effect), the previous one back after it, also when
    numba was first imported inside the block (then numba's own default). Like :func:`set_threads`,
    it sets the calling thread's count and leaves Arrow's pool (``pyarrow.set_cpu_count``) and the
    environment alone."""
    asked_before = _requested[0]
    before = _numba_threads()
    count = set_threads(n)
    try:
        yield count
    finally:
        _requested[0] = asked_before
        if "numba" in sys.modules:
            import numba

            restore = before or asked_before or numba.config.NUMBA_NUM_THREADS
            numba.set_num_threads(min(restore, numba.config.NUMBA_NUM_THREADS))


def _numba_threads() -> Optional[int]:
    """numba's thread count on the calling thread, None while numba is not imported."""
    if "numba" not in sys.modules:
        return None
    import numba

    return numba.get_num_threads()


def apply_requested() -> None:
    """numba's thread count on the calling thread set to :func:`set_threads`' count, if one was
    asked for before numba was imported (called where the kernels load)."""
    if _pending[0] and "numba" in sys.modules:
        import numba

        _pending[0] = False
        numba.set_num_threads(min(_requested[0], numba.config.NUMBA_NUM_THREADS))


def thread_count() -> int:
    """The kernels' thread count on the calling thread (:func:`set_threads`, ``--threads``).
    Before numba is imported (a job on the ahead-of-time kernels): the count asked for, else the
    count numba would start with (``NUMBA_NUM_THREADS`` or the CPUs this process may use), without
    importing it."""
    if "numba" not in sys.modules:
        return _requested[0] or settings.numba_threads() or affinity_cpus()
    import numba

    return numba.get_num_threads()


@contextmanager
def threads_for(n_bytes: int) -> Iterator[int]:
    """The thread count for a job of ``n_bytes`` input bytes, set for the block: 1 below
    :data:`~kbest_bleu.settings.SMALL_JOB_BYTES` (a parallel launch costs more than such a job:
    ~13 us passive, 2 us on one thread), else the current count. Without numba imported (the
    ahead-of-time kernels run on the caller's threads), nothing is set."""
    if "numba" not in sys.modules:
        yield thread_count() if n_bytes >= settings.SMALL_JOB_BYTES else 1
        return
    import numba

    before = numba.get_num_threads()
    if n_bytes >= settings.SMALL_JOB_BYTES or before == 1:
        yield before
        return
    numba.set_num_threads(1)
    try:
        yield 1
    finally:
        numba.set_num_threads(before)
