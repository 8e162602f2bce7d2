"""Batch jobs: streaming parquet scorer, command line, n-best interop, bad input."""

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import sacrebleu

import kbest_bleu as kb
from kbest_bleu.files.temporaries import TEMP_MARK
from kbest_bleu.batch import Columns, ReferenceTable, score_batches, score_parquet, score_table
from kbest_bleu.cli import main


@pytest.fixture(scope="module")
def pooled(shared_data, tmp_path_factory):
    """Real pooled K-best lists: all systems of a segment form one list (variable K), 3 language pairs."""
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet",
                      columns=["lp", "segment_id", "system", "hypothesis", "references"],
                      filters=[("lp", "in", ["cs-en", "de-en", "ja-en"])])
    t = t.take(pc.sort_indices(t, [("lp", "ascending"), ("segment_id", "ascending"), ("system", "ascending")]))
    path = tmp_path_factory.mktemp("pooled") / "pooled.parquet"
    pq.write_table(t, path, row_group_size=5000)
    return path, t


def test_streaming_equals_in_memory_for_any_batch_size(pooled, tmp_path):
    path, t = pooled
    cols = Columns(segment=("lp", "segment_id"))
    seg = [f"{lp}#{i}" for lp, i in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist())]
    want = kb.score_kbest(t["hypothesis"], t["references"], seg)
    ks = np.unique(seg, return_counts=True)[1]
    assert ks.min() != ks.max()  # variable K
    outputs = []
    # the smallest batches on prefixes (a batch per row or seven: slow by design, and every kind of
    # segment cut happens in the first 1,500 rows: 137 segments of 4-11 systems), the others on
    # the whole table
    for bs, rows in ((1, 1500), (7, 6000), (997, None), (65536, None)):
        out = tmp_path / f"o{bs}.parquet"
        score_parquet(path if rows is None else _head(path, tmp_path, rows), out, columns=cols, batch_size=bs,
                      stats=True)
        outputs.append(pq.read_table(out))
    for o in outputs[:-1]:
        assert o.equals(outputs[-1].slice(0, o.num_rows))
    assert np.array_equal(outputs[-1]["bleu"].to_numpy(), want)
    assert [o.num_rows for o in outputs[:2]] == [1500, 6000]
    assert outputs[-1].select(t.column_names).equals(t)  # every input column, input order
    assert b"kbest_bleu.signature" in outputs[-1].schema.metadata


def test_extra_smoothing_columns_equal_scoring_with_each_smoothing(pooled, tmp_path):
    """Counted once, scored under several smoothings: each column equals a separate run with that
    smoothing, and carries that run's signature."""
    path, t = pooled
    cols = Columns(segment=("lp", "segment_id"))
    seg = [f"{lp}#{i}" for lp, i in zip(t["lp"].to_pylist(), t["segment_id"].to_pylist())]
    cases = [(dict(), "all", {f"bleu_s{n}": n for n in range(8)}),
             # nltk's methods 5 and 7 read 5-grams whatever the order: counted to order 4 here
             (dict(compat="nltk", max_order=2), "5, 7,floor,5", {"bleu_s5": 5, "bleu_s7": 7, "bleu_s1": 1}),
             (dict(compat="mteval"), "all", {"bleu_s0": 0, "bleu_s3": 3}),
             (dict(compat="moses", add_k=0.5), "all", {"bleu_plus1": "bleu+1"})]
    for options, also, columns in cases:
        out = tmp_path / "o.parquet"
        score_parquet(path, out, kb.BleuConfig(**options), columns=cols, smoothings=also, batch_size=997)
        got = pq.read_table(out)
        assert got.column_names == t.column_names + ["bleu"] + list(columns), options
        assert np.array_equal(got["bleu"].to_numpy(), kb.score_kbest(t["hypothesis"], t["references"], seg, **options))
        for name, smoothing in columns.items():
            want = kb.score_kbest(t["hypothesis"], t["references"], seg, **options, smoothing=smoothing)
            assert np.array_equal(got[name].to_numpy(), want), (options, name)
            signature = kb.BleuConfig(**options, smoothing=smoothing).signature()
            assert got.schema.metadata[b"kbest_bleu.signature." + name.encode()] == signature.encode()


