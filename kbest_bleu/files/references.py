"""Where a batch job's references come from when they are not a column of the K-best table:
a table keyed by segment, or plain text files (one per reference stream); and the column
checks shared by every batch input."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from ..encode import key_labels, references_array
from ..errors import InputError
from .inputs import register_input

# the scored table's metadata key naming its segment columns (so that --sort and readers find them)
META_SEGMENT = b"kbest_bleu.segment"

__all__ = ["META_SEGMENT", "Columns", "ReferenceTable", "read_lines", "require_columns"]


@dataclass(frozen=True)
class Columns:
    """Column names of a K-best table (README, "Parquet schema").

    hypothesis : string column of hypotheses
    references : list<string> column, the references of the row's segment (ignored when the
        references come from a separate table or text files)
    segment : one or more columns whose values identify a segment; a segment's rows are contiguous
    score : optional model-score column; the summary's 1-best is then its argmax per segment
    """

    hypothesis: str = "hypothesis"
    references: str = "references"
    segment: tuple = ("segment_id",)
    score: Optional[str] = None


class ReferenceTable:
    """References kept apart from the hypotheses, keyed by segment: ``{key: [ref, ...]}``."""

    def __init__(self, keys: list, references: pa.Array, source: str):
        self.index = {k: i for i, k in enumerate(keys)}
        if len(self.index) != len(keys):
            raise InputError(f"{source}: a segment appears twice in the reference table; expected one row per segment")
        try:
            self.references = references_array(references)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
        self.source = source

    @classmethod
    def from_table(cls, table: pa.Table, columns: Columns, source: str) -> "ReferenceTable":
        require_columns(table.schema, list(columns.segment) + [columns.references], source, columns.references)
        keys = [table[c].combine_chunks() for c in columns.segment]
        return cls(key_labels(keys, np.arange(table.num_rows)), table[columns.references].combine_chunks(), source)

    @classmethod
    def from_text_files(cls, paths: Sequence[str], option: str = "--ref-file") -> "ReferenceTable":
        """One file per reference stream; line i holds the reference of segment i (0-based).
        ``option``: the command-line option that named the files, for messages."""
        streams = [read_lines(p, option) for p in paths]
        lengths = {len(s) for s in streams}
        if len(lengths) > 1:
            found = ", ".join(f"{p}: {len(s)} lines" for p, s in zip(paths, streams))
            raise InputError(f"reference files: expected the same number of lines in every file, found {found}")
        refs = pa.array([list(r) for r in zip(*streams)], pa.list_(pa.string()))
        return cls(list(range(len(refs))), refs, " + ".join(map(str, paths)))

    def lookup(self, labels: list, where: str) -> pa.Array:
        idx = [self.index.get(k, -1) for k in labels]
        if -1 in idx:
            missing = labels[idx.index(-1)]
            raise InputError(f"{where}: segment {missing!r} has no references in {self.source}; expected every "
                             "segment id of the hypotheses to appear in the reference table (0-based line "
                             "numbers for text files)")
        return pc.take(self.references, pa.array(idx, pa.int64()))


def read_lines(path: "str | os.PathLike", option: str = "input", strip: bool = True) -> list:
    """Lines of a UTF-8 text file, split on \\n only and each line's trailing whitespace removed,
    as sacrebleu's command line reads its files (``line.rstrip()``: it matters to chrF with
    whitespace; ``strip`` False: only a final \\r, for lines split further). A missing or
    unreadable file raises :class:`InputError` naming it and ``option`` (the command-line option
    or argument that named it)."""
    register_input(path, option)  # never an output of the running command
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        what = "not found" if isinstance(exc, FileNotFoundError) else f"cannot be read ({exc.strerror or exc})"
        raise InputError(f"{option} {path}: {what}; expected a readable UTF-8 text file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line} is not valid UTF-8 (byte {data[exc.start]:#04x} at offset "
                         f"{exc.start}); re-encode the file as UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip() for ln in lines] if strip else [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def require_columns(schema: pa.Schema, names: Iterable[str], source: str, references: str = "references") -> None:
    """Raise :class:`InputError` naming the first of ``names`` missing from ``schema`` and the option
    that chooses it; ``references``: the name of the references column (which may come apart)."""
    for name in names:
        if schema.names.count(name) > 1:  # get_field_index says -1 for a name that appears twice
            raise InputError(f"{source}: column {name!r} appears {schema.names.count(name)} times; expected one "
                             "column of that name (rename or drop the others)")
        if schema.get_field_index(name) < 0:
            hint = ("choose the column with --ref-col, or give the references apart with --ref-table (parquet) or "
                    "--ref-file (text, line i = segment i)" if name == references else
                    "choose the column with the matching option: --hyp-col, --seg-col, --score-col")
            raise InputError(f"{source}: column {name!r} not found; columns are {', '.join(schema.names) or '(none)'}; "
                             f"{hint}")
