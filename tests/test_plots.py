"""Pictures (kbest_bleu.plots, ``score --plot``, ``metaeval ... --plot``): the numbers they draw
equal the scored table's, recomputed here with plain loops and sacrebleu's own corpus formula;
real data rendered to PNG and SVG files."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("matplotlib")

from kbest_bleu import plots  # noqa: E402
from kbest_bleu.batch.parquet import score_parquet  # noqa: E402
from kbest_bleu.cli import SAMPLE, main  # noqa: E402
from kbest_bleu.config import BleuConfig  # noqa: E402
from kbest_bleu.files.references import Columns  # noqa: E402

KEY = ("iteration", "segment_id")  # the bundled sample's segment key


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The bundled sample (real Moses 100-best lists) scored with statistics, and its summary."""
    out = tmp_path_factory.mktemp("plots") / "scored.parquet"
    summary = score_parquet(SAMPLE, out, BleuConfig(tokenize="none"), stats=True,
                            columns=Columns(segment=KEY, score="model_score"))
    return out, summary


def _lists(table: pa.Table) -> list:
    """Each segment's rows in input order, as a list of row dicts (a plain loop over the table)."""
    lists, last = [], None
    for row in table.to_pylist():
        key = tuple(row[k] for k in KEY)
        if key != last:
            lists.append([])
            last = key
        lists[-1].append(row)
    return lists


def _first_max(values: list) -> int:
    best = max(values)
    return values.index(best)


def _sacrebleu_corpus(rows: list) -> float:
    """Corpus BLEU of the rows' summed statistics by sacrebleu's formula (exp smoothing, as its
    corpus_score), 0-1."""
    from sacrebleu.metrics.bleu import BLEU
    correct = [sum(r[f"m{n}"] for r in rows) for n in range(1, 5)]
    total = [sum(r[f"t{n}"] for r in rows) for n in range(1, 5)]
    return BLEU.compute_bleu(correct, total, sum(r["hyp_len"] for r in rows), sum(r["ref_len"] for r in rows),
                             smooth_method="exp").score / 100


def test_the_plotted_numbers_are_the_tables(scored, tmp_path):
    out, summary = scored
    drawn = plots.plot_scored(out, tmp_path / "p.png", KEY, "model_score")
    lists = _lists(pq.read_table(out))
    assert len(lists) == 50 and {len(x) for x in lists} == {100}
    # where the oracle sits, and 1-best / oracle sentence BLEU per list
    assert drawn["oracle_ranks"].tolist() == [_first_max([r["bleu"] for r in x]) + 1 for x in lists]
    one = [x[_first_max([r["model_score"] for r in x])]["bleu"] for x in lists]
    best = [max(r["bleu"] for r in x) for x in lists]
    assert drawn["one_best"].tolist() == one and drawn["oracle"].tolist() == best
    # oracle corpus BLEU among the first k, at every k drawn
    assert drawn["ks"].tolist() == list(range(1, 101))
    for k in (1, 2, 3, 7, 25, 64, 100):
        rows = [x[_first_max([r["bleu"] for r in x[:k]])] for x in lists]
        assert drawn["oracle_by_k"][k - 1] == pytest.approx(_sacrebleu_corpus(rows), abs=1e-12), k
    assert drawn["oracle_corpus"] == pytest.approx(summary.oracle.score, abs=1e-12)
    assert drawn["one_best_corpus"] == pytest.approx(summary.one_best.score, abs=1e-12)
    # the spread by position: quantiles over the lists at each position
    for pos in (0, 1, 50, 99):
        at = [x[pos]["bleu"] for x in lists]
        assert drawn["quantiles"][:, pos] == pytest.approx(np.quantile(at, plots.QUANTILES), abs=1e-12)
        assert drawn["counts"][pos] == 50
    png = (tmp_path / "p.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


@given(st.lists(st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.5, 1.0, float("nan")]), min_size=1, max_size=6),
                min_size=1, max_size=6))
