"""Metric research: correlations and significance, against slow references, scipy and sacrebleu."""

import itertools
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

import kbest_bleu as kb
from kbest_bleu.errors import InputError
from kbest_bleu.research import correlation as corr
from kbest_bleu.research import metaeval as me
from kbest_bleu.research.significance import approximate_randomization, bootstrap_ci, paired_bootstrap

small = st.lists(st.integers(0, 4), min_size=2, max_size=40)  # many ties


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=50))
def test_pairwise_tau_variants_match_slow_definition(pairs):
    better = np.array([p[0] for p in pairs], float)
    worse = np.array([p[1] for p in pairs], float)
    c = d = 0.0
    c12 = d12 = 0.0
    for b, w in pairs:
        if b > w:
            c += 1
            c12 += 1
        elif b < w:
            d += 1
            d12 += 1
        else:  # metric tie: half and half (seed paper), discordant (WMT12)
            c += 0.5
            d += 0.5
            d12 += 1
    assert corr.kendall_tau_pairs(better, worse) == pytest.approx((c - d) / (c + d))
    assert corr.kendall_tau_pairs(better, worse, "wmt12") == pytest.approx((c12 - d12) / (c12 + d12))


@given(st.integers(2, 40).flatmap(lambda n: st.tuples(st.lists(st.integers(0, 4), min_size=n, max_size=n),
                                                      st.lists(st.integers(0, 4), min_size=n, max_size=n))))
def test_tau_b_matches_slow_definition_and_scipy(xy):
    x, y = np.array(xy[0], float), np.array(xy[1], float)
    conc = disc = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        s = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
        conc += s > 0
        disc += s < 0
        tx += x[i] == x[j] and y[i] != y[j]
        ty += y[i] == y[j] and x[i] != x[j]
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    got = corr.kendall_tau_b(x, y)
    if denom == 0:
        assert math.isnan(got)
    else:
        assert got == pytest.approx((conc - disc) / denom, abs=1e-12)
        assert got == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)


@given(small, st.randoms())
def test_rank_correlations_match_scipy(x, rnd):
    y = [v + rnd.randint(0, 2) for v in x]
    if len(set(x)) > 1 and len(set(y)) > 1:
        assert corr.spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
        assert corr.pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    assert np.array_equal(corr.rankdata(x), scipy.stats.rankdata(x))


def test_human_system_scores_count_wins():
    pairs = pa.table({"lp": ["xx"] * 3, "segment_id": [0, 0, 1], "better_system": ["A", "A", "B"],
                      "worse_system": ["B", "C", "A"]})
    got = {r["system"]: r["human"] for r in me.human_system_scores(pairs).to_pylist()}
    assert got == {"A": 2 / 3, "B": 1 / 2, "C": 0.0}


def _two_systems(shared_data, lp="de-en"):
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", filters=[("lp", "=", lp)])
    names = sorted(set(t["system"].to_pylist()))

    def get(s):
        x = t.filter(pc.equal(t["system"], s))
        x = x.take(pc.sort_indices(x, [("segment_id", "ascending")]))
        return x["hypothesis"].to_pylist(), x["references"].to_pylist()
    return [get(s) for s in names]


@pytest.fixture(scope="module")
def close_pair(shared_data):
    """The two de-en systems with the closest corpus BLEU (a non-trivial p-value)."""
    systems = _two_systems(shared_data)
    scores = [kb.corpus_bleu(h, r, tokenize="13a").score for h, r in systems]
    order = np.argsort(scores)
    gaps = np.diff(np.array(scores)[order])
    i = int(np.argmin(gaps))
    return systems[order[i]], systems[order[i + 1]]


def _sacrebleu_baseline(hyps, refs):
    from sacrebleu.metrics import BLEU
    m = BLEU()
    streams = [list(s) for s in zip(*refs)]
    stats = m._extract_corpus_statistics(hyps, streams)
    return m, streams, {"BLEU": (stats, m._aggregate_and_compute(stats))}


def test_paired_bootstrap_equals_sacrebleu(close_pair):
    from sacrebleu.significance import _paired_bs_test
    (bh, refs), (sh, _) = close_pair
    m, streams, base = _sacrebleu_baseline(bh, refs)
    want = _paired_bs_test(base, "sys", sh, streams, {"BLEU": m}, 1000, -1, 12345)[1]["BLEU"]
    cfg = kb.BleuConfig(tokenize="13a")
    got = paired_bootstrap(kb.ngram_stats(bh, refs, tokenize="13a"), kb.ngram_stats(sh, refs, tokenize="13a"), cfg)
    assert 0.01 < want.p_value < 1
    assert got.p_value == want.p_value  # same resamples, same decisions
    assert abs(100 * got.score - want.score) < 1e-9
    # sacrebleu sums the resampled statistics in float32: agreement to float32 rounding only
    assert abs(100 * got.mean - want.mean) < 1e-5 and abs(100 * got.ci - want.ci) < 1e-5


