"""Issue 34 (failure class 9): CSV/TSV, JSON Lines and Moses n-best inputs are streamed into the
parquet work file in bounded memory (kbest_bleu.files.readers, kbest_bleu.files.nbest).

The oracle of the CSV/TSV/JSON Lines tests is pyarrow's whole-file reader (``read_csv``,
``read_json``) on the same file; that of the n-best tests, the rows the test wrote. Tiny blocks
(``block_bytes``) and batches make a few hundred rows span many of them, so segments are cut by
block boundaries and errors come from late blocks.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import csv as pcsv
from pyarrow import json as pj

from kbest_bleu import settings
from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.files.nbest import NbestBatches, nbest_to_parquet, read_nbest
from kbest_bleu.files.readers import iter_kbest, kbest_to_parquet, read_kbest

BLOCK = 512  # bytes: the files below span dozens of blocks
WORDS = ["the", "a", "cat", "sat", "on", "mat", "é", "中文", "42", "7.5", "it's", 'say "hi"']


def _rows(n_segments=60, k=5):
    """(segment_id, hypothesis, reference, model_score) rows: numeric-looking and quoted text,
    an empty hypothesis, scores with decimals on every row (one type throughout)."""
    rows = []
    for s in range(n_segments):
        ref = " ".join(WORDS[(s + j) % len(WORDS)] for j in range(4))
        for r in range(k):
            hyp = "" if (s, r) == (3, 2) else "42" if r == 4 else " ".join(WORDS[(s * r + j) % len(WORDS)]
                                                                          for j in range(1 + (s + r) % 6))
            rows.append((s, hyp, ref, -0.5 - r - s / 8))
    return rows


def _write(path, fmt, rows, references_as_list=False):
    if fmt == "jsonl":
        path.write_text("".join(json.dumps({"segment_id": s, "hypothesis": h, "model_score": m,
                                            "references": [r] if references_as_list else r}) + "\n"
                                for s, h, r, m in rows), encoding="utf-8")
    else:
        sep = "\t" if fmt == "tsv" else ","
        quote = (lambda x: x) if fmt == "tsv" else (lambda x: '"' + x.replace('"', '""') + '"')
        path.write_text(sep.join(["segment_id", "hypothesis", "references", "model_score"]) + "\n" + "".join(
            sep.join([str(s), quote(h), quote(r), repr(m)]) + "\n" for s, h, r, m in rows), encoding="utf-8")
    return path


def _whole(path, fmt):
    """pyarrow's whole-file reader, with a string references column as one-element lists."""
    if fmt == "jsonl":
        table = pj.read_json(path)
    else:
        parse = pcsv.ParseOptions(delimiter="\t", quote_char=False) if fmt == "tsv" else None
        table = pcsv.read_csv(path, parse_options=parse, convert_options=pcsv.ConvertOptions(
            column_types={"hypothesis": pa.string(), "references": pa.string()}, strings_can_be_null=False))
    if pa.types.is_string(table.schema.field("references").type):
        refs = pa.array([[r] for r in table["references"].to_pylist()], pa.list_(pa.string()))
        table = table.set_column(table.schema.get_field_index("references"), "references", refs)
    return table


@pytest.mark.parametrize("fmt, as_list", [("csv", False), ("tsv", False), ("jsonl", False), ("jsonl", True)])
def test_streamed_parquet_equals_the_whole_file_read(tmp_path, fmt, as_list, capsys):
    rows = _rows()
    path = _write(tmp_path / f"k.{fmt}", fmt, rows, as_list)
    batches = list(iter_kbest(path, block_bytes=BLOCK))
    assert len(batches) > 10  # many blocks
    ends = [b.column("segment_id")[-1].as_py() for b in batches[:-1]]
    starts = [b.column("segment_id")[0].as_py() for b in batches[1:]]
    assert any(e == s for e, s in zip(ends, starts))  # a segment cut by a block boundary
    want = _whole(path, fmt)
    assert kbest_to_parquet(path, tmp_path / "w.parquet", block_bytes=BLOCK) == len(rows)
    got = pq.read_table(tmp_path / "w.parquet")
    assert got.schema.names == want.schema.names and got.schema.types == want.schema.types
    assert got.to_pylist() == want.to_pylist()
    assert read_kbest(path, block_bytes=BLOCK).to_pylist() == want.to_pylist()
    assert got["hypothesis"].to_pylist() == [h for _, h, _, _ in rows]  # "42" stays text
    # the job on the streamed file equals the job on the whole-file table, written as parquet
    pq.write_table(want, tmp_path / "want.parquet")
    scores = []
    for args in ([str(path), "--block-bytes", str(BLOCK)], [str(tmp_path / "want.parquet")]):
        assert main(["score", *args, "--score-col", "model_score", "--json", "-q"]) == 0
        scores.append({k: v for k, v in json.loads(capsys.readouterr().out).items() if k != "seconds"})
    assert scores[0] == scores[1] and scores[0]["segments"] == 60