def test_ranks_and_spread_on_tiny_lists_with_ties(lists):
    """Variable K, ties and NaN (ranked as -inf, as the summary's oracle): equal to plain loops."""
    bleu = np.array([v for x in lists for v in x])
    seg_ptr = np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)
    as_inf = [[-np.inf if v != v else v for v in x] for x in lists]
    assert plots.oracle_ranks(bleu, seg_ptr).tolist() == [_first_max(x) + 1 for x in as_inf]
    q, n = plots.bleu_by_rank(bleu, seg_ptr, (0.5,))
    for pos in range(max(len(x) for x in lists)):
        at = [x[pos] for x in lists if len(x) > pos and x[pos] == x[pos]]
        assert n[pos] == sum(len(x) > pos and x[pos] == x[pos] for x in lists)
        if at:
            assert q[0, pos] == pytest.approx(np.median(at))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.integers(0, 2**31 - 1))
def test_oracle_by_k_on_random_statistics(sizes, seed):
    """Corpus BLEU of the oracle among the first k rows (a list shorter than k: all its rows),
    against a loop and sacrebleu's formula; ties in sentence BLEU go to the first row."""
    rng = np.random.default_rng(seed)
    h = sum(sizes)
    totals = rng.integers(0, 6, (h, 4))
    matches = np.minimum(totals, rng.integers(0, 6, (h, 4)))
    hyp_len, ref_len = totals[:, 0] + rng.integers(0, 2, h), rng.integers(1, 8, h)
    bleu = rng.choice([0.0, 0.25, 0.5], h)
    seg_ptr = np.cumsum([0] + sizes).astype(np.int64)
    lists = plots.ScoredLists(bleu, matches, totals, hyp_len, ref_len, seg_ptr, None, BleuConfig())
    ks, got = plots.oracle_by_k(lists)
    assert ks.tolist() == list(range(1, max(sizes) + 1))
    names = [f"m{n}" for n in range(1, 5)] + [f"t{n}" for n in range(1, 5)]
    rows = [dict(zip(names + ["hyp_len", "ref_len"], [*matches[i], *totals[i], hyp_len[i], ref_len[i]]))
            for i in range(h)]
    for k in ks:
        chosen = [rows[seg_ptr[s] + _first_max(list(bleu[seg_ptr[s]:seg_ptr[s + 1]][:k]))] for s in range(len(sizes))]
        assert got[k - 1] == pytest.approx(_sacrebleu_corpus(chosen), abs=1e-12)


def test_score_plot_draws_png_and_svg_and_keeps_the_job(tmp_path, capsys):
    for name in ("p.png", "p.svg"):
        assert main(["score", str(SAMPLE), "-t", "none", "-o", str(tmp_path / "o.parquet"), "--plot",
                     str(tmp_path / name), "-q"]) == 0
        assert capsys.readouterr().out == ""  # -q: nothing but errors
    assert (tmp_path / "p.png").stat().st_size > 10_000
    svg = (tmp_path / "p.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # the pictures need the statistics: --plot adds them to the output table
    names = pq.read_schema(tmp_path / "o.parquet").names
    assert {"bleu", "m1", "t4", "hyp_len", "ref_len"} <= set(names)
    # without -o the job still draws (from a temporary table)
    assert main(["score", str(SAMPLE), "-t", "none", "--plot", str(tmp_path / "q.png"), "-q"]) == 0
    assert (tmp_path / "q.png").stat().st_size > 10_000


@pytest.mark.parametrize("argv, says", [
    (["--plot", "x.jpg"], "expected a file name ending in"),
    (["--plot", "x.png", "--metric", "meteor"], "add bleu to --metric"),
    (["--plot", "x.png", "-s", "5"], "smoothing 5 reads order N+1"),
    (["--plot", "x.png", "-o", "x.png"], "each output needs a path of its own"),
    (["--plot", "x.png", "--engine", "spark"], "not with --engine spark"),
])
def test_score_plot_refused_before_the_job(tmp_path, capsys, argv, says):
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "-o", str(tmp_path / "o.parquet")] +
                [str(tmp_path / a) if a.startswith("x.") else a for a in argv]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


