"""Line-per-hypothesis K-best text of Marian, OpenNMT-tf, OpenNMT-py and Hugging Face, as K-best
tables, and back (docs/formats.md).

- **Marian** ``--n-best``: ``src/translator/output_printer.h`` (marian-nmt/marian-dev,
  ``OutputPrinter::print``) writes ``{line} ||| {translation}``, then optionally
  `` ||| WordCounts={src},{tgt}``, `` ||| {alignment}`` (``--alignment``) and `` ||| WordScores=``
  followed by `` {score}`` per word (``--word-scores``, ``std::fixed``, 5 decimals), then
  `` ||| F0= {s} F1= {s} ...`` (one per scorer; `` F0={path score}`` when there is no breakdown)
  and `` ||| {normalized score}``: the Moses layout, the optional fields between the translation
  and the features. Line numbers count from 0.
- **OpenNMT-tf** (``infer`` with ``n_best`` and ``with_scores``): ``opennmt/utils/misc.py``
  ``format_translation_output`` writes ``"%f ||| %s" % (score, sentence)``, then `` ||| `` token
  scores and `` ||| `` alignments when asked; ``n_best`` lines per source, best first.
- **OpenNMT-py** (``translate -n_best K -with_score``): ``onmt/translate/translator.py`` writes
  ``pred + "\\t" + str(score)``, K lines per source.
- **Plain text with K lines per source** (``text``): OpenNMT-py without ``-with_score``, Hugging
  Face ``generate(num_return_sequences=K)`` decoded in order, mbrs' input.

The formats without an id on each line need ``nbest_size`` (K); their segment ids are
``line // K``. Model scores are the tools' log probabilities (higher is better).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Iterator, Optional, Sequence, TextIO

import pyarrow as pa

from ..errors import InputError
from .kbest_io import (FLOAT, FLOATS, INT, STRING, RowBatches, field_text, numbered, parse_float, score_text, segments,
                       text_lines)
from .nbest import META_SEPARATOR, DenseGroups, parse_features

__all__ = ["moses_separator", "read_fixed_k", "read_marian", "write_marian", "write_moses", "write_opennmt_py",
           "write_opennmt_tf"]

SEP = " ||| "
_ID = re.compile(r"[0-9]+")
# the optional fields after a translation: hard alignments "0-0 1-2", soft ones "0.9,0.1 0.2,0.8"
_FLOAT = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_ALIGNMENT = re.compile(rf"\s*(?:(?:[0-9]+-[0-9]+|{_FLOAT}(?:,{_FLOAT})*)\s*)*")
_NUMBERS = re.compile(rf"\s*(?:(?:{_FLOAT}|nan|-?inf)\s*)*")  # token scores
MARIAN_COLUMNS = [("segment_id", INT), ("rank", INT), ("hypothesis", STRING), ("features", STRING),
                  ("feature_values", FLOATS), ("model_score", FLOAT), ("model_score_text", STRING),
                  ("alignment", STRING), ("word_scores", FLOATS), ("extra_fields", STRING)]


def read_marian(path: "str | os.PathLike", compression: Optional[str] = None, *, option: str = "input",
                batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of a Marian n-best file. Columns: ``segment_id``, ``rank``, ``hypothesis``,
    ``features`` (raw), ``feature_values`` (in the line's order, names F0, F1... in the schema
    metadata), ``model_score`` / ``model_score_text`` (the last field), ``alignment`` and
    ``word_scores`` (null when absent) and ``extra_fields`` (the optional fields as written)."""
    rows, names, name_tokens = None, None, None
    current, rank, seen = None, 0, set()
    for number, line in enumerate(text_lines(path, compression, option, "Marian n-best file", strip_bom=True), 1):
        fields = line.split(SEP)
        if len(fields) < 4:
            raise InputError(f"{path}: line {number}: expected 'id ||| translation [||| ...] ||| features ||| score', "
                             f"found {len(fields)} field(s): {line[:80]!r}")
        if not (_ID.fullmatch(fields[0]) and int(fields[0]) < 1 << 63):  # (int() takes "1_0", " -1")
            raise InputError(f"{path}: line {number}: the id {fields[0][:30]!r} is not a sentence number; expected "
                             "Marian's 'id ||| translation [||| ...] ||| F0= ... ||| score'")
        try:
            sid = int(fields[0])
            score = parse_float(fields[-1])
            tokens = fields[-2].split()
            if tokens[0::2] == name_tokens and len(tokens) == 2 * len(name_tokens):  # "F0= F1= ...": values between
                line_names, values = names, [float(x) for x in tokens[1::2]]
            else:
                line_names, values = parse_features(fields[-2])
        except ValueError as exc:
            raise InputError(f"{path}: line {number}: could not parse the id, features or score ({exc}); expected "
                             "Marian's 'id ||| translation [||| ...] ||| F0= ... ||| score'") from None
        if not all(math.isfinite(v) for v in values):  # would reach parquet and Moses' feature files (issue 34)
            raise InputError(f"{path}: line {number}: a feature value is not a finite number ({fields[-2].strip()!r}); "
                             "expected finite numbers")
        if names is None:
            names = line_names
            if all(t.endswith("=") for t in tokens[0::2]) and len(tokens) % 2 == 0:
                name_tokens = tokens[0::2]
            meta = {b"kbest_bleu.format": b"marian", b"kbest_bleu.feature_names": json.dumps(names).encode()}
            rows = RowBatches(MARIAN_COLUMNS, meta, batch_rows, batch_bytes)
        elif line_names != names:
            raise InputError(f"{path}: line {number}: features {' '.join(line_names)}, but the first line has "
                             f"{' '.join(names)}; expected the same scorers on every line (one Marian run)")
        if sid != current:
            if sid in seen:
                raise InputError(f"{path}: line {number}: id {sid} again after other ids; expected each list's "
                                 "lines together (files concatenated? score them one by one)")
            seen.add(sid)
            current, rank = sid, 0
        middle = fields[2:-2]
        alignment = word_scores = None
        for field in middle:
            if not (field.startswith(("WordScores=", "WordCounts=")) or _ALIGNMENT.fullmatch(field)):
                raise InputError(f"{path}: line {number}: {field[:60]!r} after the translation is neither alignments "
                                 "nor WordScores=; a translation holding ' ||| ' cannot be told apart from Marian's "
                                 "fields (is the file Marian n-best?)")
            if field.startswith("WordScores="):
                try:
                    word_scores = [float(x) for x in field[len("WordScores="):].split()]
                except ValueError:
                    raise InputError(f"{path}: line {number}: WordScores= holds something else than numbers: "
                                     f"{field[:60]!r}") from None
            elif not field.startswith("WordCounts="):
                alignment = field
        v = rows.values
        v["segment_id"].append(sid)
        v["rank"].append(rank)
        v["hypothesis"].append(fields[1])
        v["features"].append(fields[-2])
        v["feature_values"].append(values)
        v["model_score"].append(score)
        v["model_score_text"].append(fields[-1])
        v["alignment"].append(alignment)
        v["word_scores"].append(word_scores)
        v["extra_fields"].append(SEP.join(middle) if middle else None)
        rows.add_text(len(fields[1]))
        rank += 1
        while rows.full():
            yield rows.take()
    yield (rows or RowBatches(MARIAN_COLUMNS, {b"kbest_bleu.format": b"marian"})).take()


