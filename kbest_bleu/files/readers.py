"""K-best inputs besides parquet.

Formats: CSV/TSV and JSON Lines through pyarrow's streaming readers, block by block, Moses/Joshua
n-best text (:mod:`kbest_bleu.files.nbest`), plain text (one hypothesis per line, line i = segment
i) and the toolkits' formats line by line (:mod:`kbest_bleu.files.formats`); each may be compressed
(.gz, .bz2, .zst), decompressed by Arrow's compressed streams. The format comes from the file name
or is given; every format but parquet reaches the job as a parquet work file written batch by
batch (:func:`kbest_to_parquet`: memory holds a batch, not the file). Making a table's segments
contiguous is :mod:`kbest_bleu.files.sorting`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

from .. import arrow_compute as pc
from .. import settings
from ..arrays import from_numpy, to_numpy
from ..errors import InputError
from .formats import STREAMED, TOOL_FORMATS, detect, iter_batches
from .inputs import register_input
from .kbest_io import text_lines, write_batches
from .temporaries import temporary_directory
from .references import read_lines

__all__ = ["COMPRESSED", "FORMATS", "input_format", "iter_kbest", "kbest_to_parquet", "local_copy", "read_kbest",
           "read_text", "seekable", "unreadable"]

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
    if fmt is None and p.is_dir():  # before the extension's message, which would not say why
        raise InputError(f"{path}: is a directory; expected a file (score --engine spark reads a directory of "
                         "parquet files)")
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


def check_output_format(path: "str | os.PathLike", fmt: str, option: str, hint: str) -> None:
    """Refuse an output named for another format than ``fmt``, the one it is written in: a
    compression suffix (outputs are written uncompressed), or an extension that says another table
    format (``-o x.csv`` for parquet). The toolkits' text formats share .txt/.json(l)/.nbest names
    (content tells them apart), so these take any of them; ``fmt`` "text" (a layout of its own) any
    name but parquet's; ``-`` and devices have no format name.
    ``hint``: how to get the format the name says."""
    text = os.fspath(path)
    p = Path(text)
    if text == "-" or (p.exists() and not p.is_file()):
        return
    if p.suffix.lower() in COMPRESSED:
        raise InputError(f"{option} {text!r}: a compressed file's name, but the output is written uncompressed "
                         f"({fmt}); leave {p.suffix!r} out (and compress the file afterwards)")
    said = _EXTENSIONS.get(p.suffix.lower())
    tables = ("parquet", "csv", "tsv")
    if fmt == "text":  # text in a layout of its own (Moses' statistics, a paraphrase table): parquet is the other
        clash = said == "parquet"
    else:
        clash = said is not None and said != fmt and (said in tables or fmt in tables)
    if not clash:
        return
    raise InputError(f"{option} {text!r}: the name says {said}, but the output is {fmt}; {hint}")


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


def read_text(path: "str | os.PathLike", option: str = "input", strip: bool = True) -> list:
    """Lines of a UTF-8 text file (``-``: stdin), decompressed when its name ends in .gz/.bz2/.zst,
    as :func:`~kbest_bleu.files.references.read_lines` splits them (``strip``). A missing or
    unreadable file raises :class:`InputError` naming ``option`` (``--refs``, ``-i``...)."""
    with local_copy(path, option) as plain:
        try:
            return read_lines(plain, option, strip)
        except InputError as exc:
            raise InputError(str(exc).replace(str(plain), str(path), 1)) from None


def iter_kbest(path: "str | os.PathLike", fmt: Optional[str] = None, *, hypothesis: str = "hypothesis",
               references: str = "references", option: str = "input", nbest_size: Optional[int] = None,
               block_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of a K-best file in any format but parquet and n-best text (see the module
    text), in file order, read as they are consumed: memory holds a few blocks, not the file.

    CSV/TSV and JSON Lines go through Arrow's streaming readers in blocks of ``block_bytes``
    (default :func:`~kbest_bleu.settings.text_block_bytes`): a row must fit in one block, and the
    first block decides each column's type (a later value of another type is refused with the
    column's name). CSV/TSV: a header line names the columns; ``hypothesis`` and ``references``
    are strings even where they look like numbers; TSV fields are not quoted (MT text is full of
    quotes; a CSV-quoted field is refused). A string ``references`` column (one reference) becomes
    list<string>. Plain text: ``segment_id`` (the line number from 0) and the hypothesis; the
    toolkits' formats and ``nbest_size``: :mod:`kbest_bleu.files.formats`. Errors raise
    :class:`InputError` naming the file, the row or line and the fix.
    """
    fmt, compression = input_format(path, fmt)
    register_input(path, option)
    if fmt in ("parquet", "nbest"):
        raise InputError(f"{path}: {fmt} is read by {'the job' if fmt == 'parquet' else 'files.nbest'}, not "
                         "through iter_kbest")
    if fmt not in STREAMED:
        _no_nbest_size(fmt, nbest_size)
    else:
        return iter_batches(path, fmt, compression, nbest_size=nbest_size, hypothesis=hypothesis, option=option)
    block = block_bytes or settings.text_block_bytes()
    return _arrow_batches(path, fmt, compression, hypothesis, references, option, block)


