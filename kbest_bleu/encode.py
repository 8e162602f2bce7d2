"""From user input to what the kernels read (DESIGN.md section 2).

hypotheses + segment ids + references  ->  validated Arrow arrays, segment pointers, one list
of references per segment. Text goes from there to the text kernel (:mod:`kbest_bleu.stats`);
token lists (and the tuning, MBR and benchmark paths) are encoded here to int32 ids shared by
hypotheses and references: ``tok, hyp_ptr, ref_tok, ref_ptr, seg_hyp_ptr, seg_ref_ptr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from . import arrow_compute as pc
from .arrays import from_numpy, one_array, string_buffers, to_numpy
from .counting import kernels
from .counting import numpy_engine as _numpy_counting
from .errors import InputError
from .tokenize import lowercase as lowercase_column
from .tokenize import prepare, split_ids
from .tokenize import tokenize as tokenize_column

__all__ = ["Encoded", "check_contiguous", "check_segment_keys", "check_utf8", "encode", "hypotheses_array",
           "is_id_lists", "is_token_lists", "key_labels", "list_offsets", "references_array", "run_starts", "segment_pointers",
           "segment_references"]


@dataclass(frozen=True)
class Encoded:
    """A K-best table as CSR arrays of token ids.

    tok int32[T], hyp_ptr int64[H+1], ref_tok int32[Tr], ref_ptr int64[R+1],
    seg_hyp_ptr int64[S+1], seg_ref_ptr int64[S+1].
    """

    tok: np.ndarray
    hyp_ptr: np.ndarray
    ref_tok: np.ndarray
    ref_ptr: np.ndarray
    seg_hyp_ptr: np.ndarray
    seg_ref_ptr: np.ndarray


def _to_arrow(values: Any, what: str) -> pa.Array:
    """Python list, numpy array, pandas Series, Arrow (chunked) array -> one Arrow array."""
    if isinstance(values, (dict, set, frozenset, str, bytes, int, float, np.number)) or values is None:
        raise InputError(f"{what}: expected a sequence with one entry per row (list, numpy array, pandas Series or "
                         f"Arrow array), found {type(values).__name__}"
                         + (" (a bare string: wrap one reference as ['...'])" if isinstance(values, str) else ""))
    values = one_array(values)
    if not isinstance(values, pa.Array):
        if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):  # pandas
            values = values.to_numpy()
        if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype in (np.uint64, np.int64):
            return from_numpy(values)  # as they are: uint64 ids above 2^63 do not fit Python's route to int64
        if isinstance(values, np.ndarray) and values.dtype.kind != "O":
            values = values.tolist()
        try:
            values = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            # pandas' missing values arrive as float NaN among strings: name the first such row
            bad = next((i for i, v in enumerate(values) if isinstance(v, float) and v != v), None) if isinstance(
                values, (list, tuple, np.ndarray)) else None
            where = f"row {bad} is NaN (a missing value); " if bad is not None else ""
            said = str(exc).splitlines()[0][:200]  # Arrow quotes the value: a Series' printout spans lines
            if what == "segments":
                raise InputError(f"{what}: {where}could not read as segment ids ({said}); expected one integer or "
                                 "string id per hypothesis, all of one type") from None
            inner = next((type(v).__name__ for v in values if hasattr(v, "__array__")), None) if isinstance(
                values, (list, tuple)) else None
            hint = (f"; an entry is a {inner}: references are one list per segment or row (sacrebleu's reference "
                    "streams: corpus_bleu(..., references_layout='streams'))") if inner and what == "references" else ""
            raise InputError(f"{what}: {where}could not read as strings or lists of strings ({said}); expected a "
                             "list, numpy array, pandas Series or Arrow array of strings; fill or drop missing "
                             f"values{hint}") from None
        except UnicodeEncodeError as exc:
            raise InputError(f"{what}: a string holds {exc.object[exc.start:exc.end]!r}, which is not valid "
                             "Unicode text (a lone surrogate); decode the input properly first") from None
    return values


def _null_lists_as_strings(arr: pa.Array) -> pa.Array:
    """Lists whose items Arrow typed as null because every list is empty (``[[]]``, or
    ``[[[]]]`` for references) become lists of strings: empty token lists are valid input."""
    def fix(t: pa.DataType) -> pa.DataType:
        if pa.types.is_null(t):
            return pa.string()
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return (pa.large_list if pa.types.is_large_list(t) else pa.list_)(fix(t.value_type))
        return t
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        target = fix(arr.type)
        return arr if target == arr.type else pc.cast(arr, target)
    return arr


def _first_null(arr: pa.Array) -> int:
    return int(np.flatnonzero(to_numpy(pc.is_null(arr)))[0])


def _check_no_nulls(arr: pa.Array, what: str, row_offset: int = 0,
                    expected: str = "a string (use '' for an empty one)") -> None:
    if arr.null_count:
        raise InputError(f"{what}: row {row_offset + _first_null(arr)} is null; expected {expected}")


def _invalid_utf8_at(data: bytes, offsets: np.ndarray) -> tuple[int, int]:
    """(element, byte offset within it) of the first element of a string buffer that is not
    UTF-8; (-1, -1) when every element is."""
    for i in range(len(offsets) - 1):
        try:
            data[offsets[i]:offsets[i + 1]].decode("utf-8")
        except UnicodeDecodeError as exc:
            return i, exc.start
    return -1, -1


def check_utf8(arr: pa.Array, what: str, row_offset: int = 0) -> None:
    """Raise :class:`InputError` naming the row and byte offset when a string array (or a list of
    strings, plain or dictionary-encoded) holds bytes that are not UTF-8. Arrow's full validation
    is cheap (a few ms per million strings); only the error path looks for the row."""
    try:
        arr.validate(full=True)
        return
    except pa.ArrowInvalid:
        pass
    rows = np.arange(len(arr))
    values = arr
    while pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        rows = rows[to_numpy(pc.list_parent_indices(values))]
        values = pc.list_flatten(values)
    strings = values.dictionary if pa.types.is_dictionary(values.type) else values
    element = -1
    if _is_text(strings.type):
        data, offsets = string_buffers(strings)
        element, byte = _invalid_utf8_at(data.tobytes(), offsets)
        if strings is not values and element >= 0:  # a bad dictionary entry: the first row that uses it
            used = np.flatnonzero(to_numpy(values.indices) == element)
            element = int(used[0]) if used.size else -1
    if element < 0:
        raise InputError(f"{what}: the Arrow data is invalid; expected a well-formed Arrow/parquet column")
    raise InputError(f"{what}: row {row_offset + int(rows[element])} is not valid UTF-8 (byte offset {byte} in the "
                     "string); expected UTF-8 text; re-encode the data as UTF-8 (or store the column as binary "
                     "if it is not text)")


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_token_lists(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_text(t.value_type)


def is_id_lists(t: pa.DataType) -> bool:
    """Whether an Arrow type holds token ids: list<int> (or large_list) of any integer width."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)


