"""Pairwise BLEU for MBR (issue 36): kbest_bleu's K x K expected utilities against the mbrs approach
(sacrebleu's ``sentence_score`` for every pair, in a pool of 2 processes), same real outputs.

    python benchmarks/bench_mbr.py [--k 256] [--segments 500] [--peer-pairs 20000]

Workload: real WMT22 system outputs (../shared/data/wmt22_news_systems.parquet): each segment's K
"samples" are its systems' outputs, repeated with word edits (benchmarks/workloads.py's editor is
not needed: a seeded drop of one word per copy) until there are K distinct strings. kbest_bleu:
``kbest_bleu.tuning.mbr_select`` (every pair's statistics in one kernel, smoothing vectorized),
whole workload, median of 3 runs. The peer: ``BLEU(tokenize="13a", effective_order=True)
.sentence_score(candidate, [pseudo_reference])`` per pair, the first ``--peer-pairs`` pairs in a
2-process pool, extrapolated to every pair of the workload (said so in the output). Scores are
checked equal on those pairs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt22_news_systems.parquet"


def workload(k: int, segments: int, seed: int = 0) -> tuple[list, np.ndarray]:
    t = pq.read_table(DATA, columns=["lp", "segment_id", "hypothesis"])
    rng = np.random.default_rng(seed)
    by_seg: dict = {}
    for lp, s, h in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist(), t["hypothesis"].to_pylist()):
        by_seg.setdefault((lp, s), []).append(h)
    keys = sorted(by_seg)[:segments]
    hyps, ptr = [], [0]
    for key in keys:
        seen = list(dict.fromkeys(by_seg[key]))
        out = list(seen)
        while len(out) < k:
            words = seen[len(out) % len(seen)].split()
            if len(words) > 1:
                words.pop(int(rng.integers(len(words))))
            out.append(" ".join(words))
        hyps += out[:k]
        ptr.append(len(hyps))
    return hyps, np.array(ptr, np.int64)


def _peer(pairs: list) -> list:
    from sacrebleu.metrics import BLEU
    bleu = BLEU(tokenize="13a", effective_order=True)
    return [bleu.sentence_score(h, [r]).score / 100 for h, r in pairs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--segments", type=int, default=500)
    ap.add_argument("--peer-pairs", type=int, default=20000)
    a = ap.parse_args()
    from kbest_bleu.tuning.mbr import mbr_select, pairwise_bleu
    hyps, ptr = workload(a.k, a.segments)
    segments = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    n_pairs = int((np.diff(ptr) ** 2).sum())
    mbr_select(hyps[:a.k * 2], segments[:a.k * 2], tokenize="13a")  # compile / load outside the timing
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        mbr_select(hyps, segments, tokenize="13a")
        times.append(time.perf_counter() - t0)
    ours = statistics.median(times)
    # the peer on the first pairs of the workload, checked against ours
    k = a.k
    first = []
    for s in range(len(ptr) - 1):
        rows = range(ptr[s], ptr[s + 1])
        first += [(i, j) for i in rows for j in rows]
        if len(first) >= a.peer_pairs:
            break
    first = first[:a.peer_pairs]
    chunks = [first[i::2] for i in range(2)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(_peer, [[(hyps[i], hyps[j]) for i, j in c] for c in chunks]))
    peer_time = time.perf_counter() - t0
    n_seg_checked = (first[-1][0] // k) + 1
    scores, _ = pairwise_bleu(hyps[:n_seg_checked * k], ptr[:n_seg_checked + 1], tokenize="13a")
    got = {}
    for c, res in zip(chunks, results):
        for (i, j), v in zip(c, res):
            seg = i // k
            got[(i, j)] = abs(scores[seg * k * k + (i - seg * k) * k + (j - seg * k)] - v)
    peer_total = peer_time / len(first) * n_pairs
    print(f"workload: {len(ptr) - 1} segments x K = {k} real WMT22 outputs (edited copies), {n_pairs:,} pairs")
    print(f"kbest_bleu mbr_select (all pairs, 2 threads): {ours:.2f} s (median of 3)")
    print(f"mbrs approach (sacrebleu per pair, 2 processes): {peer_time:.1f} s for {len(first):,} pairs, "
          f"extrapolated to {peer_total:,.0f} s for all")
    print(f"ratio: {peer_total / ours:,.0f}x; max |difference| on the checked pairs: {max(got.values()):.1e}")


if __name__ == "__main__":
    sys.exit(main())
