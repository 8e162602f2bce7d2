"""Moses ``extractor`` files from a scored K-best table: the SCORES_TXT blocks of BLEU statistics
and the FEATURES_TXT blocks that Moses' tuners (MERT, PRO, k-best MIRA) read."""

from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from ..config import BleuConfig
from ..encode import run_starts
from ..errors import InputError
from ..files.nbest import dense_features
from ..files.output import atomic_outputs, check_output
from ..files.readers import check_output_format
from ..files.references import Columns
from .stream import job_config, score_batches

__all__ = ["export_moses"]


def export_moses(table: pa.Table, scores_path: "str | os.PathLike", features_path: Optional["str | os.PathLike"],
                 config: Optional[BleuConfig] = None, columns: Columns = Columns(),
                 inputs: Sequence["str | os.PathLike"] = ()) -> int:
    """Write the Moses ``extractor`` files: a SCORES_TXT block per segment with the 9 BLEU
    statistics ``m1 t1 ... m4 t4 reflen`` of each hypothesis, and the matching FEATURES_TXT block.

    The block's sentence index is the last segment column's value. Returns the number of segments.
    Both files are written atomically; ``inputs`` (the table's file) are refused as outputs, and
    the first names the table in error messages.
    """
    for path, option in ((scores_path, "--scores"), (features_path, "--features")):
        if path is not None:  # Moses' text files, never compressed (its tools read them as they are)
            check_output(path, [*inputs, scores_path] if option == "--features" else inputs, option)
            check_output_format(path, "text", option, "Moses reads its statistics and features as plain text")
    if features_path is not None and table.schema.get_field_index("features") < 0:
        raise InputError(f"--features {features_path}: the table has no 'features' column (columns are "
                         f"{', '.join(table.schema.names)}); expected n-best input from convert, or omit --features")
    cfg = job_config(config or BleuConfig(compat="moses"), table.schema, columns)
    if cfg.max_order != 4:  # mert/BleuScorer.h: kBleuNgramOrder = 4, 9 statistics per hypothesis
        raise InputError(f"max order {cfg.max_order}: Moses' BLEU scorer reads the statistics of orders 1-4 "
                         "(9 numbers per hypothesis); use max order 4 (leave --max-order out)")
    source = str(inputs[0]) if inputs else "table"  # errors name the file the table came from
    if table.num_rows == 0:  # Moses' extractor files hold at least one segment
        raise InputError(f"{source}: no hypotheses; expected a K-best table with at least one row")
    scored = pa.Table.from_batches(list(score_batches(table.to_batches(), cfg, columns=columns, stats=True,
                                                      source=source)))
    n = cfg.max_order
    stat_cols = [f"{k}{i}" for i in range(1, n + 1) for k in ("m", "t")] + ["ref_len"]
    stats = np.column_stack([scored[c].to_numpy() for c in stat_cols])
    seg = scored[columns.segment[-1]].to_pylist()
    starts = run_starts([scored[c].combine_chunks() for c in columns.segment])
    ends = np.r_[starts[1:], scored.num_rows]
    names, values = (dense_features(scored["features"].to_pylist(), f"--features {features_path}: column 'features'")
                     if features_path is not None else ([], []))
    if not np.isfinite(np.asarray(values, np.float64)).all():
        raise InputError(f"--features {features_path}: a feature value of the table is not finite (NaN or inf); "
                         "Moses' tuners cannot read it; fix the n-best list's features")
    # both files are renamed into place together, after both are written: one failing leaves neither
    wanted = [(scores_path, "--scores")] + ([(features_path, "--features")] if features_path is not None else [])
    with atomic_outputs(wanted, inputs) as written:
        tmp, tmp_features = written[0], (written[1] if features_path is not None else None)
        with open(tmp, "w", encoding="utf-8") as out:
            for a, b in zip(starts, ends):
                out.write(f"SCORES_TXT_BEGIN_0 {seg[a]} {b - a} {2 * n + 1} BLEU\n")
                # every value followed by a space, as Moses' ScoreStats operator<< writes it
                out.writelines("".join(f"{v} " for v in row) + "\n" for row in stats[a:b])
                out.write("SCORES_TXT_END_0\n")
        if tmp_features is not None:
            with open(tmp_features, "w", encoding="utf-8") as out:
                for a, b in zip(starts, ends):
                    # names and values each followed by a space (Data::InitFeatureMap, FeatureStats operator<<)
                    out.write(f"FEATURES_TXT_BEGIN_0 {seg[a]} {b - a} {len(names)} {''.join(f'{x} ' for x in names)}\n")
                    out.writelines("".join(f"{v:g} " for v in vals) + "\n" for vals in values[a:b])
                    out.write("FEATURES_TXT_END_0\n")
    return len(starts)