def _opennmt_tf(line: str) -> tuple:
    fields = line.split(SEP)
    if len(fields) == 1 and line.endswith(" |||"):  # an empty hypothesis whose trailing space was stripped
        fields = [line[:-4], ""]
    if len(fields) < 2:
        raise ValueError("expected 'score ||| hypothesis' (OpenNMT-tf with_scores)")
    bad = next((f for f in fields[2:] if not (_NUMBERS.fullmatch(f) or _ALIGNMENT.fullmatch(f))), None)
    if bad is not None:  # a hypothesis holding ' ||| ', or another format (a Moses or Marian line)
        raise ValueError(f"{bad[:40]!r} after the hypothesis is neither token scores nor alignments; expected "
                         "'score ||| hypothesis [||| token scores] [||| alignments]' (OpenNMT-tf)")
    return fields[1], fields[0], SEP.join(fields[2:]) if len(fields) > 2 else None


def _opennmt_py(line: str) -> tuple:
    hyp, tab, score = line.rpartition("\t")
    if not tab:
        raise ValueError("expected 'hypothesis<TAB>score' (OpenNMT-py -with_score)")
    return hyp, score, None


_PARSE = {"opennmt-tf": _opennmt_tf, "opennmt-py": _opennmt_py}


def read_fixed_k(path: "str | os.PathLike", fmt: str, nbest_size: Optional[int], compression: Optional[str] = None, *,
                 hypothesis: str = "hypothesis", option: str = "input", batch_rows: Optional[int] = None,
                 batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of a file with ``nbest_size`` consecutive lines per source: ``fmt`` is
    ``opennmt-tf``, ``opennmt-py`` or ``text``. Columns: ``segment_id`` (``line // K``), ``rank``
    (``line % K``; not for plain text with K = 1, one hypothesis per segment as before), the
    hypothesis (``hypothesis`` names it), and for the scored formats ``model_score``,
    ``model_score_text`` and ``extra_fields`` (OpenNMT-tf's token scores and alignments)."""
    if fmt != "text" and nbest_size is None:
        raise InputError(f"{path}: {fmt} output does not say how many hypotheses each source has; give --nbest-size K "
                         "(the run's n_best; 1 for 1-best output)")
    k = 1 if nbest_size is None else nbest_size
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"--nbest-size: expected a positive number of hypotheses per source, found {nbest_size!r}")
    columns = [("segment_id", INT)] + ([("rank", INT)] if nbest_size is not None else []) + [(hypothesis, STRING)]
    parse = _PARSE.get(fmt)
    if parse is not None:
        columns += [("model_score", FLOAT), ("model_score_text", STRING), ("extra_fields", STRING)]
    meta = {b"kbest_bleu.format": fmt.encode(), b"kbest_bleu.nbest_size": str(k).encode()}
    rows = RowBatches(columns, meta, batch_rows, batch_bytes)
    n = 0
    for n, line in enumerate(text_lines(path, compression, option, f"{fmt} file", strip_bom=fmt != "text"), 1):
        v = rows.values  # take() starts new lists
        if parse is None:  # plain text, as sacrebleu's command line reads it: trailing whitespace removed
            hyp = line.rstrip()
        else:
            try:
                hyp, score_text_, extra = parse(line)
                score = parse_float(score_text_)
            except ValueError as exc:
                raise InputError(f"{path}: line {n}: not {fmt} output ({exc}): {line[:80]!r}") from None
            v["model_score"].append(score)
            v["model_score_text"].append(score_text_)
            v["extra_fields"].append(extra)
        v["segment_id"].append((n - 1) // k)
        if nbest_size is not None:
            v["rank"].append((n - 1) % k)
        v[hypothesis].append(hyp)
        rows.add_text(len(hyp))
        while rows.full():
            yield rows.take()
    if n % k:
        raise InputError(f"{path}: {n} lines, not a multiple of --nbest-size {k}; expected {k} hypotheses for every "
                         f"source (the last source has {n % k})")
    yield rows.take()


def _line_writer(path, out: TextIO, score_field: str, raw: bool, key: Sequence[str], form,
                 separator: Optional[str] = SEP.strip(), fixed_k: bool = False) -> int:
    """Write each row as ``form`` lays out its fields, the K-best lists split by the segment ``key``
    (:func:`~kbest_bleu.files.kbest_io.segments`); a field the format's reader would split
    differently (a line break, the ``separator``, ``|||`` by default) is refused (:func:`field_text`).
    ``fixed_k``: the format has no segment id (OpenNMT: K lines per source, read back with
    --nbest-size K), so lists of different sizes are refused."""
    n, k = 0, None
    groups = DenseGroups()  # what the n-best reader would refuse is not written
    lists = segments(path, ("hypothesis", "model_score", "model_score_text", "features", "extra_fields", score_field),
                     key)
    for segment, rows in (numbered(lists, path, "this format") if fixed_k else lists):
        if fixed_k and k is not None and len(rows["hypothesis"]) != k:
            raise InputError(f"{path}: segment {segment} has {len(rows['hypothesis'])} hypotheses, the ones before "
                             f"{k}; this format has no segment ids (K lines per source, read with --nbest-size K), "
                             "so every list needs the same K: write nested or parquet instead")
        k = len(rows["hypothesis"])
        for i, hyp in enumerate(rows["hypothesis"]):
            extra = rows["extra_fields"][i] if rows.get("extra_fields") else None
            features = rows["features"][i] if rows.get("features") else None
            if features is not None:
                groups.check(_readable_features(features, segment, i), f"segment {segment}, hypothesis {i}: features")
            out.write(form(seg=segment, hyp=field_text(hyp, "hypothesis", segment, i, separator),
                           score=score_text(rows, score_field, i, segment, raw),
                           extra=None if extra is None else field_text(extra, "extra_fields", segment, i),
                           features=None if features is None else field_text(features, "features", segment, i,
                                                                             separator)) + "\n")
        n += len(rows["hypothesis"])
    return n


def _readable_features(features: str, segment, i: int) -> dict:
    """Refuse features that the readers would not read back: names and finite numbers, as the
    n-best and Marian readers require (``lm= x``, ``lm= nan``). Returns their Moses-style groups
    (:func:`~kbest_bleu.files.nbest.parse_features`), for :class:`~kbest_bleu.files.nbest.DenseGroups`."""
    try:
        _, values, groups = parse_features(features, groups=True)
    except ValueError as exc:
        raise InputError(f"segment {segment}, hypothesis {i}: features {features[:60]!r} do not read back ({exc}); "
                         "expected 'name= value ...' with numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise InputError(f"segment {segment}, hypothesis {i}: features {features[:60]!r} hold a value that is not a "
                         "finite number, which the readers refuse; fix the features or write parquet")
    return groups


def write_marian(path, out: TextIO, score_field: str, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """Marian n-best lines (the module text) with ``score_field`` as the last field; the features
    and optional fields as read (empty features for a table without them)."""
    def form(seg, hyp, score, extra, features):
        return SEP.join([str(seg), hyp] + ([extra] if extra is not None else []) + [features or "", score])
    return _line_writer(path, out, score_field, raw, key, form)


def write_moses(path, out: TextIO, score_field: str, raw: bool, key: Sequence[str] = ("segment_id",), separator: str = SEP) -> int:
    """Moses n-best lines ``id ||| hypothesis ||| features ||| score [||| extra fields]`` with
    ``score_field`` as the score (``separator``: " ||| " or "|||", as the file read had it)."""
    def form(seg, hyp, score, extra, features):
        return separator.join([str(seg), hyp, features or "", score] + ([extra] if extra is not None else []))
    return _line_writer(path, out, score_field, raw, key, form)


def moses_separator(path: "str | os.PathLike") -> str:
    """The field separator stored by :func:`~kbest_bleu.files.nbest.read_nbest` in a table read
    from n-best text (it travels into the scored table's metadata), else " ||| "."""
    import pyarrow.parquet as pq
    return ((pq.read_schema(path).metadata or {}).get(META_SEPARATOR) or SEP.encode()).decode()


def write_opennmt_tf(path, out: TextIO, score_field: str, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """OpenNMT-tf lines ``score ||| hypothesis [||| token scores] [||| alignment]``."""
    def form(hyp, score, extra, **_):
        return SEP.join([score, hyp] + ([extra] if extra is not None else []))
    return _line_writer(path, out, score_field, raw, key, form, fixed_k=True)


def write_opennmt_py(path, out: TextIO, score_field: str, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """OpenNMT-py lines ``hypothesis<TAB>score``."""
    # the reader splits at the last tab: a tab inside the hypothesis reads back
    return _line_writer(path, out, score_field, raw, key, lambda hyp, score, **_: f"{hyp}\t{score}", separator=None,
                        fixed_k=True)
