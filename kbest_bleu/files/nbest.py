"""Moses / Joshua n-best text <-> parquet, and the Moses ``extractor`` scores/features files.

n-best line: ``id ||| hypothesis ||| features ||| score [||| more fields]``, with or without
spaces around ``|||``. Features are dense: Moses style ``d= 0 -3.3 lm= -47.2`` (a name followed by
one or more values: names d_0, d_1, ..., lm_0) or Joshua style ``lm_0=-27.184``; absent features are 0. The raw feature
and score text are kept so that text -> parquet -> text is byte-identical.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from ..arrays import from_numpy, to_numpy
from ..errors import InputError
from .kbest_io import FLOAT, FLOATS, INT, STRING, RowBatches, text_lines, write_batches
from .references import ReferenceTable

__all__ = ["COLUMNS", "NbestBatches", "dense_features", "nbest_to_parquet", "parse_features", "read_nbest"]

META_SEPARATOR = b"kbest_bleu.nbest_separator"
META_FEATURES = b"kbest_bleu.feature_names"


def parse_features(text: str, groups: bool = False) -> tuple:
    """Feature names and values of one n-best feature field (Moses or Joshua style); with
    ``groups``, also the number of values of each Moses-style group (``name= v1 v2 ...``), a dict
    (for :class:`DenseGroups`: counted only where asked, off the per-line path)."""
    names, values, current, index = [], [], None, 0
    counts: dict = {}
    for item in text.split():
        if item.endswith("="):  # Moses: "lm=" then its values
            current, index = item[:-1], 0
            if groups:
                counts[current] = 0
        elif "=" in item:  # Joshua: "lm_0=-27.184"
            name, value = item.split("=", 1)
            names.append(name)
            values.append(float(value))
        else:
            if current is None:
                raise ValueError(f"value {item!r} before any feature name")
            names.append(f"{current}_{index}")
            values.append(float(item))
            index += 1
            if groups:
                counts[current] = index
    return (names, values, counts) if groups else (names, values)


class DenseGroups:
    """The value counts of the Moses-style feature groups (``name= v1 v2 ...``) of the lines read
    so far. A Moses feature function prints all of its values on every line; sparse features, of
    at most one value, are the ones a line may leave out (read as 0). So a group of several values
    that a line leaves out, brings in late or gives another count is a cut or damaged line, which
    padding with zeros would misread: :meth:`check` refuses it."""

    def __init__(self) -> None:
        self.counts: dict = {}
        self.lines = 0

    def check(self, groups: dict, where: str) -> None:
        """Check the groups of the next line (:func:`parse_features` with ``groups``); ``where``
        starts the message."""
        for name, count in groups.items():
            known = self.counts.get(name)
            if known is None and count > 1 and self.lines > 0:
                raise InputError(f"{where}: feature {name!r} has {count} values, but no line before has it; {_WHOLE}")
            if known is None:
                self.counts[name] = count
            elif known != count and max(known, count) > 1:
                raise InputError(f"{where}: feature {name!r} has {count} value{'s' * (count != 1)}, but the lines "
                                 f"before have {known}; {_WHOLE}")
        for name, count in self.counts.items():
            if count > 1 and name not in groups:
                raise InputError(f"{where}: feature {name!r} is missing, where the lines before have its {count} "
                                 f"values; {_WHOLE}")
        self.lines += 1


_WHOLE = "a Moses feature function prints all its values on every line, so this one is cut or damaged"


def dense_features(texts: Sequence[Optional[str]], what: str = "features") -> tuple[list, list]:
    """Feature names (union, in order of first appearance) and one dense value list per text;
    a feature absent from a text is 0 (sparse lists omit zero-valued features). A null text, one
    that does not parse, or a Moses feature group of several values that a row leaves out or gives
    another count (:class:`DenseGroups`) is an :class:`InputError` naming ``what`` and the row
    (from 0)."""
    index: dict = {}
    parsed = []
    groups = DenseGroups()
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"{what} row {row}: the feature string is {'null' if text is None else repr(text)}; "
                             "expected 'name= value ...' (Moses) or 'name=value ...' (Joshua) in every row")
        try:
            names, vals, counts = parse_features(text, groups=True)
        except ValueError as exc:
            raise InputError(f"{what} row {row}: {exc} in {text[:80]!r}; expected 'name= value ...' (Moses) or "
                             "'name=value ...' (Joshua)") from None
        groups.check(counts, f"{what} row {row}")
        for name in names:
            index.setdefault(name, len(index))
        parsed.append(dict(zip(names, vals)))
    return list(index), [[row.get(n, 0.0) for n in index] for row in parsed]


COLUMNS = [("segment_id", INT), ("rank", INT), ("hypothesis", STRING), ("features", STRING),
           ("feature_values", FLOATS), ("model_score", FLOAT), ("model_score_text", STRING),
           ("extra_fields", STRING)]
_SNIFF_LINES = 100  # the separator (" ||| " or "|||") is told from this many first lines


class NbestBatches:
    """An n-best text file (plus optional reference files, line i = segment i) as record batches,
    in file order, read line by line in bounded memory: one batch (at most ``batch_rows`` rows and
    about ``batch_bytes`` of hypothesis text, :class:`~kbest_bleu.files.kbest_io.RowBatches`),
    the reference files, one counter per segment id (``rank``) and the feature names.

    Columns: as :func:`read_nbest`. ``feature_values`` of a batch follows the feature names known
    when it was handed out (:attr:`names`, which only grow; the schema metadata), so a feature first
    seen in a later batch is missing from the end of an earlier batch's lists: :meth:`dense` pads
    such a batch with zeros (an absent feature is 0) once the file is read.
    """

    def __init__(self, path: "str | os.PathLike", reference_paths: Sequence[str] = (), option: str = "input",
                 refs_option: str = "--refs", compression: Optional[str] = None, batch_rows: Optional[int] = None,
                 batch_bytes: Optional[int] = None):
        self.path, self.option, self.compression = path, option, compression
        self.refs = ReferenceTable.from_text_files(reference_paths, refs_option) if reference_paths else None
        self.limits = (batch_rows, batch_bytes)
        self.names: list = []
        self.separator = " ||| "

    def metadata(self) -> dict:
        return {META_SEPARATOR: self.separator.encode(), META_FEATURES: json.dumps(self.names).encode()}

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        lines = text_lines(self.path, self.compression, self.option, "n-best file", strip_bom=True)
        first = list(itertools.islice(lines, _SNIFF_LINES))
        sep = self.separator = " ||| " if any(" ||| " in ln for ln in first) else "|||"
        rows = RowBatches(COLUMNS, None, *self.limits)
        index: dict = {}  # feature name -> position in the dense lists
        ranks: dict = {}  # segment id -> lines of it so far (interleaved lists still number 0, 1, 2, ...)
        last, positions, identity = None, None, True
        groups = DenseGroups()
        for no, line in enumerate(itertools.chain(first, lines), 1):
            sid, fields, names, values = _parse(line, sep, self.path, no)
            if names != last or no == 1:  # most lines repeat the names (and the groups) of the line before
                groups.check(parse_features(fields[2], groups=True)[2], f"{self.path}: line {no}")
            else:
                groups.lines += 1
            if names != last:
                for name in names:
                    index.setdefault(name, len(index))
                last, positions = names, [index[n] for n in names]
                identity = positions == list(range(len(index)))
                if len(index) > len(self.names):
                    self.names = list(index)
            if identity:
                dense = values
            else:
                dense = [0.0] * len(index)
                for p, v in zip(positions, values):
                    dense[p] = v
            v = rows.values
            rank = ranks.get(sid, 0)
            ranks[sid] = rank + 1
            v["segment_id"].append(sid)
            v["rank"].append(rank)
            v["hypothesis"].append(fields[1])
            v["features"].append(fields[2])
            v["feature_values"].append(dense)
            v["model_score"].append(float(fields[3]))
            v["model_score_text"].append(fields[3])
            v["extra_fields"].append(sep.join(fields[4:]) if len(fields) > 4 else None)
            rows.add_text(len(fields[1]))
            while rows.full():
                yield self._finish(rows.take())
        if len(rows) or not ranks:  # an empty file: one empty batch with the columns
            yield self._finish(rows.take())

    def _finish(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """A batch dense over the names known now, with the references of its segments."""
        batch = self.dense(batch)
        if self.refs is None:
            return batch
        refs = self.refs.lookup(batch.column("segment_id").to_pylist(), str(self.path))
        return pa.RecordBatch.from_arrays([*batch.columns, refs], schema=batch.schema.append(
            pa.field("references", refs.type)))

    def dense(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with every ``feature_values`` list as long as :attr:`names` (zeros at the end)
        and the metadata of the whole file."""
        column = batch.schema.get_field_index("feature_values")
        lists = batch.column(column)
        n = len(self.names)
        have = to_numpy(pc.list_value_length(lists)).astype(np.int64)
        if (have != n).any():
            values = to_numpy(lists.flatten())
            offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(have)])
            flat = np.zeros(len(have) * n)
            flat[np.repeat(np.arange(len(have)) * n, have) + np.arange(len(values)) - np.repeat(offsets[:-1], have)] = \
                values
            lists = pa.ListArray.from_arrays(from_numpy(np.arange(len(have) + 1, dtype=np.int32) * n), from_numpy(flat))
            batch = batch.set_column(column, batch.schema.field(column), lists)
        return batch.replace_schema_metadata(self.metadata())


