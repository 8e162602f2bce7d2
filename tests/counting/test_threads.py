"""The CPUs a process can use (kbest_bleu.counting.threads): cgroup CPU quotas read from a fake /proc and
cgroup file system, and from a real cgroup where this machine lets the tests make one."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kbest_bleu.counting import threads as _cpus

CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")


def _proc(tmp_path: Path, mounts: list, groups: list) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text("".join(line + "\n" for line in mounts))
    (proc / "cgroup").write_text("".join(line + "\n" for line in groups))
    return proc


def _v2_mount(point: Path, root: str = "/") -> str:
    return f"41 31 0:38 {root} {str(point).replace(' ', chr(92) + '040')} rw,relatime - cgroup2 cgroup2 rw"


def _v1_mount(point: Path, options: str = "rw,cpu,cpuacct", root: str = "/") -> str:
    return f"32 31 0:29 {root} {point} rw,relatime - cgroup cgroup {options}"


def _write(directory: Path, **files: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("_", ".", 1)).write_text(text + "\n")


def test_v2_the_tightest_limit_of_the_cgroup_and_its_ancestors(tmp_path):
    cg = tmp_path / "cg2"
    _write(cg / "a" / "b", cpu_max="max 100000")
    _write(cg / "a", cpu_max="250000 100000")
    _write(cg, cpu_max="max 100000")
    proc = _proc(tmp_path, [_v2_mount(cg)], ["0::/a/b"])
    assert _cpus.cpu_quota(proc) == 2  # floor(2.5)
    _write(cg / "a" / "b", cpu_max="150000 100000")
    assert _cpus.cpu_quota(proc) == 1  # the child is tighter than its parent
    _write(cg / "a" / "b", cpu_max="50000 100000")
    assert _cpus.cpu_quota(proc) == 1  # half a CPU still runs one thread


def test_no_limit_anywhere_or_nothing_readable_is_none(tmp_path):
    cg = tmp_path / "cg2"
    _write(cg / "a", cpu_max="max 100000")
    assert _cpus.cpu_quota(_proc(tmp_path, [_v2_mount(cg)], ["0::/a"])) is None
    assert _cpus.cpu_quota(tmp_path / "no-proc") is None
    (cg / "a" / "cpu.max").write_text("garbage\n")
    assert _cpus.cpu_quota(tmp_path / "proc") is None


def test_v1_cpu_controller_quota_over_period(tmp_path):
    cg = tmp_path / "cpu,cpuacct"
    _write(cg / "job", **{"cpu_cfs_quota_us": "300000", "cpu_cfs_period_us": "100000"})
    _write(cg, **{"cpu_cfs_quota_us": "-1", "cpu_cfs_period_us": "100000"})
    other = tmp_path / "memory"
    _write(other / "job", **{"cpu_cfs_quota_us": "100000", "cpu_cfs_period_us": "100000"})  # not a cpu hierarchy
    mounts = [_v1_mount(cg), _v1_mount(other, "rw,memory")]
    proc = _proc(tmp_path, mounts, ["4:memory:/job", "3:cpu,cpuacct:/job", "0::/"])
    assert _cpus.cpu_quota(proc) == 3
    _write(cg / "job", **{"cpu_cfs_quota_us": "-1"})
    assert _cpus.cpu_quota(proc) is None


def test_a_container_sees_its_own_cgroup_at_the_mount_point(tmp_path):
    # without a cgroup namespace /proc names the host's path; the mount's root is that same path
    cg = tmp_path / "cpu"
    _write(cg, **{"cpu_cfs_quota_us": "200000", "cpu_cfs_period_us": "100000"})
    proc = _proc(tmp_path, [_v1_mount(cg, root="/docker/abc")], ["3:cpu:/docker/abc"])
    assert _cpus.cpu_quota(proc) == 2
    # a path outside the mount's root, or outside the cgroup namespace: no limit read (not another's)
    (proc / "cgroup").write_text("3:cpu:/elsewhere\n")
    assert _cpus.cpu_quota(proc) is None
    (proc / "mountinfo").write_text(_v1_mount(cg) + "\n")
    (proc / "cgroup").write_text("3:cpu:/../x\n")
    assert _cpus.cpu_quota(proc) is None


def test_named_and_hybrid_hierarchies(tmp_path):
    """systemd's named v1 hierarchy carries no cpu controller; a hybrid layout's cgroup2 mount
    without the cpu controller has no cpu.max: the v1 cpu,cpuacct hierarchy decides."""
    cpu, systemd, unified = tmp_path / "cpu,cpuacct", tmp_path / "systemd", tmp_path / "unified"
    _write(cpu / "s", **{"cpu_cfs_quota_us": "200000", "cpu_cfs_period_us": "100000"})
    _write(systemd / "s", **{"cpu_cfs_quota_us": "100000", "cpu_cfs_period_us": "100000"})  # ignored: no cpu
    (unified / "s").mkdir(parents=True)
    mounts = [_v1_mount(systemd, "rw,xattr,name=systemd"), _v1_mount(cpu, "rw,cpuacct,cpu"), _v2_mount(unified)]
    proc = _proc(tmp_path, mounts, ["1:name=systemd:/s", "3:cpu,cpuacct:/s", "0::/s"])
    assert _cpus.cpu_quota(proc) == 2


def test_the_program_sizes_both_pools_unless_told_or_imported(tmp_path, monkeypatch):
    # a copy of the environment: what the function sets must not reach this process's numba,
    # which refuses a NUMBA_NUM_THREADS other than its running pool's at its next compile
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items()
                                        if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")})
    monkeypatch.setattr(_cpus, "quota_cpus", lambda proc=None: 3)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)
    assert _cpus.size_pools_to_quota() == 3
    assert os.environ["NUMBA_NUM_THREADS"] == os.environ["OMP_NUM_THREADS"] == "3"
    os.environ["NUMBA_NUM_THREADS"] = "5"  # the user's setting stands
    del os.environ["OMP_NUM_THREADS"]
    monkeypatch.setitem(sys.modules, "pyarrow", sys)  # imported already: its pool is sized
    _cpus.size_pools_to_quota()
    assert os.environ["NUMBA_NUM_THREADS"] == "5" and "OMP_NUM_THREADS" not in os.environ
    monkeypatch.setattr(_cpus, "quota_cpus", lambda proc=None: None)
    del os.environ["NUMBA_NUM_THREADS"]
    assert _cpus.size_pools_to_quota() is None and "NUMBA_NUM_THREADS" not in os.environ


def test_escaped_mount_points(tmp_path):
    cg = tmp_path / "cgroup fs"
    _write(cg / "x", cpu_max="100000 100000")
    assert _cpus.cpu_quota(_proc(tmp_path, [_v2_mount(cg)], ["0::/x"])) == 1


def test_quota_cpus_only_below_the_affinity(tmp_path, monkeypatch):
    cg = tmp_path / "cg2"
    _write(cg, cpu_max="200000 100000")
    proc = _proc(tmp_path, [_v2_mount(cg)], ["0::/"])
    monkeypatch.setattr(_cpus, "affinity_cpus", lambda: 4)
    assert _cpus.quota_cpus(proc) == 2
    monkeypatch.setattr(_cpus, "affinity_cpus", lambda: 2)
    assert _cpus.quota_cpus(proc) is None  # the pools' defaults are right already


def _cgroup_with_one_cpu() -> Path:
    """A real v1 cpu cgroup limited to 1 CPU (root, a writable cgroup v1 cpu hierarchy, 2+ cores),
    or skip."""
    if _cpus.affinity_cpus() < 2 or not os.access(CGROUP_V1_CPU, os.W_OK) or \
            not (CGROUP_V1_CPU / "cpu.cfs_quota_us").exists():
        pytest.skip("needs a writable cgroup v1 cpu hierarchy (root) and 2 or more cores")
    group = CGROUP_V1_CPU / f"kbest_bleu_test_{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("100000")
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup here: {exc}")
    return group


def test_the_program_sizes_numba_and_arrow_to_a_real_cgroup_quota(tmp_path):
    group = _cgroup_with_one_cpu()
    probe = ("import os, sys; open(sys.argv[1] + '/cgroup.procs', 'w').write(str(os.getpid())); "
             "import subprocess; raise SystemExit(subprocess.call(sys.argv[2:]))")
    child = ("from kbest_bleu import program; program._command_process(); import numba, pyarrow; "
             "print(numba.config.NUMBA_NUM_THREADS, pyarrow.cpu_count())")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
    try:
        inside = subprocess.run([sys.executable, "-c", probe, str(group), sys.executable, "-c", child], env=env,
                                capture_output=True, text=True, check=True).stdout.split()
        outside = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                                 check=True).stdout.split()
        told = subprocess.run([sys.executable, "-c", probe, str(group), sys.executable, "-c", child],
                              env={**env, "NUMBA_NUM_THREADS": "2"}, capture_output=True, text=True,
                              check=True).stdout.split()
    finally:
        group.rmdir()  # its processes have exited
    assert inside == ["1", "1"]
    assert int(outside[0]) == int(outside[1]) == (_cpus.quota_cpus() or _cpus.affinity_cpus())
    assert told[0] == "2"  # the user's setting stands


def test_set_threads_before_numba_changes_no_environment_variable_and_applies_once():
    """A library caller's set_threads before numba is imported leaves os.environ alone; the count
    takes effect when the kernels load, and a later numba.set_num_threads of the caller stands."""
    code = ("import os\nfrom kbest_bleu.counting.threads import set_threads, thread_count\n"
            "before = dict(os.environ)\nset_threads(1)\nprint(dict(os.environ) == before, thread_count())\n"
            "from kbest_bleu.counting import kernels\nkernels()\nimport numba\nprint(numba.get_num_threads())\n"
            "numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))\nkernels()\n"
            "print(numba.get_num_threads() == min(2, numba.config.NUMBA_NUM_THREADS))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_NUM_THREADS", "KBEST_BLEU_AOT")}
    env["KBEST_BLEU_AOT"] = "0"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "1", "1", "True"]
