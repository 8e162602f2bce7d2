"""``kbest-bleu mbr``: minimum Bayes risk selection over K-best lists or samples (issue 36).

Per segment, each candidate's expected utility against the segment's pseudo-references (its own
candidates, or a separate sample set, ``--pseudo-refs``), uniform or weighted by a softmax of
model scores: sentence BLEU under any smoothing and preset (:func:`kbest_bleu.tuning.mbr_select`,
exact pairs, or expected n-gram counts of the pseudo-references,
:func:`kbest_bleu.tuning.mbr.aggregate_bleu`), chrF or chrF++ (exact pairs,
:func:`kbest_bleu.metrics.chrf.mbr.pairwise_chrf`, or aggregated pseudo-references,
:func:`~kbest_bleu.metrics.chrf.mbr.aggregate_chrf`). The selected candidate is the highest
expected utility, ties to the lowest row. Input: every format ``score`` reads.

The command streams: the input is read in record batches regrouped into whole segments
(:mod:`kbest_bleu.batch.segments`), the pseudo-reference file in step with it, and each chunk's
rows (and, with ``--matrix``, its pairs) are written before the next chunk is read.
"""

from __future__ import annotations

import argparse
import logging
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..errors import InputError
from .options import _logging, _segment, columns_options, config_from, float_range, positive_int, reads, scoring_options, writes

__all__ = []

log = logging.getLogger("kbest_bleu")
UTILITIES = ("bleu", "chrf", "chrf++")
MATRIX_COLUMNS = ("segment", "candidate_row", "pseudo_reference_row", "utility")


def _parquet(path: str, fmt: Optional[str], nbest_size: Optional[int], seg_cols: tuple, a: argparse.Namespace,
             option: str, work: Path) -> Path:
    """The file as parquet: itself, or the work file of the score job's readers
    (:func:`~kbest_bleu.files.readers.kbest_to_parquet`); with --sort, stably sorted by segment."""
    from ..files.readers import input_format, kbest_to_parquet
    from ..files.sorting import sort_segments

    fmt, _ = input_format(path, fmt)
    src = Path(path)
    if fmt != "parquet":
        src = work / "converted.parquet"
        kbest_to_parquet(path, src, fmt, hypothesis=a.hyp_col, references=a.ref_col, option=option,
                         nbest_size=nbest_size)
    if a.sort:
        sort_segments(src, work / "sorted.parquet", seg_cols, batch_size=a.batch_size)
        src = work / "sorted.parquet"
    return src


def _segment_weights(table, column: Optional[str], seg_ptr, temperature: float, option: str, row0: int):
    """softmax(score / T) within each segment of ``column``'s model scores, or None (uniform)."""
    import numpy as np

    from ..batch.stream import model_scores
    from ..tuning.objectives import segment_softmax
    scores = model_scores(table, column, row0, option)
    if scores is None:
        return None
    with np.errstate(over="ignore"):  # said below, in one line
        scaled = scores / temperature
    if not np.isfinite(scaled).all():
        row = int(np.flatnonzero(~np.isfinite(scaled))[0])
        raise InputError(f"{option}: column {column!r}, row {row + row0}: the model score {scores[row]:g} divided by "
                         f"--temperature {temperature:g} overflows float64; use a larger --temperature or scale the "
                         "scores down")
    return segment_softmax(scaled, seg_ptr)


def _utilities(a: argparse.Namespace, hyps, seg_ptr, weights, refs, ref_ptr):
    """(expected utility float64[H], the K x R matrices candidate-major float64[P] or None) of
    segments ``seg_ptr`` of ``hyps`` against pseudo-references ``refs`` (segments ``ref_ptr``; None:
    the candidates themselves), ``weights`` one per pseudo-reference (None: uniform)."""
    import numpy as np

    if a.utility == "bleu":
        from ..tuning.mbr import aggregate_bleu, mbr_select, pairwise_bleu
        cfg = config_from(a)
        seg_ids = np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr))
        sep = {} if refs is None else {"pseudo_references": refs,
                                      "pseudo_segments": np.repeat(np.arange(len(ref_ptr) - 1), np.diff(ref_ptr))}
        if a.aggregate:
            return aggregate_bleu(hyps, seg_ids, weights, cfg, **sep), None
        _, utility = mbr_select(hyps, seg_ids, weights, cfg, **sep)
        if not a.matrix:
            return utility, None
        return utility, pairwise_bleu(hyps, seg_ptr, cfg, pseudo_references=refs, pseudo_ptr=ref_ptr)[0]
    from ..metrics.chrf.cli import metric_options
    from ..metrics.chrf.mbr import aggregate_chrf, pairwise_chrf
    options = metric_options(a)
    if a.utility == "chrf++" and options["word_order"] == 0:  # chrF++'s word bigrams, unless N is given
        options["word_order"] = 2
    if a.aggregate:
        return aggregate_chrf(hyps, seg_ptr, refs, ref_ptr, weights=weights, **options), None
    result = pairwise_chrf(hyps, seg_ptr, refs, ref_ptr, weights=weights, matrix=a.matrix is not None, **options)
    return result.expected, (result.scores if a.matrix else None)