def read_kbest(path: "str | os.PathLike", fmt: Optional[str] = None, *, hypothesis: str = "hypothesis",
               references: str = "references", option: str = "input", nbest_size: Optional[int] = None,
               block_bytes: Optional[int] = None) -> pa.Table:
    """The whole K-best table of a file in any format but parquet (:func:`iter_kbest`'s batches,
    n-best text through :func:`kbest_bleu.files.nbest.read_nbest`); for files that fit in memory."""
    fmt, compression = input_format(path, fmt)
    if fmt == "nbest":
        from .nbest import read_nbest
        with _nbest_file(path, compression, option, nbest_size) as (plain, codec):
            return read_nbest(plain, option=option, compression=codec)
    batches = list(iter_kbest(path, fmt, hypothesis=hypothesis, references=references, option=option,
                              nbest_size=nbest_size, block_bytes=block_bytes))
    return pa.Table.from_batches(batches, batches[0].schema)


def kbest_to_parquet(path: "str | os.PathLike", dst: "str | os.PathLike", fmt: Optional[str] = None, *,
                     hypothesis: str = "hypothesis", references: str = "references", option: str = "input",
                     nbest_size: Optional[int] = None, block_bytes: Optional[int] = None) -> int:
    """Write a K-best file (any format but parquet) to the parquet work file ``dst`` for the
    streaming job, batch by batch as it is read (:func:`iter_kbest`; n-best text:
    :func:`kbest_bleu.files.nbest.nbest_to_parquet`); returns the number of rows."""
    fmt, compression = input_format(path, fmt)
    if fmt == "nbest":
        from .nbest import nbest_to_parquet
        with _nbest_file(path, compression, option, nbest_size) as (plain, codec):
            return nbest_to_parquet(plain, dst, codec, option=option)
    return write_batches(iter_kbest(path, fmt, hypothesis=hypothesis, references=references, option=option,
                                    nbest_size=nbest_size, block_bytes=block_bytes), dst)


@contextlib.contextmanager
def _nbest_file(path: "str | os.PathLike", compression: Optional[str], option: str,
                nbest_size: Optional[int]) -> Iterator[tuple]:
    """(file, compression) as :class:`kbest_bleu.files.nbest.NbestBatches` reads n-best text: the
    file itself (decompressed as it is read), or standard input through a local copy."""
    _no_nbest_size("nbest", nbest_size)
    register_input(path, option)  # never an output of the running command
    if str(path) == "-":
        with local_copy(path, option) as plain:
            yield plain, None
    else:
        yield path, compression


def _no_nbest_size(fmt: str, nbest_size: Optional[int]) -> None:
    if nbest_size is not None:
        raise InputError(f"--nbest-size: {fmt} files mark each list themselves; --nbest-size is for plain text, "
                         "opennmt-tf and opennmt-py (K lines per source)")


def _arrow_batches(path: "str | os.PathLike", fmt: str, compression: Optional[str], hypothesis: str,
                   references: str, option: str, block: int) -> Iterator[pa.RecordBatch]:
    """CSV/TSV or JSON Lines through Arrow's streaming readers (:func:`iter_kbest`), batch by batch,
    with the row numbers of the messages counted across batches."""
    from pyarrow import csv as pcsv
    from pyarrow import json as pj

    try:
        src = pa.input_stream(str(path), compression=compression)
    except FileNotFoundError:
        raise InputError(f"{option} {path}: not found; expected a {fmt} K-best table") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise unreadable(path, fmt, exc, compression, _SHAPE[fmt == "jsonl"]) from None
    row0, reader = 0, None
    with src:
        try:
            if fmt == "jsonl":
                reader = pj.open_json(src, read_options=pj.ReadOptions(block_size=block))
            else:
                parse = pcsv.ParseOptions(delimiter="\t", quote_char=False) if fmt == "tsv" else None
                # hypotheses and references stay strings even when they look like numbers
                convert = pcsv.ConvertOptions(column_types={hypothesis: pa.string(), references: pa.string()},
                                              strings_can_be_null=False)
                reader = pcsv.open_csv(src, read_options=pcsv.ReadOptions(block_size=block), parse_options=parse,
                                       convert_options=convert)
            try:  # Arrow takes any bytes as a column name (a header field, a JSON key); decoding them tells
                _ = reader.schema.names
            except UnicodeDecodeError as exc:
                raise unreadable(path, fmt, exc, compression) from None
            for batch in reader:
                if fmt == "tsv":
                    _refuse_csv_quoting(batch, path, row0)
                elif fmt == "jsonl":
                    batch.validate(full=True)  # Arrow's JSON parser takes invalid UTF-8 into strings
                row0 += batch.num_rows
                yield _references_list(batch, references)
        except (pa.ArrowInvalid, OSError) as exc:
            raise _stream_error(path, fmt, exc, compression, row0, block, reader) from None
        if row0 == 0:  # a header line alone (CSV), or no rows: the columns, no row
            yield _references_list(pa.RecordBatch.from_pylist([], schema=reader.schema), references)


