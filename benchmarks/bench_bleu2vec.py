"""BLEU2VEC benchmark: K-best lists end to end from parquet, and the per-hypothesis speed-up over
the original algorithm (the slow reference of tests/metrics/test_bleu2vec_reference.py).

Workload: ``workloads.generated(1000, 100, 1)`` (1,000 real WMT22 into-English segments x 100
edited hypotheses x 1 reference = 100,000 rows) written to parquet; embeddings: seeded random
300-d vectors for every word of the workload and for every bigram / trigram seen at least twice
(3 separate models, as the paper's section 2.1 layout). Times are medians of ``--repeats`` runs,
all measured in this one process; the numba kernels are compiled (and cached) before timing.

Run: ``python benchmarks/bench_bleu2vec.py [--rows 100000] [--repeats 5] [--slow-sample 300]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "metrics"))

import workloads  # noqa: E402
from test_bleu2vec_reference import corrected_counts, faithful_sentence  # noqa: E402

from kbest_bleu.encode import segment_pointers  # noqa: E402
from kbest_bleu.metrics.bleu2vec.models import from_arrays, ngram_tokens  # noqa: E402
from kbest_bleu.metrics.bleu2vec.score import from_options  # noqa: E402


def embeddings_for(table, dim: int = 300, seed: int = 0):
    """Random unit vectors for the workload's words and its bigrams / trigrams seen twice or more."""
    rng = np.random.default_rng(seed)
    sentences = [s.split() for s in table["hypothesis"].to_pylist()[::10]]
    sentences += [r.split() for refs in table["references"].to_pylist()[::100] for r in refs]
    keys, vectors = {}, {}
    for n in (1, 2, 3):
        counts = Counter(g for s in sentences for g in ngram_tokens(s, n))
        keys[n] = [g for g, c in counts.items() if n == 1 or c >= 2]
        vectors[n] = rng.normal(size=(len(keys[n]), dim)).astype(np.float32)
    return from_arrays(keys, vectors), {n: dict(zip(keys[n], vectors[n])) for n in keys}


def original_style_order(hyp: list, ref: list, kv, n: int) -> tuple:
    """One order of the faithful algorithm with the data structures the original code is known to
    use (a pandas DataFrame of residual n-grams, a row scan with ``iterrows``, drop by label,
    gensim's per-pair ``similarity``): our own code, for the original's cost profile only (the
    test suite's pure-Python reference checks the numbers). Returns (numerator, denominator)."""
    import pandas as pd
    h, r = Counter(ngram_tokens(hyp, n)), Counter(ngram_tokens(ref, n))
    up = float(sum((h & r).values()))
    rows = [g for g, c in (h - r).items() for _ in range(c)]
    cols = [g for g, c in (r - h).items() for _ in range(c)]
    m = np.zeros((len(rows), len(cols)))
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            m[i, j] = kv.similarity(a, b) if a in kv.key_to_index and b in kv.key_to_index else 0.001
    df = pd.DataFrame(m, index=rows, columns=cols)
    while df.shape[0] and df.shape[1]:
        best, vmax = None, -1.0
        for a, row in df.iterrows():
            for b, v in row.items():
                if v > vmax:
                    best, vmax = (a, b), v
        df = df.drop(best[0]).drop(best[1], axis=1)
        up += vmax
    return up, len(ngram_tokens(hyp, n))


def median_time(fn, repeats: int) -> tuple[float, float]:
    """Medians of wall time and of this process's CPU time (all threads) over ``repeats`` runs.
    On a shared machine the CPU time is the steadier of the two: wall time / CPU time ~ the
    number of cores the run actually got."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def end_to_end(path: Path, metric) -> np.ndarray:
    """Read the parquet file, find the segments, score every row (what the batch job does)."""
    t = pq.read_table(path, columns=["segment_id", "hypothesis", "references"])
    seg_ptr = segment_pointers(t["segment_id"].combine_chunks(), t.num_rows)
    refs = t["references"].combine_chunks().take(seg_ptr[:-1])
    return metric.score_segments(t["hypothesis"].combine_chunks(), refs, seg_ptr, t, False)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--slow-sample", type=int, default=300, help="hypotheses scored by the slow reference")
    a = ap.parse_args()
    table = workloads.generated(a.rows // 100, 100, 1)
    emb, dicts = embeddings_for(table)
    print(f"workload: {table.num_rows} rows ({a.rows // 100} segments x 100-best x 1 ref); embeddings 300-d: "
          + ", ".join(f"{n}-grams {len(emb.keys[n]):,}" for n in (1, 2, 3)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kbest.parquet"
        pq.write_table(table, path, compression="zstd")
        rows = []
        for mode in ("faithful", "corrected"):
            metric = from_options(emb, mode, **({"tokenize": "none"} if mode == "corrected" else {}))
            end_to_end(path, metric)  # compile / load the cached kernels
            t, cpu = median_time(lambda: end_to_end(path, metric), a.repeats)
            rows.append((mode, t))
            print(f"{mode:9s} end to end from parquet: {t:.3f} s wall, {cpu:.3f} s CPU (medians of {a.repeats}) = "
                  f"{table.num_rows / t:,.0f} hypotheses/s wall, {2 * table.num_rows / cpu:,.0f} per 2 CPU-seconds "
                  "(target >= 100,000/s)")
    from gensim.models import KeyedVectors
    kvs = {}
    for n in (1, 2, 3):
        kvs[n] = KeyedVectors(300)
        kvs[n].add_vectors(list(dicts[n]), np.stack(list(dicts[n].values())))
    hyps, refs = table["hypothesis"].to_pylist(), table["references"].to_pylist()
    sample = np.random.default_rng(1).choice(len(hyps), size=min(a.slow_sample, len(hyps)), replace=False)
    for mode, t in rows:
        t0 = time.perf_counter()  # the slow reference is single-threaded: wall time against wall time
        for i in sample:
            h, rs = hyps[i].split(), [r.split() for r in refs[i]]
            if mode == "faithful":
                faithful_sentence(h, rs, dicts)
            else:
                corrected_counts(h, rs, dicts, 3)
        slow = (time.perf_counter() - t0) / len(sample)
        fast = t / table.num_rows
        print(f"{mode:9s} per hypothesis: slow reference {slow * 1e3:.2f} ms, kernels {fast * 1e6:.2f} us "
              f"(end to end) -> {slow / fast:,.0f}x")
        if mode == "faithful":
            t0 = time.perf_counter()
            for i in sample[:max(1, len(sample) // 10)]:
                for n in (1, 2, 3):
                    original_style_order(hyps[i].split(), refs[i][0].split(), kvs[n], n)
            orig = (time.perf_counter() - t0) / max(1, len(sample) // 10)
            print(f"{mode:9s} per hypothesis: original-style (pandas, gensim) {orig * 1e3:.2f} ms -> "
                  f"{orig / fast:,.0f}x (target >= 1,000x)")


if __name__ == "__main__":
    main()
