"""K-best inputs besides parquet, and making a table's segments contiguous.

Formats: CSV/TSV and JSON Lines through pyarrow's own readers, Moses/Joshua n-best text
(:func:`kbest_bleu.interop.nbest.read_nbest`), plain text (one hypothesis per line, line i =
segment i); each may be compressed (.gz, .bz2, .zst), decompressed by Arrow's compressed
streams. The format comes from the file name or is given. :func:`sort_segments` stably sorts a
parquet table by its segment key in bounded memory (external sort), for tables whose segments
are not contiguous (DESIGN.md section 2: the streaming job needs whole segments in one run).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import arrow_compute as pc
from ..arrays import to_numpy
from ..errors import InputError
from .formats import STREAMED, TOOL_FORMATS, detect
from .output import register_input, temporary_directory
from .references import META_SEGMENT, read_lines

__all__ = ["COMPRESSED", "FORMATS", "input_format", "kbest_to_parquet", "local_copy", "read_kbest", "read_text",
           "seekable", "segment_key", "sort_segments", "unreadable"]

FORMATS = ("parquet", "csv", "tsv", "jsonl", "nbest", "text") + TOOL_FORMATS  # the toolkits': files.formats
COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
               ".ndjson": "jsonl", ".json": "jsonl", ".nbest": "nbest", ".txt": "text"}


def input_format(path: "str | os.PathLike", fmt: Optional[str] = None) -> tuple[str, Optional[str]]:
    """(format, compression) of an input file: ``fmt`` if given, else from the extension after
    removing a compression suffix (``x.tsv.gz`` -> ("tsv", "gzip")), the content telling the
    toolkits' formats apart where the extension does not (none or an unknown one, .txt, .json(l),
    .nbest: :func:`kbest_bleu.files.formats.classify`). Compression is one of Arrow's codec names or None."""
    p = Path(path)
    compression = COMPRESSED.get(p.suffix.lower())
    stem = Path(p.stem) if compression else p
    if fmt is None:
        fmt = _EXTENSIONS.get(stem.suffix.lower())
        if fmt in (None, "text", "jsonl", "nbest"):
            fmt = detect(path, compression) or fmt
        if fmt is None:
            raise InputError(f"{path}: cannot tell the format from the extension {stem.suffix or '(none)'!r}; "
                             f"expected one of {', '.join(sorted(_EXTENSIONS))} (optionally + .gz/.bz2/.zst), "
                             f"or give --format {{{','.join(FORMATS)}}}")
    elif fmt not in FORMATS:
        raise InputError(f"--format: expected one of {', '.join(FORMATS)}, found {fmt!r}")
    if fmt == "parquet" and compression:
        raise InputError(f"{path}: a compressed parquet file; parquet compresses its own columns, "
                         "decompress the file first")
    return fmt, compression


@contextlib.contextmanager
def local_copy(path: "str | os.PathLike", option: str = "input") -> Iterator[Path]:
    """A plain, uncompressed file with the content of ``path``: the file itself, or a temporary
    decompressed copy for .gz/.bz2/.zst (or of stdin for ``-``), removed on exit. ``option``:
    the command-line option that named the file, for messages."""
    register_input(path, option)  # never an output of the running command
    compression = None if str(path) == "-" else COMPRESSED.get(Path(path).suffix.lower())
    if str(path) != "-" and compression is None:
        yield Path(path)
        return
    with temporary_directory() as tmp:  # removed on every exit, signals included
        name = "stdin" if str(path) == "-" else Path(path).stem
        out = Path(tmp) / name
        with open(out, "wb") as sink:
            if compression is None:
                shutil.copyfileobj(sys.stdin.buffer, sink)
            else:
                try:
                    with pa.input_stream(str(path), compression=compression) as src:
                        shutil.copyfileobj(src, sink)
                except FileNotFoundError:
                    raise InputError(f"{option} {path}: not found; expected a readable {compression} file") from None
                except (OSError, pa.ArrowInvalid) as exc:
                    raise InputError(f"{option} {path}: could not decompress it as {compression} ({exc}); expected a "
                                     "complete compressed file") from None
        yield out


def read_text(path: "str | os.PathLike", option: str = "input") -> list:
    """Lines of a UTF-8 text file (``-``: stdin), decompressed when its name ends in .gz/.bz2/.zst.
    A missing or unreadable file raises :class:`InputError` naming ``option`` (``--refs``, ``-i``...)."""
    with local_copy(path, option) as plain:
        try:
            return read_lines(plain, option)
        except InputError as exc:
            raise InputError(str(exc).replace(str(plain), str(path), 1)) from None


