"""Issue 34, class 5 (never a wrong number, NaN or inf in an output) and the option layer.

Oracles: sacrebleu 2.6.0 for the scores of quoted TSV/CSV text and of both reference layouts of
``corpus_bleu``; the unscaled model for BLEU2VEC models scaled by 1e30 and 1e-30 (cosines do not
depend on a vector's length); the definition for everything refused.
"""

from __future__ import annotations

import csv
import re
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb
from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.files.output import check_finite

sacrebleu = pytest.importorskip("sacrebleu")

HYPS = ['he said "yes" to it', "the cat sat", 'a "quoted" word, and "more"', "plain text here"]
REFS = ['he said "yes" to that', "the cat sat down", 'a "quoted" word and more', "plain text there"]


def _run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line(err: str) -> bool:
    """One error line (argparse's usage errors add the line saying where the options are)."""
    lines = err.splitlines()
    return "Traceback" not in err and (len(lines) == 1 or (len(lines) == 2 and lines[1].endswith("lists the options")))


# ---- quoted TSV ---------------------------------------------------------------------------------

def test_pandas_tsv_with_quotes_is_refused_with_the_fix_and_csv_scores_as_sacrebleu(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"segment_id": range(len(HYPS)), "hypothesis": HYPS, "references": REFS})
    tsv, csv_path, out = tmp_path / "k.tsv", tmp_path / "k.csv", tmp_path / "out.parquet"
    frame.to_csv(tsv, sep="\t", index=False)  # pandas quotes a field holding a quote: "he said ""yes"" to it"
    frame.to_csv(csv_path, index=False)
    rc, _, err = _run(capsys, "score", tsv, "-o", out, "-q")
    assert rc == 2 and _one_line(err) and "CSV-quoted" in err and "row 0" in err and "QUOTE_NONE" in err, err
    assert not out.exists()
    rc, _, err = _run(capsys, "score", csv_path, "-o", out, "-q")
    assert rc == 0, err
    want = [sacrebleu.sentence_bleu(h, [r]).score / 100 for h, r in zip(HYPS, REFS)]
    assert pq.read_table(out)["bleu"].to_pylist() == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_tsv_without_quoting_keeps_its_quotes_as_text(tmp_path, capsys):
    tsv, out = tmp_path / "k.tsv", tmp_path / "out.parquet"
    tsv.write_text("segment_id\thypothesis\treferences\n" + "".join(f"{i}\t{h}\t{r}\n"
                                                                     for i, (h, r) in enumerate(zip(HYPS, REFS))))
    rc, _, err = _run(capsys, "score", tsv, "-o", out, "-q")
    assert rc == 0, err
    want = [sacrebleu.sentence_bleu(h, [r]).score / 100 for h, r in zip(HYPS, REFS)]
    assert pq.read_table(out)["bleu"].to_pylist() == pytest.approx(want, rel=1e-12, abs=1e-15)
    with open(tmp_path / "quoted.tsv", "w", newline="") as f:  # csv.QUOTE_MINIMAL, as pandas
        w = csv.writer(f, delimiter="\t")
        w.writerow(["segment_id", "hypothesis", "references"])
        w.writerows([i, h, r] for i, (h, r) in enumerate(zip(HYPS, REFS)))
    rc, _, err = _run(capsys, "score", tmp_path / "quoted.tsv", "-o", out, "-q")
    assert rc == 2 and "CSV-quoted" in err


# ---- corpus_bleu's reference layout -------------------------------------------------------------

def test_square_reference_lists_are_refused_until_the_layout_is_given():
    hyps, streams = HYPS[:3], [REFS[:3], [r.upper() for r in REFS[:3]], ["x"] * 3]
    with pytest.raises(InputError, match="references_layout"):
        kb.corpus_bleu(hyps, streams)
    theirs = sacrebleu.corpus_bleu(hyps, streams).score / 100
    assert kb.corpus_bleu(hyps, streams, references_layout="streams").score == pytest.approx(theirs, rel=1e-12)
    rows = [list(r) for r in zip(*streams)]
    assert kb.corpus_bleu(hyps, rows, references_layout="rows").score == pytest.approx(theirs, rel=1e-12)
    assert kb.corpus_bleu(hyps, streams, references_layout="rows").score != pytest.approx(theirs)  # the other reading


def test_streams_that_cannot_be_rows_say_which_layout_they_are():
    with pytest.raises(InputError, match="references_layout='streams'"):
        kb.corpus_bleu(HYPS, [REFS, REFS])  # 2 streams of 4: sacrebleu's layout
    one = kb.corpus_bleu(HYPS, [REFS], references_layout="streams").score
    assert one == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score / 100, rel=1e-12)
    with pytest.raises(InputError, match="streams of 4 strings"):
        kb.corpus_bleu(HYPS, [REFS[:3]], references_layout="streams")


