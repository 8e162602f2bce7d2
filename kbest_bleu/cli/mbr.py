"""``kbest-bleu mbr``: minimum Bayes risk selection over K-best lists or samples (issue 36).

Per segment, each candidate's expected utility against the segment's candidates as
pseudo-references (uniform, or weighted by a softmax of the model scores): sentence BLEU under any
smoothing and preset (:func:`kbest_bleu.tuning.mbr_select`, exact pairs, or expected n-gram
counts of the pseudo-references, :func:`kbest_bleu.tuning.mbr.aggregate_bleu`), chrF or chrF++
(exact pairs, :func:`kbest_bleu.metrics.chrf.mbr.pairwise_chrf`, or aggregated pseudo-references,
:func:`~kbest_bleu.metrics.chrf.mbr.aggregate_chrf`). The selected candidate is the highest
expected utility, ties to the lowest row. Input: every format ``score`` reads.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..errors import InputError
from .options import _logging, _segment, columns_options, config_from, float_range, reads, scoring_options, writes

__all__ = []

log = logging.getLogger("kbest_bleu")
UTILITIES = ("bleu", "chrf", "chrf++")


def _read(a: argparse.Namespace, tmp: Path):
    """The input as one Arrow table (any format ``score`` reads)."""
    import pyarrow.parquet as pq

    from ..files.readers import input_format, kbest_to_parquet

    fmt, _ = input_format(a.input, a.format)
    path = Path(a.input)
    if fmt != "parquet":
        path = tmp / "input.parquet"
        kbest_to_parquet(a.input, path, fmt, hypothesis=a.hyp_col, references=a.ref_col, option="mbr IN",
                         nbest_size=a.nbest_size)
    return pq.read_table(path)


def _utilities(a: argparse.Namespace, hyps, seg_ptr, weights):
    """(expected utility float64[H], pairs: (scores, pair_ptr) candidate-major or None)."""
    import numpy as np

    if a.utility == "bleu":
        from ..tuning.mbr import aggregate_bleu, mbr_select, pairwise_bleu
        segments = np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr))
        if a.aggregate:
            if a.matrix:
                raise InputError("--matrix: the aggregated utilities compare each candidate with one aggregated "
                                 "pseudo-reference; leave --aggregate out for the K x K matrix")
            return aggregate_bleu(hyps, segments, weights, config_from(a)), None
        _, utility = mbr_select(hyps, segments, weights, config_from(a))
        return utility, (pairwise_bleu(hyps, seg_ptr, config_from(a)) if a.matrix else None)
    from ..metrics.chrf.mbr import aggregate_chrf, pairwise_chrf
    options = {"char_order": a.chrf_char_order, "word_order": 2 if a.utility == "chrf++" else a.chrf_word_order,
               "beta": a.chrf_beta, "whitespace": a.chrf_whitespace, "lowercase": a.chrf_lowercase}
    if a.aggregate:
        if a.matrix:
            raise InputError("--matrix: the aggregated utilities compare each candidate with one aggregated "
                             "pseudo-reference; leave --aggregate out for the K x K matrix")
        return aggregate_chrf(hyps, seg_ptr, weights=weights, **options), None
    result = pairwise_chrf(hyps, seg_ptr, weights=weights, matrix=a.matrix is not None, **options)
    return result.expected, ((result.scores, result.pair_ptr) if a.matrix else None)


def _cmd_mbr(a: argparse.Namespace) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..encode import hypotheses_array, run_starts
    from ..files.output import atomic_output, temporary_directory
    from ..tuning.objectives import segment_softmax

    _logging(a.quiet)
    with temporary_directory() as tmp:
        table = _read(a, tmp)
    seg_cols = _segment(a, Path(a.input))
    for name in [a.hyp_col, *seg_cols] + ([a.score_col] if a.score_col else []):
        if name not in table.column_names:
            raise InputError(f"{a.input}: no column {name!r} (columns: {', '.join(table.column_names)})")
    hyps = hypotheses_array(table[a.hyp_col].combine_chunks())
    seg_ptr = np.append(run_starts([table[c].combine_chunks() for c in seg_cols]), table.num_rows).astype(np.int64)
    weights = None
    if a.score_col:  # a softmax of the model scores within each segment (temperature T)
        scores = table[a.score_col].to_numpy(zero_copy_only=False).astype(np.float64)
        if not np.isfinite(scores).all():
            raise InputError(f"--score-col {a.score_col}: expected finite model scores in every row")
        weights = segment_softmax(scores / a.temperature, seg_ptr)
    utility, pairs = _utilities(a, hyps, seg_ptr, weights)
    labels = np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr))
    order = np.lexsort((-utility, labels))  # stable: equal utilities keep the lowest row first
    chosen = order[seg_ptr[:-1]] if len(seg_ptr) > 1 else np.zeros(0, np.int64)
    selected = np.zeros(table.num_rows, bool)
    selected[chosen] = True
    out = table.append_column("mbr_utility", pa.array(utility, pa.float64()))
    out = out.append_column("mbr_selected", pa.array(selected))
    if a.select:
        out = out.take(pa.array(chosen))
    if a.output:
        with atomic_output(a.output, [a.input], "-o") as tmp_out:
            pq.write_table(out, tmp_out)
    if a.matrix:
        scores, pair_ptr = pairs
        k = np.diff(seg_ptr)
        seg = np.repeat(np.arange(len(k)), k * k)
        offset = np.arange(len(scores)) - np.repeat(pair_ptr[:-1], k * k)
        kk = np.repeat(k, k * k)
        matrix = pa.table({"segment": pa.array(seg, pa.int64()),
                           "candidate_row": pa.array(np.repeat(seg_ptr[:-1], k * k) + offset // np.maximum(kk, 1)),
                           "pseudo_reference_row": pa.array(np.repeat(seg_ptr[:-1], k * k) + offset % np.maximum(kk, 1)),
                           "utility": pa.array(scores, pa.float64())})
        with atomic_output(a.matrix, [a.input], "--matrix") as tmp_out:
            pq.write_table(matrix, tmp_out)
    if not a.quiet:
        print(f"segments {len(seg_ptr) - 1:,}  rows {table.num_rows:,}  utility {a.utility}"
              f"{' (aggregated)' if a.aggregate else ''}  mean expected utility of the selected "
              f"{float(utility[chosen].mean()) if len(chosen) else 0.0:.4f}")
        if a.ref_col in table.column_names and len(chosen):
            _report_bleu(table, chosen, seg_ptr, a)
    if a.output:
        log.info("wrote %s", a.output)
    return 0


def _report_bleu(table, chosen, seg_ptr, a: argparse.Namespace) -> None:
    """Corpus BLEU of the MBR selection against the references, beside the first row's (or the
    model's 1-best's with --score-col)."""
    import numpy as np

    from ..bleu import corpus_bleu
    refs = table[a.ref_col].combine_chunks()
    hyps = table[a.hyp_col].combine_chunks()
    first = seg_ptr[:-1]
    if a.score_col:
        scores = table[a.score_col].to_numpy(zero_copy_only=False)
        labels = np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr))
        first = np.lexsort((-scores, labels))[seg_ptr[:-1]]
    cfg = config_from(a)
    for name, rows in (("MBR selection", chosen), ("1-best" if a.score_col else "first row", first)):
        r = corpus_bleu(hyps.take(rows), refs.take(rows), config=cfg)
        print(f"{name:14s} corpus BLEU {100 * r.score:6.2f}", file=sys.stdout)


def add_command(sub) -> None:
    p = sub.add_parser("mbr", help="minimum Bayes risk selection: each candidate's expected utility (BLEU, chrF, "
                                   "chrF++) against its segment's candidates, the best per segment")
    p.add_argument("input", type=reads("mbr IN"), help="K-best lists or samples in any format score reads")
    p.add_argument("-o", "--output", type=writes("-o"), help="the table with mbr_utility and mbr_selected columns")
    p.add_argument("--utility", choices=UTILITIES, default="bleu", help="the utility (default bleu)")
    p.add_argument("--aggregate", action="store_true",
                   help="aggregated pseudo-reference, O(K): BLEU from expected n-gram counts (DeNero et al. "
                        "2009), chrF/chrF++ against averaged statistics (Vamvas & Sennrich 2024)")
    p.add_argument("--select", action="store_true", help="write only the selected row of each segment")
    p.add_argument("--matrix", type=writes("--matrix"), metavar="FILE.parquet",
                   help="also write every pair's utility (segment, candidate_row, pseudo_reference_row, utility)")
    p.add_argument("--temperature", type=float_range(1e-6, 1e6, "--temperature"), default=1.0,
                   help="with --score-col: pseudo-references weighted by softmax(score / T) per segment (default 1)")
    p.add_argument("--format", default=None, help="the input's format (default: from its name and content)")
    p.add_argument("--nbest-size", type=int, default=None, help="K lines per source (text, OpenNMT formats)")
    p.add_argument("--score-col", default=None, help="numeric column of model scores: weights the pseudo-references")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    group = p.add_argument_group("chrF options (--utility chrf, chrf++)")
    from ..metrics.chrf.cli import add_score_options
    add_score_options(group)
    columns_options(p)
    scoring_options(p)
    p.set_defaults(func=_cmd_mbr)
