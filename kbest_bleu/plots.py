"""Pictures of a scored K-best table (``kbest-bleu score ... --plot FILE.png``) and of a
meta-evaluation (``kbest-bleu metaeval ... --plot FILE.png``), drawn with matplotlib (the
``plot`` extra: ``pip install '.[plot]'``).

Every number drawn comes from a pure function of the scored table, so that tests hold the
pictures to the table: :func:`oracle_by_k` (corpus BLEU of the oracle among the first k
hypotheses of each list), :func:`oracle_ranks` (where in the list the best hypothesis sits),
:func:`one_best_and_oracle` (each segment's 1-best and oracle sentence BLEU) and
:func:`bleu_by_rank` (the spread of sentence BLEU at each position of the lists). Scores are on
the API's 0-1 scale; the pictures show them on sacrebleu's 0-100 scale, as the CLI prints them.
The "oracle" is the hypothesis with the highest sentence BLEU (the first one on ties), the
"1-best" the highest model score (``--score-col``), else the first hypothesis, as in the job's
summary (README, "Quickstart: command line").
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from .config import BleuConfig
from .errors import InputError, install_extra

__all__ = ["FORMATS", "QUANTILES", "ScoredLists", "bleu_by_rank", "check_plot_path", "one_best_and_oracle",
           "one_best_rows", "oracle_by_k", "oracle_ranks", "plot_bars", "plot_scatter", "plot_scored", "read_scored"]

FORMATS = (".png", ".svg", ".pdf")
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)  # the bands of the by-rank panel
MAX_K_POINTS = 200  # oracle BLEU is computed at every k up to this, on a geometric grid beyond


@dataclass(frozen=True)
class ScoredLists:
    """The columns of a scored table the pictures need.

    bleu : float64[H] sentence BLEU (the ``bleu`` column).
    matches, totals : int64[H, N] clipped matches and n-gram counts (``m1..mN``, ``t1..tN``).
    hyp_len, ref_len : int64[H] (``hyp_len``, ``ref_len``).
    seg_ptr : int64[S+1] row pointers of the segments (runs of equal segment keys, input order).
    model_score : float64[H] or None (``--score-col``).
    config : the :class:`BleuConfig` the table was scored with (its metadata).
    """

    bleu: np.ndarray
    matches: np.ndarray
    totals: np.ndarray
    hyp_len: np.ndarray
    ref_len: np.ndarray
    seg_ptr: np.ndarray
    model_score: Optional[np.ndarray]
    config: BleuConfig


def check_plot_path(path: "str | os.PathLike", bleu: bool = True, config: Optional[BleuConfig] = None) -> Path:
    """Refuse, before a job runs, a picture it could not draw: an unknown file type, a missing
    matplotlib, a job without BLEU, a smoothing the table's statistics cannot reproduce at the
    corpus level (5 and 7 read order N+1, which the table does not hold), an unwritable path."""
    from .files.output import check_output
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise InputError(f"--plot {path}: expected a file name ending in {', '.join(FORMATS)} (the picture's format)")
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(f"--plot: needs matplotlib, which is not installed; {install_extra('plot')}")
    if not bleu:
        raise InputError("--plot: the pictures are of sentence and corpus BLEU; add bleu to --metric")
    if config is not None and config.smoothing in (5, 7):
        raise InputError(f"--plot: smoothing {config.smoothing} reads order N+1, which the table's statistics "
                         "columns do not hold; plot with another smoothing")
    return check_output(p, (), "--plot")


def read_scored(path: "str | os.PathLike", segment: Optional[Sequence[str]] = None,
                score: Optional[str] = None) -> ScoredLists:
    """The columns of a table written by ``kbest-bleu score --stats`` (or ``--plot``) as arrays.

    segment : the segment key column(s); default: the key stored in the table's metadata.
    score : the model score column (1-best), or None (the first hypothesis of each list).
    """
    import pyarrow.parquet as pq

    from .arrays import one_array, to_numpy
    from .batch.stream import META_OPTIONS
    from .encode import run_starts
    from .files.references import META_SEGMENT
    meta = pq.read_schema(path).metadata or {}
    if META_OPTIONS not in meta:
        raise InputError(f"{path}: no BLEU options in the metadata; expected a table scored by kbest-bleu with bleu")
    config = BleuConfig(**json.loads(meta[META_OPTIONS]))
    keys = list(segment) if segment else json.loads(meta.get(META_SEGMENT, b'["segment_id"]'))
    n = config.max_order
    stat_cols = [f"m{i}" for i in range(1, n + 1)] + [f"t{i}" for i in range(1, n + 1)] + ["hyp_len", "ref_len"]
    wanted = list(dict.fromkeys(["bleu", *stat_cols, *keys] + ([score] if score else [])))
    names = pq.read_schema(path).names
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r}; expected the bleu and statistics columns "
                         "(kbest-bleu score --stats) and the segment key")
    table = pq.read_table(path, columns=wanted)
    col = {c: to_numpy(table[c]) for c in ["bleu", *stat_cols] + ([score] if score else [])}
    starts = run_starts([one_array(table[c]) for c in keys])
    seg_ptr = np.append(starts, table.num_rows).astype(np.int64)
    return ScoredLists(np.asarray(col["bleu"], np.float64),
                       np.stack([col[f"m{i}"] for i in range(1, n + 1)], axis=1).astype(np.int64),
                       np.stack([col[f"t{i}"] for i in range(1, n + 1)], axis=1).astype(np.int64),
                       col["hyp_len"].astype(np.int64), col["ref_len"].astype(np.int64), seg_ptr,
                       None if score is None else np.asarray(col[score], np.float64), config)


def _positions(seg_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment int64[H], position in its list int64[H], 0-based) of every row."""
    sizes = np.diff(seg_ptr)
    seg = np.repeat(np.arange(len(sizes)), sizes)
    return seg, np.arange(int(seg_ptr[-1] - seg_ptr[0])) - np.repeat(seg_ptr[:-1] - seg_ptr[0], sizes)


