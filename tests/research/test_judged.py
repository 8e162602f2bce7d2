"""The generic meta-evaluation on a tiny hand-built judged dataset, values computed by hand."""

import numpy as np
import pyarrow as pa
import pytest
import scipy.stats

from kbest_bleu.errors import InputError
from kbest_bleu.research import judged

# two segments, three systems (binary-exact values: system means tie exactly); metric m, human score h (a rated table), and pairwise preferences
TABLE = pa.table({"lp": ["xx"] * 6, "segment_id": [0, 0, 0, 1, 1, 1], "system": ["A", "B", "C"] * 2,
                  "m": [0.5, 0.25, 0.25, 0.125, 0.375, 0.25], "m2": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                  "h": [3.0, 1.0, 2.0, 1.0, 3.0, 2.0]})
PAIRS = pa.table({"lp": ["xx"] * 5, "segment_id": [0, 0, 0, 1, 1],
                  "better_system": ["A", "B", "A", "B", "A"], "worse_system": ["B", "C", "C", "A", "C"]})


def test_pairwise_tau_and_segment_bootstrap_interval():
    seed, wmt12 = judged.judged_correlations(TABLE, "m", pairs=PAIRS, n_boot=2000)
    # signs of m(better) - m(worse): +1, 0 (tie), +1 | +1, -1
    assert seed.name == "tau_seed" and seed.value == pytest.approx(2 / 5)  # ties add 0
    assert wmt12.name == "tau_wmt12" and wmt12.value == pytest.approx(1 / 5)  # the tie is discordant
    # resampling 2 segments: {0,0} -> 2/3 (p 1/4), {0,1} -> 2/5 (p 1/2), {1,1} -> 0 (p 1/4)
    assert set(np.round(seed.samples, 12)) == {round(2 / 3, 12), 0.4, 0.0}
    assert (seed.low, seed.high) == pytest.approx((0.0, 2 / 3))
    assert np.mean(seed.samples == 0.4) == pytest.approx(0.5, abs=0.05)


def test_scores_tau_b_pearson_and_interval():
    tau_b, r = judged.judged_correlations(TABLE, "m", human="h", n_boot=300)
    # tau-b by hand over the 15 pairs of 6 items: m ties only {B0,C0}, {B0,C1}; h ties only {A0,B1},
    # {B0,A1}; {C0,C1} ties in both; the other 10 pairs are concordant
    m, h = TABLE["m"].to_numpy(), TABLE["h"].to_numpy()
    c = d = tm = th = 0
    for i in range(6):
        for j in range(i + 1, 6):
            s = (m[i] - m[j]) * (h[i] - h[j])
            c, d = c + (s > 0), d + (s < 0)
            tm, th = tm + (m[i] == m[j] and h[i] != h[j]), th + (h[i] == h[j] and m[i] != m[j])
    assert (c, d, tm, th) == (10, 0, 2, 2)
    assert tau_b.value == pytest.approx(10 / np.sqrt((10 + 2) * (10 + 2)))
    mc, hc = m - m.mean(), h - h.mean()
    assert r.value == pytest.approx((mc * hc).sum() / np.sqrt((mc ** 2).sum() * (hc ** 2).sum()))
    # every resample is segment 0, segment 1 or both (twice each item): three possible Pearson values
    only0, only1 = np.corrcoef(m[:3], h[:3])[0, 1], np.corrcoef(m[3:], h[3:])[0, 1]
    assert set(np.round(r.samples, 9)) == {round(only0, 9), round(only1, 9), round(r.value, 9)}
    assert r.low == pytest.approx(min(only0, only1, r.value)) and r.high == pytest.approx(max(only0, only1, r.value))


def test_paired_difference_shares_resamples():
    a = judged.judged_correlations(TABLE, "m", pairs=PAIRS, n_boot=500, seed=7)[0]
    b = judged.judged_correlations(TABLE, "m2", pairs=PAIRS, n_boot=500, seed=7)[0]
    # m2 signs: A>B -1, B>C -1, A>C -1 | B>A +1, A>C -1 -> tau -3/5
    assert b.value == pytest.approx(-3 / 5)
    diff, p = judged.metric_difference(a, b)
    assert diff == pytest.approx(1.0)
    # per resample, tau_m - tau_m2: {0,0}: 2/3+1, {0,1}: 1, {1,1}: 0 -> m never loses except {1,1}
    assert p == pytest.approx(np.mean(a.samples - b.samples <= 0)) and 0.15 < p < 0.35


