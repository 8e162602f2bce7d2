"""Memory bounded by bytes (issue 18): parquet batches capped by bytes of hypothesis text, one huge
row refused with InputError above MAX_ROW_BYTES, and the CLI's --batch-bytes / --threads."""

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

from kbest_bleu import settings
from kbest_bleu.batch.parquet import _bounded, _read_batches, _text_bytes, score_parquet
from kbest_bleu.files.references import Columns
from kbest_bleu.cli import main
from kbest_bleu.config import BleuConfig
from kbest_bleu.errors import InputError

TEXT = st.one_of(st.none(), st.text(alphabet="ab é中\U0001f600", max_size=12))


def _utf8(s) -> int:
    return 0 if s is None else len(s.encode("utf-8"))


@given(hyps=st.lists(TEXT, min_size=1, max_size=8),
       refs=st.lists(st.one_of(st.none(), st.lists(TEXT, max_size=3)), min_size=8, max_size=8),
       dictionary=st.booleans(), owning_nulls=st.booleans(), start=st.integers(0, 8))
def test_text_bytes_is_utf8_length_per_row(hyps, refs, dictionary, owning_nulls, start):
    """Also for a slice of the column (as a batch cut by the byte bound is), and for null rows that
    still own child values (Arrow allows it; they count 0)."""
    refs = refs[:len(hyps)]
    assert _text_bytes(pa.array(hyps, pa.string()).slice(start)).tolist() == [_utf8(h) for h in hyps[start:]]
    col = pa.array(refs, pa.list_(pa.string()))
    if owning_nulls:
        filled = pa.array([["zz", "z"] if row is None else row for row in refs], pa.list_(pa.string()))
        col = pa.ListArray.from_arrays(filled.offsets, filled.values, mask=col.is_null())
    if dictionary:  # as parquet reads the references column: list<dictionary<string>>
        col = pa.ListArray.from_arrays(col.offsets, pc.dictionary_encode(col.values), mask=col.is_null())
    assert _text_bytes(col.slice(start)).tolist() == [sum(_utf8(r) for r in (row or [])) for row in refs[start:]]


def _kbest(tmp_path, hyps, n_per_seg=3):
    seg = [i // n_per_seg for i in range(len(hyps))]
    refs = [[f"ref {s} a b", f"other {s}"] for s in seg]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"segment_id": seg, "hypothesis": hyps, "references": refs}), path, row_group_size=7)
    return path


@pytest.mark.parametrize("batch_bytes", [1, 40, 100, 10**6])
def test_batches_are_capped_by_hypothesis_bytes(tmp_path, batch_bytes):
    rng = np.random.default_rng(batch_bytes)
    hyps = ["w" * int(n) for n in rng.integers(0, 60, 40)]
    pf = pq.ParquetFile(_kbest(tmp_path, hyps))
    got = list(_bounded(_read_batches(pf, 16, batch_bytes), Columns(), True, batch_bytes, tmp_path))
    for b in got:  # within the cap, or a single row
        assert b.num_rows == 1 or sum(len(h) for h in b.column("hypothesis").to_pylist()) <= batch_bytes
    assert [h for b in got for h in b.column("hypothesis").to_pylist()] == hyps  # every row, in order


def test_tiny_batch_bytes_scores_equal_sacrebleu(tmp_path):
    hyps = ["ref 0 a b c", "ref 0 a", "x y", "ref 1 a b", "other 1 a b", "ref 1 a b", "q", "ref 2", "other 2 a"]
    out = tmp_path / "out.parquet"
    score_parquet(_kbest(tmp_path, hyps), out, batch_bytes=5)
    t = pq.read_table(out)
    bleu = BLEU(tokenize="13a", effective_order=True)
    want = [bleu.sentence_score(h, r).score / 100 for h, r in zip(hyps, t["references"].to_pylist())]
    np.testing.assert_allclose(t["bleu"].to_numpy(), want, rtol=1e-13, atol=1e-15)


def test_a_row_over_max_row_bytes_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "MAX_ROW_BYTES", 100)
    refs_bytes = len("ref 1 a b") + len("other 1")  # the row's references count too
    hyps = ["a b"] * 4 + ["x" * (100 - refs_bytes)] + ["a"]  # row 4: exactly at the limit, accepted
    score_parquet(_kbest(tmp_path, hyps), None)
    hyps[4] += "y"
    with pytest.raises(InputError, match=r"row 4 holds 101 bytes .*expected at most 100 .*MAX_ROW_BYTES"):
        score_parquet(_kbest(tmp_path, hyps), None)


def test_the_default_limit_refuses_a_huge_row_before_scoring(tmp_path):
    hyps = ["a b", "c " * (settings.MAX_ROW_BYTES // 2)]
    with pytest.raises(InputError, match=r"row 1 holds .* bytes.*split such a text"):
        score_parquet(_kbest(tmp_path, hyps), None, BleuConfig(tokenize="char"))


@pytest.mark.parametrize("value", [0, -5, True, 1.5])
def test_bad_batch_bytes(tmp_path, value):
    with pytest.raises(InputError, match="batch bytes: expected a positive number of bytes"):
        score_parquet(_kbest(tmp_path, ["a"]), None, batch_bytes=value)


def test_cli_threads_and_batch_bytes(tmp_path, capsys):
    hyps = ["ref 0 a b c", "ref 0 a", "x y", "ref 1 a b", "other 1 a b"]
    src, out = _kbest(tmp_path, hyps), tmp_path / "out.parquet"
    before = numba.get_num_threads()
    try:
        assert main(["score", str(src), "-o", str(out), "-q", "--threads", "1", "--batch-bytes", "4"]) == 0
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)
    t = pq.read_table(out)
    bleu = BLEU(tokenize="13a", effective_order=True)
    want = [bleu.sentence_score(h, r).score / 100 for h, r in zip(hyps, t["references"].to_pylist())]
    np.testing.assert_allclose(t["bleu"].to_numpy(), want, rtol=1e-13, atol=1e-15)
    # the option layer (cli/options.py) refuses them as usage errors, naming the option (issue 34)
    for option, said in (("--threads", "--threads: expected a number of threads from 1 to 4096, found 0"),
                         ("--batch-bytes", "--batch-bytes: expected a positive integer, found 0")):
        with pytest.raises(SystemExit) as exc:
            main(["score", str(src), "-q", option, "0"])
        assert exc.value.code == 2 and said in capsys.readouterr().err
