"""A WMT-style metrics table (WMT23-24 metrics shared tasks, google-research/mt-metrics-eval) for
every metric column of a judged table.

Per language pair:

- segment level: ``acc23`` with each metric's tie threshold optimized on the language pair
  (:func:`.ties.optimize_tie_threshold`), averaged per item (each source segment's systems) or
  over another grouping; human pairwise preferences (``*_rr_pairs``) are grouped per segment.
  Significance clusters from the pairwise permutation test (each metric at its own threshold).
- system level: soft pairwise accuracy (segment-level human scores, systems x segments complete)
  with clusters from PERM-BOTH over SPA, and pairwise accuracy of system means (metric: mean over
  the system's segments; human: mean rated score, or wins / (wins + losses) from pairs) with
  clusters from PERM-BOTH over accuracy where no SPA exists.

Clusters: metrics sorted by decreasing value, rank r+1 starts at the first metric that a metric of
rank r beats with p <= ``pval`` (mtme ``AssignRanks``). One seed for every comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from .permutation import (pairwise_permutation_test, score_permutation_test, significance_clusters,
                          spa_permutation_test, statistic)
from .system_level import complete_items, pairwise_accuracy, soft_pairwise_accuracy
from .ties import Pairs, optimize_tie_threshold, pair_set, preference_pairs

__all__ = ["WmtRow", "accuracy_block", "markdown_rows", "matrices", "pairs_from_preferences", "segment_block", "system_block",
           "wmt_table"]


@dataclass(frozen=True)
class WmtRow:
    """One metric of one language pair; NaN / 0 where a statistic does not apply."""

    lp: str
    metric: str
    seg_acc: float
    epsilon: float
    seg_rank: int
    spa: float
    spa_rank: int
    sys_acc: float
    sys_rank: int
    systems: int


def _column(t: pa.Table, name: str) -> np.ndarray:
    if name not in t.column_names:
        raise InputError(f"judged table: no column {name!r}; found {', '.join(t.column_names)}")
    return t[name].to_numpy(zero_copy_only=False).astype(np.float64)


def matrices(table: pa.Table, metrics: Sequence[str], human: str, lp: Optional[str] = None
             ) -> tuple[list, np.ndarray, np.ndarray, dict]:
    """Pivot one language pair of a long judged table (lp, segment_id, system, metric columns, the
    ``human`` column; NaN/None = unrated) to matrices float64[S, I]: (systems, segment ids, human,
    {metric: scores}); a (system, segment) absent from the table is NaN. A metric score must be
    present wherever the human score is."""
    t = table.filter(pc.equal(table["lp"], lp)) if lp is not None else table
    if t.num_rows == 0:
        raise InputError(f"judged table: no rows for lp {lp!r}")
    sys_names, sys_idx = np.unique(t["system"].to_numpy(zero_copy_only=False).astype(str), return_inverse=True)
    seg_ids, seg_idx = np.unique(t["segment_id"].to_numpy(zero_copy_only=False), return_inverse=True)
    if len(set(zip(sys_idx.tolist(), seg_idx.tolist()))) != t.num_rows:
        raise InputError(f"judged table: a (system, segment_id) appears twice in lp {lp!r}; expected one row each")

    def pivot(values):
        out = np.full((len(sys_names), len(seg_ids)), np.nan)
        out[sys_idx, seg_idx] = values
        return out

    h = pivot(_column(t, human))
    ms = {}
    for m in metrics:
        x = pivot(_column(t, m))
        if np.isnan(x[~np.isnan(h)]).any():
            raise InputError(f"{m}: NaN on a row with a {human} score (lp {lp!r}); score every judged translation")
        ms[m] = x
    return list(sys_names), seg_ids, h, ms


def pairs_from_preferences(table: pa.Table, pairs: pa.Table, metrics: Sequence[str], lp: str) -> Pairs:
    """:class:`.ties.Pairs` of one language pair from human preferences (lp, segment_id,
    better_system, worse_system; human ties removed), grouped per segment."""
    from .metaeval import _lookup  # the join of pairs to scored rows that the seed-paper tables use
    names = ["lp", "segment_id", "system"]
    p = pairs.filter(pc.equal(pairs["lp"], lp))
    if p.num_rows == 0:
        raise InputError(f"pairs: no preferences for lp {lp!r}")
    t = table.filter(pc.equal(table["lp"], lp))
    rb = _lookup(t, p.select(["lp", "segment_id", "better_system"]).rename_columns(names), names, "better_system")
    rw = _lookup(t, p.select(["lp", "segment_id", "worse_system"]).rename_columns(names), names, "worse_system")
    scores = np.stack([_column(t, m) for m in metrics])
    return preference_pairs(p["segment_id"].to_numpy(), scores[:, rb], scores[:, rw])


def segment_block(pairs: Pairs, metrics: Sequence[str], *, k: int = 1000, seed: int = 12345,
                  pval: float = 0.05) -> dict:
    """{metric: (acc23, epsilon, rank)}: tie-calibrated acc23 of each metric of ``pairs`` (metric
    index = position in ``metrics``) and clusters from the pairwise permutation test."""
    cal = {m: optimize_tie_threshold(pairs, i) for i, m in enumerate(metrics)}
    index = {m: i for i, m in enumerate(metrics)}

    def p_value(a, b):
        if k == 0:
            return 1.0
        return pairwise_permutation_test(pairs, index[a], index[b], epsilon_a=cal[a].epsilon,
                                         epsilon_b=cal[b].epsilon, k=k, seed=seed).p_value

    rows, _ = significance_clusters({m: c.value for m, c in cal.items()}, p_value, pval)
    return {m: (v, cal[m].epsilon, r) for m, v, r in rows}


def system_block(human: np.ndarray, scores: dict, *, k: int = 1000, seed: int = 12345, pval: float = 0.05,
                 spa_k: int = 1000, spa_seed: int = 4) -> dict:
    """{metric: (spa, rank)} over segment matrices float[S, I] (systems without human scores and
    items not rated for every system dropped); clusters from PERM-BOTH over SPA (``k`` resamples,
    each recomputing the metric's ``spa_k`` pairwise p-values)."""
    rows, cols = complete_items(human, *scores.values())
    if rows.sum() < 3 or cols.sum() < 2:
        return {}
    block = np.ix_(rows, cols)
    h = human[block]
    values = {m: soft_pairwise_accuracy(h, x[block], k=spa_k, seed=spa_seed) for m, x in scores.items()}

    def p_value(a, b):
        if k == 0:
            return 1.0
        return spa_permutation_test(h, scores[a][block], scores[b][block], k=k, seed=seed, spa_k=spa_k,
                                    spa_seed=spa_seed).p_value

    out, _ = significance_clusters(values, p_value, pval)
    return {m: (v, r) for m, v, r in out}


def accuracy_block(human_sys: np.ndarray, metric_sys: dict, k: int, seed: int, pval: float) -> dict:
    """{metric: (pairwise accuracy, rank)} with clusters from PERM-BOTH over system scores."""
    values = {m: pairwise_accuracy(human_sys, x)[0] for m, x in metric_sys.items()}
    stat = statistic("accuracy", human_sys[None, :])

    def p_value(a, b):
        if k == 0:
            return 1.0
        return score_permutation_test(human_sys[None, :], metric_sys[a][None, :], metric_sys[b][None, :], stat,
                                      k=k, seed=seed).p_value

    out, _ = significance_clusters(values, p_value, pval)
    return {m: (v, r) for m, v, r in out}


def wmt_table(table: pa.Table, metrics: Sequence[str], *, human: Optional[str] = None,
              pairs: Optional[pa.Table] = None, average_by: str = "item", k: int = 1000, seed: int = 12345,
              pval: float = 0.05, system_k: Optional[int] = None, spa_k: int = 1000, system: bool = True) -> list:
    """The WMT-style table of every language pair of ``table`` (lp, segment_id, system, the
    ``metrics`` columns) against ``human`` (a score column) or ``pairs`` (preferences): a list of
    :class:`WmtRow`, ordered per language pair by segment-level value. ``system_k`` resamples for
    the system-level clusters (default ``k``; 0 skips the tests); ``system=False`` leaves the system
    level out (systems judged on different segments, as in WMT15-17 DAseg)."""
    if (human is None) == (pairs is None):
        raise InputError("wmt_table: expected exactly one of human= (a score column) or pairs= (preferences)")
    from .judged import system_table
    system_k = k if system_k is None else system_k
    sys_t = system_table(table, list(metrics), pairs=pairs, human=human)
    lps = sorted(set(table["lp"].to_pylist()))
    out = []
    for lp in lps:
        spa: dict = {}
        if pairs is not None:
            seg = segment_block(pairs_from_preferences(table, pairs, metrics, lp), metrics, k=k, seed=seed, pval=pval)
        else:
            _, _, h, ms = matrices(table, metrics, human, lp)
            seg = segment_block(pair_set(h, list(ms.values()), average_by), metrics, k=k, seed=seed, pval=pval)
            spa = system_block(h, ms, k=system_k, seed=seed, pval=pval, spa_k=spa_k) if system else {}
        sub = sys_t.filter(pc.equal(sys_t["lp"], lp))
        h_sys = sub["human"].to_numpy(zero_copy_only=False).astype(np.float64)
        acc: dict = {}
        if system and (~np.isnan(h_sys)).sum() >= 2:
            m_sys = {m: sub[m].to_numpy(zero_copy_only=False).astype(np.float64) for m in metrics}
            acc = accuracy_block(h_sys, m_sys, 0 if spa else system_k, seed, pval)
        n_sys = int((~np.isnan(h_sys)).sum()) if system else 0
        for m in sorted(metrics, key=lambda m: (seg[m][2], -seg[m][0], m)):
            s, sr = spa.get(m, (float("nan"), 0))
            a, ar = acc.get(m, (float("nan"), 0))
            out.append(WmtRow(lp, m, seg[m][0], seg[m][1], seg[m][2], s, sr, a, 0 if spa else ar, n_sys))
    return out


def markdown_rows(rows: Sequence[WmtRow]) -> tuple[list, list]:
    """(header, rows) for :func:`.cli.markdown`: ranks beside values, the threshold after acc23."""
    header = ["lp", "metric", "seg acc23", "eps", "seg rank", "sys SPA", "SPA rank", "sys acc", "acc rank", "systems"]

    def rank(r):
        return str(r) if r else "—"
    return header, [(r.lp, r.metric, r.seg_acc, f"{r.epsilon:.4g}", rank(r.seg_rank), r.spa, rank(r.spa_rank),
                     r.sys_acc, rank(r.sys_rank), r.systems) for r in rows]
