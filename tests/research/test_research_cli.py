"""`kbest-bleu metaeval judged` on a tiny hand-built judged dataset (values by hand or scipy), the
data directory lookup (--data, KBEST_BLEU_DATA), and `metaeval mqm` against sacrebleu + scipy."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.stats

from kbest_bleu.cli import main
from kbest_bleu.errors import InputError

# two segments, three systems; metric columns m, m2; human score h; pairwise preferences
TABLE = pa.table({"lp": ["xx"] * 6, "segment_id": [0, 0, 0, 1, 1, 1], "system": ["A", "B", "C"] * 2,
                  "m": [0.5, 0.25, 0.25, 0.125, 0.375, 0.25], "m2": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                  "h": [3.0, 1.0, 2.0, 1.0, 3.0, 2.5]})
PAIRS = pa.table({"lp": ["xx"] * 5, "segment_id": [0, 0, 0, 1, 1],
                  "better_system": ["A", "B", "A", "B", "A"], "worse_system": ["B", "C", "C", "A", "C"]})


def _rows(out: str) -> list:
    """The body rows of every markdown table printed, as lists of cells."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| metric") and not line.startswith("| statistic")]


def _run(capsys, tmp_path, *args) -> list:
    pq.write_table(TABLE, tmp_path / "t.parquet")
    pq.write_table(PAIRS, tmp_path / "p.parquet")
    args = [str(tmp_path / a) if a.endswith(".parquet") else a for a in args]
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), *args, "--n-boot", "400"]) == 0
    return _rows(capsys.readouterr().out)


def _num(cells, *idx):
    return [float(cells[i]) for i in idx]


def test_judged_pairs_tau_intervals_system_and_comparison(tmp_path, capsys):
    rows = _run(capsys, tmp_path, "--metric", "m,m2", "--pairs", "p.parquet", "--compare", "m,m2")
    seg = {(r[0], r[1]): _num(r, 2, 3, 4) for r in rows[:4]}
    # signs of m(better) - m(worse): segment 0 +1, 0 (tie), +1; segment 1 +1, -1. Seed tau: ties add 0;
    # WMT12: the tie is discordant. Resamples are {0,0}, {0,1}, {1,1}: the interval spans the extremes.
    assert seg["m", "tau_seed"] == pytest.approx([2 / 5, 0, 2 / 3], abs=5e-4)
    assert seg["m", "tau_wmt12"] == pytest.approx([1 / 5, 0, 1 / 3], abs=5e-4)
    # m2 is discordant on every pair of segment 0, half of segment 1
    assert seg["m2", "tau_seed"] == pytest.approx([-3 / 5, -1, 0], abs=5e-4)
    # systems: m means A .3125, B .3125, C .25; human wins/(wins+losses) A 3/4, B 2/3, C 0
    system = {r[0]: _num(r, 2, 3, 4) for r in rows[4:6]}
    want_r = scipy.stats.pearsonr([0.3125, 0.3125, 0.25], [0.75, 2 / 3, 0]).statistic
    assert system["m"] == pytest.approx([3, want_r, np.sqrt(3) / 2], abs=5e-4)
    # paired bootstrap: tau_seed difference 2/5 - (-3/5) = 1
    assert rows[6][:3] == ["tau_seed", "paired bootstrap", "1.000"]


def test_judged_scores_tau_b_pearson_intervals_and_williams(tmp_path, capsys):
    rows = _run(capsys, tmp_path, "--metric", "m,m2", "--human", "h", "--compare", "m,m2")
    m, m2, h = (TABLE[c].to_numpy() for c in ("m", "m2", "h"))
    seg = {(r[0], r[1]): _num(r, 2, 3, 4) for r in rows[:4]}
    # a resample is segment 0 twice, segment 1 twice, or both once: duplicated rows keep Pearson;
    # tau-b of the duplicated rows by scipy
    for name, fn in (("tau_b", lambda x, y: scipy.stats.kendalltau(x, y).statistic),
                     ("pearson", lambda x, y: scipy.stats.pearsonr(x, y).statistic)):
        both = fn(m, h)
        halves = [fn(np.tile(m[s], 2), np.tile(h[s], 2)) for s in (slice(0, 3), slice(3, 6))]
        assert seg["m", name] == pytest.approx([both, min(halves + [both]), max(halves + [both])], abs=5e-4)
    r12, r13, r23 = (scipy.stats.pearsonr(x, y).statistic for x, y in ((m, h), (m2, h), (m, m2)))
    n = 6  # Williams (Graham & Baldwin 2014 Eq. 1) written out
    det = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(2 * (n - 1) / (n - 3) * det
                                                               + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3)
    williams = [r for r in rows if r[1] == "Williams"][0]
    assert _num(williams, 2, 3) == pytest.approx([t, scipy.stats.t.sf(t, n - 3)], abs=5e-4)


