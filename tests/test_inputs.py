"""Inputs people have: CSV/TSV, JSON Lines, n-best and plain text (compressed too) through
``kbest-bleu score``, --sort, pandas/polars frames, the bundled sample by path. Expected sentence
BLEU comes from sacrebleu itself."""

from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.files.sorting import sort_segments
from kbest_bleu.batch.stream import score_table
from kbest_bleu.cli import main

SEG = [0, 0, 0, 1, 1, 2]
HYPS = ['the cat, "sat" on the mat.', "a cat sat on the mat", "the cat", "hello, world!", "hello world", "42"]
REFS = ["the cat sat on the mat.", 'hello, "world"!', "42 is the answer"]


def _sacrebleu(hyps=HYPS, seg=SEG):
    from sacrebleu.metrics import BLEU
    bleu = BLEU(effective_order=True)  # 13a, exp smoothing: kbest-bleu's defaults
    return np.array([bleu.sentence_score(h, [REFS[s]]).score / 100 for h, s in zip(hyps, seg)])


def _scored(tmp_path, argv):
    out = tmp_path / "out.parquet"
    assert main(["score"] + [str(a) for a in argv] + ["-o", str(out), "-q"]) == 0
    return pq.read_table(out)


def _write(path, data: bytes):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix)
    if path.suffix == ".zst":
        with pa.output_stream(str(path), compression="zstd") as f:
            f.write(data)
    elif opener:
        with opener(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".zst"])
def test_every_format_scores_like_sacrebleu(tmp_path, suffix):
    want = _sacrebleu()
    refs = _write(tmp_path / f"refs.txt{suffix}", ("\n".join(REFS) + "\n").encode())
    csv = "segment_id,hypothesis,references\n" + "".join(
        f'{s},"{h.replace(chr(34), 2 * chr(34))}","{REFS[s].replace(chr(34), 2 * chr(34))}"\n' for s, h in zip(SEG, HYPS))
    tsv = "segment_id\thypothesis\treferences\n" + "".join(f"{s}\t{h}\t{REFS[s]}\n" for s, h in zip(SEG, HYPS))
    jsonl = "".join(json.dumps({"segment_id": s, "hypothesis": h, "references": [REFS[s]]}) + "\n"
                    for s, h in zip(SEG, HYPS))
    nbest = "".join(f"{s} ||| {h} ||| d= 1 ||| -{i}\n" for i, (s, h) in enumerate(zip(SEG, HYPS)))
    for name, text, extra in (("k.csv", csv, []), ("k.tsv", tsv, []), ("k.jsonl", jsonl, []),
                              ("k.nbest", nbest, ["-r", refs]), ("run.best100", nbest, ["--format", "nbest", "-r", refs])):
        path = _write(tmp_path / (name + suffix), text.encode())
        got = _scored(tmp_path, [path] + extra)
        assert got["hypothesis"].to_pylist() == HYPS, name
        assert np.allclose(got["bleu"].to_numpy(), want, rtol=1e-12, atol=1e-15), name
    # plain text: one hypothesis per line, line i = segment i
    hyp = _write(tmp_path / f"hyp.txt{suffix}", ("\n".join(HYPS[i] for i in (0, 3, 5)) + "\n").encode())
    got = _scored(tmp_path, [hyp, "-r", refs])
    assert np.allclose(got["bleu"].to_numpy(), _sacrebleu([HYPS[0], HYPS[3], HYPS[5]], [0, 1, 2]), rtol=1e-12)


def test_unknown_extension_and_broken_gzip_exit_2(tmp_path, capsys):
    (tmp_path / "k.xyz").write_text("x")
    assert main(["score", str(tmp_path / "k.xyz"), "-q"]) == 2
    assert "--format" in capsys.readouterr().err
    (tmp_path / "k.csv.gz").write_bytes(b"not gzip at all")
    assert main(["score", str(tmp_path / "k.csv.gz"), "-q"]) == 2
    assert "re-encode" not in capsys.readouterr().err


