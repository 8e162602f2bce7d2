"""The batch job on token ids (issue 35): a parquet whose hypothesis column is list<int> and whose
references are list<list<int>> per row, scored by ``kbest-bleu score`` as the text path scores the
same ids written as tokens."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kbest_bleu as kb
from kbest_bleu.cli import main

ids = st.lists(st.integers(-3, 4), max_size=9)
segments = st.lists(st.tuples(st.lists(ids, min_size=1, max_size=4), st.lists(ids, min_size=1, max_size=3)),
                    min_size=1, max_size=6)


def _table(segs, id_type=pa.int64()):
    hyps, refs, seg = [], [], []
    for s, (hs, rs) in enumerate(segs):
        for h in hs:
            hyps.append(h)
            refs.append(rs)
            seg.append(s)
    return pa.table({"segment_id": seg, "hypothesis": pa.array(hyps, pa.list_(id_type)),
                     "references": pa.array(refs, pa.list_(pa.list_(id_type)))}), hyps, refs, seg


def _text(tokens):
    return " ".join(f"t{t}" for t in tokens)  # ids as tokens (a negative id is a token like any)


@settings(max_examples=25, deadline=None)
@given(segs=segments, id_type=st.sampled_from([pa.int32(), pa.int64()]), smoothing=st.sampled_from(["exp", "floor"]))
def test_an_id_parquet_scores_as_the_text_path(tmp_path_factory, segs, id_type, smoothing):
    tmp = tmp_path_factory.mktemp("ids")
    table, hyps, refs, seg = _table(segs, id_type)
    pq.write_table(table, tmp / "in.parquet")
    assert main(["score", str(tmp / "in.parquet"), "-o", str(tmp / "out.parquet"), "-q", "--smoothing", smoothing,
                 "--stats"]) == 0
    got = pq.read_table(tmp / "out.parquet")
    want = kb.score_kbest([_text(h) for h in hyps], [[_text(r) for r in rs] for rs in refs], seg, tokenize="none",
                          smoothing=smoothing)
    assert np.array_equal(got["bleu"].to_numpy(), want)
    stats = kb.ngram_stats([_text(h) for h in hyps], [[_text(r) for r in rs] for rs in refs], seg, tokenize="none")
    assert np.array_equal(got["m1"].to_numpy(), stats.matches[:, 0])
    assert b"tok:none" in got.schema.metadata[b"kbest_bleu.signature"]  # ids are tokens already


@pytest.mark.parametrize("change, message", [
    (lambda t: t.set_column(2, "references", pa.array([["1 2"]] * t.num_rows)), "list<list<int>> references"),
    (lambda t: t.drop(["references"]), "references"),
])
def test_id_jobs_refuse_references_they_cannot_use(tmp_path, capsys, change, message):
    table, *_ = _table([([[1, 2]], [[1, 2, 3]])])
    pq.write_table(change(table), tmp_path / "in.parquet")
    assert main(["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "out.parquet").exists()


def test_id_jobs_refuse_other_metrics_and_lowercasing(tmp_path, capsys):
    table, *_ = _table([([[1, 2]], [[1, 2, 3]])])
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "a.parquet"), "--metric", "bleu,meteor"]) == 2
    assert "BLEU only" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "b.parquet"), "-lc"]) == 2
    assert "case" in capsys.readouterr().err


def test_ids_under_mteval_ignore_its_default_lowercasing(tmp_path, capsys):
    """mteval lowercases text by default (mteval-v13a.pl without -c); ids have no case, so every
    id job scores them as token_bleu does (the table, export-moses and the parquet job refused them)."""
    from kbest_bleu.batch import score_table
    from kbest_bleu.token_ids import token_bleu
    segs = [([[1, 2, 3], [1, 2]], [[1, 2, 3]]), ([[4, 5, 6]], [[4, 5]])]
    table, hyps, refs, _ = _table(segs)
    want = token_bleu(hyps, refs, compat="mteval").tolist()
    assert want == [kb.sentence_bleu(_text(h), [_text(r) for r in rs], compat="mteval", tokenize="none",
                                     lowercase=False) for h, rs in zip(hyps, refs)]
    for cfg in (kb.BleuConfig(compat="mteval"), kb.BleuConfig(compat="mteval", tokenize="none")):
        got = score_table(table, cfg)
        assert got["bleu"].to_pylist() == want
        assert "case:mixed" in got.schema.metadata[b"kbest_bleu.signature"].decode()
    pq.write_table(table, tmp_path / "in.parquet")
    assert main(["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "o.parquet"), "--compat", "mteval"]) == 0
    assert pq.read_table(tmp_path / "o.parquet")["bleu"].to_pylist() == want
    assert main(["export-moses", str(tmp_path / "in.parquet"), "--scores", str(tmp_path / "s.dat"), "--compat",
                 "mteval"]) == 0
