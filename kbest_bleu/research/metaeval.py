"""Metric research: correlation of BLEU variants with human judgments.

Segment level from pairwise human judgments (Kendall tau as the seed paper defines it, and the
WMT12 official variant), segment level against absolute human scores (Kendall tau-b, Pearson),
system level (Pearson, Spearman) with the system score either corpus BLEU ("crp") or the
reference-length-weighted mean of sentence BLEU (seed paper Eq. 13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bleu import corpus_score, document_score, sentence_scores
from ..config import BleuConfig
from ..errors import InputError
from ..stats import BleuStats, ngram_stats
from .correlation import kendall_tau_b, kendall_tau_pairs, pearson, spearman

__all__ = ["SMOOTHING_ROWS", "Scored", "human_system_scores", "mean_over_lps", "mqm_table", "score_systems",
           "system_scores", "table_by_lp", "wmt12_table"]

def _lookup(keys: pa.Table, query: pa.Table, names: Sequence[str], what: str) -> np.ndarray:
    """Row index in ``keys`` of each row of ``query`` (equal on ``names``); every row must exist."""
    left = query.select(list(names)).append_column("_q", pa.array(np.arange(query.num_rows)))
    right = keys.select(list(names)).append_column("_k", pa.array(np.arange(keys.num_rows)))
    joined = left.join(right, list(names), join_type="left outer")
    q = joined["_q"].to_numpy()
    k = joined["_k"].to_numpy(zero_copy_only=False).astype(float)  # NaN where the key is absent
    missing = np.isnan(k)
    if joined.num_rows != query.num_rows or missing.any():  # absent, or present more than once
        row = int(q[missing][0]) if missing.any() else 0
        raise InputError(f"{what}: no (unique) score for {query.slice(row, 1).to_pylist()[0]}")
    out = np.empty(query.num_rows, np.int64)
    out[q] = k.astype(np.int64)
    return out


@dataclass(frozen=True)
class Scored:
    """A system x segment table scored once: statistics per row, and the row order."""

    table: pa.Table  # lp, segment_id, system, ... sorted by (lp, segment_id, system)
    stats: BleuStats


def score_systems(table: pa.Table, config: BleuConfig) -> Scored:
    """Statistics of every (lp, segment_id, system) row; all systems of a segment form one list."""
    t = table.take(pc.sort_indices(table, [("lp", "ascending"), ("segment_id", "ascending"), ("system", "ascending")]))
    seg = pc.add(pc.multiply(pc.dictionary_encode(t["lp"]).combine_chunks().indices.cast(pa.int64()), 10_000_000),
                 t["segment_id"])
    stats = ngram_stats(t["hypothesis"], t["references"], seg, config)
    return Scored(t, stats)


def system_scores(scored: Scored, config: BleuConfig, level: str) -> tuple[pa.Table, np.ndarray]:
    """Per (lp, system): corpus BLEU (``level="crp"``) or document-level BLEU of sentence scores
    (``level="doc"``, seed paper Eq. 13). Returns the (lp, system) table and float64[G]."""
    lp, system = (scored.table[c].cast(pa.large_string()) for c in ("lp", "system"))
    key = pc.binary_join_element_wise(lp, system, pa.scalar("\x1f", pa.large_string()))
    enc = pc.dictionary_encode(key).combine_chunks()
    labels = enc.indices.to_numpy()
    order = np.argsort(labels, kind="stable")
    ptr = np.r_[0, np.cumsum(np.bincount(labels, minlength=len(enc.dictionary)))]
    stats = scored.stats[order]
    systems = scored.table.take(pa.array(order[ptr[:-1]])).select(["lp", "system"])
    if level == "crp":
        per = stats.sum_by(ptr, config)
        values = np.array([corpus_score(per[g], config).score for g in range(len(per))])
    else:
        values = document_score(stats, ptr, config)
    return systems, values


def human_system_scores(pairs: pa.Table) -> pa.Table:
    """WMT12 system score from pairwise judgments: wins / (wins + losses), human ties excluded."""
    better = pairs.select(["lp", "better_system"]).rename_columns(["lp", "system"])
    worse = pairs.select(["lp", "worse_system"]).rename_columns(["lp", "system"])
    both = pa.concat_tables([better.append_column("win", pa.array(np.ones(pairs.num_rows))),
                             worse.append_column("win", pa.array(np.zeros(pairs.num_rows)))])
    agg = both.group_by(["lp", "system"]).aggregate([("win", "mean")])
    return agg.rename_columns(["lp", "system", "human"])


SMOOTHING_ROWS = ("crp", 0, 1, 2, 3, 4, 5, 6, 7)


def wmt12_table(segments: pa.Table, pairs: pa.Table, lps: Sequence[str], config: Optional[BleuConfig] = None,
                variant: str = "seed") -> list:
    """The seed paper's Table 2/3 layout on WMT12: rows crp and smoothing 0-7, columns segment-level
    Kendall tau (from human pairwise rankings), system-level Pearson and Spearman (system score:
    corpus BLEU for crp, Eq. 13 document BLEU of the smoothed sentence BLEU otherwise), each
    averaged over the language pairs ``lps`` (Chen & Cherry 2014, section 3.1).
    Returns [(row, seg_tau, sys_pearson, sys_spearman)]."""
    return mean_over_lps(table_by_lp(segments, pairs, lps, config, variant))


def mean_over_lps(per: dict) -> list:
    """The mean over the language pairs of a :func:`table_by_lp` result, per row and column (the
    paper's averaging, section 3.1): [(row, seg_tau, sys_pearson, sys_spearman)]."""
    return [(row,) + tuple(float(np.mean([rows[i][k] for rows in per.values()])) for k in (1, 2, 3))
            for i, row in enumerate(SMOOTHING_ROWS)]


def table_by_lp(segments: pa.Table, pairs: pa.Table, lps: Sequence[str], config: Optional[BleuConfig] = None,
                variant: str = "seed") -> dict:
    """:func:`wmt12_table` for each language pair alone: {lp: [(row, seg_tau, sys_pearson, sys_spearman)]}.
    The human system score is wins / (wins + losses) over ``pairs`` (:func:`human_system_scores`)."""
    cfg = config or BleuConfig(tokenize="13a")
    segments = segments.filter(pc.is_in(segments["lp"], pa.array(list(lps))))
    pairs = pairs.filter(pc.is_in(pairs["lp"], pa.array(list(lps))))
    scored = score_systems(segments, cfg)
    names = ["lp", "segment_id", "system"]
    rows_b = _lookup(scored.table, pairs.select(["lp", "segment_id", "better_system"]).rename_columns(names),
                     names, "better_system")
    rows_w = _lookup(scored.table, pairs.select(["lp", "segment_id", "worse_system"]).rename_columns(names),
                     names, "worse_system")
    pair_lp = pairs["lp"].to_numpy(zero_copy_only=False)
    human = human_system_scores(pairs)
    out: dict = {lp: [] for lp in lps}
    for row in SMOOTHING_ROWS:
        rcfg = BleuConfig.make(cfg, smoothing=3 if row == "crp" else row)
        systems, values = system_scores(scored, rcfg, "crp" if row == "crp" else "doc")
        h = human.join(systems.append_column("metric", pa.array(values)), ["lp", "system"], join_type="inner")
        sent = sentence_scores(scored.stats, rcfg) if row != "crp" else None
        for lp in lps:
            x, y = _xy(h, lp)
            sel = pair_lp == lp
            tau = float("nan") if sent is None else kendall_tau_pairs(sent[rows_b[sel]], sent[rows_w[sel]], variant)
            out[lp].append((row, float(tau), pearson(x, y), spearman(x, y)))
    return out


def _xy(h: pa.Table, lp: str) -> tuple[np.ndarray, np.ndarray]:
    sub = h.filter(pc.equal(h["lp"], lp))
    return sub["metric"].to_numpy(), sub["human"].to_numpy()


def mqm_table(table: pa.Table, config: Optional[BleuConfig] = None, human: str = "human_mqm") -> list:
    """Correlation with absolute human scores (WMT22 zh-en MQM): segment-level Kendall tau-b and
    Pearson over all rated (system, segment) items, system-level Pearson and Spearman against the
    mean human score. Reference "systems" (``is_reference``) are left out.
    Returns [(row, seg_tau_b, seg_pearson, sys_pearson, sys_spearman)]."""
    cfg = config or BleuConfig(tokenize="13a")
    t = table.filter(pc.invert(table["is_reference"])) if "is_reference" in table.column_names else table
    scored = score_systems(t, cfg)
    hum = scored.table[human].to_numpy(zero_copy_only=False).astype(float)
    rated = ~np.isnan(hum)
    hum_sys = scored.table.filter(pa.array(rated)).group_by(["lp", "system"]).aggregate([(human, "mean")])
    hum_sys = hum_sys.rename_columns(["lp", "system", "human"])
    out = []
    for row in SMOOTHING_ROWS:
        rcfg = BleuConfig.make(cfg, smoothing=3 if row == "crp" else row)
        systems, values = system_scores(scored, rcfg, "crp" if row == "crp" else "doc")
        h = hum_sys.join(systems.append_column("metric", pa.array(values)), ["lp", "system"], join_type="inner")
        x, y = h["metric"].to_numpy(), h["human"].to_numpy()
        seg_tau = seg_r = float("nan")
        if row != "crp":
            sent = sentence_scores(scored.stats, rcfg)
            seg_tau, seg_r = kendall_tau_b(sent[rated], hum[rated]), pearson(sent[rated], hum[rated])
        out.append((row, seg_tau, seg_r, pearson(x, y), spearman(x, y)))
    return out