def read_kbest(path: "str | os.PathLike", fmt: Optional[str] = None, *, hypothesis: str = "hypothesis",
               references: str = "references", option: str = "input", nbest_size: Optional[int] = None) -> pa.Table:
    """A K-best table from a CSV/TSV, JSON Lines, n-best, plain text or toolkit file (see the
    module text; the toolkits' formats and ``nbest_size``: :mod:`kbest_bleu.files.formats`).

    CSV/TSV: a header line names the columns; TSV fields are not quoted (MT text is full of
    quotes). A string ``references`` column (one reference) becomes list<string>. Plain text:
    columns ``segment_id`` (int64, 0-based line number) and ``hypothesis``; references come from
    reference files. Returns the table as read (pyarrow's type inference for CSV and JSON).
    """
    fmt, compression = input_format(path, fmt)
    register_input(path, option)
    if fmt == "parquet":
        raise InputError(f"{path}: parquet is read as a stream by the job, not through read_kbest")
    if fmt in STREAMED and (fmt != "text" or nbest_size is not None):
        from .formats import read_table
        return read_table(path, fmt, compression, nbest_size=nbest_size, hypothesis=hypothesis, option=option)
    if nbest_size is not None:
        raise InputError(f"--nbest-size: {fmt} files mark each list themselves; --nbest-size is for plain text, "
                         "opennmt-tf and opennmt-py (K lines per source)")
    if fmt in ("nbest", "text"):
        with local_copy(path, option) as plain:
            if fmt == "text":
                lines = read_text(plain, option)
                return pa.table({"segment_id": pa.array(range(len(lines)), pa.int64()),
                                 hypothesis: pa.array(lines, pa.string())})
            from .nbest import read_nbest
            return read_nbest(plain, option=option)
    try:
        with pa.input_stream(str(path), compression=compression) as src:
            if fmt == "jsonl":
                from pyarrow import json as pj
                table = pj.read_json(src)
            else:
                from pyarrow import csv as pcsv
                parse = pcsv.ParseOptions(delimiter="\t", quote_char=False) if fmt == "tsv" else None
                # hypotheses and references stay strings even when they look like numbers
                convert = pcsv.ConvertOptions(column_types={hypothesis: pa.string(), references: pa.string()},
                                              strings_can_be_null=False)
                table = pcsv.read_csv(src, parse_options=parse, convert_options=convert)
    except FileNotFoundError:
        raise InputError(f"{option} {path}: not found; expected a {fmt} K-best table") from None
    except (pa.ArrowInvalid, OSError) as exc:
        shape = "one JSON object per line, one line per hypothesis" if fmt == "jsonl" else \
            "a header line and one row per hypothesis"
        raise unreadable(path, fmt, exc, compression, f"expected {shape}") from None
    if fmt == "tsv":
        _refuse_csv_quoting(table, path)
    i = table.schema.get_field_index(references)
    if i >= 0 and pa.types.is_string(table.schema.field(i).type):
        col = table[references].combine_chunks()
        table = table.set_column(i, references, pa.ListArray.from_arrays(
            pa.array(range(len(col) + 1), pa.int32()), col))
    return table


def seekable(path: "str | os.PathLike") -> bool:
    """Whether ``path`` is a regular file (or missing: its readers say so), not a pipe or device."""
    import stat
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def unreadable(path: "str | os.PathLike", fmt: str, exc: Exception, compression: Optional[str] = None,
               expected: str = "") -> InputError:
    """The one-line error for a file Arrow could not read: a named pipe (Arrow's readers seek: its
    "lseek failed" told nothing), the line and byte offset of the first invalid UTF-8 (Arrow names
    only the column), else Arrow's own message."""
    if str(path) != "-" and not seekable(path):
        return InputError(f"{path}: is a named pipe or device, which a {fmt} reader cannot seek in; write the data "
                          "to a regular file first (text and n-best inputs may be piped)")
    if "utf8" in str(exc).lower().replace("-", ""):
        where = _first_invalid_utf8(path, compression)
        if where is not None:
            line, offset, byte = where
            of = " of the decompressed text" if compression else ""
            return InputError(f"{path}: line {line} is not valid UTF-8 (byte {byte:#04x} at offset {offset}{of}); "
                              "re-encode the file as UTF-8")
    return InputError(f"{path}: not a readable {fmt} file ({str(exc).strip().splitlines()[0][:300]})"
                      + (f"; {expected}" if expected else ""))


def _first_invalid_utf8(path: "str | os.PathLike", compression: Optional[str], chunk: int = 1 << 20
                        ) -> Optional[tuple]:
    """(line from 1, byte offset, byte) of the first invalid UTF-8 in a file, read in chunks (a
    sequence cut by a chunk's end is carried into the next), or None."""
    done, lines, carry = 0, 1, b""
    try:
        with pa.input_stream(str(path), compression=compression) as src:
            while True:
                block = src.read(chunk)
                data = carry + block
                try:
                    data.decode("utf-8")
                    carry = b""
                except UnicodeDecodeError as exc:
                    if block and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
                        carry = data[exc.start:]
                        data = data[:exc.start]
                    else:
                        return lines + data[:exc.start].count(b"\n"), done + exc.start, data[exc.start]
                if not block:
                    return None
                lines += data.count(b"\n")
                done += len(data)
    except (OSError, pa.ArrowInvalid):
        return None


