"""``kbest-bleu mbr`` (issue 36): expected utilities equal an independent computation with
sacrebleu per pair, the selection is the argmax with ties to the lowest row, weights follow a
softmax of the model scores, and the matrix holds every pair."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU, CHRF

from kbest_bleu.cli import main

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "."]


def _table(seed: int, n_seg: int = 4):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_seg):
        k = int(rng.integers(1, 6))
        ref = " ".join(rng.choice(WORDS, 7))
        for _ in range(k):
            rows.append({"segment_id": s, "hypothesis": " ".join(rng.choice(WORDS, int(rng.integers(0, 8)))),
                         "references": [ref], "model_score": float(rng.normal())})
    return pa.Table.from_pylist(rows)


def _expected(table, utility, weights=None):
    """Independent expected utilities: sacrebleu per (candidate, pseudo-reference) pair."""
    seg = table["segment_id"].to_pylist()
    hyps = table["hypothesis"].to_pylist()
    out = np.zeros(len(hyps))
    for s in sorted(set(seg)):
        rows = [i for i, x in enumerate(seg) if x == s]
        w = np.full(len(rows), 1 / len(rows)) if weights is None else weights[rows] / weights[rows].sum()
        for i in rows:
            out[i] = sum(wj * utility(hyps[i], hyps[j]) for wj, j in zip(w, rows))
    return out


def _bleu(h, r):
    return BLEU(tokenize="none", effective_order=True).sentence_score(h, [r]).score / 100


def _chrf(word_order):
    metric = CHRF(word_order=word_order)
    return lambda h, r: metric.sentence_score(h, [r]).score / 100


@pytest.mark.parametrize("utility, oracle", [("bleu", _bleu), ("chrf", _chrf(0)), ("chrf++", _chrf(2))])
def test_expected_utilities_and_selection_equal_sacrebleu_per_pair(tmp_path, utility, oracle):
    table = _table(1)
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["mbr", str(tmp_path / "in.parquet"), "-t", "none", "--utility", utility, "-q",
                 "-o", str(tmp_path / "out.parquet")]) == 0
    out = pq.read_table(tmp_path / "out.parquet")
    want = _expected(table, oracle)
    assert np.allclose(out["mbr_utility"].to_numpy(), want, rtol=0, atol=1e-12)
    seg = np.array(table["segment_id"].to_pylist())
    chosen = [min(np.flatnonzero(seg == s), key=lambda i: (-round(want[i], 12), i)) for s in sorted(set(seg))]
    assert np.flatnonzero(out["mbr_selected"].to_numpy()).tolist() == chosen


def test_model_score_weights_and_the_matrix(tmp_path):
    table = _table(2)
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["mbr", str(tmp_path / "in.parquet"), "-t", "none", "--score-col", "model_score", "--temperature",
                 "0.5", "--matrix", str(tmp_path / "m.parquet"), "--select", "-q", "-o", str(tmp_path / "o.parquet")]) == 0
    seg = np.array(table["segment_id"].to_pylist())
    z = np.exp(np.array(table["model_score"].to_pylist()) / 0.5)
    want = _expected(table, _bleu, z)
    out = pq.read_table(tmp_path / "o.parquet")
    assert out.num_rows == len(set(seg)) and all(out["mbr_selected"].to_pylist())  # --select: one row each
    assert np.allclose(out["mbr_utility"].to_numpy(), [max(want[seg == s]) for s in sorted(set(seg))], atol=1e-12)
    m = pq.read_table(tmp_path / "m.parquet").to_pylist()
    hyps = table["hypothesis"].to_pylist()
    assert len(m) == sum(int((seg == s).sum()) ** 2 for s in set(seg))
    for row in m:
        assert row["utility"] == pytest.approx(_bleu(hyps[row["candidate_row"]], hyps[row["pseudo_reference_row"]]),
                                               abs=1e-12)


def test_aggregated_chrf_and_its_refusals(tmp_path, capsys):
    from kbest_bleu.metrics.chrf.mbr import aggregate_chrf
    table = _table(3)
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["mbr", str(tmp_path / "in.parquet"), "--utility", "chrf", "--aggregate", "-q",
                 "-o", str(tmp_path / "a.parquet")]) == 0
    seg = np.array(table["segment_id"].to_pylist())
    ptr = np.r_[0, np.flatnonzero(np.diff(seg)) + 1, len(seg)]
    got = pq.read_table(tmp_path / "a.parquet")["mbr_utility"].to_numpy()
    assert np.array_equal(got, aggregate_chrf(table["hypothesis"], ptr))
    from kbest_bleu.tuning.mbr import aggregate_bleu
    assert main(["mbr", str(tmp_path / "in.parquet"), "--aggregate", "-q", "-o", str(tmp_path / "b.parquet")]) == 0
    got = pq.read_table(tmp_path / "b.parquet")["mbr_utility"].to_numpy()
    assert np.array_equal(got, aggregate_bleu(table["hypothesis"], seg))  # DeNero et al. (tests/tuning)
    assert main(["mbr", str(tmp_path / "in.parquet"), "--aggregate", "--matrix", str(tmp_path / "m.parquet"),
                 "-o", str(tmp_path / "c.parquet")]) == 2
    assert "--matrix" in capsys.readouterr().err
    assert main(["mbr", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "in.parquet")]) == 2  # never over the input


# ---- streaming (bounded memory) and a separate pseudo-reference set -------------------------------

SAMPLE = Path(__file__).resolve().parents[2] / "kbest_bleu" / "data" / "moses_100best_sample.parquet"


def _segments(table):
    """Each row's segment number (the sample's key: iteration, segment_id) and the run pointers."""
    key = np.array(table["iteration"].to_pylist()) * 10_000 + np.array(table["segment_id"].to_pylist())
    ptr = np.r_[0, np.flatnonzero(np.diff(key)) + 1, len(key)]
    return key, ptr


def _argmax_rows(utility, ptr):
    """Per segment the row of the highest utility, the lowest row among equals (a plain loop)."""
    rows = []
    for a, b in zip(ptr[:-1], ptr[1:]):
        best = a
        for i in range(a + 1, b):
            if utility[i] > utility[best]:
                best = i
        rows.append(best)
    return rows


def _api_utilities(utility, aggregate, hyps, seg_ids, ptr, weights=None, refs=None, ref_ids=None, ref_ptr=None):
    """Expected utilities from the Python API on the whole (in-memory) table."""
    from kbest_bleu.config import BleuConfig
    from kbest_bleu.metrics.chrf.mbr import aggregate_chrf, pairwise_chrf
    from kbest_bleu.tuning.mbr import aggregate_bleu, mbr_select
    if utility == "bleu":
        cfg = BleuConfig(tokenize="none")
        sep = {} if refs is None else {"pseudo_references": refs, "pseudo_segments": ref_ids}
        if aggregate:
            return aggregate_bleu(hyps, seg_ids, weights, cfg, **sep)
        return mbr_select(hyps, seg_ids, weights, cfg, **sep)[1]
    word_order = 2 if utility == "chrf++" else 0
    if aggregate:
        return aggregate_chrf(hyps, ptr, refs, ref_ptr, weights=weights, word_order=word_order)
    return pairwise_chrf(hyps, ptr, refs, ref_ptr, weights=weights, matrix=False, word_order=word_order).expected


@pytest.mark.parametrize("aggregate", [False, True])
@pytest.mark.parametrize("utility", ["bleu", "chrf", "chrf++"])
def test_streamed_output_equals_the_python_api_on_the_sample(tmp_path, utility, aggregate):
    """Batches of 700 rows (segments of 100 cut across batches): every chunk of whole segments
    gives what the API gives on the whole table, model-score weights included."""
    from kbest_bleu.tuning.objectives import segment_softmax
    table = pq.read_table(SAMPLE)
    seg_ids, ptr = _segments(table)
    weights = segment_softmax(table["model_score"].to_numpy() / 0.5, ptr)
    args = ["mbr", str(SAMPLE), "-t", "none", "--utility", utility, "--batch-size", "700", "-q",
            "--score-col", "model_score", "--temperature", "0.5", "-o", str(tmp_path / "out.parquet")]
    assert main(args + (["--aggregate"] if aggregate else [])) == 0
    out = pq.read_table(tmp_path / "out.parquet")
    want = _api_utilities(utility, aggregate, table["hypothesis"], seg_ids, ptr, weights)
    assert out.drop_columns(["mbr_utility", "mbr_selected"]).equals(table)
    assert np.allclose(out["mbr_utility"].to_numpy(), want, rtol=0, atol=1e-12)
    assert np.flatnonzero(out["mbr_selected"].to_numpy()).tolist() == _argmax_rows(want, ptr)
    assert len(ptr) - 1 == 50
    from kbest_bleu.batch.segments import read_segments
    chunks = list(read_segments(SAMPLE, "hypothesis", ["iteration", "segment_id"], 700, 1 << 24)[1])
    assert len(chunks) > 5  # the command's batches: several chunks, segments cut across batches


def _split_sample(tmp_path):
    """The sample's even ranks as candidates, its odd ranks as the separate sample set."""
    table = pq.read_table(SAMPLE)
    rank = np.array(table["rank"].to_pylist())
    cands, refs = table.filter(pa.array(rank % 2 == 0)), table.filter(pa.array(rank % 2 == 1))
    pq.write_table(cands, tmp_path / "cands.parquet")
    pq.write_table(refs, tmp_path / "samples.parquet")
    return cands, refs


