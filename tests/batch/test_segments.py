"""kbest_bleu.batch.segments: a parquet file read as tables of whole segments in bounded batches,
and a second file taken in step with it."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbest_bleu.batch.segments import InStep, read_segments
from kbest_bleu.errors import InputError


def _file(tmp_path, name, seg, rows_per_group=4):
    table = pa.table({"segment_id": seg, "hypothesis": [f"h{i}" for i in range(len(seg))]})
    pq.write_table(table, tmp_path / name, row_group_size=rows_per_group)
    return table


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 5, 100])
def test_chunks_hold_whole_segments_in_file_order(tmp_path, batch_rows):
    rng = np.random.default_rng(batch_rows)
    seg = np.repeat(np.arange(12), rng.integers(1, 7, 12)).tolist()
    table = _file(tmp_path, "in.parquet", seg)
    _, chunks = read_segments(tmp_path / "in.parquet", "hypothesis", ["segment_id"], batch_rows, 1 << 20)
    chunks = list(chunks)
    got = pa.concat_tables([c.table for c in chunks])
    assert got.equals(table)
    row0 = 0
    for c in chunks:  # each chunk: its segments whole, pointers and labels right, rows counted in the file
        ids = c.table["segment_id"].to_pylist()
        assert c.row0 == row0 and c.seg_ptr[0] == 0 and c.seg_ptr[-1] == len(ids)
        assert [ids[a] for a in c.seg_ptr[:-1]] == c.labels
        assert all(len(set(ids[a:b])) == 1 for a, b in zip(c.seg_ptr[:-1], c.seg_ptr[1:]))
        row0 += len(ids)
    assert sum(len(c.labels) for c in chunks) == 12
    if batch_rows < 3:
        assert len(chunks) > 5  # several chunks: a segment wider than a batch waits for the next ones


def test_byte_bound_cuts_batches_and_keeps_segments_whole(tmp_path):
    seg = [0] * 3 + [1] * 3 + [2] * 3
    _file(tmp_path, "in.parquet", seg, rows_per_group=9)
    _, chunks = read_segments(tmp_path / "in.parquet", "hypothesis", ["segment_id"], 100, 4)  # 2 bytes per row
    assert [c.labels for c in chunks] == [[0], [1], [2]]


def test_in_step_takes_the_segments_asked_for_and_tells_missing_from_out_of_order(tmp_path):
    _file(tmp_path, "p.parquet", [0, 0, 1, 2, 2, 2, 3], rows_per_group=2)
    _, chunks = read_segments(tmp_path / "p.parquet", "hypothesis", ["segment_id"], 2, 1 << 20)
    step = InStep(chunks, "p.parquet", "IN", "sort both")
    table, ptr, rows = step.take([0, 1])
    assert table["hypothesis"].to_pylist() == ["h0", "h1", "h2"] and ptr.tolist() == [0, 2, 3] and rows.tolist() == [0, 2]
    table, ptr, rows = step.take([2, 3])
    assert table["hypothesis"].to_pylist() == ["h3", "h4", "h5", "h6"] and ptr.tolist() == [0, 3, 4]
    assert rows.tolist() == [3, 6]
    step.finish()
    _, chunks = read_segments(tmp_path / "p.parquet", "hypothesis", ["segment_id"], 2, 1 << 20)
    step = InStep(chunks, "p.parquet", "IN", "sort both")
    with pytest.raises(InputError, match=r"segment 2 of IN is not where.*same order as IN: sort both"):
        step.take([0, 2])
    _, chunks = read_segments(tmp_path / "p.parquet", "hypothesis", ["segment_id"], 2, 1 << 20)
    step = InStep(chunks, "p.parquet", "IN", "sort both")
    with pytest.raises(InputError, match=r"no segment 7 \(its next segment is 0, row 0\)"):
        step.take([7])
    _, chunks = read_segments(tmp_path / "p.parquet", "hypothesis", ["segment_id"], 2, 1 << 20)
    step = InStep(chunks, "p.parquet", "IN", "sort both")
    step.take([0, 1, 2])
    with pytest.raises(InputError, match=r"segment 3 \(row 6\) is not in IN"):
        step.finish()
