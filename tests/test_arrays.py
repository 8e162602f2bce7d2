"""The numpy <-> Arrow conversions of kbest_bleu.arrays against pyarrow's own (which import pandas),
kbest_bleu.arrow_compute against pyarrow.compute, and the fixed costs they exist for (issue 18)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kbest_bleu import arrow_compute as _compute
from kbest_bleu.arrays import from_numpy, from_strings, one_array, to_numpy
from kbest_bleu.tokenize import _PY_SPACE, _char_class, _lower_mismatch_class, _lowered_by_python

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


@pytest.mark.parametrize("engine", ["numpy", "kernels"])
def test_a_score_job_never_imports_pandas_or_pyarrow_compute(tmp_path, engine):
    """pandas costs ~0.3 s of a small job when pyarrow pulls it in, pyarrow.compute ~30 ms of its
    ~0.25 s: neither may be loaded, lowercased or not, nor by a single call."""
    pytest.importorskip("pandas")
    code = ("import sys; from kbest_bleu.cli import main\n"
            "for opts in (['-t', 'none'], ['-t', '13a'], ['-t', '13a', '--lowercase']):\n"
            f"    assert main(['score', {str(SAMPLE)!r}, '-o', {str(tmp_path / 'o.parquet')!r}, '-q', '--engine', "
            f"{engine!r}] + opts) == 0\n"
            "import kbest_bleu as kb\n"  # a single call with an Arrow-run tokenizer, lowercased
            "assert kb.sentence_bleu('A b, c!', ['a b , c !'], tokenize='intl', lowercase=True) == 1.0\n"
            "print('pandas' in sys.modules, 'pyarrow.compute' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False False"


@pytest.mark.jit_free
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=8))
def test_from_strings_equals_pyarrow(values):
    ours = from_strings(values)
    assert ours.equals(pa.array(values, pa.large_string())) and ours.null_count == 0


@pytest.mark.jit_free
@given(st.lists(st.text(max_size=3), max_size=6), st.text("aAİΣσςǅßẞ İx", max_size=3),
       st.sampled_from([("", ""), ("a b", "ab"), ("", "İ")]))
def test_compute_calls_equal_pyarrow_compute(strings, pattern, slice_):
    """The registry calls take the function's arguments, then its options positionally or by
    keyword, as pyarrow.compute's wrappers do."""
    import pyarrow.compute as pc

    arr = pa.array(strings, pa.string())
    for name, args, options in [("utf8_lower", (arr,), {}), ("split_pattern", (arr, " "), {}),
                                ("split_pattern", (arr,), {"pattern": pattern or " ", "max_splits": 1}),
                                ("replace_substring", (arr, pattern or "a", slice_[1]), {}),
                                ("utf8_replace_slice", (arr, 0, 1, slice_[1]), {}),
                                ("match_substring_regex", (arr,), {"pattern": "[aA]"}),
                                ("binary_length", (arr,), {}), ("cast", (arr, pa.large_string()), {}),
                                ("take", (arr, pa.array(list(range(len(strings)))[::-1], pa.int64())), {}),
                                ("is_null", (arr,), {}), ("dictionary_encode", (arr,), {})]:
        assert getattr(_compute, name)(*args, **options).equals(getattr(pc, name)(*args, **options)), name
    assert _compute.list_flatten(pc.split_pattern(arr, " ")).equals(pc.list_flatten(pc.split_pattern(arr, " ")))
    with pytest.raises(TypeError, match="binary_length takes 1 argument"):
        _compute.binary_length(arr, arr)


@pytest.mark.jit_free
@given(st.text("aAİΣσςǅßẞ xİẞ", max_size=40))
def test_python_lowering_positions_equal_a_scan(text):
    assert _lowered_by_python(text, 7) == [7 + i for i, c in enumerate(text) if c.lower() != c]


def test_compute_falls_back_to_pyarrow_compute(monkeypatch):
    """Where pyarrow's registry binding lacks what the wrappers read, a name comes from
    pyarrow.compute itself: the same function, the import paid."""
    import pyarrow._compute
    import pyarrow.compute as pc

    def moved(name):
        raise AttributeError("get_function")
    monkeypatch.setattr(pyarrow._compute, "get_function", moved)
    monkeypatch.delitem(_compute.__dict__, "utf8_upper", raising=False)
    assert _compute.utf8_upper is pc.utf8_upper
    monkeypatch.delitem(_compute.__dict__, "utf8_upper")


def test_lowercase_mismatch_class_equals_the_full_scan():
    """The characters that utf8proc and Python lowercase differently, under the running pyarrow
    and Python: found from the ~3,000 either changes, equal to comparing all 1.1 million."""
    import pyarrow.compute as pc

    chars = [chr(i) for i in range(sys.maxunicode + 1) if not 0xD800 <= i <= 0xDFFF]
    arrow = pc.utf8_lower(pa.array(chars)).to_pylist()
    assert _lower_mismatch_class() == _char_class({ord(c) for c, a in zip(chars, arrow) if c.lower() != a} | {0x03A3})


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
