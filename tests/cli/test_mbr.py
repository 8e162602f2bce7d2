"""``kbest-bleu mbr`` (issue 36): expected utilities equal an independent computation with
sacrebleu per pair, the selection is the argmax with ties to the lowest row, weights follow a
softmax of the model scores, and the matrix holds every pair."""

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