def test_approximate_randomization_equals_sacrebleu(close_pair):
    from sacrebleu.significance import _paired_ar_test
    (bh, refs), (sh, _) = close_pair
    m, streams, base = _sacrebleu_baseline(bh, refs)
    want = _paired_ar_test(base, "sys", sh, streams, {"BLEU": m}, 2000, -1, 12345)[1]["BLEU"]
    got = approximate_randomization(kb.ngram_stats(bh, refs, tokenize="13a"), kb.ngram_stats(sh, refs, tokenize="13a"),
                                    kb.BleuConfig(tokenize="13a"), 2000)
    assert 0.01 < want.p_value < 1
    assert got.p_value == want.p_value and abs(100 * got.score - want.score) < 1e-9


def test_bootstrap_ci_equals_sacrebleu(close_pair):
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import _bootstrap_resample, estimate_ci
    (hyps, refs), _ = close_pair
    m = BLEU()
    stats = m._extract_corpus_statistics(hyps, [list(s) for s in zip(*refs)])
    want = estimate_ci(np.array([s.score for s in _bootstrap_resample(stats, m, 500)[1]]))
    got = bootstrap_ci(kb.ngram_stats(hyps, refs, tokenize="13a"), kb.BleuConfig(tokenize="13a"), 500)
    assert abs(100 * got[0] - want[0]) < 1e-5 and abs(100 * got[1] - want[1]) < 1e-5


def test_wmt12_table_layout_and_the_papers_main_finding(shared_data):
    seg = pq.read_table(shared_data / "wmt12_segments.parquet")
    pairs = pq.read_table(shared_data / "wmt12_rr_pairs.parquet")
    rows = me.wmt12_table(seg, pairs, ["cs-en", "de-en", "es-en", "fr-en"])
    assert [r[0] for r in rows] == list(me.SMOOTHING_ROWS)
    assert math.isnan(rows[0][1]) and all(-1 <= v <= 1 for r in rows[1:] for v in r[1:])
    tau = {r[0]: r[1] for r in rows}
    # Chen & Cherry 2014: every smoothing beats no smoothing at segment level
    assert all(tau[k] > tau[0] + 0.02 for k in range(1, 8))
    # the segment-level tau of one smoothing recomputed by hand from the pairs
    sub = seg.filter(pc.equal(seg["lp"], "cs-en"))
    cfg = kb.BleuConfig(tokenize="13a", smoothing=3)
    bleu = {(r["segment_id"], r["system"]): s for r, s in zip(
        sub.select(["segment_id", "system"]).to_pylist(),
        kb.score_kbest(sub["hypothesis"], sub["references"], **cfg.__dict__))}
    p = pairs.filter(pc.equal(pairs["lp"], "cs-en")).to_pylist()
    b = np.array([bleu[x["segment_id"], x["better_system"]] for x in p])
    w = np.array([bleu[x["segment_id"], x["worse_system"]] for x in p])
    one = me.wmt12_table(seg, pairs, ["cs-en"])
    assert one[4][1] == pytest.approx(corr.kendall_tau_pairs(b, w), abs=1e-12)


def test_paired_command(close_pair, tmp_path, capsys):
    from kbest_bleu.cli import main
    (bh, refs), (sh, _) = close_pair
    (tmp_path / "base.txt").write_text("\n".join(bh) + "\n", encoding="utf-8")
    (tmp_path / "sys.txt").write_text("\n".join(sh) + "\n", encoding="utf-8")
    paths = []
    for j in range(len(refs[0])):
        paths.append(tmp_path / f"ref{j}.txt")
        paths[-1].write_text("\n".join(r[j] for r in refs) + "\n", encoding="utf-8")
    assert main(["paired", str(tmp_path / "base.txt"), str(tmp_path / "sys.txt"), "-r", *map(str, paths),
                 "-t", "13a", "--test", "ar", "--n-samples", "500"]) == 0
    out = capsys.readouterr().out
    want = approximate_randomization(kb.ngram_stats(bh, refs, tokenize="13a"), kb.ngram_stats(sh, refs, tokenize="13a"),
                                     kb.BleuConfig(tokenize="13a"), 500)
    mark = "*" if want.p_value < 0.05 else ""
    assert f"| {tmp_path / 'sys.txt'} | {100 * want.score:.2f} | — | {want.p_value:.4f}{mark} |" in out