def _is_dictionary_text(t: pa.DataType) -> bool:
    return pa.types.is_dictionary(t) and _is_text(t.value_type)


def hypotheses_array(hypotheses: Any, row_offset: int = 0) -> pa.Array:
    """Hypotheses as an Arrow string array, or list<string> when already tokenized.

    ``row_offset`` is added to the row numbers of error messages (streaming jobs).
    """
    arr = _to_arrow(hypotheses, "hypotheses")
    if pa.types.is_dictionary(arr.type) and _is_text(arr.type.value_type):  # a categorical column
        arr = arr.dictionary_decode()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    if pa.types.is_null(arr.type) and len(arr):
        _check_no_nulls(arr, "hypotheses", row_offset)
    if len(arr) == 0:
        return pa.array([], pa.string())
    arr = _null_lists_as_strings(arr)
    if not (_is_text(arr.type) or is_token_lists(arr.type)):
        raise InputError(f"hypotheses: expected strings (or lists of token strings), found Arrow type {arr.type}")
    _check_no_nulls(arr, "hypotheses", row_offset)
    if is_token_lists(arr.type):
        _check_no_nulls(pc.list_flatten(arr), "hypothesis tokens")
    check_utf8(arr, "hypotheses", row_offset)
    return arr


def references_array(references: Any, row_offset: int = 0) -> pa.Array:
    """References as Arrow list<string>: one list per entry (a bare string is one reference).

    Dictionary-encoded strings (list<dictionary<string>>, as parquet jobs read them) are kept
    encoded here; :func:`segment_references` compares their indices and decodes them.
    """
    if isinstance(references, (list, tuple)):
        references = [[r] if isinstance(r, str) else r for r in references]
    arr = _to_arrow(references, "references")
    if len(arr) == 0:
        return pa.array([], pa.list_(pa.string()))
    if _is_text(arr.type):
        arr = pa.ListArray.from_arrays(from_numpy(np.arange(len(arr) + 1, dtype=np.int32)), arr)
    if (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) and not pa.types.is_null(
            arr.type.value_type):  # list<null> ([[]]) means no reference at all: kept as it is
        arr = _null_lists_as_strings(arr)
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) or not (
            _is_text(arr.type.value_type) or is_token_lists(arr.type.value_type)
            or _is_dictionary_text(arr.type.value_type) or pa.types.is_null(arr.type.value_type)):
        raise InputError(f"references: expected a list of reference strings per entry, found Arrow type {arr.type}")
    _check_no_nulls(arr, "references", row_offset, "a list of reference strings (use [''] for one empty "
                    "reference)")
    flat = pc.list_flatten(arr)
    if flat.null_count:
        entry = row_offset + int(to_numpy(pc.list_parent_indices(arr))[
            np.flatnonzero(to_numpy(pc.is_null(flat)))[0]])
        raise InputError(f"references: entry {entry} holds a null reference; expected strings")
    check_utf8(arr, "references", row_offset)
    return arr


