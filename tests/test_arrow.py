"""The numpy <-> Arrow conversions of kbest_bleu._arrow against pyarrow's own (which import pandas),
and the fixed costs they exist for (issue 18)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kbest_bleu._arrow import from_numpy, one_array, to_numpy
from kbest_bleu.tokenize import _PY_SPACE

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32,
          np.float64]
SAMPLE = Path(__file__).resolve().parents[1] / "kbest_bleu" / "data" / "moses_100best_sample.parquet"


@pytest.mark.jit_free
@given(st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(d, st.integers(0, 40))), st.integers(0, 40),
       st.integers(0, 40))
def test_round_trip_equals_pyarrow(values, start, length):
    expected = pa.array(values)
    ours = from_numpy(values)
    nan = values.dtype.kind == "f"  # Arrow's equals() holds NaN unequal to itself: compare as numpy
    assert ours.type == expected.type and ours.null_count == expected.null_count == 0
    assert np.array_equal(ours.to_numpy(zero_copy_only=False), expected.to_numpy(zero_copy_only=False), equal_nan=nan)
    part = ours.slice(min(start, len(values)), length)
    got, want = to_numpy(part), part.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=nan)
    assert np.array_equal(to_numpy(pa.chunked_array([part, part], part.type)), np.concatenate([want, want]),
                          equal_nan=nan)


def test_nulls_and_other_types_take_pyarrow():
    with_nulls = pa.array([1, None, 3])
    assert np.array_equal(to_numpy(with_nulls), with_nulls.to_numpy(zero_copy_only=False), equal_nan=True)
    with pytest.raises(ValueError, match="1-d"):
        from_numpy(np.zeros((2, 2)))


def test_python_whitespace_is_written_out_in_full():
    assert _PY_SPACE == "".join(chr(i) for i in range(sys.maxunicode + 1) if chr(i).isspace())


def test_a_score_job_never_imports_pandas(tmp_path):
    """pandas costs ~0.3 s of a small job's ~1 s when pyarrow pulls it in; it must not be loaded."""
    pytest.importorskip("pandas")
    code = ("import sys; from kbest_bleu.cli import main\n"
            "for tok in ('none', '13a'):\n"
            f"    assert main(['score', {str(SAMPLE)!r}, '-o', {str(tmp_path / 'o.parquet')!r}, '-q', '-t', tok]) == 0\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_one_array_keeps_a_single_chunk_and_joins_several():
    """pyarrow's combine_chunks copies a single chunk's text too; one_array hands the chunk itself
    (the same buffers, slices included) and joins several chunks into an equal array."""
    text = pa.array(["a b", "", "c d e", None, "f"]).slice(1)
    alone = one_array(pa.chunked_array([text]))
    assert alone.buffers()[2].address == text.buffers()[2].address and alone.equals(text)
    joined = one_array(pa.chunked_array([text, text.slice(2)]))
    assert isinstance(joined, pa.Array) and joined.to_pylist() == text.to_pylist() + text.slice(2).to_pylist()
    assert one_array(text) is text
    assert len(one_array(pa.chunked_array([], pa.string()))) == 0
