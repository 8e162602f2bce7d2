"""Meteor exact: kbest_bleu vs the Meteor 1.5 jar (-stdio, its fastest mode), side by side.

    pip install '.[bench]'                       # pycocoevalcap==1.2 ships meteor-1.5.jar; Java 17
    python benchmarks/bench_meteor.py            # 2,000 x 100-best x 1 ref English (WMT22, generated)

Rows (hypotheses per second, medians of --repeats runs after a warm-up call), by the wall clock
and per CPU second (all threads of this process, or of the JVMs; on a machine shared with other
jobs the CPU rates are the steadier comparison):
- ours meteor_segments: tokens + ids + alignment + scores, in memory;
- ours e2e parquet: read the parquet file, score, write a parquet file with the meteor column;
- jar -stdio: one SCORE line (statistics) and one EVAL line (score) per hypothesis, on a seeded
  subset of whole segments; reported with and without the JVM start (measured on a one-line run).
The jar's scores are compared with ours on that subset (they must be equal).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import workloads  # noqa: E402

from kbest_bleu.encode import segment_pointers, segment_references  # noqa: E402
from kbest_bleu.metrics.meteor import meteor_params, meteor_segments  # noqa: E402


def _jar() -> Path:
    import pycocoevalcap
    return Path(list(pycocoevalcap.__path__)[0]) / "meteor" / "meteor-1.5.jar"


def _score_table(table: pa.Table, params):
    ptr = segment_pointers(table["segment_id"], table.num_rows)
    refs = segment_references(table["references"].combine_chunks(), ptr, table.num_rows)
    return meteor_segments(table["hypothesis"], refs, ptr, params)


def _e2e(src: Path, dst: Path, params) -> None:
    table = pq.read_table(src, columns=["segment_id", "hypothesis", "references"])
    res = _score_table(table, params)
    pq.write_table(table.append_column("meteor", pa.array(res.score)), dst, compression="zstd")


def _median_time(fn, repeats: int) -> tuple[float, float]:
    """Medians of (wall seconds, CPU seconds of this process, all threads) over repeats runs."""
    fn()  # warm-up: loads numba's cache (or compiles)
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _run_jar(hyps: list, refs: list) -> tuple[float, float, list]:
    """(wall seconds, CPU seconds of the JVMs, scores) of the two -stdio runs."""
    lines = []
    for h, r in zip(hyps, refs):
        lines.append(f"SCORE ||| {r} ||| {h}")
    cmd = ["java", "-Xmx2G", "-jar", str(_jar()), "-", "-", "-l", "en", "-m", "exact", "-stdio"]
    t0, c0 = time.perf_counter(), _children_cpu()
    stats = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    evals = "".join(f"EVAL ||| {s}\n" for s in stats.splitlines())
    scores = subprocess.run(cmd, input=evals, capture_output=True, text=True, check=True).stdout.split()
    assert len(scores) == 2 * len(hyps)  # Meteor 1.5 prints each EVAL answer twice
    return time.perf_counter() - t0, _children_cpu() - c0, [float(s) for s in scores[::2]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--jar-segments", type=int, default=100, help="segments scored by the jar (seeded subset)")
    args = ap.parse_args()
    params = meteor_params("en")
    table = workloads.generated(args.segments, args.k, 1).select(["segment_id", "hypothesis", "references"])
    n = table.num_rows
    t_mem, c_mem = _median_time(lambda: _score_table(table, params), args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.parquet"
        pq.write_table(table, src, compression="zstd")
        t_e2e, c_e2e = _median_time(lambda: _e2e(src, Path(tmp) / "out.parquet", params), args.repeats)

    rng = np.random.default_rng(0)
    segs = np.sort(rng.choice(args.segments, size=min(args.jar_segments, args.segments), replace=False))
    rows = np.concatenate([np.arange(s * args.k, (s + 1) * args.k) for s in segs])
    sub = table.take(pa.array(rows))
    hyps = sub["hypothesis"].to_pylist()
    refs = [r[0] for r in sub["references"].to_pylist()]
    t_start, c_start, _ = _run_jar(hyps[:1], refs[:1])  # two JVM starts + one line each
    t_jar, c_jar, jar_scores = _run_jar(hyps, refs)
    ours = _score_table(sub, params).score
    # the jar trims each field (-stdio); our generated hypotheses have no outer spaces, so scores must agree
    diff = float(np.max(np.abs(np.array(jar_scores) - ours)))
    m = len(hyps)
    jar_rate, jar_rate_warm = m / t_jar, m / max(t_jar - t_start, 1e-9)
    jar_cpu_rate = m / max(c_jar - c_start, 1e-9)  # per CPU second, JVM start excluded
    print(f"workload: generated {args.segments}x{args.k} R=1 English ({n:,} hypotheses); jar on {m:,} "
          f"hypotheses ({len(segs)} segments); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the "
          f"end; medians of {args.repeats}")
    print("| tool | hypotheses/s (wall) | vs jar -stdio (without JVM start) | hypotheses per CPU second | vs jar |")
    print("|---|---:|---:|---:|---:|")
    print(f"| jar -stdio, with JVM start | {jar_rate:,.0f} | | | |")
    print(f"| jar -stdio, without JVM start ({t_start:.2f} s) | {jar_rate_warm:,.0f} | 1.0x | {jar_cpu_rate:,.0f} | 1.0x |")
    for name, t, c in (("ours meteor_segments (in memory)", t_mem, c_mem), ("ours e2e parquet -> parquet", t_e2e, c_e2e)):
        print(f"| {name} | {n / t:,.0f} | {n / t / jar_rate_warm:.0f}x | {n / c:,.0f} | {n / c / jar_cpu_rate:.0f}x |")
    print(f"max |jar - ours| over the jar subset: {diff:.3g}")


if __name__ == "__main__":
    main()