@pytest.mark.parametrize("aggregate", [False, True])
@pytest.mark.parametrize("utility", ["bleu", "chrf", "chrf++"])
def test_pseudo_refs_equal_the_python_api_with_a_separate_sample_set(tmp_path, utility, aggregate):
    from kbest_bleu.tuning.objectives import segment_softmax
    cands, refs = _split_sample(tmp_path)
    seg_ids, ptr = _segments(cands)
    ref_ids, ref_ptr = _segments(refs)
    weights = segment_softmax(refs["model_score"].to_numpy(), ref_ptr)
    args = ["mbr", str(tmp_path / "cands.parquet"), "--pseudo-refs", str(tmp_path / "samples.parquet"),
            "--pseudo-score-col", "model_score", "-t", "none", "--utility", utility, "--batch-size", "300", "-q",
            "-o", str(tmp_path / "out.parquet")]
    assert main(args + (["--aggregate"] if aggregate else [])) == 0
    out = pq.read_table(tmp_path / "out.parquet")
    want = _api_utilities(utility, aggregate, cands["hypothesis"], seg_ids, ptr, weights, refs["hypothesis"],
                          ref_ids, ref_ptr)
    assert np.allclose(out["mbr_utility"].to_numpy(), want, rtol=0, atol=1e-12)
    assert np.flatnonzero(out["mbr_selected"].to_numpy()).tolist() == _argmax_rows(want, ptr)


