"""Moses / Joshua n-best text <-> parquet, and the Moses ``extractor`` scores/features files.

n-best line: ``id ||| hypothesis ||| features ||| score [||| more fields]``, with or without
spaces around ``|||``. Features are dense: Moses style ``d= 0 -3.3 lm= -47.2`` (a name followed by
one or more values: names d_0, d_1, ..., lm_0) or Joshua style ``lm_0=-27.184``; absent features are 0. The raw feature
and score text are kept so that text -> parquet -> text is byte-identical.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .output import atomic_output
from .references import ReferenceTable, read_lines

__all__ = ["dense_features", "parse_features", "read_nbest", "write_nbest"]

META_SEPARATOR = b"kbest_bleu.nbest_separator"
META_FEATURES = b"kbest_bleu.feature_names"


def parse_features(text: str) -> tuple[list, list]:
    """Feature names and values of one n-best feature field (Moses or Joshua style)."""
    names, values, current, index = [], [], None, 0
    for item in text.split():
        if item.endswith("="):  # Moses: "lm=" then its values
            current, index = item[:-1], 0
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
    return names, values


def dense_features(texts: Sequence[str]) -> tuple[list, list]:
    """Feature names (union, in order of first appearance) and one dense value list per text;
    a feature absent from a text is 0 (sparse lists omit zero-valued features)."""
    index: dict = {}
    parsed = []
    for text in texts:
        names, vals = parse_features(text)
        for name in names:
            index.setdefault(name, len(index))
        parsed.append(dict(zip(names, vals)))
    return list(index), [[row.get(n, 0.0) for n in index] for row in parsed]


def read_nbest(path: "str | os.PathLike", reference_paths: Sequence[str] = (), option: str = "input",
               refs_option: str = "--refs") -> pa.Table:
    """An n-best text file (plus optional reference files, line i = segment i) as a K-best table.

    Columns: segment_id int64, rank int64 (position within the segment), hypothesis string,
    features string (raw), feature_values list<double>, model_score double, model_score_text
    string (raw), extra_fields string (raw fields after the score, null when absent), and
    references list<string> when reference files are given. ``feature_values`` follows the union
    of the feature names in order of first appearance (schema metadata); a feature absent from a
    line (sparse, as Joshua omits zero-valued ones) is 0.
    """
    lines = read_lines(path, option)
    sep = " ||| " if any(" ||| " in ln for ln in lines[:100]) else "|||"
    seg, hyp, feats, score_text, extra = [], [], [], [], []
    for no, line in enumerate(lines, 1):
        fields = line.split(sep) if sep == "|||" else line.split(" ||| ")
        if len(fields) < 4:
            raise InputError(f"{path}: line {no}: expected 'id ||| hypothesis ||| features ||| score', found "
                             f"{len(fields)} field(s): {line[:80]!r}")
        try:
            seg.append(int(fields[0]))
            numbers = parse_features(fields[2])[1] + [float(fields[3])]
        except ValueError as exc:
            raise InputError(f"{path}: line {no}: could not parse the id, features or score ({exc})") from None
        if not -2**63 <= seg[-1] < 2**63:
            raise InputError(f"{path}: line {no}: the id {fields[0].strip()} is outside the 64-bit integer range; "
                             "expected a segment number from 0 to 9223372036854775807")
        if not all(math.isfinite(v) for v in numbers):  # would reach parquet and Moses' feature files as nan/inf
            raise InputError(f"{path}: line {no}: a feature value or the score is not a finite number "
                             f"({fields[2].strip()!r} ||| {fields[3].strip()!r}); expected finite numbers")
        hyp.append(fields[1])
        feats.append(fields[2])
        score_text.append(fields[3])
        extra.append(sep.join(fields[4:]) if len(fields) > 4 else None)
    seg_arr = np.array(seg, dtype=np.int64)
    # rank = position among the earlier lines of the same id, so that interleaved ids (lists
    # merged line by line) still number each list 0, 1, 2, ...: a stable sort groups the ids
    order = np.argsort(seg_arr, kind="stable")
    sorted_ids = seg_arr[order]
    first = np.r_[0, np.flatnonzero(np.diff(sorted_ids)) + 1] if len(seg) else np.zeros(0, np.int64)
    rank = np.empty(len(seg), np.int64)
    rank[order] = np.arange(len(seg)) - np.repeat(first, np.diff(np.r_[first, len(seg)]))
    names, values = dense_features(feats)
    table = pa.table({
        "segment_id": seg_arr, "rank": rank.astype(np.int64), "hypothesis": pa.array(hyp, pa.string()),
        "features": pa.array(feats, pa.string()),
        "feature_values": pa.array(values, pa.list_(pa.float64())),
        "model_score": pa.array([float(s) for s in score_text], pa.float64()),
        "model_score_text": pa.array(score_text, pa.string()), "extra_fields": pa.array(extra, pa.string()),
    })
    if reference_paths:
        refs = ReferenceTable.from_text_files(reference_paths, refs_option)
        table = table.append_column("references", refs.lookup(seg, str(path)))
    return table.replace_schema_metadata({META_SEPARATOR: sep.encode(), META_FEATURES: json.dumps(names).encode()})


def write_nbest(table: pa.Table, path: "str | os.PathLike", inputs: Sequence["str | os.PathLike"] = (),
                option: str = "output") -> None:
    """Write a table from :func:`read_nbest` (or with the same columns) back as n-best text,
    atomically (:func:`~kbest_bleu.batch.output.atomic_output`; ``inputs`` are refused as the
    output, ``option`` names the argument in messages)."""
    meta = table.schema.metadata or {}
    sep = meta.get(META_SEPARATOR, b" ||| ").decode()
    for name in ("segment_id", "hypothesis", "features"):
        if table.schema.get_field_index(name) < 0:
            raise InputError(f"{path}: column {name!r} is needed to write n-best text; columns are {table.schema.names}")
    score = (table["model_score_text"] if "model_score_text" in table.schema.names else table["model_score"]).to_pylist()
    extra = table["extra_fields"].to_pylist() if "extra_fields" in table.schema.names else [None] * table.num_rows
    out = []
    for row, (s, h, f, sc, ex) in enumerate(zip(table["segment_id"].to_pylist(), table["hypothesis"].to_pylist(),
                                                table["features"].to_pylist(), score, extra)):
        fields = [s, h, f, sc]
        if any(v is None for v in fields):
            name = ("segment_id", "hypothesis", "features", "model_score")[fields.index(None)]
            raise InputError(f"{path}: row {row} has a null {name}; n-best text has no null; fill or drop the row")
        # a line break or the separator inside a field would make the text parse back differently
        bad = [str(v) for v in (h, f, sc, ex or "") if "\n" in str(v) or "\r" in str(v)]
        bad += [str(v) for v in (h, f, sc) if "|||" in str(v)]
        if bad:
            raise InputError(f"{path}: row {row}: a field holds a line break or '|||' ({bad[0][:60]!r}), which n-best "
                             "text cannot hold (it would not parse back); clean the text or keep the table as parquet")
        try:
            numbers = parse_features(f)[1] + [float(sc)]
        except ValueError as exc:
            raise InputError(f"{path}: row {row}: features {f!r} or score {sc!r} do not parse back ({exc})") from None
        if not all(math.isfinite(v) for v in numbers):
            raise InputError(f"{path}: row {row}: a feature value or the model score is not finite ({f!r}, {sc!r}); "
                             "expected finite numbers (n-best readers refuse NaN and infinities)")
        out.append(sep.join([str(s), h, f, str(sc)] + ([ex] if ex is not None else [])))
    with atomic_output(path, inputs, option) as tmp:
        Path(tmp).write_text("".join(ln + "\n" for ln in out), encoding="utf-8")