def test_the_block_comes_from_the_setting(tmp_path, monkeypatch):
    path = _write(tmp_path / "k.jsonl", "jsonl", _rows())
    monkeypatch.setenv("KBEST_BLEU_BLOCK_BYTES", str(BLOCK))
    assert settings.text_block_bytes() == BLOCK and len(list(iter_kbest(path))) > 10
    monkeypatch.delenv("KBEST_BLEU_BLOCK_BYTES")
    assert settings.text_block_bytes() == settings.TEXT_BLOCK_BYTES == 2 * settings.MAX_ROW_BYTES
    assert len(list(iter_kbest(path))) == 1
    monkeypatch.setenv("KBEST_BLEU_BLOCK_BYTES", "8 MiB")
    with pytest.raises(InputError, match=r"KBEST_BLEU_BLOCK_BYTES: expected a positive number of bytes"):
        list(iter_kbest(path))


def _score_error(capsys, path, *args) -> str:
    assert main(["score", str(path), "--block-bytes", str(BLOCK), "-q", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err
    return err


def test_csv_quoting_in_a_late_tsv_block_names_its_row(tmp_path, capsys):
    rows = _rows()
    path = _write(tmp_path / "k.tsv", "tsv", rows)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = 250  # row 250 (from 0): line 252 of the file, far past the first 512-byte block
    s, _, r, m = rows[bad]
    lines[bad + 1] = f'{s}\t"she said ""no"""\t{r}\t{m!r}\n'
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=rf"row {bad} \(from 0, header excluded\), column 'hypothesis'.*CSV-quoted"):
        kbest_to_parquet(path, tmp_path / "w.parquet", block_bytes=BLOCK)
    assert f"row {bad} (from 0, header excluded)" in _score_error(capsys, path)


@pytest.mark.parametrize("fmt, late, said", [
    ("csv", "0.5", "column 'model_score': '0.5' does not fit the column, read as int64"),
    ("tsv", "0.5", "column 'model_score': '0.5' does not fit the column, read as int64"),
    ("jsonl", '"about 3"', "column 'model_score': '\"about 3\"' does not fit the column, read as int64"),
    ("jsonl", "0.5", "column 'model_score': '0.5' does not fit the column, read as int64"),  # Arrow names no column
    ("jsonl", '3, "note": "late"', "key 'note': '\"late\"' does not fit the column, absent"),
])
@pytest.mark.parametrize("cpus", [1, 2])
def test_a_type_change_in_a_late_block_is_one_line_naming_the_row_and_column(tmp_path, fmt, late, said, capsys, cpus):
    """Whole numbers in the first block make model_score int64; row 250 (far past the first
    512-byte block) holds a decimal, a string, or a key the first block did not have. Arrow's
    message differs when its pool has one CPU (it names the row then): both are read."""
    import pyarrow as pa
    before = pa.cpu_count()
    pa.set_cpu_count(cpus)
    try:
        _type_change(tmp_path, fmt, late, said, capsys)
    finally:
        pa.set_cpu_count(before)


def _type_change(tmp_path, fmt, late, said, capsys):
    rows = [(s, h, r, float(int(m))) for s, h, r, m in _rows()]
    path = _write(tmp_path / f"k.{fmt}", fmt, rows)
    whole = r'("model_score": -?\d+)\.0' if fmt == "jsonl" else r"(-?\d+)\.0$"
    lines = re.sub(whole, r"\1", path.read_text(encoding="utf-8"), flags=re.M).splitlines(keepends=True)
    line = 251 + (fmt != "jsonl")  # of row 250, from 1
    if fmt == "jsonl":
        lines[line - 1] = re.sub(r'"model_score": -?\d+', f'"model_score": {late}'.replace("\\", "\\\\"), lines[line - 1])
    else:
        sep = "\t" if fmt == "tsv" else ","
        lines[line - 1] = lines[line - 1].rsplit(sep, 1)[0] + sep + late + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    want = f"row 250 (from 0; line {line}), {said}"
    with pytest.raises(InputError, match=re.escape(want) + r" in the first 512-byte block.*one type"):
        kbest_to_parquet(path, tmp_path / "w.parquet", block_bytes=BLOCK)
    err = _score_error(capsys, path)
    assert f"{path}: {want}" in err and "convert the table to parquet" in err


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_a_row_over_the_block_is_one_line_naming_it_and_the_fix(tmp_path, fmt, capsys):
    rows = _rows()
    rows[280] = (rows[280][0], " ".join(["long"] * 300), rows[280][2], rows[280][3])  # 1,499 bytes of text
    path = _write(tmp_path / f"k.{fmt}", fmt, rows)
    line = 281 + (fmt != "jsonl")  # from 1, after the header line
    with pytest.raises(InputError, match=rf"line {line} \(byte offset \d+\) holds 1,5\d\d bytes, more than the 512-byte "
                                         r"blocks .*--block-bytes N or KBEST_BLEU_BLOCK_BYTES=N"):
        kbest_to_parquet(path, tmp_path / "w.parquet", block_bytes=BLOCK)
    assert f"line {line} (byte offset" in _score_error(capsys, path)
    assert kbest_to_parquet(path, tmp_path / "w.parquet", block_bytes=4 * BLOCK) == len(rows)  # the fix


@pytest.mark.parametrize("name", ["k.csv", "k.jsonl", "k.jsonl.gz"])
def test_invalid_utf8_in_a_late_block_names_its_line_and_offset(tmp_path, name):
    """Arrow's JSON parser takes invalid UTF-8 into its strings: each batch is validated."""
    import gzip
    fmt = name.split(".")[1]
    data = _write(tmp_path / f"plain.{fmt}", fmt, _rows()).read_bytes()
    at = len(data) * 4 // 5  # in the last fifth: dozens of blocks in
    data = data[:at] + data[at:].replace(b"mat", b"m\xfft", 1)
    offset = data.index(b"\xff")
    line = data[:offset].count(b"\n") + 1
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    of = " of the decompressed text" if name.endswith(".gz") else ""
    with pytest.raises(InputError, match=re.escape(f"{name}: line {line} is not valid UTF-8 (byte 0xff at offset "
                                                   f"{offset}{of}); re-encode the file as UTF-8")):
        kbest_to_parquet(tmp_path / name, tmp_path / "w.parquet", block_bytes=BLOCK)


# ---- Moses / Joshua n-best ----------------------------------------------------------------------

def _nbest_rows():
    """(id, hypothesis, {feature: value}, score): interleaved ids (two lists merged line by line),
    Joshua's sparse features with a feature first seen late (row 290), duplicates."""
    rows = []
    for s in range(0, 60, 2):
        for r in range(5):
            for sid in (s, s + 1):
                feats = {"lm_0": -1.5 * r - sid, "tm_0": 0.25 * sid}
                if (sid + r) % 3:
                    feats["wp_0"] = -float(r)  # absent on some lines: 0
                rows.append([sid, " ".join(WORDS[(sid + r + j) % len(WORDS)] for j in range(3)), feats, -r / 4])
    rows[290][2]["late_0"] = 2.5
    return rows


def test_nbest_streamed_equals_its_rows(tmp_path):
    rows = _nbest_rows()
    path = tmp_path / "k.nbest"
    path.write_text("".join(f"{s} ||| {h} ||| {' '.join(f'{n}={v!r}' for n, v in f.items())} ||| {sc!r}\n"
                            for s, h, f, sc in rows), encoding="utf-8")
    names = ["lm_0", "tm_0", "wp_0", "late_0"]
    ranks, seen = [], {}
    for s, *_ in rows:
        ranks.append(seen.get(s, 0))
        seen[s] = ranks[-1] + 1
    reader = NbestBatches(path, batch_rows=16)
    batches = list(reader)
    assert len(batches) == -(-len(rows) // 16) and len(batches[0].column("feature_values")[0]) == 3
    assert nbest_to_parquet(path, tmp_path / "w.parquet", batch_rows=16) == len(rows)
    for got in (pq.read_table(tmp_path / "w.parquet"), read_nbest(path)):  # padded once the late feature is seen
        assert json.loads(got.schema.metadata[b"kbest_bleu.feature_names"]) == names
        assert got["segment_id"].to_pylist() == [r[0] for r in rows] and got["rank"].to_pylist() == ranks
        assert got["hypothesis"].to_pylist() == [r[1] for r in rows]
        assert got["feature_values"].to_pylist() == [[f.get(n, 0.0) for n in names] for _, _, f, _ in rows]
        assert got["model_score"].to_pylist() == [r[3] for r in rows]
    assert pq.read_table(tmp_path / "w.parquet").schema.metadata == read_nbest(path).schema.metadata
    refs = tmp_path / "refs.txt"
    refs.write_text("".join(f"reference {i}\n" for i in range(60)), encoding="utf-8")
    assert read_nbest(path, [str(refs)])["references"].to_pylist() == [[f"reference {r[0]}"] for r in rows]
    assert kbest_to_parquet(path, tmp_path / "k.parquet") == len(rows)
    assert pq.read_table(tmp_path / "k.parquet").equals(pq.read_table(tmp_path / "w.parquet"))


def test_nbest_errors_name_the_line_of_a_late_batch(tmp_path, capsys):
    lines = [f"{i // 5} ||| a b ||| lm= -{i} ||| -1\n" for i in range(400)]
    lines[333] = "66 ||| a b ||| lm= x ||| -1\n"
    path = tmp_path / "bad.nbest"
    path.write_text("".join(lines), encoding="utf-8")
    reader = iter(NbestBatches(path, batch_rows=16))
    assert next(reader).num_rows == 16  # the first batch comes before the bad line is read
    with pytest.raises(InputError, match=r"bad.nbest: line 334: could not parse the id, features or score"):
        list(reader)
    assert main(["score", str(path), "-q"]) == 2
    assert "line 334: could not parse" in capsys.readouterr().err



@pytest.mark.parametrize("second, said", [
    ("tm= 1 2 3 lm= -9", "line 2: feature 'tm' has 3 values, but the lines before have 4"),
    ("tm= 1 lm= -9", "line 2: feature 'tm' has 1 value, but the lines before have 4"),
    ("lm= -9", "line 2: feature 'tm' is missing, where the lines before have its 4 values"),
    ("tm= 1 2 3 4 lm= -9 d= 1 2", "line 2: feature 'd' has 2 values, but no line before has it"),
    ("tm= 1 2 3 4 lm= -9 lm= 1 2", "line 2: feature 'lm' has 2 values, but the lines before have 1"),
])
def test_a_moses_feature_group_cut_short_is_refused_not_padded(tmp_path, second, said, capsys):
    """A Moses feature function prints all its values on every line: a line with 3 of 'tm's 4
    values read as tm_3 = 0 (padded like a sparse feature). Sparse features, one value each, still
    come and go (0 where absent), and Joshua's 'name=value' lists are left as they were."""
    from kbest_bleu.files.nbest import dense_features
    path = tmp_path / "cut.nbest"
    path.write_text(f"0 ||| a b ||| tm= 1 2 3 4 lm= -9 ||| -1\n0 ||| a c ||| {second} ||| -2\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(said)):
        read_nbest(path)
    assert main(["convert", str(path), str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and not (tmp_path / "o.parquet").exists()
    with pytest.raises(InputError, match=re.escape(said.replace("line 2", "row 1"))):
        dense_features(["tm= 1 2 3 4 lm= -9", second], "features")
    fine = tmp_path / "sparse.nbest"  # sparse features coming and going, Joshua style
    fine.write_text("0 ||| a ||| tm= 1 2 lm= -1 sp_x= 3 ||| -1\n0 ||| b ||| tm= 3 4 lm= -2 sp_y= 5 ||| -2\n"
                    "1 ||| c ||| tm= 5 6 lm= -3 ||| -3\n", encoding="utf-8")
    assert read_nbest(fine)["feature_values"].to_pylist() == [[1, 2, -1, 3, 0], [3, 4, -2, 0, 5], [5, 6, -3, 0, 0]]
    assert dense_features(["lm_0=-1 tm_0=2", "lm_0=-2"], "features")[1] == [[-1.0, 2.0], [-2.0, 0.0]]
    assert dense_features(["lm= tm= 1 2", "lm= -1 tm= 3 4"], "features")[1] == [[1, 2, 0], [3, 4, -1]]  # 0 or 1 value
    # what the reader refuses is not written: convert to n-best refuses it too, and writes nothing
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"segment_id": [0, 1], "hypothesis": ["a", "b"], "model_score": [-1.0, -2.0],
                             "features": ["tm= 1 2 3 4 lm= -9", second]}), table)
    assert main(["convert", str(table), str(tmp_path / "back.nbest"), "--to", "nbest"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said.split(": ", 1)[1] in err and not (tmp_path / "back.nbest").exists()

# ---- memory ---------------------------------------------------------------------------------------

# the child's own peak: VmHWM starts afresh at exec (ru_maxrss keeps the forking test process's)
PEAK = textwrap.dedent("""
    import re, sys
    from pyarrow import json as pj
    from kbest_bleu.files.readers import kbest_to_parquet
    how, src, dst = sys.argv[1:]
    if how == "stream":
        assert kbest_to_parquet(src, dst, block_bytes=1 << 18) > 0
    else:
        assert pj.read_json(src).num_rows > 0
    print(re.search(r"VmHWM:\\s*(\\d+) kB", open("/proc/self/status").read()).group(1))
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak from /proc (Linux)")
def test_jsonl_is_converted_in_bounded_memory(tmp_path):
    """Streaming a JSON Lines file three times as large (16 -> 48 MB) into parquet raises the peak
    RSS by far less than the added file (measured: +0.0 to +1.6 MiB, with 256 KiB blocks), while reading
    it whole raises it by more than half of it (measured: +78 to +80 MiB; the test can fail). Arrow's buffers come from its
    jemalloc pool where it has one, as in the kbest-bleu program: mimalloc's and glibc's peaks
    wander by +-7 MiB from run to run."""
    env = dict(os.environ)
    try:
        pa.jemalloc_memory_pool()
        if os.sysconf("SC_PAGE_SIZE") == 4096:
            env["ARROW_DEFAULT_MEMORY_POOL"] = "jemalloc"
    except NotImplementedError:
        pass
    lines = "".join(json.dumps({"segment_id": s, "hypothesis": f"hyp {s} {r} " + "w x y z " * 12,
                                "references": [f"ref {s} " + "w x y " * 10], "model_score": -r / 10}) + "\n"
                    for s in range(100) for r in range(10))
    peaks, sizes = {}, {}
    for mib in (16, 48):
        path = tmp_path / f"{mib}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for _ in range((mib << 20) // len(lines)):
                f.write(lines)
        sizes[mib] = os.path.getsize(path) / 2**20
        for how in ("stream", "whole"):
            run = subprocess.run([sys.executable, "-c", PEAK, how, str(path), str(tmp_path / "o.parquet")],
                                 capture_output=True, text=True, env=env)
            assert run.returncode == 0, run.stderr
            peaks[how, mib] = int(run.stdout) / 1024
        assert pq.ParquetFile(tmp_path / "o.parquet").metadata.num_rows == 1000 * ((mib << 20) // len(lines))
        path.unlink()
    added = sizes[48] - sizes[16]
    assert peaks["stream", 48] - peaks["stream", 16] < added / 4, (peaks, sizes)
    assert peaks["whole", 48] - peaks["whole", 16] > added / 2, (peaks, sizes)