@pytest.mark.parametrize("utility, oracle", [("bleu", _bleu), ("chrf", _chrf(0)), ("chrf++", _chrf(2))])
def test_pseudo_refs_and_their_matrix_equal_sacrebleu_per_pair(tmp_path, utility, oracle):
    """A few segments, a slow loop of sacrebleu sentence scores over every (candidate, sample) pair."""
    table = pq.read_table(SAMPLE)
    keep = pa.array(np.array(table["rank"].to_pylist()) < 12)
    small = table.filter(keep).slice(0, 60)  # 5 segments of 12 rows
    rank = np.array(small["rank"].to_pylist())
    cands, refs = small.filter(pa.array(rank < 5)), small.filter(pa.array(rank >= 5))
    pq.write_table(cands, tmp_path / "c.parquet")
    pq.write_table(refs, tmp_path / "r.parquet")
    assert main(["mbr", str(tmp_path / "c.parquet"), "--pseudo-refs", str(tmp_path / "r.parquet"), "-t", "none",
                 "--utility", utility, "--batch-size", "7", "-q", "-o", str(tmp_path / "o.parquet"),
                 "--matrix", str(tmp_path / "m.parquet")]) == 0
    c_ids, _ = _segments(cands)
    r_ids, _ = _segments(refs)
    ch, rh = cands["hypothesis"].to_pylist(), refs["hypothesis"].to_pylist()
    want = [np.mean([oracle(ch[i], rh[j]) for j in np.flatnonzero(r_ids == c_ids[i])]) for i in range(len(ch))]
    assert np.allclose(pq.read_table(tmp_path / "o.parquet")["mbr_utility"].to_numpy(), want, rtol=0, atol=1e-12)
    m = pq.read_table(tmp_path / "m.parquet").to_pylist()
    assert len(m) == 5 * 5 * 7 and sorted({r["segment"] for r in m}) == [0, 1, 2, 3, 4]
    for row in m:
        i, j = row["candidate_row"], row["pseudo_reference_row"]
        assert r_ids[j] == c_ids[i] and np.flatnonzero(np.unique(c_ids) == c_ids[i])[0] == row["segment"]
        assert row["utility"] == pytest.approx(oracle(ch[i], rh[j]), abs=1e-12)


