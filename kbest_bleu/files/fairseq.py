"""fairseq-generate output (and fairseq-interactive's) as a K-best table, and back.

The layout follows ``fairseq_cli/generate.py`` (facebookresearch/fairseq, the loop "Process top
predictions", ~lines 230-300 of the 2021-2023 versions): per sample, ``S-{id}\\t{source}`` and
``T-{id}\\t{target}``, then for each of the ``--nbest`` hypotheses ``H-{id}\\t{score}\\t{tokens}``
(after BPE removal), ``D-{id}\\t{score}\\t{detokenized}``, ``P-{id}\\t{positional scores}`` and,
with their options, ``A-``, ``I-`` and ``E-{id}_{step}`` lines. The score is
``hypo["score"] / math.log(2)``, printed with ``str.format`` (Python's repr of a float): a log
probability in base 2, higher is better. Lines of one id are written together; ids follow the
batches' order, not the file's. Lines that do not start with ``<capital letter>-<id>\\t`` (fairseq's
log lines when stderr is merged, the final ``Generate test with beam=...`` line) are skipped.

Columns: ``segment_id`` (the sample id), ``rank``, ``hypothesis`` (the ``D-`` text, the one
fairseq's own ``--scoring sacrebleu`` scores; the ``H-`` text where there is no ``D-`` line, as in
fairseq before 0.9), ``hypothesis_tok`` (the ``H-`` text), ``model_score`` / ``model_score_text``,
``source`` (``S-``) and ``references`` (``[T-]``) where the first sample has them, ``detokenized``
(a ``D-`` line was there), ``prelude`` (a sample's lines before its first ``H-``, on its first
row) and ``extra_lines`` (the lines after each hypothesis' ``H-``/``D-``), which make the file
written back the same bytes.
"""

from __future__ import annotations

import os
import re
from typing import Iterator, Optional, Sequence, TextIO

import pyarrow as pa

from ..errors import InputError
from .kbest_io import (BOOL, FLOAT, INT, STRING, STRINGS, RowBatches, field_text, parse_float, score_text, segments,
                       text_lines)

__all__ = ["read_fairseq", "write_fairseq"]

META = {b"kbest_bleu.format": b"fairseq"}


# a fairseq line: kind letter, sample id (E-{id}_{step} lines count for their sample), tab
_LINE = re.compile(r"([A-Z])-([0-9]+)(?:_[0-9]+)?\t")


