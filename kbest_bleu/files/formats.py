"""The K-best formats of the MT toolkits (issue 37; docs/formats.md): their names, the rules that
tell them apart from a file's content, reading one as a stream of Arrow record batches (or into a
parquet file, in bounded memory), and writing a scored K-best table back in one of them.

The readers and writers live beside this module, one per family: :mod:`.fairseq`
(fairseq-generate), :mod:`.toolkit_text` (Marian n-best, OpenNMT-tf, OpenNMT-py, K lines per
source), :mod:`.json_kbest` (Sockeye JSON, nested JSON Lines); Moses/Joshua n-best text is read by
:mod:`.nbest`. Every table has ``segment_id``, ``rank`` (position in the list, from 0),
``hypothesis`` and, where the format has one, ``model_score`` (the model's score, higher is better;
null where absent or not finite) with ``model_score_text`` (as written), so ``--score-col
model_score`` picks the model's 1-best. Only the standard library is imported here at module
level: the command line's parser reads :data:`TOOL_FORMATS` without loading pyarrow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Optional, Sequence

__all__ = ["FIXED_K", "META_FORMAT", "READER_COLUMNS", "STREAMED", "TOOL_FORMATS", "WRITABLE", "classify", "detect",
           "format_of", "iter_batches", "read_table", "to_parquet", "write_format"]

TOOL_FORMATS = ("fairseq", "marian", "sockeye", "opennmt-tf", "opennmt-py", "nested")
# formats without an id on each line: K consecutive lines per source (--nbest-size K)
FIXED_K = ("text", "opennmt-tf", "opennmt-py")
# formats read line by line into record batches (bounded memory)
STREAMED = TOOL_FORMATS + ("text",)
# formats a scored table can be written in (plain text has no place for a score)
WRITABLE = ("fairseq", "marian", "nbest", "sockeye", "opennmt-tf", "opennmt-py", "nested")
# columns the readers produce; every other column of a scored table (bleu, bleu_s<n>, the metrics'
# columns, --stats, a CSV's own columns) is "added": the JSON formats write them into each object
READER_COLUMNS = frozenset({
    "segment_id", "rank", "hypothesis", "hypothesis_tok", "model_score", "model_score_text", "source",
    "references", "detokenized", "prelude", "extra_lines", "features", "feature_values", "alignment", "word_scores",
    "extra_fields", "record", "hyp_fields", "id"})
META_FORMAT = b"kbest_bleu.format"
# the keys the JSON writers put where they write the added columns: each hypothesis (nested), each line (Sockeye)
_JSON_KEYS = {"nested": frozenset({"text", "score"}),
              "sockeye": frozenset({"sentence_id", "translation", "translations", "score", "scores"})}
_SAMPLE_LINES, _SAMPLE_CHARS = 200, 1 << 16


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_int(text: str) -> bool:
    return text.strip().isdigit()


def _sample(path: "str | os.PathLike", compression: Optional[str]) -> list:
    """The first lines of a file (at most 200 or 64 Ki characters); [] when it cannot be read (the
    reader reports that with its own message)."""
    from ..errors import InputError
    from .kbest_io import text_lines

    lines, size = [], 0
    gen = text_lines(path, compression, strip_bom=True)  # as the toolkits' readers read them
    try:
        for line in gen:
            lines.append(line)
            size += len(line)
            if len(lines) >= _SAMPLE_LINES or size >= _SAMPLE_CHARS:
                break
    except (InputError, OSError):
        return []
    finally:
        gen.close()
    return lines


def classify(lines: Sequence[str]) -> Optional[str]:
    """The format the first lines of a file are in, or None when they fit none unambiguously.
    The rules (docs/formats.md, "Detection"), in order:

    1. the first non-blank line is a JSON object: with a ``hyps`` list, ``nested``; with
       ``translation`` and ``sentence_id`` (Sockeye writes both), ``sockeye``; else None (one row
       per hypothesis: ``jsonl``);
    2. a line ``H-<int><TAB><number>``: ``fairseq``;
    3. every line has `` ||| ``: when every first field is an integer, the n-best family: ``marian``
       if a line has more than 4 fields, a number last and no number 4th (Marian's optional fields
       come before the features, Moses' extra fields after the score), else ``nbest``; when every
       first field is a number with a point or an exponent, ``opennmt-tf``;
    4. every line has ``|||`` after an integer id (n-best without spaces): ``nbest``;
    5. every line ends with ``<TAB><number>``: ``opennmt-py``.
    """
    # an OpenNMT-tf line of an empty hypothesis whose trailing space was stripped ends " |||" (the reader takes it)
    body = [ln + " " if ln.endswith(" |||") else ln for ln in lines if ln.strip()]
    if not body:
        return None
    if body[0].lstrip().startswith("{"):
        try:
            obj = json.loads(body[0])
        except ValueError:
            return None
        if isinstance(obj, dict) and isinstance(obj.get("hyps"), list):
            return "nested"
        if isinstance(obj, dict) and "translation" in obj and "sentence_id" in obj:
            return "sockeye"
        return None
    for ln in body:
        parts = ln.split("\t", 2)
        if ln.startswith("H-") and len(parts) >= 2 and parts[0][2:].isdigit() and _is_float(parts[1]):
            return "fairseq"
    if all(" ||| " in ln for ln in body):
        split = [ln.split(" ||| ") for ln in body]
        if all(_is_int(f[0]) for f in split):
            if any(len(f) < 4 for f in split):
                return None
            marian = any(len(f) > 4 and not _is_float(f[3]) and _is_float(f[-1]) for f in split)
            return "marian" if marian else "nbest"
        if all(_is_float(f[0]) and not _is_int(f[0]) for f in split):
            return "opennmt-tf"
        return None
    if all("|||" in ln and _is_int(ln.split("|||", 1)[0]) for ln in body):
        return "nbest"
    if all("\t" in ln and _is_float(ln.rpartition("\t")[2]) for ln in body):
        return "opennmt-py"
    return None


def detect(path: "str | os.PathLike", compression: Optional[str] = None) -> Optional[str]:
    """The toolkit format of a file from its first lines (:func:`classify`), or None."""
    return classify(_sample(path, compression))


def iter_batches(path: "str | os.PathLike", fmt: str, compression: Optional[str] = None, *,
                 nbest_size: Optional[int] = None, hypothesis: str = "hypothesis", option: str = "input",
                 batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None) -> Iterator:
    """Record batches (pyarrow) of a K-best file in one of :data:`STREAMED`, in file order, each of
    at most ``batch_rows`` rows (default :data:`~kbest_bleu.settings.FORMAT_BATCH_ROWS`) and about
    ``batch_bytes`` characters of hypotheses (default :data:`~kbest_bleu.settings.BATCH_BYTES`);
    at least one (possibly empty) batch. ``nbest_size``: K for the formats of :data:`FIXED_K`.
    ``hypothesis`` names the hypothesis column of plain text (the others call it ``hypothesis``).
    Errors raise :class:`~kbest_bleu.errors.InputError` naming the file, the line and the fix."""
    from ..errors import InputError

    if fmt not in STREAMED:
        raise InputError(f"--format: expected one of {', '.join(STREAMED)} for a streamed K-best file, found {fmt!r}")
    if nbest_size is not None and fmt not in FIXED_K:
        raise InputError(f"--nbest-size: {fmt} output marks each list itself; --nbest-size is for "
                         f"{', '.join(FIXED_K)} (K lines per source)")
    limits = {"option": option, "batch_rows": batch_rows, "batch_bytes": batch_bytes}
    if fmt in FIXED_K:
        from .toolkit_text import read_fixed_k
        return _nonempty(read_fixed_k(path, fmt, nbest_size, compression, hypothesis=hypothesis, **limits))
    if fmt == "fairseq":
        from .fairseq import read_fairseq
        return _nonempty(read_fairseq(path, compression, **limits))
    if fmt == "marian":
        from .toolkit_text import read_marian
        return _nonempty(read_marian(path, compression, **limits))
    from .json_kbest import read_nested, read_sockeye
    return _nonempty((read_sockeye if fmt == "sockeye" else read_nested)(path, compression, **limits))


def _nonempty(batches: Iterator) -> Iterator:
    """The readers' batches without empty ones, but one (empty, with the schema) for an empty file."""
    last = None
    for last in batches:
        if last.num_rows:
            yield last
            last = False
    if last is not None and last is not False:
        yield last


def read_table(path: "str | os.PathLike", fmt: str, compression: Optional[str] = None, **kwargs):
    """The whole K-best table (a pyarrow Table) of a file in one of :data:`STREAMED`
    (:func:`iter_batches`' arguments); for files that fit in memory."""
    import pyarrow as pa

    batches = list(iter_batches(path, fmt, compression, **kwargs))
    return pa.Table.from_batches(batches, batches[0].schema)


def to_parquet(path: "str | os.PathLike", fmt: str, dst: "str | os.PathLike", compression: Optional[str] = None,
               **kwargs) -> int:
    """Write a K-best file in one of :data:`STREAMED` to the parquet file ``dst`` batch by batch
    (memory: one batch; :func:`iter_batches`' arguments); returns the number of rows. ``dst`` is a
    work file (no output guard): commands write through :func:`write_format` or the job's own."""
    from .kbest_io import write_batches
    return write_batches(iter_batches(path, fmt, compression, **kwargs), dst)


def write_format(src: "str | os.PathLike", dst: "str | os.PathLike", fmt: str, *, score_field: Optional[str] = None,
                 inputs: Sequence["str | os.PathLike"] = (), option: str = "output") -> int:
    """Write the parquet K-best table ``src`` (scored or not) as ``fmt`` (one of :data:`WRITABLE`)
    to ``dst``, atomically through the output guard (``inputs`` are refused as ``dst``; ``-`` is
    standard output), segment by segment in bounded memory. Returns the number of hypotheses.

    Formats with one score field per hypothesis (fairseq's ``H-``/``D-`` score, Marian's and
    Moses' last score, OpenNMT's) get ``score_field`` there: by default ``bleu`` when the table
    has it, else the model score; the model score read from the same format is written as it was
    read, any other value as Python's shortest exact repr. The JSON formats (``sockeye``,
    ``nested``) keep the model scores and add every column the readers do not make (``bleu``,
    ``bleu_s<n>``, the metrics', ``--stats``') to each hypothesis. A table read from ``fmt`` is
    written back with its raw fields (features, alignments, fairseq's ``S-``/``T-``/``P-`` lines,
    Sockeye's pass-through keys): ``model_score`` as the field gives the bytes read (JSON: the
    objects as ``json.dumps`` writes them).
    """
    import pyarrow.parquet as pq

    from ..errors import InputError
    from .output import atomic_output

    if fmt not in WRITABLE:
        hint = " (plain text has no place for a score; write parquet or nested)" if fmt == "text" else ""
        raise InputError(f"--to: expected one of parquet, {', '.join(WRITABLE)}, found {fmt!r}{hint}")
    from .references import META_SEGMENT

    schema = pq.read_schema(src)
    names = list(schema.names)
    meta = schema.metadata or {}
    # the lists as the table was scored (score --seg-col, kept in its metadata), else the readers' segment_id
    key = json.loads(meta[META_SEGMENT]) if META_SEGMENT in meta else ["segment_id"]
    for name in (*key, "hypothesis"):
        if name not in names:
            raise InputError(f"{src}: no {name!r} column, needed to write {fmt}; columns are {', '.join(names)}")
    raw = meta.get(META_FORMAT) == fmt.encode() or (fmt == "nbest" and b"kbest_bleu.nbest_separator" in meta)
    if fmt in ("sockeye", "nested"):
        if score_field not in (None, "model_score"):  # another would be ignored: the JSON formats keep every score
            raise InputError(f"--score-field {score_field}: {fmt} keeps the model scores as its score and adds every "
                             "scored column to each hypothesis (the field is chosen in the line formats: fairseq, "
                             "marian, nbest, opennmt-*); leave it out")
        from .json_kbest import write_nested, write_sockeye
        added = [c for c in names if c not in READER_COLUMNS]
        taken = sorted(set(added) & _JSON_KEYS[fmt])
        if taken:  # json.dumps would write the column's value over the hypotheses' own key
            raise InputError(f"{src}: column {taken[0]!r} has the name of {fmt}'s own key {taken[0]!r}, which it would "
                             f"overwrite; rename the column (or write parquet)")
        write, field = (write_sockeye if fmt == "sockeye" else write_nested), added
    else:
        field = score_field or ("bleu" if "bleu" in names else "model_score")
        if field not in names:
            raise InputError(f"--score-field: no column {field!r} in {src}; columns are {', '.join(names)}")
        write = _line_writer(fmt, src)
    with atomic_output(dst, inputs, option) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as out:
        return write(src, out, field, raw, key=key)


def _line_writer(fmt: str, src: "str | os.PathLike"):
    from . import toolkit_text as tt
    if fmt == "fairseq":
        from .fairseq import write_fairseq
        return write_fairseq
    if fmt == "nbest":
        separator = tt.moses_separator(src)
        return lambda path, out, field, raw, key: tt.write_moses(path, out, field, raw, key, separator)
    return {"marian": tt.write_marian, "opennmt-tf": tt.write_opennmt_tf, "opennmt-py": tt.write_opennmt_py}[fmt]


def format_of(path: "str | os.PathLike") -> Optional[str]:
    """The format a parquet K-best table was read from (stored in its metadata by the readers), or None."""
    import pyarrow.parquet as pq
    value = (pq.read_schema(Path(path)).metadata or {}).get(META_FORMAT)
    return value.decode() if value else None
