"""The best honest peer pipeline for ``kbest-bleu score`` (issue 18): what a user writes in an
afternoon with sacrebleu. Parquet in, parquet out (the input columns + ``bleu``, zstd):

- each segment's reference n-grams are extracted once (sacrebleu's own reference cache,
  ``BLEU(references=...)``), not once per hypothesis;
- a hypothesis repeated within its segment is scored once;
- the segments are split over 2 processes (fork: the workers inherit the rows, only ranges
  travel).

Scores are sacrebleu's ``sentence_score`` (effective order, exp smoothing) on the 0-1 scale;
``whole_process.py`` checks them against plain ``sacrebleu.sentence_bleu``.

    python benchmarks/peer_pipeline.py IN.parquet OUT.parquet [--tokenize 13a] [--procs 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

_ROWS: dict = {}  # set before the pool forks: the workers read it, nothing is pickled


def _score_range(job: tuple) -> list:
    from sacrebleu.metrics import BLEU
    a, b, tok = job
    hyps, refs, starts = _ROWS["hyps"], _ROWS["refs"], _ROWS["starts"]
    out = []
    for s in range(a, b):  # segments a..b-1
        lo, hi = starts[s], starts[s + 1]
        bleu = BLEU(tokenize=tok, effective_order=True, references=[[r] for r in refs[lo]])
        seen: dict = {}
        for i in range(lo, hi):
            h = hyps[i]
            if h not in seen:
                seen[h] = bleu.corpus_score([h], None).score / 100
            out.append(seen[h])
    return out


def score_file(src: str, dst: str, tok: str, procs: int) -> None:
    table = pq.read_table(src)
    seg = table["segment_id"].to_numpy()
    starts = np.r_[0, np.flatnonzero(seg[1:] != seg[:-1]) + 1, len(seg)]
    _ROWS.update(hyps=table["hypothesis"].to_pylist(), refs=table["references"].to_pylist(), starts=starts)
    n_seg = len(starts) - 1
    # 4 chunks per process of about equal rows: the pool balances segments of unequal length
    cuts = np.unique(np.searchsorted(starts, np.linspace(0, len(seg), 4 * procs + 1), side="left").clip(0, n_seg))
    jobs = [(int(a), int(b), tok) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    with mp.get_context("fork").Pool(procs) as pool:
        parts = pool.map(_score_range, jobs)
    scores = pa.array([x for part in parts for x in part], pa.float64())
    pq.write_table(table.append_column("bleu", scores), dst, compression="zstd")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--tokenize", default="13a")
    ap.add_argument("--procs", type=int, default=2)
    a = ap.parse_args()
    score_file(a.input, a.output, a.tokenize, a.procs)


if __name__ == "__main__":
    main()