def test_pseudo_refs_in_text_format(tmp_path):
    """The sample set may come in any format score reads: plain text, K lines per source."""
    cands = pa.table({"segment_id": [0, 0, 1, 1, 1], "hypothesis": ["a b c", "a b d", "x y", "x z", "y"]})
    pq.write_table(cands, tmp_path / "c.parquet")
    samples = ["a b c", "a b c d", "a", "x y z", "x y", "z"]
    (tmp_path / "s.txt").write_text("\n".join(samples) + "\n")
    assert main(["mbr", str(tmp_path / "c.parquet"), "--pseudo-refs", str(tmp_path / "s.txt"), "--pseudo-nbest-size",
                 "3", "-t", "none", "-q", "-o", str(tmp_path / "o.parquet")]) == 0
    got = pq.read_table(tmp_path / "o.parquet")["mbr_utility"].to_numpy()
    seg = cands["segment_id"].to_pylist()
    want = [np.mean([_bleu(h, r) for r in samples[3 * s:3 * s + 3]]) for h, s in zip(cands["hypothesis"].to_pylist(), seg)]
    assert np.allclose(got, want, rtol=0, atol=1e-12)


def test_select_writes_only_the_argmax_rows_ties_to_the_lowest(tmp_path):
    """Equal strings have equal utilities: the first of them is selected, in every chunk."""
    hyps = ["a b", "c d e", "c d e", "a", "x y z", "x y z", "x y", "p q", "p q"]
    seg = [0, 0, 0, 1, 2, 2, 2, 3, 3]
    table = pa.table({"segment_id": seg, "hypothesis": hyps, "n": list(range(len(seg)))})
    pq.write_table(table, tmp_path / "in.parquet")
    for utility in ("bleu", "chrf"):
        assert main(["mbr", str(tmp_path / "in.parquet"), "-t", "none", "--utility", utility, "--select",
                     "--batch-size", "2", "-q", "-o", str(tmp_path / "o.parquet")]) == 0
        out = pq.read_table(tmp_path / "o.parquet")
        oracle = _bleu if utility == "bleu" else _chrf(0)
        want = _expected(table, oracle)
        ptr = np.r_[0, np.flatnonzero(np.diff(seg)) + 1, len(seg)]
        rows = _argmax_rows(np.round(want, 12), ptr)
        assert out["n"].to_pylist() == rows and rows[0] == 1 and rows[2] == 4 and rows[3] == 7
        assert np.allclose(out["mbr_utility"].to_numpy(), want[rows], atol=1e-12) and all(out["mbr_selected"].to_pylist())