def test_sort_makes_shuffled_segments_contiguous(tmp_path, capsys):
    rng = np.random.default_rng(0)
    order = rng.permutation(len(SEG))
    t = pa.table({"segment_id": [SEG[i] for i in order], "hypothesis": [HYPS[i] for i in order],
                  "references": [[REFS[SEG[i]]] for i in order]})
    pq.write_table(t, tmp_path / "shuffled.parquet")
    assert main(["score", str(tmp_path / "shuffled.parquet"), "-q"]) == 2
    assert "not contiguous" in capsys.readouterr().err
    got = _scored(tmp_path, [tmp_path / "shuffled.parquet", "--sort"])
    # stable: rows of a segment keep their input order
    stable = sorted(range(len(order)), key=lambda r: SEG[order[r]])
    assert got["hypothesis"].to_pylist() == [HYPS[order[r]] for r in stable]
    assert np.allclose(got["bleu"].to_numpy(), _sacrebleu([HYPS[order[r]] for r in stable],
                                                          [SEG[order[r]] for r in stable]), rtol=1e-12)


def test_external_sort_with_small_buckets_equals_stable_sort(tmp_path):
    rng = np.random.default_rng(1)
    key = rng.integers(0, 30, 500)
    t = pa.table({"a": key // 10, "b": key % 10, "row": np.arange(500)})
    pq.write_table(t, tmp_path / "in.parquet", row_group_size=64)
    sort_segments(tmp_path / "in.parquet", tmp_path / "out.parquet", ["a", "b"], bucket_rows=37, batch_size=50)
    want = sorted(range(500), key=lambda r: (key[r] // 10, key[r] % 10))
    assert pq.read_table(tmp_path / "out.parquet")["row"].to_pylist() == want


def test_score_table_takes_pandas_and_polars():
    pd = pytest.importorskip("pandas")
    want = _sacrebleu()
    frame = pd.DataFrame({"segment_id": SEG, "hypothesis": HYPS, "references": [[REFS[s]] for s in SEG]})
    got = score_table(frame, _cfg())
    assert isinstance(got, pd.DataFrame) and np.allclose(got["bleu"].to_numpy(), want, rtol=1e-12)
    pl = pytest.importorskip("polars")
    got = score_table(pl.from_pandas(frame), _cfg())
    assert isinstance(got, pl.DataFrame) and np.allclose(got["bleu"].to_numpy(), want, rtol=1e-12)


def _cfg():
    from kbest_bleu import BleuConfig
    return BleuConfig(tokenize="13a")


def test_bundled_sample_scores_by_path_and_outputs_keep_the_key(tmp_path, capsys):
    from kbest_bleu.cli import SAMPLE
    assert main(["score", str(SAMPLE), "-t", "none"]) == 0
    assert "rows 5,000  segments 50" in capsys.readouterr().out
    out = _scored(tmp_path, [SAMPLE, "-t", "none"])
    assert json.loads(out.schema.metadata[b"kbest_bleu.segment"]) == ["iteration", "segment_id"]


def test_errors_name_the_users_file_not_the_converted_copy(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyp.txt").write_text("a b\nc d\ne f\n")
    (tmp_path / "two.txt").write_text("a b\nc d\n")
    assert main(["score", "hyp.txt", "-r", "two.txt", "-o", "o.parquet"]) == 2
    err = capsys.readouterr().err
    assert "error: hyp.txt: 3 segments (3 lines), but --refs two.txt has 2 lines" in err
    assert "kbest_bleu-" not in err and ".parquet" not in err  # no temporary copy named
    (tmp_path / "bad.csv").write_text("segment_id,hypothesis,references\n0,a b,a b\n")
    assert main(["score", "bad.csv", "--hyp-col", "hyp", "-o", "o.parquet"]) == 2
    assert "error: bad.csv: column 'hyp' not found" in capsys.readouterr().err
    assert main(["score", "hyp.txt", "-r", "two.txt", "-o", "o.parquet", "--sort"]) == 2
    err = capsys.readouterr().err  # caught before the sort, naming the user's files
    assert "error: hyp.txt: 3 segments (3 lines), but --refs two.txt has 2 lines" in err and ".parquet" not in err
    assert main(["score", "bad.csv", "--sort", "--seg-col", "seg", "-o", "o.parquet"]) == 2  # was a traceback
    assert "error: bad.csv: --sort: no segment column 'seg'" in capsys.readouterr().err
    t = pa.table({"segment_id": [0, 1, 0], "hypothesis": ["a", "b", "c"], "references": [["a"], ["b"], ["a"]],
                  "features": ["x= 1", "x= 2", "x= 3"]})
    pq.write_table(t, tmp_path / "nc.parquet")
    assert main(["export-moses", "nc.parquet", "--scores", "s.txt"]) == 2
    err = capsys.readouterr().err
    assert "error: nc.parquet: the rows of segment 0 are not contiguous" in err and "--sort" in err