def test_paired_difference_counts_only_resamples_where_both_are_defined():
    """A resample where a statistic is undefined (NaN: a metric tied within every drawn segment)
    counted as a win for a (NaN <= 0 is False): p 0.93 where a never beats b among the defined
    ones. A constant metric gave p 0.0 both ways; now NaN."""
    table = pa.table({"lp": ["xx"] * 6, "segment_id": [0, 0, 1, 1, 2, 2], "system": ["x", "y"] * 3,
                      "h": [0.1, 0.9, 0.2, 0.8, 0.3, 0.7], "a": [0.5, 0.5, 0.4, 0.4, 0.1, 0.9],
                      "b": [0.1, 0.8, 0.2, 0.7, 0.3, 0.6], "const": [0.5] * 6})
    a, b, const = (judged.judged_correlations(table, m, human="h", n_boot=1000, seed=1)[0] for m in ("a", "b", "const"))
    assert np.isnan(a.samples).sum() > 20 and not np.isnan(b.samples).any()
    defined = ~np.isnan(a.samples)
    assert judged.metric_difference(a, b)[1] == pytest.approx(np.mean(a.samples[defined] <= b.samples[defined]))
    assert judged.metric_difference(a, b)[1] == 1.0  # a ranks the systems of segments 0 and 1 as ties
    assert np.isnan(judged.metric_difference(const, b)[1]) and np.isnan(judged.metric_difference(b, const)[1])


def test_system_level_and_williams():
    sys = judged.system_table(TABLE, ["m"], pairs=PAIRS)
    got = {r["system"]: [r["m"], r["human"]] for r in sys.to_pylist()}
    # wins / (wins + losses): A 3 of 4, B 2 of 3, C 0 of 3; m means over the two segments
    want = {"A": [0.3125, 0.75], "B": [0.3125, 2 / 3], "C": [0.25, 0.0]}
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k]) for k in want)
    p, s = judged.system_correlations(sys, "m", "xx")
    assert p == pytest.approx(scipy.stats.pearsonr([0.3125, 0.3125, 0.25], [0.75, 2 / 3, 0]).statistic)
    assert s == pytest.approx(np.sqrt(3) / 2)  # ranks 2.5, 2.5, 1 vs 3, 2, 1: 1.5 / sqrt(1.5 * 2)
    # Williams (Graham & Baldwin 2014 Eq. 1) by hand for r12 .6, r13 .4, r23 .5, n 20
    det = 1 - .36 - .16 - .25 + 2 * .6 * .4 * .5
    t = .2 * np.sqrt(19 * 1.5) / np.sqrt(2 * 19 / 17 * det + .25 * .125)
    assert judged.williams_test(.6, .4, .5, 20) == pytest.approx((t, scipy.stats.t.sf(t, 17)))


def test_bad_input_says_what_to_do():
    with pytest.raises(InputError, match="exactly one of"):
        judged.judged_correlations(TABLE, "m")
    with pytest.raises(InputError, match="no column 'bleu_s7'.*score the table first"):
        judged.judged_correlations(TABLE, "bleu_s7", pairs=PAIRS)


@pytest.mark.parametrize("fn", ["judged_correlations", "system_table"])
@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop_columns(["system"]), "no column 'system'"),
    (lambda t: t.set_column(3, "m", pa.array(["x"] * 6)), "column 'm' holds string; expected numbers"),
    (lambda t: t.set_column(3, "m", pa.array([0.5, np.nan, 0.1, 0.2, 0.3, 0.4])), "row 1 of column 'm' holds nan"),
    (lambda t: t.set_column(5, "h", pa.array([1.0, 2.0, np.inf, 1.0, 2.0, 3.0])), "row 2 of column 'h' holds inf"),
    (lambda t: t.slice(0, 0), "no rows"),
])
def test_library_functions_check_the_table_as_the_command_does(fn, change, message):
    # the same one-line checks as kbest-bleu metaeval judged, before any bootstrap work; an unrated
    # human score (NaN) is allowed, an infinite one is not
    with pytest.raises(InputError, match=message):
        if fn == "judged_correlations":
            judged.judged_correlations(change(TABLE), "m", human="h", n_boot=10)
        else:
            judged.system_table(change(TABLE), ["m"], human="h")
    unrated = TABLE.set_column(5, "h", pa.array([1.0, np.nan, 2.0, 1.0, 2.0, 3.0]))
    assert judged.system_table(unrated, ["m"], human="h").num_rows == 3