def _head(path, tmp_path, n):
    out = tmp_path / "head.parquet"
    pq.write_table(pq.read_table(path).slice(0, n), out)
    return out


def test_batches_may_cut_segments_anywhere():
    hyps = ["a b c", "a b", "x", "x y", "x y z", "q"]
    t = pa.table({"segment_id": [0, 0, 1, 1, 1, 2], "hypothesis": hyps,
                  "references": [["a b c"]] * 2 + [["x y z"]] * 3 + [["q r"]]})
    want = kb.score_kbest(hyps, [["a b c"], ["x y z"], ["q r"]], [0, 0, 1, 1, 1, 2])
    for cut in range(1, 6):
        batches = t.to_batches(max_chunksize=cut)
        got = pa.Table.from_batches(list(score_batches(batches)))
        assert np.array_equal(got["bleu"].to_numpy(), want)


def test_references_from_table_and_text_files(tmp_path):
    t = pa.table({"segment_id": [0, 0, 1], "hypothesis": ["a b c", "a b", "x y"]})
    (tmp_path / "r0.txt").write_text("a b c\nx y z\n")
    (tmp_path / "r1.txt").write_text("a b d\nx y\n")
    want = kb.score_kbest(["a b c", "a b", "x y"], [["a b c", "a b d"], ["x y z", "x y"]], [0, 0, 1])
    refs = ReferenceTable.from_text_files([tmp_path / "r0.txt", tmp_path / "r1.txt"])
    assert np.array_equal(score_table(t, references=refs)["bleu"].to_numpy(), want)
    table = pa.table({"segment_id": [1, 0], "references": [["x y z", "x y"], ["a b c", "a b d"]]})
    refs = ReferenceTable.from_table(table, Columns(), "refs.parquet")
    assert np.array_equal(score_table(t, references=refs)["bleu"].to_numpy(), want)


def test_summary_one_best_and_oracle():
    t = pa.table({"segment_id": [0, 0, 1, 1], "hypothesis": ["a b c d", "a b c x", "p q", "p q r s"],
                  "references": [["a b c d"]] * 2 + [["p q r s"]] * 2, "score": [0.0, 1.0, 2.0, 1.0]})
    from kbest_bleu.batch.stream import Tally
    tally = Tally(kb.BleuConfig())
    score_table(t, columns=Columns(score="score"), tally=tally)
    s = tally.summary(1.0)
    stats = kb.ngram_stats(t["hypothesis"], [["a b c d"], ["p q r s"]], t["segment_id"])
    assert s.one_best.score == kb.corpus_score(stats[[1, 2]]).score  # argmax of the model score
    assert s.oracle.score == kb.corpus_score(stats[[0, 3]]).score == 1.0
    assert s.rows == 4 and s.segments == 2


def test_cli_runs_on_bundled_sample():
    out = subprocess.run([sys.executable, "-m", "kbest_bleu", "score"], capture_output=True,
                         text=True, check=True)
    assert "rows 5,000  segments 50" in out.stdout and "oracle corpus BLEU" in out.stdout


def test_export_moses_reproduces_extractor_gold(shared_data, tmp_path):
    scores = tmp_path / "scores.txt"
    feats = tmp_path / "features.txt"
    assert main(["export-moses", str(shared_data / "moses_mert_nbest.parquet"), "--scores", str(scores),
                 "--features", str(feats), "--seg-col", "iteration,segment_id"]) == 0
    rows, headers = [], []
    for line in scores.read_text().splitlines():
        if line.startswith("SCORES_TXT_BEGIN"):
            headers.append(line.split())
        elif not line.startswith("SCORES_TXT_END"):
            rows.append([int(x) for x in line.split()])
    gold = pq.read_table(shared_data / "moses_mert_nbest.parquet")["gold_bleu_stats_moses"].to_pylist()
    assert rows == gold
    assert headers[0] == ["SCORES_TXT_BEGIN_0", "0", "100", "9", "BLEU"] and len(headers) == 50
    assert feats.read_text().startswith("FEATURES_TXT_BEGIN_0 0 100 14 d_0 d_1")
    # byte for byte as Moses writes them: every value, and every feature name, followed by a space
    # (mert/ScoreStats.cpp and FeatureStats.cpp operator<<, Data::InitFeatureMap)
    assert scores.read_text().splitlines()[1] == "".join(f"{x} " for x in gold[0])
    assert feats.read_text().splitlines()[0].endswith(" w_0 ") and feats.read_text().splitlines()[1].endswith(" ")