def _refuse_csv_quoting(table: pa.Table, path: "str | os.PathLike") -> None:
    """TSV fields are read as they are; a field in CSV quoting (quotes around it, doubled quotes
    inside: what pandas' ``to_csv(sep="\t")`` writes for text holding a quote) would be scored with
    its quotes, so such a file is refused with the fix."""
    for name, col in zip(table.column_names, table.columns):
        if not pa.types.is_string(col.type):
            continue
        quoted = pc.match_substring_regex(col.combine_chunks(), pattern=r'^"([^"]|"")*""([^"]|"")*"$')
        if quoted.true_count:  # strings_can_be_null=False: no nulls
            row = int(np.flatnonzero(to_numpy(quoted))[0])
            raise InputError(f"{path}: row {row} (from 0, header excluded), column {name!r}: {str(col[row])[:60]!r} is "
                             "CSV-quoted (quotes around the field, doubled quotes inside), as pandas writes TSV; "
                             "TSV fields are read as they are, so the quotes would be scored; write the table "
                             "as CSV (.csv, quotes parsed), JSON Lines or parquet, or as TSV without quoting "
                             "(pandas: quoting=csv.QUOTE_NONE)")


def kbest_to_parquet(path: "str | os.PathLike", dst: "str | os.PathLike", fmt: Optional[str] = None, *,
                     hypothesis: str = "hypothesis", references: str = "references", option: str = "input",
                     nbest_size: Optional[int] = None) -> None:
    """Write a K-best file (any format but parquet) to the parquet work file ``dst`` for the
    streaming job: the toolkits' formats and plain text line by line in bounded memory
    (:func:`kbest_bleu.files.formats.to_parquet`), the others through :func:`read_kbest`."""
    fmt, compression = input_format(path, fmt)
    if fmt in STREAMED:
        from .formats import to_parquet
        to_parquet(path, fmt, dst, compression, nbest_size=nbest_size, hypothesis=hypothesis, option=option)
    else:
        pq.write_table(read_kbest(path, fmt, hypothesis=hypothesis, references=references, option=option,
                                  nbest_size=nbest_size), dst)


def segment_key(path: "str | os.PathLike") -> Optional[tuple]:
    """The segment key columns stored in a parquet file's metadata by our writers, or None."""
    if not seekable(path):  # a named pipe read here would be empty for the job: it reports the pipe
        return None
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None  # the job reports unreadable files with its own message
    return tuple(json.loads(meta[META_SEGMENT])) if META_SEGMENT in meta else None


def sort_segments(src: "str | os.PathLike", dst: "str | os.PathLike", segment: Sequence[str], *,
                  bucket_rows: int = 1 << 20, batch_size: int = 65536) -> None:
    """Write the parquet table ``src`` to ``dst`` stably sorted by the ``segment`` columns
    (ascending; rows of one segment keep their order), so that every segment is one run.

    Memory is bounded by the key columns, two int64 per row and ``bucket_rows`` rows: pass 1
    reads only the keys and computes each row's position in the sorted order; pass 2 streams
    the table into buckets of consecutive output positions (temporary parquet files); pass 3
    sorts each bucket in memory and appends it to ``dst``.
    """
    register_input(src, "--sort")
    try:
        pf = pq.ParquetFile(src)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{src}: --sort: not a readable parquet file ({exc}); expected a complete parquet "
                         "file") from None
    missing = [c for c in segment if c not in pf.schema_arrow.names]
    if missing:
        raise InputError(f"{src}: --sort: no segment column {missing[0]!r}; columns are "
                         f"{', '.join(pf.schema_arrow.names)}; choose the key with --seg-col")
    keys = pf.read(columns=list(segment))
    order = to_numpy(pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in segment]))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    n_buckets = max(1, -(-len(order) // bucket_rows))
    schema = pf.schema_arrow
    with temporary_directory("kbest_bleu-sort-", Path(dst).parent) as tmp:
        tagged = schema.append(pa.field("__position", pa.int64()))
        writers = [None] * n_buckets
        row0 = 0
        for batch in pf.iter_batches(batch_size=batch_size):
            pos = position[row0:row0 + batch.num_rows]
            row0 += batch.num_rows
            bucket = pos // bucket_rows
            with_pos = pa.RecordBatch.from_arrays(batch.columns + [pa.array(pos)], schema=tagged)
            for b in np.unique(bucket):
                if writers[b] is None:
                    writers[b] = pq.ParquetWriter(Path(tmp) / f"{b}.parquet", tagged, compression="lz4")
                writers[b].write_batch(pc.filter(with_pos, pa.array(bucket == b)))
        for w in writers:
            if w is not None:
                w.close()
        with pq.ParquetWriter(dst, schema, compression="zstd") as out:
            for b, w in enumerate(writers):
                if w is not None:
                    part = pq.read_table(Path(tmp) / f"{b}.parquet")
                    part = pc.take(part, pc.sort_indices(part["__position"]))
                    out.write_table(part.drop_columns(["__position"]))
