"""Moses / Joshua n-best text <-> parquet, and the Moses ``extractor`` scores/features files.

n-best line: ``id ||| hypothesis ||| features ||| score [||| more fields]``, with or without
spaces around ``|||``. Features are dense: Moses style ``d= 0 -3.3 lm= -47.2`` (a name followed by
one or more values: names d_0, d_1, ..., lm_0) or Joshua style ``lm_0=-27.184``; absent features are 0. The raw feature
and score text are kept so that text -> parquet -> text is byte-identical.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from ..batch.output import atomic_output, check_output
from ..batch.references import Columns, ReferenceTable, read_lines
from ..batch.stream import score_batches
from ..config import BleuConfig
from ..encode import run_starts
from ..errors import InputError

__all__ = ["dense_features", "export_moses", "parse_features", "read_nbest", "write_nbest"]

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
            parse_features(fields[2])
            float(fields[3])
        except ValueError as exc:
            raise InputError(f"{path}: line {no}: could not parse the id, features or score ({exc})") from None
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
    for s, h, f, sc, ex in zip(table["segment_id"].to_pylist(), table["hypothesis"].to_pylist(),
                                table["features"].to_pylist(), score, extra):
        out.append(sep.join([str(s), h, f, str(sc)] + ([ex] if ex is not None else [])))
    with atomic_output(path, inputs, option) as tmp:
        Path(tmp).write_text("".join(ln + "\n" for ln in out), encoding="utf-8")


def export_moses(table: pa.Table, scores_path: "str | os.PathLike", features_path: Optional["str | os.PathLike"],
                 config: Optional[BleuConfig] = None, columns: Columns = Columns(),
                 inputs: Sequence["str | os.PathLike"] = ()) -> int:
    """Write the Moses ``extractor`` files: a SCORES_TXT block per segment with the 9 BLEU
    statistics ``m1 t1 ... m4 t4 reflen`` of each hypothesis, and the matching FEATURES_TXT block.

    The block's sentence index is the last segment column's value. Returns the number of segments.
    Both files are written atomically; ``inputs`` (the table's file) are refused as outputs, and
    the first names the table in error messages.
    """
    check_output(scores_path, inputs, "--scores")
    if features_path is not None:
        check_output(features_path, [*inputs, scores_path], "--features")
    if features_path is not None and table.schema.get_field_index("features") < 0:
        raise InputError(f"--features {features_path}: the table has no 'features' column (columns are "
                         f"{', '.join(table.schema.names)}); expected n-best input from convert, or omit --features")
    cfg = config or BleuConfig(compat="moses")
    source = str(inputs[0]) if inputs else "table"  # errors name the file the table came from
    scored = pa.Table.from_batches(list(score_batches(table.to_batches(), cfg, columns=columns, stats=True,
                                                      source=source)))
    n = cfg.max_order
    stat_cols = [f"{k}{i}" for i in range(1, n + 1) for k in ("m", "t")] + ["ref_len"]
    stats = np.column_stack([scored[c].to_numpy() for c in stat_cols])
    seg = scored[columns.segment[-1]].to_pylist()
    starts = run_starts([scored[c].combine_chunks() for c in columns.segment])
    ends = np.r_[starts[1:], scored.num_rows]
    with atomic_output(scores_path, inputs, "--scores") as tmp, open(tmp, "w", encoding="utf-8") as out:
        for a, b in zip(starts, ends):
            out.write(f"SCORES_TXT_BEGIN_0 {seg[a]} {b - a} {2 * n + 1} BLEU\n")
            out.writelines(" ".join(map(str, row)) + "\n" for row in stats[a:b])
            out.write("SCORES_TXT_END_0\n")
    if features_path is not None:
        names, values = dense_features(scored["features"].to_pylist())
        with atomic_output(features_path, [*inputs, scores_path], "--features") as tmp, \
                open(tmp, "w", encoding="utf-8") as out:
            for a, b in zip(starts, ends):
                out.write(f"FEATURES_TXT_BEGIN_0 {seg[a]} {b - a} {len(names)} {' '.join(names)}\n")
                out.writelines(" ".join(f"{v:g}" for v in vals) + "\n" for vals in values[a:b])
                out.write("FEATURES_TXT_END_0\n")
    return len(starts)