def test_export_moses_splits_on_spaces_as_the_extractor(tmp_path):
    """Its tokens were 13a's ('mat.' two tokens) where Moses' extractor splits on spaces only."""
    import sys
    sys.path.insert(0, str(os.path.dirname(os.path.dirname(__file__))))
    import reference as R

    hyp, ref = "the cat sat on the mat.", "the cat sat on the mat ."
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": [hyp], "references": [[ref]],
                             "features": ["lm= -1"]}), tmp_path / "t.parquet")
    assert main(["export-moses", str(tmp_path / "t.parquet"), "--scores", str(tmp_path / "s.txt")]) == 0
    m, t, _, r = R.stats(hyp.split(" "), [ref.split(" ")], 4)
    want = [x for pair in zip(m, t) for x in pair] + [r]
    assert (tmp_path / "s.txt").read_text().splitlines()[1] == "".join(f"{x} " for x in want)


@pytest.mark.parametrize("sep", [" ||| ", "|||"])
def test_nbest_text_round_trip_is_identical(shared_data, tmp_path, sep):
    t = pq.read_table(shared_data / "joshua_bn_en_kbest.parquet").filter(pc.equal(pc.field("system"), "hiero"))
    lines = [sep.join([str(s), h, f, f"{sc:.3f}"]) for s, h, f, sc in zip(
        t["segment_id"].to_pylist(), t["hypothesis"].to_pylist(), t["features"].to_pylist(), t["model_score"].to_pylist())]
    lines[3] += sep + "0-0 1-1"  # an extra field (alignment) survives too
    src = tmp_path / "in.nbest"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refs = tmp_path / "ref0.txt"
    refs.write_text("\n".join(r[0] for r in _refs_by_segment(t)) + "\n", encoding="utf-8")
    assert main(["convert", str(src), str(tmp_path / "k.parquet"), "--refs", str(refs)]) == 0
    table = pq.read_table(tmp_path / "k.parquet")
    assert table["feature_values"][0].as_py()[0] == -27.184 and table["references"][0].as_py() == [
        t["references"][0].as_py()[0]]
    assert main(["convert", str(tmp_path / "k.parquet"), str(tmp_path / "out.nbest")]) == 0
    assert (tmp_path / "out.nbest").read_bytes() == src.read_bytes()
    # and the converted table scores as sacrebleu scores its rows (a seeded sample)
    scored = score_table(table)["bleu"].to_numpy()
    rows = np.random.default_rng(0).choice(table.num_rows, 200, replace=False)
    want = [sacrebleu.sentence_bleu(table["hypothesis"][int(i)].as_py(), table["references"][int(i)].as_py()).score / 100
            for i in rows]
    assert np.allclose(scored[rows], want, rtol=1e-12, atol=1e-15)


def _refs_by_segment(t):
    seg = t["segment_id"].to_numpy()
    refs = t["references"].to_pylist()
    out = {}
    for s, r in zip(seg, refs):
        out.setdefault(int(s), r)
    return [out.get(i, [""]) for i in range(max(out) + 1)]