def test_metaeval_mqm_command(shared_data, capsys):
    from kbest_bleu.cli import main
    assert main(["metaeval", "mqm", "--data", str(shared_data)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n| ") == 10 and "| crp | — | — |" in out


def test_paired_command_json_is_valid_json(close_pair, tmp_path, capsys):
    """--json of an approximate-randomization test: no bootstrap mean or interval, written as
    null (NaN is not JSON: jq and strict parsers reject it)."""
    import json

    from kbest_bleu.cli import main
    (bh, refs), (sh, _) = close_pair
    (tmp_path / "base.txt").write_text("\n".join(bh) + "\n", encoding="utf-8")
    (tmp_path / "sys.txt").write_text("\n".join(sh) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(r[0] for r in refs) + "\n", encoding="utf-8")
    assert main(["paired", str(tmp_path / "base.txt"), str(tmp_path / "sys.txt"), "-r", str(tmp_path / "ref.txt"),
                 "--test", "ar", "--n-samples", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    base, system = out["systems"]
    assert base["mean"] is None and base["ci"] is None and system["mean"] is None
    want = approximate_randomization(kb.ngram_stats(bh, [[r[0]] for r in refs]),
                                     kb.ngram_stats(sh, [[r[0]] for r in refs]), kb.BleuConfig(), 200)
    assert system["p_value"] == want.p_value and system["score"] == pytest.approx(100 * want.score, abs=1e-12)


@pytest.mark.parametrize("name", ["pearson", "spearman", "kendall_tau_b"])
def test_correlations_refuse_nan_and_unequal_lengths(name):
    # an unrated item (NaN) would get a rank of its own in spearman (-0.6 here, scipy: nan)
    f = getattr(corr, name)
    with pytest.raises(InputError, match="NaN in the input"):
        f([float("nan"), float("nan"), 1.0, 2.0], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match="equal length"):
        f([1.0, 2.0, 3.0], [1.0])  # would broadcast in numpy
    assert math.isnan(f([1.0], [2.0]))


def test_rankdata_refuses_nan():
    with pytest.raises(InputError, match="rankdata: NaN"):
        corr.rankdata([1.0, float("nan")])


@pytest.mark.parametrize("n_samples", [0, -1, 2.5, True])
def test_paired_tests_refuse_a_bad_number_of_resamples(close_pair, n_samples):
    """n_samples=0: approximate randomization said p = 1.0 from no shuffle, the bootstrap an
    IndexError."""
    (bh, refs), (sh, _) = close_pair
    a, b = kb.ngram_stats(bh, refs), kb.ngram_stats(sh, refs)
    for call in (lambda: paired_bootstrap(a, b, None, n_samples), lambda: approximate_randomization(a, b, None, n_samples),
                 lambda: bootstrap_ci(a, None, n_samples)):
        with pytest.raises(InputError, match="n_samples: expected a positive number"):
            call()


def test_paired_tests_refuse_statistics_that_are_not_finite(close_pair):
    """Hand-built float statistics with a NaN reference length made the brevity penalty 1."""
    (bh, refs), (sh, _) = close_pair
    a, b = kb.ngram_stats(bh, refs), kb.ngram_stats(sh, refs)
    broken = kb.BleuStats(a.matches, a.totals, a.hyp_len.astype(float), a.ref_len.astype(float))
    broken.ref_len[3] = np.nan
    with pytest.raises(InputError, match="row 3 are not finite"):
        paired_bootstrap(broken, b)


def test_paired_command_refuses_empty_files(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert kb.cli.main(["paired", str(empty), str(empty), "-r", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "holds no sentence" in err and err.count("\n") == 1


def test_pearson_does_not_depend_on_the_scale_even_near_overflow():
    """A metric column times 1e300 gave r = 0 (its squares overflow: inf / inf); 1e-300, NaN."""
    from kbest_bleu.research.correlation import pearson
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = x + rng.normal(size=200)
    want = scipy.stats.pearsonr(x, y)[0]
    for scale in (1.0, 1e300, 1e-300):
        assert pearson(x * scale, y) == pytest.approx(want, rel=1e-12)
    assert pearson(x, y) == want or abs(pearson(x, y) - want) < 1e-15  # unscaled data: the same arithmetic
