"""One meta-evaluation for every metric column: any judged table in the shared layouts (pairwise
preferences as in ``*_rr_pairs``, absolute segment scores as ``human_score`` / ``human_mqm``)
against any metric column of a scored table (bleu, bleu_s<n>, bleu2vec, meteor, parmesan, ...).

Segment level: Kendall tau from pairs (the seed paper's variant, metric ties half and half, and
WMT12's, metric ties discordant; Chen & Cherry 2014 section 3.1), or Kendall tau-b and Pearson
against scores. System level: Pearson and Spearman of per-system means (human side: wins /
(wins + losses) for pairs, the mean score otherwise). Confidence intervals: percentile bootstrap
resampling segments (all judgments of a segment move together), as WMT metrics tasks report them
(Ma et al. 2018); metric differences: paired bootstrap over the same resamples, and the Williams
test for dependent correlations sharing the human side (Williams 1959; Graham & Baldwin 2014).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from .correlation import TAU_VARIANTS, kendall_tau_b, pearson, spearman

__all__ = ["Correlation", "check_judged_table", "judged_correlations", "metric_difference", "system_correlations",
           "system_table", "williams_test"]


@dataclass(frozen=True)
class Correlation:
    """One segment- or system-level statistic with its bootstrap percentile interval."""

    name: str  # "tau_seed", "tau_wmt12", "tau_b", "pearson"
    value: float
    low: float
    high: float
    samples: np.ndarray  # float64[B], the statistic on each bootstrap resample (for paired tests)


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A column of a table :func:`check_judged_table` passed, as float64 (null: NaN)."""
    return table[name].to_numpy(zero_copy_only=False).astype(np.float64)


def check_judged_table(table: pa.Table, metrics: Sequence[str], human: Optional[str] = None,
                       where: str = "scored table") -> None:
    """Raise :class:`InputError` (one line naming ``where``, the column and the row) unless ``table``
    can be meta-evaluated: rows, the columns lp, segment_id and system (both levels read them), each
    of ``metrics`` a numeric column finite on every row, and ``human`` (when given) a numeric column
    that may be null or NaN (unrated) but not infinite. Run by :func:`judged_correlations` and
    :func:`system_table` before any work, and by ``kbest-bleu metaeval judged`` with the file's name."""
    for name in ("lp", "segment_id", "system"):
        if name not in table.column_names:
            raise InputError(f"{where}: no column {name!r}; expected lp, segment_id, system and the metric columns "
                             f"(the system level averages each system's segments), found {', '.join(table.column_names)}")
    columns = list(metrics) + ([human] if human else [])
    for name in columns:
        if name not in table.column_names:
            raise InputError(f"{where}: no column {name!r}; found {', '.join(table.column_names)}; score the table "
                             "first (kbest-bleu score --metric ...) or name an existing column")
        kind = table.schema.field(name).type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise InputError(f"{where}: column {name!r} holds {kind}; expected numbers")
    for name in columns:
        values = table[name].to_numpy(zero_copy_only=False).astype(np.float64)
        bad = np.flatnonzero(np.isinf(values) if name == human else ~np.isfinite(values))
        if bad.size:
            raise InputError(f"{where}: row {int(bad[0])} of column {name!r} holds {float(values[bad[0]])!r}; expected "
                             + ("finite human scores (null or NaN: unrated)" if name == human else
                                "a finite metric score on every row (drop or fill the row)"))
    if table.num_rows == 0:
        raise InputError(f"{where}: no rows; expected judged segments")


