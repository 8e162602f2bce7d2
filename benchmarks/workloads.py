"""Seeded, reproducible benchmark workloads built from the real data in shared/data.

- ``generated(n_seg, k, n_refs)``: n_seg segments x k hypotheses x n_refs references. Segments are
  real WMT22 into-English segments; references are the real references, filled up to n_refs with
  other real system translations of the same source. Hypotheses are real system outputs of the
  segment changed by realistic edits (word deletion, adjacent swap, substitution from the
  segment's vocabulary, insertion), with the exact and near duplicates real K-best lists have.
- ``moses()``: the real Moses 100-best lists (5,000 rows).
- ``pooled()``: all WMT22 systems of a segment pooled into one list (K up to ~20), 21 pairs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DATA = Path(os.environ.get("KBEST_BLEU_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CACHE = Path(__file__).parent / ".cache"


def _into_english() -> pa.Table:
    t = pq.read_table(DATA / "wmt22_news_systems.parquet", columns=["lp", "segment_id", "system", "hypothesis",
                                                                   "references"])
    t = t.filter(pc.match_substring_regex(t["lp"], "-en$"))
    return t.take(pc.sort_indices(t, [("lp", "ascending"), ("segment_id", "ascending"), ("system", "ascending")]))


def _edit(words: list, vocab: list, rng: np.random.Generator) -> list:
    out = list(words)
    for _ in range(rng.geometric(0.45)):
        op = rng.integers(4)
        if not out:
            out = [vocab[rng.integers(len(vocab))]]
            continue
        i = int(rng.integers(len(out)))
        if op == 0 and len(out) > 1:
            del out[i]
        elif op == 1 and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        elif op == 2:
            out[i] = vocab[rng.integers(len(vocab))]
        else:
            out.insert(i, vocab[rng.integers(len(vocab))])
    return out


def generated(n_seg: int = 2000, k: int = 100, n_refs: int = 4, seed: int = 0) -> pa.Table:
    """Generated K-best table: segment_id int64, hypothesis string, references list<string>, model_score."""
    path = CACHE / f"generated_{n_seg}x{k}x{n_refs}_s{seed}.parquet"
    if path.exists():
        return pq.read_table(path)
    rng = np.random.default_rng(seed)
    t = _into_english()
    key = [f"{a}|{b}" for a, b in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist())]
    hyps_all, refs_all = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    groups: dict = {}
    for i, kk in enumerate(key):
        groups.setdefault(kk, []).append(i)
    keys = [kk for kk in groups if len(groups[kk]) >= n_refs + 2]
    chosen = [keys[i] for i in sorted(rng.choice(len(keys), size=n_seg, replace=len(keys) < n_seg))]
    seg, hyps, refs = [], [], []
    for s, kk in enumerate(chosen):
        rows = groups[kk]
        outputs = [hyps_all[i] for i in rows]
        seg_refs = list(dict.fromkeys(refs_all[rows[0]] + outputs))[:n_refs]
        pool = [o for o in outputs if o not in seg_refs] or outputs
        vocab = " ".join(pool + seg_refs).split() or ["the"]
        made: list = []
        for _ in range(k):
            if made and rng.random() < 0.1:  # exact duplicate of an earlier hypothesis
                made.append(made[int(rng.integers(len(made)))])
            else:
                base = pool[int(rng.integers(len(pool)))].split()
                made.append(" ".join(_edit(base, vocab, rng)))
        seg += [s] * k
        hyps += made
        refs += [seg_refs] * k
    table = pa.table({"segment_id": pa.array(seg, pa.int64()), "hypothesis": pa.array(hyps, pa.string()),
                      "references": pa.array(refs, pa.list_(pa.string())),
                      "model_score": pa.array(-rng.gamma(2.0, 10.0, len(hyps)))})
    CACHE.mkdir(exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    return table


def moses() -> pa.Table:
    t = pq.read_table(DATA / "moses_mert_nbest.parquet", columns=["iteration", "segment_id", "hypothesis", "references"])
    seg = pc.add(pc.multiply(t["iteration"], 1000), t["segment_id"])
    return t.drop(["iteration", "segment_id"]).add_column(0, "segment_id", seg)


def pooled() -> pa.Table:
    t = _into_english()
    lp_code = pc.dictionary_encode(t["lp"]).combine_chunks().indices.cast(pa.int64())
    seg = pc.add(pc.multiply(lp_code, 100000), t["segment_id"])
    return pa.table({"segment_id": seg, "hypothesis": t["hypothesis"], "references": t["references"]})