# ---- n-best numbers ---------------------------------------------------------------------------

@pytest.mark.parametrize("line, words", [("0 ||| a b ||| lm= nan ||| -1", ["line 2", "finite"]),
                                         ("0 ||| a b ||| lm= -1 ||| inf", ["line 2", "finite"]),
                                         ("0 ||| a b ||| lm_0=-inf ||| -1", ["line 2", "finite"]),
                                         ("9223372036854775808 ||| a b ||| lm= -1 ||| -1", ["line 2", "64-bit"])])
def test_nbest_non_finite_numbers_and_huge_ids_are_refused(tmp_path, capsys, line, words):
    src = tmp_path / "l.nbest"
    src.write_text(f"0 ||| a c ||| lm= -2 ||| -2\n{line}\n")
    for argv in (["convert", src, tmp_path / "o.parquet"], ["score", src, "-o", tmp_path / "o.parquet"]):
        rc, _, err = _run(capsys, *argv)
        assert rc == 2 and _one_line(err), err
        assert all(w in err for w in words), err
        assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("hyp, word", [("a\nb", "holds '\\n'"), ("a ||| b", "holds '|||'"), (None, "is null")])
def test_convert_refuses_text_that_nbest_cannot_hold(tmp_path, capsys, hyp, word):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"segment_id": [0, 0], "hypothesis": pa.array(["ok", hyp], pa.string()),
                             "features": ["lm= -1", "lm= -2"], "model_score": [-1.0, -2.0]}), src)
    rc, _, err = _run(capsys, "convert", src, tmp_path / "o.nbest")
    assert rc == 2 and _one_line(err) and word in err and "segment 0, hypothesis 1: column 'hypothesis'" in err, err
    assert not (tmp_path / "o.nbest").exists()


# ---- NaN never written ------------------------------------------------------------------------

def test_meteor_statistics_of_empty_rows_are_null_not_nan(tmp_path, capsys):
    src, out = tmp_path / "e.parquet", tmp_path / "o.parquet"
    pq.write_table(pa.table({"segment_id": [0, 0, 1, 2], "hypothesis": ["", "a b", "x", ""],
                             "references": [["a b"], ["a b"], [""], [""]]}), src)
    rc, _, err = _run(capsys, "score", src, "-o", out, "-q", "--stats", "--metric", "bleu,meteor")
    assert rc == 0, err
    t = pq.read_table(out)
    # P = matches / hypothesis words, R = matches / reference words (Lavie & Denkowski 2009): 0/0 is null
    assert t["meteor_precision"].to_pylist() == [None, 1.0, 0.0, None]
    assert t["meteor_recall"].to_pylist() == [0.0, 1.0, None, None]
    for name in t.column_names:
        if pa.types.is_floating(t.schema.field(name).type):
            values = [v for v in t[name].to_pylist() if v is not None]
            assert all(math.isfinite(v) for v in values), name


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_the_writer_check_refuses_a_non_finite_score(bad):
    batch = pa.record_batch({"model_score": [float("nan"), 1.0], "bleu": [0.5, bad], "m": [1, 2]})
    check_finite(batch, ["m"], "x.parquet")  # integers and other columns are not its business
    with pytest.raises(InputError, match=r"column 'bleu', row 11"):
        check_finite(batch, ["bleu"], "x.parquet", row0=10)
    check_finite(pa.record_batch({"bleu": pa.array([None, 0.5], pa.float64())}), ["bleu"], "x")  # null: allowed


# ---- BLEU2VEC ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy_embeddings():
    pytest.importorskip("gensim")
    from kbest_bleu.metrics.bleu2vec.models import from_arrays
    rng = np.random.default_rng(7)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "lay", "rug"]
    grams = {n: ["_".join(words[i:i + n]) for i in range(len(words) - n + 1)] for n in (1, 2, 3)}
    vectors = {n: rng.normal(size=(len(grams[n]), 8)).astype(np.float32) for n in grams}
    return grams, vectors, from_arrays


@pytest.mark.parametrize("scale", [1e30, 1e-30, 1e19, 1e-19])
def test_bleu2vec_scores_do_not_depend_on_the_vectors_scale(toy_embeddings, scale):
    from kbest_bleu.metrics.bleu2vec.score import bleu2vec_scores
    grams, vectors, from_arrays = toy_embeddings
    hyps, refs = ["the cat sat on a rug", "a dog lay on the mat"], [["the cat sat on the mat"], ["a dog sat on the rug"]]
    plain = bleu2vec_scores(hyps, refs, embeddings=from_arrays(grams, vectors))
    scaled = bleu2vec_scores(hyps, refs, embeddings=from_arrays(grams, {n: v * np.float32(scale)
                                                                        for n, v in vectors.items()}))
    assert np.isfinite(scaled).all() and scaled == pytest.approx(plain, abs=1e-6)