def _pair_groups(pairs):
    """Runs of consecutive segments with at most MAX_PAIRS_PER_CHUNK pairs (one segment at least):
    (first, end) segment indices."""
    import numpy as np

    from .. import settings
    ends = np.cumsum(pairs)
    start = 0
    while start < len(pairs):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + settings.MAX_PAIRS_PER_CHUNK, "right")))
        yield start, stop
        start = stop


@dataclass
class _Totals:
    """What the summary line needs, summed chunk by chunk."""

    segments: int = 0
    rows: int = 0
    utility: float = 0.0  # summed expected utility of the selected rows
    bleu: dict = field(default_factory=dict)  # name -> list of one-row BleuStats sums


def _chunk_utilities(a: argparse.Namespace, chunk, pseudo, matrix, seg0: int):
    """Each row's expected utility in one chunk of whole segments (float64[rows]); with --matrix,
    each group's pairs written to the ``matrix`` writer at once (``seg0``: the segments of the
    chunks before, so that the matrix's segment numbers count in the file)."""
    import numpy as np
    import pyarrow as pa

    from ..encode import hypotheses_array
    table, seg_ptr = chunk.table, chunk.seg_ptr
    hyps = hypotheses_array(table[a.hyp_col], chunk.row0)
    if pseudo is None:
        refs, ref_ptr, ref_rows = None, seg_ptr, chunk.row0 + seg_ptr[:-1]
        weights = _segment_weights(table, a.score_col, seg_ptr, a.temperature, "--score-col", chunk.row0)
    else:
        ptable, ref_ptr, ref_rows = pseudo.take(chunk.labels)
        refs = hypotheses_array(ptable[a.hyp_col])
        weights = _segment_weights(ptable, a.pseudo_score_col, ref_ptr, a.temperature, "--pseudo-score-col",
                                   int(ref_rows[0]) if len(ref_rows) else 0)
    k, r = np.diff(seg_ptr), np.diff(ref_ptr)
    utility = np.zeros(table.num_rows)
    for s0, s1 in _pair_groups(k * r):  # every utility counts K x R pairs at most
        h0, h1, r0, r1 = seg_ptr[s0], seg_ptr[s1], ref_ptr[s0], ref_ptr[s1]
        sub_ptr, sub_ref_ptr = seg_ptr[s0:s1 + 1] - h0, ref_ptr[s0:s1 + 1] - r0
        sub_refs = None if refs is None else refs.slice(r0, r1 - r0)
        w = None if weights is None else weights[r0:r1]
        utility[h0:h1], scores = _utilities(a, hyps.slice(h0, h1 - h0), sub_ptr, w, sub_refs,
                                            None if refs is None else sub_ref_ptr)
        if scores is not None:  # long form: each pair's segment (counted in the file) and rows
            kk, rr = k[s0:s1], r[s0:s1]
            seg = np.repeat(np.arange(s0, s1), kk * rr)
            within = np.arange(len(scores)) - np.repeat(np.cumsum(kk * rr) - kk * rr, kk * rr)
            cand, ref = np.divmod(within, np.maximum(rr, 1)[seg - s0])
            matrix.write_table(pa.table({
                "segment": pa.array(seg + seg0, pa.int64()),
                "candidate_row": pa.array(chunk.row0 + seg_ptr[seg] + cand, pa.int64()),
                "pseudo_reference_row": pa.array(ref_rows[seg] + ref, pa.int64()),
                "utility": pa.array(scores, pa.float64())}))
    return utility