def test_corpus_command_matches_sacrebleu(tmp_path, capsys):
    from sacrebleu.metrics import BLEU
    hyps = ["the cat sat on the mat", "a dog barked", "hello world"]
    refs = ["the cat sat on a mat", "the dog barked loudly", "hello there world"]
    (tmp_path / "h.txt").write_text("\n".join(hyps) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n")
    assert main(["corpus", str(tmp_path / "r.txt"), "-i", str(tmp_path / "h.txt"), "-f", "json", "-t", "none",
                 "-w", "9"]) == 0
    import json
    got = json.loads(capsys.readouterr().out)  # sacrebleu's JSON: 0-100, rounded to -w decimals
    assert got["score"] == round(BLEU(tokenize="none").corpus_score(hyps, [refs]).score, 9)
    assert got["signature"].startswith("kbest_bleu|nrefs:1|compat:sacrebleu|smooth:exp")


# ---------------------------------------------------------------- bad input: exit 2, message, no output

def _write(tmp_path, name, table):
    p = tmp_path / name
    pq.write_table(table, p)
    return p


GOOD = dict(segment_id=[0, 0, 1], hypothesis=["a b", "a", "c"], references=[["a b"], ["a b"], ["c d"]])


def _bad_cases(tmp_path):
    t = lambda **kw: pa.table({**GOOD, **kw})  # noqa: E731
    corrupt = tmp_path / "corrupt.parquet"
    good = _write(tmp_path, "good.parquet", t())
    # reference files go with a table without references (a table with both is refused: they would replace them)
    bare = _write(tmp_path, "bare.parquet", pa.table({k: v for k, v in GOOD.items() if k != "references"}))
    corrupt.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (tmp_path / "r2.txt").write_text("a b\n")
    (tmp_path / "r3.txt").write_text("a b\nc d\n")
    (tmp_path / "r5.txt").write_text("x\n")
    return {
        "missing column": ([_write(tmp_path, "m.parquet", pa.table({"segment_id": [0], "hyp": ["a"]}))], "column 'hypothesis' not found"),
        "wrong type": ([_write(tmp_path, "w.parquet", t(hypothesis=[1, 2, 3]))], "has Arrow type int64; expected string"),
        "null hypothesis": ([_write(tmp_path, "nh.parquet", t(hypothesis=["a", None, "c"]))], "row 1 is null"),
        "null reference": ([_write(tmp_path, "nr.parquet", t(references=[["a"], ["a"], [None]]))], "entry 2 holds a null reference"),
        "segment without references": ([_write(tmp_path, "nor.parquet", t(references=[["a"], ["a"], []]))], "segment 1 (row 2) has no references"),
        "non-contiguous segment": ([_write(tmp_path, "nc.parquet", t(segment_id=[0, 1, 0], references=[["a"]] * 3))], "segment 0 are not contiguous"),
        "segment ids unknown to the reference files": ([bare, "--ref-file", str(tmp_path / "r5.txt")], "segment 1 has no references"),
        "reference files of different lengths": ([bare, "--ref-file", str(tmp_path / "r2.txt"), "--ref-file", str(tmp_path / "r3.txt")], "same number of lines"),
        "non-UTF-8 reference file": ([bare, "--ref-file", str(tmp_path / "latin1.txt")], "line 1 is not valid UTF-8"),
        "reference files and a references column": ([good, "--ref-file", str(tmp_path / "r3.txt")], "has references already"),
        "truncated parquet": ([corrupt], "not a readable parquet file"),
        "missing file": ([tmp_path / "nope.parquet"], "no such file"),
        "unwritable output": ([good, "-o", str(tmp_path / "no" / "dir" / "o.parquet")], "does not exist; create it first"),
        "output equals input": ([good, "-o", str(good)], "the output path is the input file"),
        "bad weights": ([good, "--weights", "a,b"], "--weights: expected comma-separated numbers"),
        "unknown smoothing": ([good, "--smoothing", "9"], "smoothing: compat 'sacrebleu' supports"),
        "extra smoothing the preset lacks": ([good, "--compat", "mteval", "--also-smoothing", "0,5"],
                                             "extra smoothing '5': smoothing: compat 'mteval' supports 0, 3"),
        "extra column already in the input": ([_write(tmp_path, "s1.parquet", t(bleu_s1=[0.0, 0.0, 0.0])),
                                               "--also-smoothing", "floor"], "output column 'bleu_s1' already exists"),
    }


def test_bad_input_exit_2_with_message_and_no_output(tmp_path, capsys):
    for name, (args, message) in _bad_cases(tmp_path).items():
        out = tmp_path / "out.parquet"
        argv = ["score"] + [str(a) for a in args] + ([] if "-o" in args else ["-o", str(out)])
        assert main(argv) == 2, name
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (name, err)
        assert not out.exists(), name
        assert not [p for p in os.listdir(tmp_path) if TEMP_MARK in p], name


def test_unknown_option_value_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", "--compat", "bleurt"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_empty_strings_are_valid_and_scored_zero(tmp_path):
    p = _write(tmp_path, "e.parquet", pa.table({"segment_id": [0, 1], "hypothesis": ["", "a"], "references": [["a"], [""]]}))
    assert main(["score", str(p), "-o", str(tmp_path / "o.parquet"), "-q"]) == 0
    assert pq.read_table(tmp_path / "o.parquet")["bleu"].to_pylist() == [0.0, 0.0]


def test_cli_also_smoothing_adds_columns(tmp_path):
    p = _write(tmp_path, "g.parquet", pa.table(GOOD))
    assert main(["score", str(p), "-o", str(tmp_path / "o.parquet"), "-q", "--also-smoothing", "floor,0"]) == 0
    got = pq.read_table(tmp_path / "o.parquet")
    assert got.column_names == list(GOOD) + ["bleu", "bleu_s1", "bleu_s0"]
    for name, n in (("bleu_s1", 1), ("bleu_s0", 0)):
        want = kb.score_kbest(GOOD["hypothesis"], GOOD["references"], GOOD["segment_id"], smoothing=n)
        assert np.array_equal(got[name].to_numpy(), want)


def test_failed_job_midway_leaves_no_output(tmp_path):
    """A null in the last rows fails after earlier batches were written: no file remains."""
    n = 5000
    hyps = ["a b c"] * n
    hyps[-1] = None
    p = _write(tmp_path, "late.parquet", pa.table({"segment_id": np.arange(n), "hypothesis": hyps,
                                                   "references": [["a b c"]] * n}))
    with pytest.raises(kb.InputError, match="row 4999 is null"):
        score_parquet(p, tmp_path / "o.parquet", batch_size=100)
    assert sorted(os.listdir(tmp_path)) == ["late.parquet"]


def test_write_error_on_background_thread_surfaces_and_leaves_no_output(tmp_path, monkeypatch, capsys):
    """Batches are written on a background thread: a write failure (disk full) still reaches the
    caller, the job stops, and no file remains."""
    n = 5000
    p = _write(tmp_path, "in.parquet", pa.table({"segment_id": np.arange(n), "hypothesis": ["a b c"] * n,
                                                 "references": [["a b c"]] * n}))
    calls = []

    def fail_third(self, batch, *args, **kwargs):
        calls.append(batch.num_rows)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", fail_third)
    with pytest.raises(OSError, match="No space left"):
        score_parquet(p, tmp_path / "o.parquet", batch_size=100)
    assert len(calls) in (3, 4)  # the failure surfaces at the next batch at the latest
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]
    calls.clear()
    assert main(["score", str(p), "-o", str(tmp_path / "o.parquet"), "--batch-size", "100", "-q"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_dictionary_encoded_references_are_checked_and_decoded():
    """Parquet jobs read references dictionary-encoded: per-row equality is checked on the
    indices, with an exact fallback when a dictionary holds one string twice."""
    from kbest_bleu.encode import references_array, segment_references

    def dict_lists(offsets, indices, dictionary):
        values = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(dictionary))
        return references_array(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values))

    refs = dict_lists([0, 2, 4, 5], [0, 1, 0, 1, 2], ["x y", "z", "q"])
    got = segment_references(refs, np.array([0, 2, 3]), 3)
    assert got.type == pa.list_(pa.string()) and got.to_pylist() == [["x y", "z"], ["q"]]
    twice = dict_lists([0, 2, 4], [0, 1, 2, 1], ["x y", "z", "x y"])  # "x y" at indices 0 and 2
    assert segment_references(twice, np.array([0, 2]), 2).to_pylist() == [["x y", "z"]]
    differ = dict_lists([0, 1, 2], [0, 1], ["a", "b"])
    with pytest.raises(kb.InputError, match="row 1 has references different from row 0"):
        segment_references(differ, np.array([0, 2]), 2)
    table = pa.table({"segment_id": [0, 0, 1], "hypothesis": ["x y z", "z", "q"],
                      "references": pa.ListArray.from_arrays(pa.array([0, 2, 4, 5], pa.int32()),
                                                             pa.array(["x y", "z", "x y", "z", "q"]))})
    assert np.array_equal(score_table(table)["bleu"].to_numpy(),
                          kb.score_kbest(["x y z", "z", "q"], [["x y", "z"], ["q"]], [0, 0, 1]))