def _padded(values: np.ndarray, seg_ptr: np.ndarray, fill: float) -> np.ndarray:
    """float64[S, Kmax]: each segment's values in list order, ``fill`` past its end."""
    sizes = np.diff(seg_ptr)
    out = np.full((len(sizes), int(sizes.max(initial=0))), fill, np.float64)
    seg, pos = _positions(seg_ptr)
    out[seg, pos] = values
    return out


def oracle_by_k(lists: ScoredLists, ks: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """Corpus BLEU (0-1) of the oracle among the first k hypotheses of every list, for each k.

    The oracle of a list's first k rows is the row with the highest sentence BLEU (the first on
    ties; NaN as -inf); a list shorter than k contributes its oracle over all its rows. The
    corpus score sums the chosen rows' statistics (orders 1..N) and scores them under the table's
    config (:func:`kbest_bleu.bleu.corpus_score`), as the summary's oracle; at k = Kmax it equals it.

    Returns (ks int64[P], bleu float64[P]); default ks: every k up to 200, a geometric grid of
    200 points beyond.
    """
    sizes = np.diff(lists.seg_ptr)
    if len(sizes) == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    k_max = int(sizes.max())
    if ks is None:
        ks = np.arange(1, k_max + 1) if k_max <= MAX_K_POINTS else \
            np.unique(np.geomspace(1, k_max, MAX_K_POINTS).round().astype(np.int64))
    ks = np.asarray(ks, np.int64)
    values = _padded(np.where(np.isnan(lists.bleu), -np.inf, lists.bleu), lists.seg_ptr, -np.inf)
    # running argmax along each list, the first on ties: a position takes over only when it beats
    # every earlier one strictly (padding, -inf, never does)
    best_before = np.maximum.accumulate(values, axis=1)
    new = np.ones(values.shape, bool)
    new[:, 1:] = values[:, 1:] > best_before[:, :-1]
    at = np.maximum.accumulate(np.where(new, np.arange(values.shape[1]), 0), axis=1)
    out = np.array([_corpus_of(lists, lists.seg_ptr[:-1] + at[:, min(int(k), k_max) - 1]) for k in ks])
    return ks, out


def oracle_ranks(bleu: np.ndarray, seg_ptr: np.ndarray) -> np.ndarray:
    """int64[S]: the position of each list's oracle (highest sentence BLEU, the first on ties),
    1 = the first hypothesis."""
    from .stats import segment_argmax
    return segment_argmax(bleu, seg_ptr) - seg_ptr[:-1] + 1


def one_best_and_oracle(bleu: np.ndarray, seg_ptr: np.ndarray,
                        model_score: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """(1-best float64[S], oracle float64[S]): each list's sentence BLEU of its 1-best (highest
    model score, the first on ties; without scores the first hypothesis) and of its oracle."""
    from .stats import segment_argmax
    first = seg_ptr[:-1] if model_score is None else segment_argmax(model_score, seg_ptr)
    return bleu[first], bleu[segment_argmax(bleu, seg_ptr)]


def bleu_by_rank(bleu: np.ndarray, seg_ptr: np.ndarray,
                 quantiles: Sequence[float] = QUANTILES) -> tuple[np.ndarray, np.ndarray]:
    """The spread of sentence BLEU at each position of the lists.

    Returns (q float64[len(quantiles), Kmax], n int64[Kmax]): the quantiles (numpy's linear
    interpolation) of the sentence BLEU of the hypotheses at position r + 1 of every list long
    enough to have one, and how many there are.
    """
    import warnings
    values = _padded(bleu, seg_ptr, np.nan)
    n = (~np.isnan(values)).sum(axis=0)
    with warnings.catch_warnings():  # a position where every value is NaN: NaN, without numpy's warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(values, list(quantiles), axis=0), n


def _figure(width: float, height: float):
    from matplotlib.figure import Figure  # no pyplot: no global state, no display
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _save(fig, path: "str | os.PathLike") -> None:
    """Write through the output guard (a temporary renamed on success; inputs never replaced)."""
    from .files.output import atomic_output
    fmt = Path(path).suffix.lower().lstrip(".")
    with atomic_output(path, (), "--plot") as tmp, open(tmp, "wb") as f:
        fig.savefig(f, format=fmt, dpi=fig.dpi, metadata={"Software": None} if fmt == "png" else None)


def plot_scored(table: "str | os.PathLike", path: "str | os.PathLike", segment: Optional[Sequence[str]] = None,
                score: Optional[str] = None, name: Optional[str] = None) -> dict:
    """Draw a scored table (``kbest-bleu score --stats`` output) to ``path`` (.png, .svg, .pdf):
    oracle BLEU vs K, where in the lists the oracles sit, 1-best vs oracle per segment, the spread
    of sentence BLEU by position. Returns the numbers drawn (0-1 scores), from the pure functions
    of this module: ``ks``/``oracle_by_k``, ``oracle_ranks``, ``one_best``/``oracle`` (per
    segment), ``quantiles``/``counts`` (by position), ``one_best_corpus``/``oracle_corpus``.
    ``segment``, ``score``: as :func:`read_scored`; ``name``: the input named in the title."""
    lists = read_scored(table, segment, score)
    ks, oracle_k = oracle_by_k(lists)
    ranks = oracle_ranks(lists.bleu, lists.seg_ptr)
    one, best = one_best_and_oracle(lists.bleu, lists.seg_ptr, lists.model_score)
    quant, counts = bleu_by_rank(lists.bleu, lists.seg_ptr)
    one_corpus = _corpus_of(lists, one_best_rows(lists))
    drawn = {"ks": ks, "oracle_by_k": oracle_k, "oracle_ranks": ranks, "one_best": one, "oracle": best,
             "quantiles": quant, "counts": counts, "one_best_corpus": one_corpus,
             "oracle_corpus": float(oracle_k[-1]) if len(oracle_k) else 0.0}
    fig = _figure(10, 7.2)
    (a, b), (c, d) = fig.subplots(2, 2)
    s, h = len(lists.seg_ptr) - 1, int(lists.seg_ptr[-1])
    fig.suptitle(f"{name or Path(table).name}: {h:,} hypotheses in {s:,} lists (BLEU 0-100)", fontsize=11)
    a.plot(ks, 100 * oracle_k, color="C0", label="oracle among the first k")
    a.axhline(100 * one_corpus, color="C3", ls="--", lw=1, label=f"1-best {100 * one_corpus:.2f}")
    a.set(xlabel="k (hypotheses per list considered)", ylabel="corpus BLEU", title="Oracle corpus BLEU vs k")
    a.legend(loc="lower right", fontsize=8)
    k_max = int(np.diff(lists.seg_ptr).max(initial=1))
    bins = np.arange(0.5, k_max + 1.5) if k_max <= 50 else np.linspace(0.5, k_max + 0.5, 51)
    b.hist(ranks, bins=bins, color="C2")
    b.set(xlabel="position of the oracle in its list (1 = first)", ylabel="lists",
          title="Where the best hypothesis sits")
    c.scatter(100 * one, 100 * best, s=8, alpha=0.6, color="C1")
    c.plot([0, 100], [0, 100], color="grey", lw=0.8)
    c.set(xlim=(-2, 102), ylim=(-2, 102), xlabel="1-best sentence BLEU", ylabel="oracle sentence BLEU",
          title=f"1-best vs oracle per list (corpus {100 * one_corpus:.2f} vs {100 * drawn['oracle_corpus']:.2f})")
    pos = np.arange(1, quant.shape[1] + 1)
    c_lo, c_hi = QUANTILES.index(0.1), QUANTILES.index(0.9)
    d.fill_between(pos, 100 * quant[c_lo], 100 * quant[c_hi], color="C0", alpha=0.2, lw=0, label="10-90%")
    d.fill_between(pos, 100 * quant[QUANTILES.index(0.25)], 100 * quant[QUANTILES.index(0.75)], color="C0",
                   alpha=0.35, lw=0, label="25-75%")
    d.plot(pos, 100 * quant[QUANTILES.index(0.5)], color="C0", label="median")
    d.set(xlabel="position in the list (1 = first)", ylabel="sentence BLEU", title="Sentence BLEU by position")
    d.legend(loc="upper right", fontsize=8)
    _save(fig, path)
    return drawn


def one_best_rows(lists: ScoredLists) -> np.ndarray:
    """int64[S]: the row of each list's 1-best (highest model score, else the first row)."""
    from .stats import segment_argmax
    return lists.seg_ptr[:-1] if lists.model_score is None else segment_argmax(lists.model_score, lists.seg_ptr)


def _corpus_of(lists: ScoredLists, rows: np.ndarray) -> float:
    """Corpus BLEU (0-1) of the chosen rows' summed statistics (orders 1..N)."""
    from .bleu import corpus_score
    from .smoothing import corpus_totals
    from .stats import BleuStats
    zero = np.zeros((1, 1), np.int64)
    total = BleuStats(np.hstack([lists.matches[rows].sum(0, keepdims=True), zero]),
                      np.hstack([corpus_totals(lists.totals[rows], lists.config).sum(0, keepdims=True), zero]),
                      lists.hyp_len[rows].sum(keepdims=True), lists.ref_len[rows].sum(keepdims=True))
    return float(corpus_score(total, lists.config).score)


def plot_bars(groups: Mapping[str, Mapping[str, float]], path: "str | os.PathLike", title: str,
              ylabel: str) -> None:
    """A grouped bar chart: one group of bars per key of ``groups`` (e.g. a test set), one bar per
    key of its mapping (e.g. a smoothing), in the order given; NaN bars are left out."""
    labels = list(dict.fromkeys(k for g in groups.values() for k in g))
    fig = _figure(min(14.0, max(6.0, 0.3 * len(labels) * len(groups) + 2)), 4.2)
    ax = fig.subplots()
    width = 0.8 / max(len(groups), 1)
    x = np.arange(len(labels))
    for i, (name, values) in enumerate(groups.items()):
        heights = np.array([values.get(k, np.nan) for k in labels], np.float64)
        keep = ~np.isnan(heights)
        ax.bar((x + (i - (len(groups) - 1) / 2) * width)[keep], heights[keep], width, label=name, color=f"C{i}")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set(ylabel=ylabel, title=title)
    ax.axhline(0, color="grey", lw=0.8)
    if len(groups) > 1:
        ax.legend(fontsize=8)
    _save(fig, path)


def plot_scatter(panels: Mapping[str, tuple], path: "str | os.PathLike", title: str, xlabel: str,
                 ylabel: str) -> None:
    """Metric against human scores: one panel per key of ``panels`` (e.g. a metric), each value
    (x float64[P], y float64[P], subtitle); points with NaN in x or y are left out."""
    n = max(len(panels), 1)
    fig = _figure(min(4.0 * n, 16.0), 4.0)
    axes = np.atleast_1d(fig.subplots(1, n))
    for ax, (name, (x, y, sub)) in zip(axes, panels.items()):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        keep = ~(np.isnan(x) | np.isnan(y))
        ax.scatter(x[keep], y[keep], s=10, alpha=0.6)
        ax.set(xlabel=f"{name} ({xlabel})", ylabel=ylabel, title=sub)
    fig.suptitle(title, fontsize=11)
    _save(fig, path)