def _cmd_mbr(a: argparse.Namespace) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import settings
    from ..batch.segments import InStep, read_segments
    from ..files.output import atomic_outputs, check_finite
    from ..files.readers import check_output_format
    from ..files.temporaries import temporary_directory
    from ..stats import segment_argmax

    _logging(a.quiet)
    given = [option for option, dest, default in a.chrf_options if getattr(a, dest) != default]
    if a.utility == "bleu" and given:
        raise InputError(f"{given[0]}: a chrF option, but --utility is bleu; add --utility chrf (or chrf++), or leave "
                         f"{given[0]} out")
    if a.aggregate and a.matrix:
        raise InputError("--matrix: the aggregated utilities compare each candidate with one aggregated "
                         "pseudo-reference; leave --aggregate out for the K x R matrix")
    if a.matrix and a.sort:  # the matrix's rows would number the sorted copies, not the files given
        raise InputError("--matrix: its candidate_row and pseudo_reference_row number the rows of the files as "
                         "given, which --sort reorders; sort the files by segment first, or leave --matrix out")
    weighted = a.pseudo_score_col if a.pseudo_refs else a.score_col  # the scores the weights come from
    if a.temperature != 1.0 and not weighted:  # nothing to soften: it would be ignored
        raise InputError("--temperature: softens the model scores the weights come from, --score-col (or "
                         "--pseudo-score-col with --pseudo-refs); give it, or leave --temperature out (uniform weights)")
    if (a.pseudo_score_col or a.pseudo_nbest_size) and not a.pseudo_refs:
        raise InputError("--pseudo-score-col, --pseudo-nbest-size: options of the pseudo-reference file; add "
                         "--pseudo-refs FILE")
    for path, option in ((a.output, "-o"), (a.matrix, "--matrix")):
        if path:
            check_output_format(path, "parquet", option, "name it .parquet (mbr writes parquet)")
    batch_bytes = a.batch_bytes or settings.BATCH_BYTES
    inputs = [a.input] + ([a.pseudo_refs] if a.pseudo_refs else [])
    seg_cols = _segment(a, Path(a.input))
    totals = _Totals()
    with temporary_directory() as tmp, ExitStack() as outputs:
        (tmp / "in").mkdir()
        src = _parquet(a.input, a.format, a.nbest_size, seg_cols, a, "mbr IN", tmp / "in")
        schema, chunks = read_segments(src, a.hyp_col, seg_cols, a.batch_size, batch_bytes, a.input,
                                       [a.score_col] if a.score_col else [])
        pseudo = None
        if a.pseudo_refs:
            (tmp / "pseudo").mkdir()
            pseudo_cols = tuple(a.seg_col.split(",")) if a.seg_col else seg_cols
            psrc = _parquet(a.pseudo_refs, None, a.pseudo_nbest_size or a.nbest_size, pseudo_cols, a,
                            "--pseudo-refs", tmp / "pseudo")
            _, pchunks = read_segments(psrc, a.hyp_col, pseudo_cols, a.batch_size, batch_bytes, a.pseudo_refs,
                                       [a.pseudo_score_col] if a.pseudo_score_col else [])
            pseudo = InStep(pchunks, a.pseudo_refs, a.input, "sort both by segment id (kbest-bleu mbr --sort does "
                            "it, in bounded memory)")
        out_schema = schema.append(pa.field("mbr_utility", pa.float64())).append(pa.field("mbr_selected", pa.bool_()))
        # the outputs are renamed into place together once both are written: a failure leaves neither
        wanted = [(path, option) for path, option in ((a.output, "-o"), (a.matrix, "--matrix")) if path]
        paths = dict(zip([option for _, option in wanted], outputs.enter_context(atomic_outputs(wanted, inputs))))
        writer = matrix = None
        if a.output:
            writer = outputs.enter_context(pq.ParquetWriter(paths["-o"], out_schema))
        if a.matrix:
            m_schema = pa.schema([(c, pa.float64() if c == "utility" else pa.int64()) for c in MATRIX_COLUMNS])
            matrix = outputs.enter_context(pq.ParquetWriter(paths["--matrix"], m_schema))
        for chunk in chunks:
            utility = _chunk_utilities(a, chunk, pseudo, matrix, totals.segments)
            chosen = segment_argmax(utility, chunk.seg_ptr)  # ties keep the lowest row
            selected = np.zeros(chunk.table.num_rows, bool)
            selected[chosen] = True
            added = pa.record_batch([pa.array(utility, pa.float64()), pa.array(selected)], ["mbr_utility", "mbr_selected"])
            check_finite(added, ["mbr_utility"], a.input, chunk.row0)  # never a NaN written (files.output)
            out = chunk.table.append_column("mbr_utility", added[0]).append_column("mbr_selected", added[1])
            if writer is not None:
                writer.write_table(out.take(pa.array(chosen)) if a.select else out)
            _tally(a, totals, chunk, chosen, utility)
        if pseudo is not None:
            pseudo.finish()
        if not totals.segments:  # inside the outputs' block: nothing is written (a mean over no list)
            raise InputError(f"{a.input}: no rows; expected K-best lists to choose from")
    if not a.quiet:  # beside a parquet written to standard output: on standard error
        out = sys.stderr if a.output == "-" else sys.stdout
        print(f"segments {totals.segments:,}  rows {totals.rows:,}  utility {a.utility}"
              f"{' (aggregated)' if a.aggregate else ''}  mean expected utility of the selected "
              f"{totals.utility / max(totals.segments, 1):.4f}", file=out)
        _report_bleu(a, totals, out)
    if a.output:
        log.info("wrote %s", a.output)
    return 0