@pytest.mark.parametrize("engine", ["numpy", "kernels"])
@pytest.mark.parametrize("hyp_type", [pa.string(), pa.large_string()])
def test_parquet_job_keeps_declared_column_types(tmp_path, hyp_type, engine):
    """References are read dictionary-encoded; the output has the input's types either way
    (written directly when parquet's own types suffice, cast back otherwise), on both engines."""
    t = pa.table({"segment_id": pa.array([0, 0, 1], pa.int32()),
                  "hypothesis": pa.array(["a b c", "a b", "x"], hyp_type),
                  "references": pa.array([["a b c", "a"], ["a b c", "a"], ["x y"]], pa.list_(pa.string()))})
    pq.write_table(t, tmp_path / "in.parquet")
    score_parquet(tmp_path / "in.parquet", tmp_path / "out.parquet", engine=engine)
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.select(t.column_names).equals(t)
    assert out.schema.field("hypothesis").type == hyp_type and b"kbest_bleu.signature" in out.schema.metadata
    assert np.array_equal(out["bleu"].to_numpy(), kb.score_kbest(t["hypothesis"], t["references"], t["segment_id"]))


@pytest.mark.parametrize("hyp_col,ref_col", [("hypothesis", "references"), ("mt", "refs")])
def test_output_has_statistics_for_every_column_but_the_scored_text(tmp_path, hyp_col, ref_col):
    """Row-group statistics (min, max, nulls) for the segment ids, the scores and any other
    passed-through column, none for the hypotheses and references (whatever their names)."""
    t = pa.table({"segment_id": pa.array([0, 0, 1], pa.int64()), "doc": ["d1", "d1", "d2"],
                  hyp_col: ["a b c", "a b", "x"], ref_col: [["a b c", "a"], ["a b c", "a"], ["x y"]]})
    pq.write_table(t, tmp_path / "in.parquet")
    score_parquet(tmp_path / "in.parquet", tmp_path / "out.parquet", columns=Columns(hypothesis=hyp_col, references=ref_col))
    meta = pq.ParquetFile(tmp_path / "out.parquet").metadata
    assert meta.num_row_groups >= 1
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        with_stats = {group.column(j).path_in_schema for j in range(group.num_columns)
                      if group.column(j).is_stats_set}
        assert with_stats == {"segment_id", "doc", "bleu"}
    stats = [meta.row_group(g).column(0).statistics for g in range(meta.num_row_groups)]
    assert (min(s.min for s in stats), max(s.max for s in stats)) == (0, 1)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_thread_runs_inline_more_read_ahead_and_write_behind(tmp_path, monkeypatch, threads):
    """--threads 1 keeps the whole job on the calling thread; with 2, a job on the kernels (numba)
    engine reads and prepares ahead on one background thread, counts on another (with the
    caller's kernel thread count), scores on the calling thread and writes behind on a fourth.
    The scores are the same either way (equal to the in-memory path), in input order."""
    import contextlib
    import threading

    import numba

    import kbest_bleu.batch.parquet as bp
    import kbest_bleu.batch.stream as stream
    import kbest_bleu.stats as stats
    rng = np.random.default_rng(threads)
    n = 3000
    hyps = [" ".join(rng.choice(list("abcde"), rng.integers(0, 9))) for _ in range(n)]
    seg = np.arange(n) // 10
    refs = [[" ".join(rng.choice(list("abcde"), 6))] for _ in range(n // 10)]
    p = _write(tmp_path, "in.parquet", pa.table({"segment_id": seg, "hypothesis": hyps,
                                                 "references": [refs[s] for s in seg]}))
    where = {"read": set(), "write": set(), "prepare": set(), "count": set()}
    read, write = bp._read_batches, pq.ParquetWriter.write_batch
    prepare, count, threads_for = stream._prepare_chunk, stats.text_kernel_stats, stats.threads_for

    def reading(*args, **kwargs):
        for batch in read(*args, **kwargs):
            where["read"].add(threading.get_ident())
            yield batch

    def writing(self, batch, *args, **kwargs):
        where["write"].add(threading.get_ident())
        return write(self, batch, *args, **kwargs)

    def preparing(*args, **kwargs):
        where["prepare"].add(threading.get_ident())
        return prepare(*args, **kwargs)

    def counting(*args, **kwargs):
        where["count"].add(threading.get_ident())
        return count(*args, **kwargs)

    @contextlib.contextmanager
    def sizing(n_bytes):  # the kernels' thread count where the counting starts
        where.setdefault("count threads", set()).add(numba.get_num_threads())
        with threads_for(n_bytes) as n:
            yield n

    monkeypatch.setattr(bp, "_read_batches", reading)
    monkeypatch.setattr(pq.ParquetWriter, "write_batch", writing)
    monkeypatch.setattr(stream, "_prepare_chunk", preparing)
    monkeypatch.setattr(stats, "text_kernel_stats", counting)
    monkeypatch.setattr(stats, "threads_for", sizing)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        score_parquet(p, tmp_path / "o.parquet", kb.BleuConfig(tokenize="none"), batch_size=170, engine="kernels")
    finally:
        numba.set_num_threads(before)
    main_thread = {threading.get_ident()}
    if threads == 2 and numba.config.NUMBA_NUM_THREADS >= 2:
        assert len(where["read"] | where["write"] | where["count"] | main_thread) == 4
        assert where["prepare"] == where["read"] and len(where["count"]) == 1 and where["count threads"] == {2}
    elif threads == 1:
        assert where["read"] == where["write"] == where["prepare"] == where["count"] == main_thread
        assert where["count threads"] == {1}
    got = pq.read_table(tmp_path / "o.parquet")["bleu"].to_numpy()
    want = kb.score_kbest(hyps, [refs[s] for s in seg], seg, tokenize="none")
    assert np.array_equal(got, want)


def test_chunks_prepared_ahead_score_as_inline_and_fail_in_place():
    """score_batches with an executor prepares the next chunk on it: the same output (13a
    unescapes, lowercasing, extra smoothings, statistics), and an error in a later chunk is raised
    after the earlier chunks' outputs, as inline."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(5)
    words = ["a", "B", "&amp;", "&quot;", "c-d", "İ", "x.", "<skipped>"]
    n = 2000
    seg = np.arange(n) // 20
    refs = [[" ".join(rng.choice(words, 7)) for _ in range(1 + s % 3)] for s in range(n // 20)]
    t = pa.table({"segment_id": seg, "hypothesis": [" ".join(rng.choice(words, rng.integers(0, 9))) for _ in range(n)],
                  "references": [refs[s] for s in seg]})
    cfg = kb.BleuConfig(tokenize="13a", lowercase=True)
    inline = pa.Table.from_batches(list(score_batches(t.to_batches(max_chunksize=333), cfg, stats=True,
                                                      smoothings="1,3")))
    with ThreadPoolExecutor(1) as pool:
        ahead = pa.Table.from_batches(list(score_batches(t.to_batches(max_chunksize=333), cfg, stats=True,
                                                         smoothings="1,3", ahead=pool)))
    assert ahead.equals(inline)
    assert np.array_equal(inline["bleu"].to_numpy(), kb.score_kbest(t["hypothesis"], refs, seg, config=cfg))
    bad = t.set_column(2, "references", pa.array([refs[s] if s != 77 else [] for s in seg], pa.list_(pa.string())))
    for pool in (None, ThreadPoolExecutor(1)):
        out = score_batches(bad.to_batches(max_chunksize=333), cfg, ahead=pool)
        rows = 0
        with pytest.raises(kb.InputError, match="segment 77 .*has no references"):
            for b in out:
                rows += b.num_rows
        assert 1300 <= rows < 77 * 20  # the chunks before segment 77's were scored first
        if pool:
            pool.shutdown()


@pytest.mark.skipif(not __import__("numba").config.NUMBA_NUM_THREADS >= 2, reason="needs a numba pool of 2+")
def test_counting_ahead_keeps_order_thread_count_and_fails_in_place():
    """With overlap, chunk i+1 is counted on another thread (with the caller's kernel thread
    count, here 1 against a pool of 2+) while chunk i is handed out, but a chunk whose counting
    launches parallel kernels (token lists) on the calling thread, with the counting thread idle;
    chunks come in order, and a chunk that fails to arrive fails after the one before it was
    handed out."""
    import threading
    import time

    import numba

    from kbest_bleu.batch.stream import _counted

    busy = []  # chunks being counted, at each count's start

    class Chunk:
        def __init__(self, i, parallel=False):
            self.i, self.parallel = i, parallel

        def count(self):
            busy.append(self.i)
            time.sleep(0.01)
            out = self.i, threading.get_ident(), numba.get_num_threads(), list(busy)
            busy.remove(self.i)
            return out

    def chunks(n, fail_at=None, parallel_at=None):
        for i in range(n):
            if i == fail_at:
                raise kb.InputError(f"chunk {i} is bad")
            yield Chunk(i, i == parallel_at)

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        got = list(_counted(chunks(5), overlap=True))
        inline = list(_counted(chunks(5), overlap=False))
        mixed = list(_counted(chunks(5, parallel_at=2), overlap=True))
        handed = []
        with pytest.raises(kb.InputError, match="chunk 3 is bad"):
            for chunk, _ in _counted(chunks(5, fail_at=3), overlap=True):
                handed.append(chunk.i)
    finally:
        numba.set_num_threads(before)
    assert [c.i for c, _ in got] == [s[0] for _, s in got] == [0, 1, 2, 3, 4]
    assert {s[1] for _, s in got}.isdisjoint({threading.get_ident()}) and {s[2] for _, s in got} == {1}
    assert {s[1] for _, s in inline} == {threading.get_ident()}
    assert [c.i for c, _ in mixed] == [s[0] for _, s in mixed] == [0, 1, 2, 3, 4]
    here = [s[0] for _, s in mixed if s[1] == threading.get_ident()]
    assert here == [2] and mixed[2][1][3] == [2]  # nothing else was being counted meanwhile
    assert handed == [0, 1, 2]


def test_numpy_engine_counts_on_the_calling_thread(monkeypatch):
    """With a read-ahead executor, a numpy-engine job still counts on the calling thread: no
    counting thread (whose set-up reads numba's thread count, importing numba)."""
    from concurrent.futures import ThreadPoolExecutor

    import kbest_bleu.batch.stream as stream

    def no_pool(*args, **kwargs):
        raise AssertionError("a counting thread was started")
    monkeypatch.setattr(stream, "ThreadPoolExecutor", no_pool)
    t = pa.table({"segment_id": [0, 0, 1], "hypothesis": ["a b c", "a b", "x"], "references": [["a b c"]] * 2 + [["x"]]})
    with ThreadPoolExecutor(1) as pool:
        out = pa.Table.from_batches(list(score_batches(t.to_batches(max_chunksize=2), engine="numpy", ahead=pool)))
    assert np.array_equal(out["bleu"].to_numpy(), kb.score_kbest(t["hypothesis"], [["a b c"], ["x"]], [0, 0, 1]))


def test_chunk_preparation_launches_no_parallel_kernel(monkeypatch):
    """The next chunk is prepared on the reader thread beside the kernels, and numba's workqueue
    layer takes parallel launches from one thread at a time: every kernel the preparation calls,
    for every tokenizer, is serial."""
    import kbest_bleu.encode as encode
    import kbest_bleu.tokenize as tokenize
    from kbest_bleu.counting import kernels

    called = set()

    class Recorder:
        def __getattr__(self, name):
            called.add(name)
            return getattr(kernels(), name)
    monkeypatch.setattr(tokenize, "kernels", Recorder)
    monkeypatch.setattr(encode, "kernels", Recorder)
    t = pa.table({"segment_id": [0, 0, 1], "hypothesis": ["A &amp; b", "c-d 1.5", "x"],
                  "references": [["a & b", "c d"]] * 2 + [["x y"]]})
    for tok in kb.TOKENIZERS:
        if tok in ("ja-mecab", "ko-mecab", "flores101", "flores200", "spm"):
            continue  # Python packages, no kernel
        for lc in (False, True):
            list(score_batches(t.to_batches(max_chunksize=2), kb.BleuConfig(tokenize=tok, lowercase=lc)))
    assert {"_rows_equal_owner", "_rows_with_bytes", "_space_each_char"} <= called
    for name in called:
        assert not getattr(kernels(), name).targetoptions.get("parallel"), name