_SHAPE = {True: "expected one JSON object per line, one line per hypothesis",
          False: "expected a header line and one row per hypothesis"}


def _references_list(batch: pa.RecordBatch, references: str) -> pa.RecordBatch:
    """``batch`` with a string ``references`` column (one reference per row) as list<string>."""
    i = batch.schema.get_field_index(references)
    if i < 0 or not pa.types.is_string(batch.schema.field(i).type):
        return batch
    col = batch.column(i)
    lists = pa.ListArray.from_arrays(from_numpy(np.arange(len(col) + 1, dtype=np.int32)), col)
    return batch.set_column(i, pa.field(references, lists.type), lists)


def _stream_error(path: "str | os.PathLike", fmt: str, exc: Exception, compression: Optional[str], row0: int,
                  block: int, reader) -> InputError:
    """The one-line error of a CSV/TSV or JSON Lines file that stopped Arrow's streaming reader
    after ``row0`` rows: a row longer than the block, a value whose type is not its column's
    (the first block decides the types: ``reader.schema``), else :func:`unreadable`'s."""
    said = str(exc)
    if "straddl" in said:
        where = _long_line(path, compression, block)
        at = (f"line {where[0]} (byte offset {where[1]}{' of the decompressed text' if compression else ''}) holds "
              f"{where[2]:,} bytes" if where else f"a row after row {row0} (from 0) is longer than that")
        return InputError(f"{path}: {at}, more than the {block:,}-byte blocks the {fmt} reader parses; raise the "
                          "block with --block-bytes N or KBEST_BLEU_BLOCK_BYTES=N (bytes), or convert the table to "
                          "parquet (rows of more than MAX_ROW_BYTES, 4 MiB of text, are refused by the job anyway)")
    fields = re.search(r"CSV parse error: Expected (\d+) columns, got (\d+): (.*)", said)
    if fields is not None:  # Arrow quotes the row (cut short), not its line: found by a scan of the file
        want, got, text = fields.groups()
        text = text[:-4] if text.endswith(" ...") else text
        line = next((n for n, ln in enumerate(text_lines(path, compression), 1) if text and ln.startswith(text)), None)
        at = f"line {line}" if line is not None else f"a row after row {row0} (from 0)"
        return InputError(f"{path}: {at} has {got} fields where the header has {want}; "
                          + ("quote a field that holds a comma (\"...\")" if fmt == "csv" else
                             "a TSV field cannot hold a tab") + ", or fix the row")
    found = _mistyped(path, fmt, compression, said, row0, reader.schema) if reader is not None else None
    if found is None:
        return unreadable(path, fmt, exc, compression, _SHAPE[fmt == "jsonl"])
    row, line, name, value = found
    first = f"read as {reader.schema.field(name).type}" if name in reader.schema.names else "absent"
    return InputError(f"{path}: row {row} (from 0; line {line}), {'column' if first[0] == 'r' else 'key'} {name!r}: "
                      f"{value[:60]!r} does not fit the column, {first} in the first {block:,}-byte block, which "
                      "decides the types: give the column one type in every row (1.0 rather than 1 throughout a "
                      "column of decimals; text quoted in JSON; every key in the first rows, null where it has no "
                      "value), or convert the table to parquet with the types you mean")