def _pair_signs(table: pa.Table, pairs: pa.Table, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: sign(metric(better) - metric(worse)) float64[P] and the pair's segment key int64[P]."""
    keys = ["lp", "segment_id", "system"]
    for c in keys[:2] + ["better_system", "worse_system"]:
        if c not in pairs.column_names:
            raise InputError(f"pairs: expected column {c!r} (the *_rr_pairs layout), found {pairs.column_names}")
    same = pc.equal(pairs["better_system"], pairs["worse_system"])
    if pc.any(same).as_py():  # a system judged better than itself: a pair that no metric can order
        row = int(np.flatnonzero(same.to_numpy(zero_copy_only=False))[0])
        raise InputError(f"pairs: row {row} has better_system == worse_system ({pairs['better_system'][row]}); "
                         "expected two different systems per judgment")
    from .metaeval import _lookup
    rb = _lookup(table, pairs.select(["lp", "segment_id", "better_system"]).rename_columns(keys), keys, "better_system")
    rw = _lookup(table, pairs.select(["lp", "segment_id", "worse_system"]).rename_columns(keys), keys, "worse_system")
    score = _column(table, metric)
    return np.sign(score[rb] - score[rw]), _segment_keys(pairs)


def _segment_keys(t: pa.Table) -> np.ndarray:
    lp = pc.dictionary_encode(t["lp"].cast(pa.large_string())).combine_chunks().indices.to_numpy().astype(np.int64)
    return lp * 10_000_000 + t["segment_id"].to_numpy().astype(np.int64)


def _resample_counts(seg: np.ndarray, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Segment index of each item int64[n] and how often each segment is drawn, int64[B, S]."""
    uniq, idx = np.unique(seg, return_inverse=True)
    if not len(uniq):
        raise InputError("no judged segment (every human score null or NaN, or no pair); expected human judgments")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(uniq), size=(n_boot, len(uniq)))
    counts = np.zeros((n_boot, len(uniq)), np.int64)
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1)
    return idx, counts


def _interval(name: str, value: float, samples: np.ndarray, level: float) -> Correlation:
    q = (1 - level) / 2
    rated = samples[~np.isnan(samples)]  # resamples where the statistic is defined (numpy warns on none)
    low, high = np.quantile(rated, [q, 1 - q]) if rated.size else (np.nan, np.nan)
    return Correlation(name, float(value), float(low), float(high), samples)


def judged_correlations(table: pa.Table, metric: str, *, pairs: Optional[pa.Table] = None,
                        human: Optional[str] = None, n_boot: int = 1000, seed: int = 12345,
                        level: float = 0.95) -> list:
    """Segment-level correlations of ``metric`` (a float column of ``table``: lp, segment_id,
    system, ...) with human judgments: ``pairs`` (better_system / worse_system per lp, segment_id;
    human ties already removed) gives Kendall tau in both variants; ``human`` (a column of
    ``table``, NaN/None = unrated) gives tau-b and Pearson. Each with a percentile bootstrap
    interval at ``level`` over ``n_boot`` resamples of segments (seeded: two metrics evaluated
    with the same seed share resamples). Returns [Correlation]."""
    if (pairs is None) == (human is None):
        raise InputError("judged_correlations: expected exactly one of pairs= (preferences) or human= (a score column)")
    check_judged_table(table, [metric], human)
    out = []
    if pairs is not None:
        sign, seg = _pair_signs(table, pairs, metric)
        idx, counts = _resample_counts(seg, n_boot, seed)
        n = np.bincount(idx, minlength=counts.shape[1]).astype(np.float64)
        for variant in TAU_VARIANTS:
            # seed: ties are half concordant, half discordant, so each pair adds sign; wmt12: ties are discordant
            s = sign if variant == "seed" else np.where(sign > 0, 1.0, -1.0)
            per = np.bincount(idx, weights=s, minlength=counts.shape[1])
            out.append(_interval(f"tau_{variant}", per.sum() / n.sum(), counts @ per / (counts @ n), level))
        return out
    x, y = _column(table, metric), _column(table, human)
    rated = ~np.isnan(y)
    x, y, seg = x[rated], y[rated], _segment_keys(table.filter(pa.array(rated)))
    idx, counts = _resample_counts(seg, n_boot, seed)
    members = np.argsort(idx, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(idx, minlength=counts.shape[1]))]
    for name, fn in (("tau_b", kendall_tau_b), ("pearson", pearson)):
        samples = np.empty(n_boot)
        for b in range(n_boot):
            take = np.concatenate([np.tile(members[starts[s]:starts[s + 1]], c)
                                   for s, c in enumerate(counts[b]) if c])
            samples[b] = fn(x[take], y[take])
        out.append(_interval(name, fn(x, y), samples, level))
    return out


def metric_difference(a: Correlation, b: Correlation) -> tuple[float, float]:
    """Paired bootstrap of two metrics' correlations computed with the same seed (same resamples):
    (a.value - b.value, one-sided p-value = share of resamples where a does not beat b, among
    the resamples where both are defined, as :func:`_interval` counts; NaN when there is none)."""
    if a.samples.shape != b.samples.shape:
        raise InputError(f"metric_difference: expected equally many resamples, found {a.samples.size}, {b.samples.size}")
    diff = a.samples - b.samples
    defined = diff[~np.isnan(diff)]  # a NaN compared with 0 is False: it would count as a win for a
    return a.value - b.value, float(np.mean(defined <= 0)) if defined.size else float("nan")


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams test that correlation r12 (human, metric A) exceeds r13 (human, metric B) when
    A and B correlate r23, over n items (Williams 1959, as in WMT metrics tasks; Graham & Baldwin
    2014 Eq. 1). Returns (t, one-sided p) with n - 3 degrees of freedom."""
    import scipy.stats
    if n <= 3:
        raise InputError(f"williams_test: expected more than 3 items, found {n}")
    det = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(
        2 * (n - 1) / (n - 3) * det + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3)
    return float(t), float(scipy.stats.t.sf(t, n - 3))


def system_table(table: pa.Table, metrics: Sequence[str], *, pairs: Optional[pa.Table] = None,
                 human: Optional[str] = None) -> pa.Table:
    """Per (lp, system): the mean of each metric column and the human score (wins / (wins +
    losses) from ``pairs``, or the mean of the rated ``human`` column)."""
    from .metaeval import human_system_scores
    check_judged_table(table, metrics, human)
    agg = table.group_by(["lp", "system"]).aggregate([(m, "mean") for m in metrics])
    agg = agg.select(["lp", "system"] + [f"{m}_mean" for m in metrics]).rename_columns(["lp", "system"] + list(metrics))
    if pairs is not None:
        hum = human_system_scores(pairs)
    else:
        rated = table.filter(pc.invert(pc.is_null(table[human], nan_is_null=True)))
        hum = rated.group_by(["lp", "system"]).aggregate([(human, "mean")])
        hum = hum.select(["lp", "system", f"{human}_mean"]).rename_columns(["lp", "system", "human"])
    return agg.join(hum, ["lp", "system"], join_type="inner")


def system_correlations(sys_table: pa.Table, metric: str, lp: str) -> tuple[float, float]:
    """(Pearson, Spearman) of one metric column with ``human`` over the systems of ``lp``."""
    sub = sys_table.filter(pc.equal(sys_table["lp"], lp))
    x, y = sub[metric].to_numpy(), sub["human"].to_numpy()
    return pearson(x, y), spearman(x, y)