def check_segment_keys(keys: Sequence[pa.Array], names: Sequence[str] = (), row_offset: int = 0) -> None:
    """Raise :class:`InputError` unless every segment key column is a scalar type without nulls
    (pandas' NaT arrives as null) or NaN: NaN equals nothing, so each NaN row would silently
    become a segment of its own. ``names``: the columns, for messages."""
    for i, k in enumerate(keys):
        name = f"segment column {names[i]!r}" if i < len(names) else "segment ids"
        t = k.type
        if pa.types.is_nested(t) or pa.types.is_dictionary(t) and pa.types.is_nested(t.value_type):
            raise InputError(f"{name}: expected scalar segment ids (integers or strings), found Arrow type {t}; "
                             "choose the segment columns with --seg-col (several scalar columns may be combined: "
                             "--seg-col a,b)")
        if k.null_count:
            raise InputError(f"{name}: row {row_offset + _first_null(k)} is null (None, NaN from pandas or NaT); "
                             "expected a segment id on every row; fill or drop those rows")
        if pa.types.is_floating(t):
            nan = to_numpy(pc.is_nan(k))
            if nan.any():
                raise InputError(f"{name}: row {row_offset + int(np.flatnonzero(nan)[0])} is NaN; expected a "
                                 "segment id on every row (NaN equals nothing, so it cannot name a segment); fill "
                                 "or drop those rows")


def run_starts(keys: Sequence[pa.Array]) -> np.ndarray:
    """Rows where a new run of equal segment keys starts (row 0 included): int64[S].

    ``keys``: one or more equally long Arrow arrays; a run is a maximal block of consecutive
    rows equal in every key column.
    """
    check_segment_keys(keys)
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n - 1, bool)
    for k in keys:
        if pa.types.is_float16(k.type):  # Arrow compares no half floats; float32 holds each exactly
            k = pc.cast(k, pa.float32())
        change |= to_numpy(pc.not_equal(k.slice(1), k.slice(0, n - 1)))
    return np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)