def test_judged_bad_input(tmp_path, capsys):
    pq.write_table(TABLE, tmp_path / "t.parquet")
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "bleu", "--human", "h"]) == 2
    assert "no column 'bleu'" in capsys.readouterr().err
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m,m2", "--human", "h",
                 "--compare", "m,x"]) == 2
    assert "--compare: expected two different --metric columns" in capsys.readouterr().err
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m,m2", "--human", "h",
                 "--compare", "m,m"]) == 2  # a metric against itself (numpy warnings and a meaningless test before)
    assert "--compare: expected two different --metric columns as A,B, found 'm,m'" in capsys.readouterr().err
    same = PAIRS.set_column(3, "worse_system", pa.array(["B", "C", "A", "B", "C"]))  # row 2: A better than A
    pq.write_table(same, tmp_path / "p.parquet")
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m", "--pairs",
                 str(tmp_path / "p.parquet")]) == 2  # (a pair no metric can order)
    assert "row 2 has better_system == worse_system (A)" in capsys.readouterr().err


def test_data_directory_from_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBEST_BLEU_DATA", str(tmp_path))
    assert main(["metaeval", "mqm"]) == 2
    err = capsys.readouterr().err
    assert f"looked in {tmp_path} (from KBEST_BLEU_DATA)" in err and "wmt22_zhen_mtme.parquet" in err
    assert main(["metaeval", "wmt12", "--data", str(tmp_path / "nowhere")]) == 2
    assert f"looked in {tmp_path / 'nowhere'} (from --data)" in capsys.readouterr().err


def test_judged_needs_its_key_columns_before_any_work(tmp_path, capsys):
    pq.write_table(TABLE.drop_columns(["system"]), tmp_path / "t.parquet")
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m", "--human", "h"]) == 2
    err = capsys.readouterr().err
    assert "no column 'system'" in err and "Traceback" not in err


def test_data_directory_from_the_current_directory_then_beside_the_checkout(tmp_path, monkeypatch):
    from kbest_bleu.research import data as _shared_data
    monkeypatch.delenv("KBEST_BLEU_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert _shared_data.data_dir() == (tmp_path / "shared" / "data", "../shared/data from the current directory")
    assert _shared_data.data_dir("x") == (Path("x"), "--data")
    monkeypatch.setenv("KBEST_BLEU_DATA", str(tmp_path))
    assert _shared_data.data_dir() == (tmp_path, "KBEST_BLEU_DATA")
    monkeypatch.delenv("KBEST_BLEU_DATA")
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: a source checkout's sibling, where there is one
    monkeypatch.setattr(_shared_data, "_BESIDE_CHECKOUT", tmp_path / "shared" / "data")
    assert _shared_data.data_dir() == (tmp_path / "shared" / "data", "the directory beside the package's checkout")
    monkeypatch.setattr(_shared_data, "_BESIDE_CHECKOUT", tmp_path / "absent")
    with pytest.raises(InputError, match=r"not found; looked in .* \(from \.\./shared/data from the current directory\)"):
        _shared_data.require_data(["wmt12_segments.parquet"])


@pytest.mark.parametrize("command", [["bleu2vec", "metaeval"], ["parmesan", "metaeval"]])
def test_metric_metaevals_share_the_data_lookup(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBEST_BLEU_DATA", str(tmp_path))
    assert main(command) == 2
    assert f"looked in {tmp_path} (from KBEST_BLEU_DATA)" in capsys.readouterr().err


@pytest.mark.parametrize("column, value, ok", [("m", np.inf, False), ("m", np.nan, False), ("h", np.inf, False),
                                               ("h", np.nan, True)])
def test_judged_metric_scores_finite_human_scores_finite_or_unrated(tmp_path, capsys, column, value, ok):
    """A NaN human score is an unrated segment; any other non-finite score is refused in one line
    naming the row and the column (it made 0/0 and inf - inf in the statistics, printed as dashes)."""
    values = TABLE[column].to_numpy().copy()
    values[4] = value
    pq.write_table(TABLE.set_column(TABLE.column_names.index(column), column, pa.array(values)), tmp_path / "t.parquet")
    rc = main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m", "--human", "h", "--n-boot", "50"])
    err = capsys.readouterr().err
    assert rc == (0 if ok else 2), err
    if not ok:
        assert err.count("\n") == 1 and f"row 4 of column {column!r}" in err, err


@pytest.mark.parametrize("argv", [["metaeval", "wmt12"], ["metaeval", "chen-cherry"],
                                  ["parmesan", "metaeval", "--experiment", "en-cs"]])
def test_recipes_on_data_that_is_not_the_shared_data_say_so_in_one_line(tmp_path, capsys, argv):
    """A junk file where a recipe reads the shared data: one line naming the directory, exit 2 (an
    ArrowInvalid traceback before)."""
    for name in ("wmt12_segments.parquet", "wmt12_rr_pairs.parquet"):
        (tmp_path / name).write_bytes(b"hello")
    assert main([*argv, "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path} (from --data): a data file does not hold" in err, err