@pytest.fixture(scope="module")
def mqm_subset(shared_data, tmp_path_factory):
    """A slice of the real WMT22 zh-en MQM table (5 systems x 120 segments) as a data directory."""
    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet")
    systems = sorted(set(t.filter(pc.invert(t["is_reference"]))["system"].to_pylist()))[:5]
    t = t.filter(pc.and_(pc.is_in(t["system"], pa.array(systems)), pc.less(t["segment_id"], 120)))
    d = tmp_path_factory.mktemp("mqm")
    pq.write_table(t, d / "wmt22_zhen_mtme.parquet")
    return d, t


def _markdown_rows(text: str) -> dict:
    """The printed markdown table: {row name: [cell, ...]} (an em dash as NaN)."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("BLEU", "metric") and not line.startswith("|---"):
            out[cells[0]] = [float("nan") if c == "—" else float(c) for c in cells[1:]]
    return out


def test_metaeval_mqm_bar_chart_is_the_printed_table(mqm_subset, tmp_path, capsys, monkeypatch):
    data, _ = mqm_subset
    seen = {}
    draw = plots.plot_bars
    monkeypatch.setattr(plots, "plot_bars", lambda groups, *args: (seen.update(groups), draw(groups, *args)))
    assert main(["metaeval", "mqm", "--data", str(data), "--plot", str(tmp_path / "tau.svg")]) == 0
    printed = _markdown_rows(capsys.readouterr().out)
    assert list(seen) == ["seg tau-b", "seg Pearson", "sys Pearson", "sys Spearman"]
    for i, column in enumerate(seen):
        for row, value in seen[column].items():
            want = printed[row[1:] if row.startswith("s") else row][i]
            assert (value != value and want != want) or round(value, 3) == pytest.approx(want, abs=1e-12)
    assert "<svg" in (tmp_path / "tau.svg").read_text()


def test_metaeval_judged_scatter_is_the_tables_columns(mqm_subset, tmp_path, capsys, monkeypatch):
    import kbest_bleu as kb
    _, t = mqm_subset
    t = t.sort_by([("segment_id", "ascending"), ("system", "ascending")])
    refs = [r[:1] for r in t["references"].to_pylist()]
    t = t.append_column("bleu", pa.array(kb.score_kbest(t["hypothesis"].to_pylist(), refs)))
    t = t.append_column("length", pc.cast(pc.utf8_length(t["hypothesis"]), pa.float64()))
    pq.write_table(t, tmp_path / "judged.parquet")
    seen = {}
    draw = plots.plot_scatter
    monkeypatch.setattr(plots, "plot_scatter", lambda panels, *args: (seen.update(panels), draw(panels, *args)))
    assert main(["metaeval", "judged", str(tmp_path / "judged.parquet"), "--metric", "bleu,length", "--human",
                 "human_mqm", "--n-boot", "20", "--plot", str(tmp_path / "s.png")]) == 0
    out = capsys.readouterr().out
    human = np.array(t["human_mqm"].to_pylist(), dtype=float)
    for m in ("bleu", "length"):
        x, y, sub = seen[m]
        assert np.array_equal(x, np.array(t[m].to_pylist(), dtype=float))
        assert np.array_equal(y, human, equal_nan=True)
        rated = int((~np.isnan(human)).sum())
        assert sub.startswith(f"{rated:,} rated segments")
        # the panel's Pearson is the table's segment Pearson (printed with 3 decimals)
        printed = re.search(rf"\| {m} \| pearson \| (-?[0-9.]+) \|", out)
        assert printed and float(re.search(r"Pearson (-?[0-9.]+)", sub).group(1)) == pytest.approx(
            float(printed.group(1)), abs=1e-3)
    assert (tmp_path / "s.png").stat().st_size > 10_000