def test_a_whitespace_variant_ties_with_its_candidate_and_the_lower_row_is_selected(tmp_path):
    """'a  cat mat a' has the n-grams of 'a cat mat a' (chrF removes whitespace, chrF++ and BLEU
    split words at it): against every pseudo-reference the two score the same, so their expected
    utilities are equal and row 0 is selected. chrF's exact pairs summed them in another order for
    each row: row 4 won by the last bit (chrF 0.49560275592779474 against ...457)."""
    hyps = ["a cat mat a", "dog dog mat on sat a", "on cat the the", "on sat cat", "a  cat mat a"]
    table = pa.table({"segment_id": [0] * 5, "hypothesis": hyps})
    pq.write_table(table, tmp_path / "in.parquet")
    for utility, oracle in (("chrf", _chrf(0)), ("chrf++", _chrf(2)), ("bleu", _bleu)):
        want = _expected(table, oracle)
        assert want[0] == want[4] == want.max()  # the slow sums: the same terms in the same order
        for aggregate in ([], ["--aggregate"]):
            assert main(["mbr", str(tmp_path / "in.parquet"), "-t", "none", "--utility", utility, "-q",
                         "-o", str(tmp_path / "out.parquet")] + aggregate) == 0
            out = pq.read_table(tmp_path / "out.parquet")
            got = out["mbr_utility"].to_numpy()
            assert got[0] == got[4], (utility, aggregate)
            assert np.flatnonzero(out["mbr_selected"].to_numpy()).tolist() == _argmax_rows(got, [0, 5])
            if not aggregate:  # the aggregate's highest is another row
                assert np.abs(got - want).max() <= 1e-12 and out["mbr_selected"].to_pylist()[0]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    return err


def test_pseudo_refs_refusals(tmp_path, capsys):
    cands = pa.table({"segment_id": [0, 0, 1, 2, 2], "hypothesis": ["a b", "a c", "b", "c d", "c"]})
    pq.write_table(cands, tmp_path / "c.parquet")
    missing = pa.table({"segment_id": [0, 2, 2], "hypothesis": ["a", "c", "d"]})
    pq.write_table(missing, tmp_path / "missing.parquet")
    base = ["mbr", str(tmp_path / "c.parquet"), "-t", "none", "-q", "-o", str(tmp_path / "o.parquet")]
    assert main(base + ["--pseudo-refs", str(tmp_path / "missing.parquet")]) == 2
    err = _one_line_error(capsys)
    assert "no segment 1" in err and "missing.parquet" in err
    assert not (tmp_path / "o.parquet").exists()  # nothing half-written
    # another order: refused with the fix; --sort sorts both files and the utilities follow
    shuffled = pa.table({"segment_id": [2, 2, 0, 1], "hypothesis": ["c d", "c", "a b", "b"]})
    pq.write_table(shuffled, tmp_path / "shuffled.parquet")
    assert main(base + ["--pseudo-refs", str(tmp_path / "shuffled.parquet")]) == 2
    err = _one_line_error(capsys)
    assert "segment 0" in err and "same order" in err and "--sort" in err
    assert main(base + ["--pseudo-refs", str(tmp_path / "shuffled.parquet"), "--sort"]) == 0
    # the matrix numbers the rows of the files given, which --sort reorders: refused together
    assert main(base + ["--pseudo-refs", str(tmp_path / "shuffled.parquet"), "--sort", "--matrix",
                        str(tmp_path / "m.parquet")]) == 2
    assert "--matrix" in capsys.readouterr().err and not (tmp_path / "m.parquet").exists()
    got = pq.read_table(tmp_path / "o.parquet")["mbr_utility"].to_numpy()
    assert np.allclose(got, [np.mean([_bleu("a b", "a b")]), _bleu("a c", "a b"), _bleu("b", "b"),
                             np.mean([_bleu("c d", "c d"), _bleu("c d", "c")]),
                             np.mean([_bleu("c", "c d"), _bleu("c", "c")])], atol=1e-12)
    # a segment the candidates lack
    extra = pa.table({"segment_id": [0, 1, 2, 3], "hypothesis": ["a", "b", "c", "d"]})
    pq.write_table(extra, tmp_path / "extra.parquet")
    assert main(base + ["--pseudo-refs", str(tmp_path / "extra.parquet")]) == 2
    assert "segment 3" in _one_line_error(capsys)
    # the output never replaces the pseudo-references, nor the matrix
    for option in ("-o", "--matrix"):
        assert main(["mbr", str(tmp_path / "c.parquet"), "--pseudo-refs", str(tmp_path / "extra.parquet"), "-q",
                     option, str(tmp_path / "extra.parquet")]) == 2
        assert "extra.parquet" in _one_line_error(capsys)
    assert pq.read_table(tmp_path / "extra.parquet").equals(extra)
    assert main(base + ["--pseudo-score-col", "model_score"]) == 2  # no --pseudo-refs
    assert "--pseudo-refs" in _one_line_error(capsys)


