"""Pairwise and aggregated chrF / chrF++ for MBR: 1,024 candidates x 1,024 pseudo-references in one
segment, side by side with fastChrF (``pip install fastchrf``) and sacrebleu in the same run.

    python benchmarks/bench_chrf.py                # both workloads, K = 1,024
    python benchmarks/bench_chrf.py --k 256 --repeats 5
    python benchmarks/bench_chrf.py --save-workloads w.json   # then, on a machine without shared/data:
    NUMBA_NUM_THREADS=2 taskset -c 0,1 python benchmarks/bench_chrf.py --workloads w.json

Workloads (seeded, from shared/data):
- ``real``: 1,024 distinct real WMT22 en-de system outputs (the outputs of consecutive source
  segments pooled into one segment: groups of ~9 translations of the same source);
- ``samples``: 1,024 distinct candidates of one source, as MBR samples are: realistic word edits
  (benchmarks/workloads.py) of the real en-de outputs of the first segment whose outputs average
  150+ characters.

Timed, wall clock, median of --repeats after a warm-up (numba's kernels compiled and loaded):
ours ``pairwise_chrf`` (the K x K matrix; and expected utilities only, ``matrix=False``) for chrF
and chrF++, fastChrF's ``pairwise_chrf`` (chrF only: it has no word n-grams) on the segment as
one batch row (as its own benchmark calls it; it then runs on one thread: its threads split the
batch) and split into one batch row per CPU, sacrebleu's ``CHRF.sentence_score`` per pair on the
first --sacrebleu-rows candidates (x K pseudo-references, extrapolated to K x K: marked
"extrapolated"), and the aggregated utilities (``aggregate_chrf``, Vamvas & Sennrich 2024) of ours
and fastChrF. Ours uses numba's threads (every CPU the process may use). Also prints the process
CPU time and the load average, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import workloads  # noqa: E402

from kbest_bleu.metrics.chrf import aggregate_chrf, pairwise_chrf  # noqa: E402


def _en_de():
    t = pq.read_table(workloads.DATA / "wmt22_news_systems.parquet", columns=["lp", "segment_id", "system",
                                                                                "hypothesis"])
    t = t.filter(pc.equal(t["lp"], "en-de"))
    return t.take(pc.sort_indices(t, [("segment_id", "ascending"), ("system", "ascending")]))


def real(k: int) -> list[str]:
    """k distinct non-empty real outputs, in segment order."""
    out: dict = {}
    for h in _en_de()["hypothesis"].to_pylist():
        if h.strip():
            out.setdefault(h, None)
        if len(out) == k:
            break
    return list(out)


def samples(k: int, seed: int = 0) -> list[str]:
    """k distinct edits of the real outputs of one long source segment."""
    t = _en_de()
    groups: dict = {}
    for s, h in zip(t["segment_id"].to_pylist(), t["hypothesis"].to_pylist()):
        groups.setdefault(s, []).append(h)
    outputs = next(g for g in groups.values() if len(g) >= 8 and np.mean([len(h) for h in g]) >= 150)
    vocab = " ".join(outputs).split()
    rng = np.random.default_rng(seed)
    made: dict = dict.fromkeys(outputs)
    while len(made) < k:
        made.setdefault(" ".join(workloads._edit(outputs[int(rng.integers(len(outputs)))].split(), vocab, rng)))
    return list(made)[:k]


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median process CPU seconds) of fn() over repeats runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def run(name: str, cands: list[str], repeats: int, sacre_rows: int, peers: bool) -> None:
    k = len(cands)
    import numba
    print(f"\n== {name}: K = {k} distinct strings, mean {np.mean([len(c) for c in cands]):.0f} characters; "
          f"load average {os.getloadavg()[0]:.1f}; {len(os.sched_getaffinity(0))} CPUs, {numba.get_num_threads()} "
          "numba threads")
    pairwise_chrf(cands[:8])  # compile / load the kernels
    pairwise_chrf(cands[:8], word_order=2)
    aggregate_chrf(cands[:8])
    rows = []
    ours = {}
    for label, kw in (("chrF", {}), ("chrF++", {"word_order": 2})):
        ours[label] = _timed(lambda kw=kw: pairwise_chrf(cands, **kw), repeats)
        rows.append((f"ours pairwise {label}, K x K matrix", *ours[label]))
        rows.append((f"ours pairwise {label}, expected utilities only",
                     *_timed(lambda kw=kw: pairwise_chrf(cands, matrix=False, **kw), repeats)))
    agg = _timed(lambda: aggregate_chrf(cands), max(repeats, 20))
    rows.append(("ours aggregate chrF", *agg))
    if peers:
        try:
            import fastchrf
        except ImportError:
            fastchrf = None
            print("fastchrf not installed (pip install fastchrf): its rows are left out")
        if fastchrf is not None:
            fast = _timed(lambda: fastchrf.pairwise_chrf([cands], [cands]), 1)
            rows.append(("fastChrF pairwise chrF", *fast))
            # fastChrF runs one batch row per thread: one segment is one thread, so also split the
            # candidates into a batch row per CPU (each against all K pseudo-references)
            n_cpu = len(os.sched_getaffinity(0))
            parts = [cands[i::n_cpu] for i in range(n_cpu)]
            fast_split = _timed(lambda: fastchrf.pairwise_chrf(parts, [cands] * n_cpu), 1)
            rows.append((f"fastChrF pairwise chrF, {n_cpu} batch rows", *fast_split))
            fast_agg = _timed(lambda: fastchrf.aggregate_chrf([cands], [cands]), max(repeats, 5))
            rows.append(("fastChrF aggregate chrF", *fast_agg))
        from sacrebleu.metrics import CHRF
        n = min(sacre_rows, k)
        for label, kw in (("chrF", {}), ("chrF++", {"word_order": 2})):
            metric = CHRF(**kw)
            w, c = _timed(lambda metric=metric: [metric.sentence_score(h, [r]) for h in cands[:n] for r in cands], 1)
            rows.append((f"sacrebleu pairwise {label} (extrapolated from {n} x {k})", w * k / n, c * k / n))
    print(f"{'':58s} {'wall s':>9s} {'CPU s':>9s} {'pairs/s':>12s}")
    for label, w, c in rows:
        rate = k * k / w if "pairwise" in label else k / w
        print(f"{label:58s} {w:9.4f} {c:9.4f} {rate:12,.0f}" + ("" if "pairwise" in label else " cand/s"))
    table = {label: w for label, w, _ in rows}
    if "fastChrF pairwise chrF" in table:
        fastest = min(w for label, w in table.items() if label.startswith("fastChrF pairwise"))
        print(f"ratio fastChrF (its faster layout) / ours, pairwise chrF:  {fastest / ours['chrF'][0]:.1f}x")
        print(f"ratio fastChrF chrF (its faster layout) / ours chrF++:     {fastest / ours['chrF++'][0]:.1f}x")
        print(f"ratio fastChrF / ours, aggregate chrF:                     {table['fastChrF aggregate chrF'] / agg[0]:.1f}x")
    sacre = [w for label, w in table.items() if label.startswith("sacrebleu pairwise chrF (")]
    if sacre:
        print(f"ratio sacrebleu / ours, pairwise chrF:                     {sacre[0] / ours['chrF'][0]:.0f}x "
              "(extrapolated)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sacrebleu-rows", type=int, default=16, help="candidates scored by sacrebleu (x K)")
    ap.add_argument("--workload", choices=["real", "samples", "both"], default="both")
    ap.add_argument("--no-peers", action="store_true", help="ours only")
    ap.add_argument("--save-workloads", metavar="JSON", help="write the workloads' strings and stop")
    ap.add_argument("--workloads", metavar="JSON", help="read the workloads' strings (no shared/data needed)")
    a = ap.parse_args()
    names = {"real": "real: WMT22 en-de outputs", "samples": "samples: edits of one source's outputs"}
    wanted = ["real", "samples"] if a.workload == "both" else [a.workload]
    if a.workloads:
        loads = json.loads(Path(a.workloads).read_text(encoding="utf-8"))
    else:
        loads = {w: (real if w == "real" else samples)(a.k) for w in wanted}
    if a.save_workloads:
        Path(a.save_workloads).write_text(json.dumps(loads, ensure_ascii=False), encoding="utf-8")
        return
    for w in wanted:
        run(names[w], loads[w][:a.k], a.repeats, a.sacrebleu_rows, not a.no_peers)


if __name__ == "__main__":
    main()