def _parse(line: str, sep: str, path: "str | os.PathLike", no: int) -> tuple:
    """(segment id, fields, feature names, feature values) of line ``no`` of an n-best file."""
    fields = line.split(sep)
    if len(fields) < 4:
        raise InputError(f"{path}: line {no}: expected 'id ||| hypothesis ||| features ||| score', found "
                         f"{len(fields)} field(s): {line[:80]!r}")
    try:
        sid = int(fields[0])
        names, values = parse_features(fields[2])
        score = float(fields[3])
    except ValueError as exc:
        raise InputError(f"{path}: line {no}: could not parse the id, features or score ({exc})") from None
    if not -2**63 <= sid < 2**63:
        raise InputError(f"{path}: line {no}: the id {fields[0].strip()} is outside the 64-bit integer range; "
                         "expected a segment number from 0 to 9223372036854775807")
    if not (math.isfinite(score) and all(math.isfinite(v) for v in values)):  # would reach parquet as nan/inf
        raise InputError(f"{path}: line {no}: a feature value or the score is not a finite number "
                         f"({fields[2].strip()!r} ||| {fields[3].strip()!r}); expected finite numbers")
    return sid, fields, names, values


def read_nbest(path: "str | os.PathLike", reference_paths: Sequence[str] = (), option: str = "input",
               refs_option: str = "--refs", compression: Optional[str] = None) -> pa.Table:
    """An n-best text file (plus optional reference files, line i = segment i) as a K-best table,
    in memory (:class:`NbestBatches` streams it; :func:`nbest_to_parquet` writes it to parquet).

    Columns: segment_id int64, rank int64 (position among the earlier lines of the same id),
    hypothesis large_string, features (raw), feature_values list<double>, model_score double,
    model_score_text (raw), extra_fields (raw fields after the score, null when absent), and
    references list<string> when reference files are given. ``feature_values`` follows the union
    of the feature names in order of first appearance (schema metadata); a feature absent from a
    line (sparse, as Joshua omits zero-valued ones) is 0.
    """
    reader = NbestBatches(path, reference_paths, option, refs_option, compression)
    batches = list(reader)
    return pa.Table.from_batches([reader.dense(b) for b in batches])


def nbest_to_parquet(path: "str | os.PathLike", dst: "str | os.PathLike", compression: Optional[str] = None, *,
                     reference_paths: Sequence[str] = (), refs_option: str = "--refs", option: str = "input",
                     batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None, codec: str = "lz4") -> int:
    """Write an n-best text file (plus optional reference files, as :class:`NbestBatches`) to the
    parquet work file ``dst`` batch by batch, compressed with ``codec``; returns the number of
    rows. When a feature first appears after the first batch, ``dst`` is written again from
    itself with the lists padded (parquet to parquet, batch by batch)."""
    import pyarrow.parquet as pq

    reader = NbestBatches(path, reference_paths, option, refs_option, compression, batch_rows, batch_bytes)
    rows = write_batches(reader, dst, codec)
    if pq.read_schema(dst).metadata[META_FEATURES] != reader.metadata()[META_FEATURES]:
        padded = Path(f"{dst}.padded")
        try:
            write_batches((reader.dense(b) for b in pq.ParquetFile(dst).iter_batches()), padded, codec)
            os.replace(padded, dst)
        finally:
            padded.unlink(missing_ok=True)
    return rows
