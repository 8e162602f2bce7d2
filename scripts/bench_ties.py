"""Timings of today's meta-evaluation statistics on WMT22 zh-en MQM (docs/metaeval.md): tie-calibrated
acc23 per item over all systems and segments, the pairwise permutation test, PERM-BOTH, SPA.
Metric columns: the official WMT22 sentence BLEU and chrF against refA shipped in the data.

    python scripts/bench_ties.py [--data DIR] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kbest_bleu.research.permutation import (pairwise_permutation_test, score_permutation_test,
                                             spa_permutation_test, statistic)
from kbest_bleu.research.system_level import soft_pairwise_accuracy
from kbest_bleu.research.ties import kendall_with_ties_opt, pair_set
from kbest_bleu.research.wmt_style import matrices


def _median(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    t = pq.read_table(Path(a.data) / "wmt22_zhen_mtme.parquet",
                      columns=["lp", "segment_id", "system", "is_reference", "human_mqm", "gold_BLEU_refA",
                               "gold_chrF_refA"])
    t = t.filter(pc.invert(t["is_reference"]))
    cols = ["gold_BLEU_refA", "gold_chrF_refA"]
    secs, (_, _, h, ms) = _median(lambda: matrices(t, cols, "human_mqm", "zh-en"), a.repeats)
    print(f"pivot to matrices {h.shape} ({int((~np.isnan(h)).sum()):,} rated cells): {secs:.3f} s")
    b, c = ms["gold_BLEU_refA"], ms["gold_chrF_refA"]
    secs, r = _median(lambda: kendall_with_ties_opt(h, b, average_by="item"), a.repeats)
    print(f"acc23 with tie calibration, item grouping, sentBLEU: {r.value:.4f} at eps {r.epsilon:.4g}, "
          f"{r.thresholds.size:,} candidate thresholds: {secs:.3f} s")
    secs, pairs = _median(lambda: pair_set(h, [c, b], "item"), a.repeats)
    print(f"pair set, two metrics: {pairs.group.size:,} pairs: {secs:.3f} s")
    secs, r = _median(lambda: pairwise_permutation_test(pair_set(h, [c, b], "item"), k=1000, seed=1), a.repeats)
    print(f"pairwise permutation test chrF vs BLEU, 1000 resamples (thresholds optimized inside): p {r.p_value:.3f}, "
          f"delta {r.delta:.5f}: {secs:.3f} s")
    secs, r = _median(lambda: score_permutation_test(h, c, b, statistic("pearson", h, average_by="item"), k=1000,
                                                     seed=1), 1)
    print(f"PERM-BOTH, item-averaged Pearson, 1000 resamples: p {r.p_value:.3f}: {secs:.3f} s")
    secs, r = _median(lambda: score_permutation_test(h, c, b, statistic("acc23_opt", h, average_by="item"), k=20,
                                                     seed=1), 1)
    print(f"PERM-BOTH re-calibrating the threshold per resample (mtme KendallWithTiesOpt), 20 resamples: "
          f"{secs:.3f} s (x50 for 1000)")
    rows = ~np.isnan(h).all(axis=1)
    secs, v = _median(lambda: soft_pairwise_accuracy(h[rows], c[rows]), a.repeats)
    print(f"soft pairwise accuracy chrF ({int(rows.sum())} systems, 1000 permutations): {v:.4f}: {secs:.3f} s")
    secs, r = _median(lambda: spa_permutation_test(h[rows], c[rows], b[rows], k=100, seed=1), 1)
    print(f"PERM-BOTH over SPA, 100 resamples: p {r.p_value:.3f}: {secs:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