def test_non_contiguous_segments_are_refused_across_batches(tmp_path, capsys):
    table = pa.table({"segment_id": [0, 0, 1, 1, 0], "hypothesis": ["a", "b", "c", "d", "e"]})
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["mbr", str(tmp_path / "in.parquet"), "--batch-size", "2", "-q", "-o", str(tmp_path / "o.parquet")]) == 2
    err = _one_line_error(capsys)
    assert "not contiguous" in err and "in.parquet" in err and "row 4" in err
    assert not (tmp_path / "o.parquet").exists()
    assert main(["mbr", str(tmp_path / "in.parquet"), "--sort", "-q", "-o", str(tmp_path / "o.parquet")]) == 0
    assert pq.read_table(tmp_path / "o.parquet")["hypothesis"].to_pylist() == ["a", "b", "e", "c", "d"]


def test_a_directory_input_is_said_to_be_one(tmp_path, capsys):
    """mbr of a directory said 'cannot tell the format from the extension (none)'."""
    (tmp_path / "d").mkdir()
    assert main(["mbr", str(tmp_path / "d"), "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert "is a directory; expected a file" in err and err.count("\n") == 1


def test_chrf_plus_plus_takes_the_word_order_given(tmp_path):
    """--utility chrf++ --chrf-word-order 3 scored word order 2 without a word."""
    table = _table(1)
    pq.write_table(table, tmp_path / "in.parquet")
    for extra, order in (([], 2), (["--chrf-word-order", "3"], 3)):
        assert main(["mbr", str(tmp_path / "in.parquet"), "--utility", "chrf++", "-q", "-o",
                     str(tmp_path / "out.parquet"), *extra]) == 0
        got = pq.read_table(tmp_path / "out.parquet")["mbr_utility"].to_numpy()
        assert np.abs(got - _expected(table, _chrf(order))).max() <= 1e-12


def test_model_scores_near_the_float64_limit(tmp_path, capsys):
    """Scores of +-1.7e308: divided by a small temperature they overflowed (numpy's warnings, then
    NaN probabilities refused in words naming none of it); at T = 1, a segment's differences from
    its maximum overflow to -inf, whose exp is the limit 0, and numpy warned of it."""
    import warnings

    from kbest_bleu.tuning.objectives import segment_softmax
    table = _table(3)
    scores = np.where(np.arange(table.num_rows) % 2 == 0, 1.7e308, -1.7e308)
    table = table.set_column(table.schema.get_field_index("model_score"), "model_score", pa.array(scores))
    pq.write_table(table, tmp_path / "in.parquet")
    args = ["mbr", str(tmp_path / "in.parquet"), "-t", "none", "--score-col", "model_score", "-q", "-o"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main([*args, str(tmp_path / "a.parquet"), "--temperature", "1e-6"]) == 2
        assert "divided by --temperature 1e-06 overflows float64" in _one_line_error(capsys)
        assert main([*args, str(tmp_path / "b.parquet")]) == 0
        np.testing.assert_array_equal(segment_softmax(np.array([1.7e308, -1.7e308, 5.0]), np.array([0, 2, 3])),
                                      [1.0, 0.0, 1.0])
    # each segment's weight is spread over its rows of the highest score, 0 on the others
    seg = np.array(table["segment_id"].to_pylist())
    top = np.array([scores[i] == scores[seg == seg[i]].max() for i in range(len(seg))], float)
    out = pq.read_table(tmp_path / "b.parquet")
    np.testing.assert_allclose(out["mbr_utility"].to_numpy(), _expected(table, _bleu, top), atol=1e-12)