def _tally(a: argparse.Namespace, totals: _Totals, chunk, chosen, utility) -> None:
    """The chunk's share of the summary: counts, the selection's utility and, with references in
    the input, the corpus BLEU statistics of the selection and of the first row's (or 1-best's)."""
    from ..stats import ngram_stats, segment_argmax
    totals.segments += len(chosen)
    totals.rows += chunk.table.num_rows
    totals.utility += float(utility[chosen].sum())
    if a.quiet or a.ref_col not in chunk.table.column_names or not len(chosen):
        return
    first = chunk.seg_ptr[:-1]
    if a.score_col:
        scores = chunk.table[a.score_col].to_numpy(zero_copy_only=False)
        first = segment_argmax(scores.astype(float), chunk.seg_ptr)
    hyps, refs, cfg = chunk.table[a.hyp_col], chunk.table[a.ref_col], config_from(a)
    for name, rows in (("MBR selection", chosen), ("1-best" if a.score_col else "first row", first)):
        totals.bleu.setdefault(name, []).append(ngram_stats(hyps.take(rows), refs.take(rows), None, cfg).sum(cfg))


def _report_bleu(a: argparse.Namespace, totals: _Totals, out) -> None:
    """Corpus BLEU of the MBR selection against the references, beside the first row's (or the
    model's 1-best's with --score-col)."""
    from ..bleu import corpus_score
    from ..stats import BleuStats
    for name, parts in totals.bleu.items():
        r = corpus_score(BleuStats.concat(parts).sum(), config_from(a))
        print(f"{name:14s} corpus BLEU {100 * r.score:6.2f}", file=out)


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
    p.add_argument("--pseudo-refs", type=reads("--pseudo-refs"), metavar="FILE",
                   help="a separate sample set as the pseudo-references (any format score reads; the same segments "
                        "in the same order as IN, the hypotheses in --hyp-col); default: each segment's candidates")
    p.add_argument("--pseudo-score-col", default=None, metavar="COL",
                   help="with --pseudo-refs: its model scores, weighting its samples by softmax(score / T) per segment")
    p.add_argument("--pseudo-nbest-size", type=positive_int, default=None, metavar="K",
                   help="with --pseudo-refs in text or OpenNMT formats: its lines per source (default --nbest-size)")
    p.add_argument("--sort", action="store_true",
                   help="stably sort IN (and --pseudo-refs) by the segment key first (external sort, bounded "
                        "memory): when a segment's rows are not contiguous, or the two files' orders differ")
    p.add_argument("--batch-size", type=positive_int, default=65536, help="rows per record batch (bounds memory)")
    p.add_argument("--batch-bytes", type=positive_int, default=None,
                   help="bytes of hypothesis text per record batch (bounds memory; default 16 MiB)")
    p.add_argument("--temperature", type=float_range(1e-6, 1e6, "a temperature from 1e-6 to 1e6"), default=1.0,
                   help="with --score-col: pseudo-references weighted by softmax(score / T) per segment (default 1)")
    p.add_argument("--format", default=None, help="the input's format (default: from its name and content)")
    p.add_argument("--nbest-size", type=positive_int, default=None, help="K lines per source (text, OpenNMT formats)")
    p.add_argument("--score-col", default=None, help="numeric column of model scores: weights the pseudo-references "
                                                     "(the candidates; with --pseudo-refs, only the report's 1-best)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    group = p.add_argument_group("chrF options (--utility chrf, chrf++)")
    from ..metrics.chrf.cli import add_score_options
    add_score_options(group)
    # (option, dest, default) of each chrF option: given with --utility bleu, it would be ignored
    p.set_defaults(chrf_options=[(x.option_strings[0], x.dest, x.default) for x in group._group_actions])
    columns_options(p)
    scoring_options(p)
    p.set_defaults(func=_cmd_mbr)