def key_labels(keys: Sequence[pa.Array], rows: np.ndarray) -> list:
    """The segment key at each of ``rows``, as hashable Python values (tuples when composite)."""
    cols = [pc.take(k, from_numpy(np.asarray(rows, np.int64))).to_pylist() for k in keys]
    return cols[0] if len(cols) == 1 else list(zip(*cols))


def check_contiguous(labels: list, seen: set, first_row: np.ndarray, where: str = "segments") -> None:
    """Raise if a segment key appears in two runs (here or in ``seen``); then record them."""
    if len(set(labels)) == len(labels) and seen.isdisjoint(labels):
        seen.update(labels)
        return
    for row, label in zip(first_row, labels):
        if label in seen:
            raise InputError(
                f"{where}: the rows of segment {label!r} are not contiguous (they start again at row "
                f"{int(row)} after other segments); sort the rows by segment id first, keeping the "
                "hypothesis order within each segment (kbest-bleu score --sort does it), or, when an id repeats "
                "by design (one K-best list per tuning iteration, in a column of its own), name every key "
                "column (e.g. --seg-col iteration,segment_id)")
        seen.add(label)


def segment_pointers(segments: Any, n_rows: int) -> np.ndarray:
    """CSR pointers int64[S+1] of contiguous runs of equal segment ids.

    Raises :class:`InputError` when a segment's rows are not contiguous (its id reappears
    after another segment), since that would silently score one segment as two.
    """
    if segments is None:
        return np.arange(n_rows + 1, dtype=np.int64)
    seg = _to_arrow(segments, "segments")
    if len(seg) != n_rows:
        raise InputError(f"segments: expected one segment id per hypothesis ({n_rows}), found {len(seg)}")
    starts = run_starts([seg])
    check_contiguous(key_labels([seg], starts), set(), starts)
    return np.append(starts, n_rows)


def _decoded(refs: pa.Array) -> pa.Array:
    """list<dictionary<string>> as list<string>; other reference arrays unchanged."""
    if not _is_dictionary_text(refs.type.value_type):
        return refs
    list_type = pa.large_list if pa.types.is_large_list(refs.type) else pa.list_
    return pc.cast(refs, list_type(refs.type.value_type.value_type))


def list_offsets(arr: pa.Array) -> np.ndarray:
    """int64 offsets (from 0) of a possibly sliced list or string array."""
    off = to_numpy(arr.offsets).astype(np.int64)
    return off - off[0]


def _rows_equal_owner(refs: pa.Array, owner: np.ndarray) -> np.ndarray:
    """bool[n]: whether row r of the list array ``refs`` equals row owner[r] (exactly, element by element)."""
    values = pc.list_flatten(refs)
    if _is_dictionary_text(values.type):  # same dictionary: equal indices are equal strings
        data = np.ascontiguousarray(to_numpy(values.indices)).view(np.uint8)
        width = values.indices.type.bit_width // 8
        elem_off = np.arange(len(values) + 1, dtype=np.int64) * width
    elif is_token_lists(values.type):  # pre-tokenized references: token counts, then the tokens
        counts = np.diff(list_offsets(values)).view(np.uint8)
        counts.setflags(write=False)  # the kernel's one specialization: read-only bytes, as string_buffers gives
        same = kernels()._rows_equal_owner(counts, np.arange(len(values) + 1, dtype=np.int64) * 8,
                                         list_offsets(refs), owner)
        tokens_of_row = from_numpy(list_offsets(values)[list_offsets(refs)])
        by_row = pa.LargeListArray.from_arrays(tokens_of_row, pc.list_flatten(values))
        return same & _rows_equal_owner(by_row, owner)
    else:
        data, elem_off = string_buffers(values)
    return kernels()._rows_equal_owner(data, elem_off, list_offsets(refs), owner)