def read_fairseq(path: "str | os.PathLike", compression: Optional[str] = None, *, option: str = "input",
                 batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of the hypotheses of a fairseq-generate output file, in file order (see the
    module text for the columns). Memory: one batch and one sample's lines."""
    rows: Optional[RowBatches] = None
    seen: set = set()
    current, prelude, pending = None, [], None
    source = target = None
    rank = 0

    def emit(hyp: dict) -> None:
        v = rows.values
        v["segment_id"].append(current)
        v["rank"].append(rank)
        v["hypothesis"].append(hyp["text"])
        v["hypothesis_tok"].append(hyp["tok"])
        v["model_score"].append(hyp["score"])
        v["model_score_text"].append(hyp["score_text"])
        if "source" in v:
            v["source"].append(source)
        if "references" in v:
            v["references"].append([target])
        v["detokenized"].append(hyp["detok"])
        v["prelude"].append("\n".join(prelude) if rank == 0 else None)
        v["extra_lines"].append("\n".join(hyp["extra"]) if hyp["extra"] else None)
        rows.add_text(len(hyp["text"]))

    n_lines = 0
    for number, line in enumerate(text_lines(path, compression, option, "fairseq-generate output", strip_bom=True), 1):
        n_lines = number
        match = _LINE.match(line)
        if match is None:
            continue
        kind, sid, rest = match[1], int(match[2]), line[match.end():]
        if sid >= 1 << 63:
            raise InputError(f"{path}: line {number}: sample id {match[2][:30]} does not fit a 64-bit integer; "
                             "expected fairseq's sentence numbers")
        if sid != current:
            if pending is not None:
                emit(pending)
                pending = None
            if sid in seen:
                raise InputError(f"{path}: line {number}: sample {sid} again after other samples; expected each "
                                 "sample's lines together, as fairseq-generate writes them (files concatenated? "
                                 "score them one by one)")
            seen.add(sid)
            current, prelude, rank, source, target = sid, [], 0, None, None
        if kind in "HD":
            fields = rest.split("\t", 1)
            try:
                score = parse_float(fields[0])
            except ValueError:
                raise InputError(f"{path}: line {number}: expected '{kind}-{sid}<TAB>score<TAB>text', found the score "
                                 f"{fields[0][:40]!r}") from None
            text = fields[1] if len(fields) > 1 else ""
        if kind == "H":
            if pending is not None:
                emit(pending)
                rank += 1
            if rows is None:  # the first sample decides the optional columns
                columns = [("segment_id", INT), ("rank", INT), ("hypothesis", STRING), ("hypothesis_tok", STRING),
                           ("model_score", FLOAT), ("model_score_text", STRING)]
                columns += [("source", STRING)] if source is not None else []
                columns += [("references", STRINGS)] if target is not None else []
                columns += [("detokenized", BOOL), ("prelude", STRING), ("extra_lines", STRING)]
                rows = RowBatches(columns, META, batch_rows, batch_bytes)
            elif ("references" in rows.values) != (target is not None) and rank == 0:
                raise InputError(f"{path}: line {number}: sample {sid} " + (
                    "has no T- (target) line but the first sample has one; expected references for every sample or "
                    "for none (give them with -r then)" if target is None else
                    "has a T- (target) line but the first sample has none; expected references for every sample or "
                    "for none"))
            pending = {"text": text, "tok": text, "score": score, "score_text": fields[0], "detok": False, "extra": []}
            while rows.full():  # rows are added at H- lines (and at a sample's end): checked here
                yield rows.take()
        elif kind == "D" and pending is not None and not pending["detok"] and not pending["extra"]:
            pending["text"], pending["detok"] = text, True
        elif pending is not None:  # P-, A-, I-, E- lines: kept for the file written back
            pending["extra"].append(line)
        elif kind == "D":
            raise InputError(f"{path}: line {number}: a D- line before any H- line of sample {sid}; expected "
                             "fairseq-generate's order (H-, then D-, then P-)")
        else:
            prelude.append(line)
            if kind == "S":
                source = rest
            elif kind == "T":
                target = rest
    if pending is not None:
        emit(pending)
    if rows is None and n_lines:  # lines, but no H- line: another format (a wrong --format), or a log alone
        raise InputError(f"{path}: no H- (hypothesis) line in its {n_lines} line(s); expected fairseq-generate "
                         "output (S-/T-/H-/D- lines); is --format right?")
    if rows is None:  # an empty file: no hypothesis at all
        rows = RowBatches([("segment_id", INT), ("rank", INT), ("hypothesis", STRING), ("hypothesis_tok", STRING),
                           ("model_score", FLOAT), ("model_score_text", STRING), ("detokenized", BOOL),
                           ("prelude", STRING), ("extra_lines", STRING)], META)
    yield rows.take()


COLUMNS = ("hypothesis", "hypothesis_tok", "model_score", "model_score_text", "source", "references",
           "detokenized", "prelude", "extra_lines")


def write_fairseq(path: "str | os.PathLike", out: TextIO, score_field: str, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """Write the parquet K-best table ``path`` as fairseq-generate output to ``out``: the ``H-``
    and ``D-`` score fields hold ``score_field``; ``raw``: the table was read from fairseq output
    (its raw lines and score texts are written as read). Returns the rows written."""
    n = 0
    for segment, rows in segments(path, (*COLUMNS, score_field), key):
        if not isinstance(segment, int):
            raise InputError(f"{path}: fairseq output needs integer sample ids in segment_id, found {segment!r}")
        if rows.get("prelude") and rows["prelude"][0] is not None:
            if rows["prelude"][0]:
                out.write(rows["prelude"][0] + "\n")
        else:  # a table from elsewhere: S- and T- from its columns
            if rows.get("source") and rows["source"][0] is not None:
                out.write(f"S-{segment}\t{field_text(rows['source'][0], 'source', segment, 0)}\n")
            if rows.get("references") and rows["references"][0]:
                out.write(f"T-{segment}\t{field_text(rows['references'][0][0], 'references', segment, 0)}\n")
        for i, hyp in enumerate(rows["hypothesis"]):
            score = score_text(rows, score_field, i, segment, raw)
            hyp = field_text(hyp, "hypothesis", segment, i)  # a line break would cut the H-/D- line
            tok = field_text(rows["hypothesis_tok"][i], "hypothesis_tok", segment, i) if rows.get("hypothesis_tok") \
                else hyp
            out.write(f"H-{segment}\t{score}\t{tok}\n")
            if not rows.get("detokenized") or rows["detokenized"][i]:
                out.write(f"D-{segment}\t{score}\t{hyp}\n")
            if rows.get("extra_lines") and rows["extra_lines"][i] is not None:
                out.write(rows["extra_lines"][i] + "\n")
        n += len(rows["hypothesis"])
    return n