def test_bleu2vec_refuses_nan_vectors_and_infinite_weights(toy_embeddings):
    from kbest_bleu.metrics.bleu2vec.score import bleu2vec_scores
    grams, vectors, from_arrays = toy_embeddings
    broken = {n: v.copy() for n, v in vectors.items()}
    broken[2][3, 0] = np.nan
    with pytest.raises(InputError, match=f"order 2: the vector of '{grams[2][3]}' holds NaN"):
        from_arrays(grams, broken)
    emb = from_arrays(grams, vectors)
    with pytest.raises(InputError, match="finite"):
        bleu2vec_scores(["the cat"], [["the cat"]], embeddings=emb, mode="faithful", weights="inf,1,1")


# ---- one validation layer for options -------------------------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["tune", "X", "--epochs", "-1"], "--epochs"), (["tune", "X", "--c", "-1"], "--c"), (["tune", "X", "--c", "inf"], "--c"),
    (["tune", "X", "--c", "nan"], "--c"), (["tune", "X", "--lam", "-5"], "--lam"), (["tune", "X", "--seed", "-1"], "--seed"),
    (["score", "X", "-w", "-1"], "--width"), (["score", "X", "--threads", "0"], "--threads"),
    (["score", "X", "--batch-size", "0"], "--batch-size"), (["corpus", "X", "-w", "99"], "--width"),
    (["paired", "X", "Y", "-r", "X", "--seed", "-1"], "--seed"),
    (["paired", "X", "Y", "-r", "X", "--n-samples", "2e9"], "--n-samples"),
    (["parmesan", "build-table", "X", "-o", "Y", "--min-prob", "nan"], "--min-prob"),
    (["score", "X", "--bleu2vec-min-similarity", "2"], "--bleu2vec-min-similarity"),
    (["bleu2vec", "train", "X", "-o", "Y", "--epochs", "0"], "--epochs")])
def test_bad_option_values_name_the_option_in_one_line(capsys, argv, option):
    rc, _, err = _run(capsys, *argv)
    assert rc == 2 and _one_line(err) and option in err and "expected" in err, err


def test_paired_resamples_are_bounded_by_memory(tmp_path, capsys, monkeypatch):
    from kbest_bleu import settings
    f = tmp_path / "s.txt"
    f.write_text("a b c\nd e f\n")
    monkeypatch.setattr(settings, "MAX_RESAMPLE_CELLS", 1000)
    rc, _, err = _run(capsys, "paired", f, f, "-r", f, "--n-samples", "501")  # 501 x 2 segments > 1000
    assert rc == 2 and _one_line(err) and "--n-samples" in err and "GiB" in err, err


# ---- BleuStats rows ---------------------------------------------------------------------------

def test_bleu_stats_rows_out_of_range_and_iteration():
    stats = kb.ngram_stats(["a b", "c"], [["a b"], ["d"]])
    assert [s.hyp_len.tolist() for s in stats] == [[2], [1]]  # iteration ends after len(stats) rows
    assert stats[-1].hyp_len.tolist() == [1] and stats[-2].hyp_len.tolist() == [2]
    for i in (2, 5, -3):
        with pytest.raises(IndexError):
            stats[i]


def test_uint64_segment_ids_above_2_63():
    ids = np.array([2**64 - 1, 2**64 - 1, 7], np.uint64)
    got = kb.score_kbest(["a b c d", "a b x y", "p q r s"], [["a b c d"], ["p q r s"]], ids, compat="nltk", smoothing=1)
    want = kb.score_kbest(["a b c d", "a b x y", "p q r s"], [["a b c d"], ["p q r s"]], [0, 0, 1], compat="nltk",
                          smoothing=1)
    assert got.tolist() == want.tolist()


# ---- class 7: no longer accepted silently ------------------------------------------------------

def test_a_reference_file_longer_than_the_text_hypotheses(tmp_path, capsys):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("a b c\nd e f\n")
    ref.write_text("a b c\nd e f\nleft over\n")
    for argv in (["score", hyp, "-r", ref, "-q", "--json"], ["corpus", ref, "-i", hyp], ["paired", hyp, hyp, "-r", ref]):
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and _one_line(err) and ("has 3" in err or "expected 3" in err) and not out, (argv, err)


@pytest.mark.parametrize("files, words", [(["a.1gram", "a.3gram"], "orders [1, 3]"),
                                          (["a.1gram", "b.1gram"], "2 names")])
def test_bleu2vec_model_directories_that_mix_or_miss_models(tmp_path, files, words):
    pytest.importorskip("gensim")
    from kbest_bleu.metrics.bleu2vec.models import load_embeddings
    for stem in files:
        (tmp_path / f"{stem}.w2v.txt").write_text("1 2\nthe 0.5 0.25\n")
    with pytest.raises(InputError, match=re.escape(words)):
        load_embeddings(tmp_path)