def segment_references(refs: pa.Array, seg_hyp_ptr: np.ndarray, n_rows: int, row_offset: int = 0,
                       engine: str = "kernels") -> pa.Array:
    """References per segment, from either one entry per segment or one entry per row.

    With one entry per row, the first row of each segment gives the segment's references and
    every other row must repeat them exactly (checked in one parallel pass over the bytes, or
    over the dictionary indices when the strings are dictionary-encoded; by numpy for
    ``engine="numpy"``, see :func:`kbest_bleu.stats.stats_from_text`). Returns list<string>.
    """
    n_seg = len(seg_hyp_ptr) - 1
    if len(refs) == n_seg:
        return _decoded(refs)
    if len(refs) != n_rows:
        raise InputError(
            f"references: expected one list of references per segment ({n_seg}) or per "
            f"hypothesis row ({n_rows}), found {len(refs)}")
    owner = np.repeat(seg_hyp_ptr[:-1], np.diff(seg_hyp_ptr))
    rows_equal = _numpy_counting.rows_equal_owner if engine == "numpy" and not is_token_lists(
        refs.type.value_type) else _rows_equal_owner
    same = rows_equal(refs, owner)
    if not same.all() and _is_dictionary_text(refs.type.value_type):
        same = rows_equal(_decoded(refs), owner)  # a dictionary may repeat a string
    if not same.all():
        row = int(np.flatnonzero(~same)[0])
        raise InputError(
            f"references: row {row + row_offset} has references different from row "
            f"{int(owner[row]) + row_offset}, the first "
            "row of its segment; the rows of one segment must share their references "
            "(or pass segment ids that separate them)")
    return _decoded(pc.take(refs, from_numpy(seg_hyp_ptr[:-1])))


def _token_lists(arr: pa.Array, lowercase: "bool | str") -> tuple[pa.Array, np.ndarray]:
    """Tokens and offsets of already tokenized input (list<string>); ``lowercase`` as
    :func:`kbest_bleu.tokenize.prepare` takes it."""
    tokens = pc.list_flatten(arr)
    if lowercase == "ascii":
        tokens = pc.ascii_lower(tokens)
    elif lowercase:
        tokens = lowercase_column(tokens)
    return tokens, list_offsets(arr)


def encode(hypotheses: pa.Array, seg_refs: pa.Array, seg_hyp_ptr: np.ndarray,
           tokenize: str = "none", lowercase: "bool | str" = False) -> Encoded:
    """Tokenize and map tokens to int32 ids shared by hypotheses and references.

    References are tokenized once per segment, not once per hypothesis row. Strings go through
    one numba pass (split, with the 13a/zh rules, + exact interning); pre-tokenized lists are
    dictionary-encoded by Arrow.
    """
    flat_refs = pc.list_flatten(seg_refs)
    if pa.types.is_null(flat_refs.type):
        flat_refs = pc.cast(flat_refs, hypotheses.type if _is_text(hypotheses.type) else pa.string())
    seg_ref_ptr = list_offsets(seg_refs)
    n_h = len(hypotheses)
    if is_token_lists(hypotheses.type) or is_token_lists(flat_refs.type):
        hyp_tok, hyp_ptr = (_token_lists(hypotheses, lowercase) if is_token_lists(hypotheses.type)
                            else tokenize_column(hypotheses, tokenize, lowercase))
        ref_tok, ref_ptr = (_token_lists(flat_refs, lowercase) if is_token_lists(flat_refs.type)
                            else tokenize_column(flat_refs, tokenize, lowercase))
        both = pa.concat_arrays([pc.cast(hyp_tok, pa.large_string()), pc.cast(ref_tok, pa.large_string())])
        ids = to_numpy(pc.dictionary_encode(both).indices).astype(np.int32, copy=False)
        n_tok = len(hyp_tok)
    else:
        both = pa.concat_arrays([pc.cast(hypotheses, pa.large_string()), pc.cast(flat_refs, pa.large_string())])
        ids, ptr, _ = split_ids(*prepare(both, tokenize, lowercase))
        n_tok = int(ptr[n_h])
        hyp_ptr, ref_ptr = ptr[:n_h + 1], ptr[n_h:] - n_tok
    return Encoded(np.ascontiguousarray(ids[:n_tok]), hyp_ptr, np.ascontiguousarray(ids[n_tok:]),
                   ref_ptr, np.ascontiguousarray(seg_hyp_ptr, dtype=np.int64), seg_ref_ptr)