def _mistyped(path: "str | os.PathLike", fmt: str, compression: Optional[str], said: str, row0: int,
              schema: pa.Schema) -> Optional[tuple]:
    """(row, line, column, value as text) of the first row from ``row0`` on whose value does not fit
    its column's type in ``schema``, or None. CSV: the column and value Arrow names ("In CSV column
    #2: CSV conversion error to int64: invalid value 'x'"); JSON: any value of another kind, or a
    key the first block did not have (Arrow names neither the row nor, for 0.5 in an int64
    column, the column)."""
    import csv
    import re

    if fmt == "jsonl":
        def test(record):
            if isinstance(record, dict):
                for key, value in record.items():
                    i = schema.get_field_index(key)
                    if i < 0 or not _fits(value, schema.field(i).type):
                        return key, json.dumps(value, ensure_ascii=False)
            return None
    else:
        # Arrow adds "Row #N: " when it reads serially (one CPU in its pool), not when in parallel
        named = re.search(r"CSV column #(\d+): (?:Row #\d+: )?CSV conversion error to \S+: invalid value '(.*)'$",
                          said, re.S)
        if named is None or int(named.group(1)) >= len(schema):
            return None
        column, bad = int(named.group(1)), named.group(2)

        def test(record):
            return (schema.names[column], bad) if len(record) > column and record[column] == bad else None
    lines = enumerate(text_lines(path, compression), 1)
    if fmt == "jsonl":
        records = ((no, json.loads(line)) for no, line in lines if line.strip())
    else:
        rows = csv.reader((line for _, line in lines), **({"delimiter": "\t", "quoting": csv.QUOTE_NONE}
                                                          if fmt == "tsv" else {}))
        next(rows, None)  # the header
        records = ((rows.line_num, record) for record in rows)
    try:
        for row, (no, record) in enumerate(records):
            hit = test(record) if row >= row0 else None
            if hit is not None:
                return row, no, hit[0], hit[1]
    except (ValueError, csv.Error, InputError):
        return None
    return None


def _fits(value: object, typ: pa.DataType) -> bool:
    """Whether a JSON value fits an Arrow type inferred by Arrow's JSON reader (null fits any)."""
    if value is None:
        return True
    if pa.types.is_boolean(typ) or isinstance(value, bool):
        return pa.types.is_boolean(typ) and isinstance(value, bool)
    if pa.types.is_integer(typ):
        return isinstance(value, int)
    if pa.types.is_floating(typ):
        return isinstance(value, (int, float))
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_timestamp(typ):
        return isinstance(value, str)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return isinstance(value, list) and all(_fits(v, typ.value_type) for v in value)
    if pa.types.is_struct(typ):
        names = [typ.field(i).name for i in range(typ.num_fields)]
        return isinstance(value, dict) and all(k in names and _fits(v, typ.field(names.index(k)).type)
                                               for k, v in value.items())
    return not pa.types.is_null(typ)


def _long_line(path: "str | os.PathLike", compression: Optional[str], limit: int, chunk: int = 1 << 20
               ) -> Optional[tuple]:
    """(line from 1, byte offset, length) of the first line of a file longer than ``limit``
    bytes, read in chunks, or None."""
    line, start, done = 1, 0, 0
    try:
        with pa.input_stream(str(path), compression=compression) as src:
            while True:
                data = src.read(chunk)
                if not data:
                    return (line, start, done - start) if done - start > limit else None
                at = data.find(b"\n")
                while at >= 0:
                    if done + at - start > limit:
                        return line, start, done + at - start
                    line, start = line + 1, done + at + 1
                    at = data.find(b"\n", at + 1)
                done += len(data)
    except (OSError, pa.ArrowInvalid):
        return None


def seekable(path: "str | os.PathLike") -> bool:
    """Whether ``path`` is a regular file (or missing: its readers say so), not a pipe or device."""
    import stat
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def unreadable(path: "str | os.PathLike", fmt: str, exc: Exception, compression: Optional[str] = None,
               expected: str = "") -> InputError:
    """The one-line error for a file Arrow could not read: a directory, a named pipe (Arrow's
    readers seek: its "lseek failed" told nothing), the line and byte offset of the first invalid
    UTF-8 (Arrow names only the column), else Arrow's own message."""
    if str(path) != "-" and os.path.isdir(path):  # not a pipe, as seekable() alone would say
        return InputError(f"{path}: is a directory; expected a {fmt} file")
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


def _refuse_csv_quoting(batch: pa.RecordBatch, path: "str | os.PathLike", row0: int = 0) -> None:
    """TSV fields are read as they are; a field in CSV quoting (quotes around it, doubled quotes
    inside: what pandas' ``to_csv(sep="\t")`` writes for text holding a quote) would be scored with
    its quotes, so such a file is refused with the fix. ``row0``: the rows of the earlier batches."""
    for name, col in zip(batch.schema.names, batch.columns):
        if not pa.types.is_string(col.type):
            continue
        quoted = pc.match_substring_regex(col, pattern=r'^"([^"]|"")*""([^"]|"")*"$')
        if quoted.true_count:  # strings_can_be_null=False: no nulls
            row = int(np.flatnonzero(to_numpy(quoted))[0])
            raise InputError(f"{path}: row {row0 + row} (from 0, header excluded), column {name!r}: "
                             f"{str(col[row])[:60]!r} is CSV-quoted (quotes around the field, doubled quotes inside), "
                             "as pandas writes TSV; TSV fields are read as they are, so the quotes would be scored; "
                             "write the table as CSV (.csv, quotes parsed), JSON Lines or parquet, or as TSV without "
                             "quoting (pandas: quoting=csv.QUOTE_NONE)")
