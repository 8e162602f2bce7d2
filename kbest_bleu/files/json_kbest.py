"""K-best lists as one JSON object per source line: Sockeye's JSON output and a generic nested
layout, as K-best tables, and back (docs/formats.md).

- **Sockeye** (``sockeye-translate --output-type json``, ``--nbest-size K``): the output handler
  (``sockeye/output_handler.py``, ``JSONOutputHandler``) writes ``json.dumps(output.json(),
  sort_keys=True)``; ``TranslatorOutput.json`` (``sockeye/inference.py``) holds the input's
  pass-through keys (with ``--json-input``: ``text``, the source, and any other key),
  ``sentence_id`` (counted from 1), ``translation`` and ``score`` (the best), and with K > 1
  ``translations`` and ``scores``: a score per hypothesis in Sockeye 1-2, a list per hypothesis in
  Sockeye 3 (the first its score, then factor scores). Sockeye's scores are negative log
  probabilities, lower is better: ``model_score`` is their negation (higher is better, as for the
  other formats), ``model_score_text`` the score as written (JSON).
- **Nested JSON Lines** (``nested``): ``{"id": ..., "src": "...", "refs": ["...", ...], "hyps":
  [{"text": "...", "score": -1.2}, ...]}``, every key but ``hyps`` and each hypothesis' ``text``
  optional (a plain string stands for ``{"text": ...}``); a score is higher-is-better. Other keys,
  of the line or of a hypothesis, are kept and written back.

Segment ids count the lines from 0 (line i = reference line i of ``-r`` files). References come
from ``refs`` (a list) or ``ref`` (a string): for Sockeye, pass-through keys of the input.
"""

from __future__ import annotations

import json
import math
import os
from typing import Iterator, Optional, Sequence, TextIO

import pyarrow as pa

from ..errors import InputError
from .kbest_io import FLOAT, INT, STRING, STRINGS, RowBatches, numbered, segments, text_lines

__all__ = ["read_nested", "read_sockeye", "write_nested", "write_sockeye"]



def _objects(path, compression, option: str, what: str) -> Iterator[tuple]:
    for number, line in enumerate(text_lines(path, compression, option, what, strip_bom=True), 1):
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}: line {number}: not a JSON object ({exc}); expected {what}, one object per "
                             "line") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}: line {number}: a JSON {type(obj).__name__}, not an object; expected {what}, "
                             "one object per line")
        yield number, obj


def _references(obj: dict, path, number: int) -> Optional[list]:
    refs = obj.get("refs", obj.get("ref"))
    if refs is None:
        return None
    refs = [refs] if isinstance(refs, str) else refs
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise InputError(f"{path}: line {number}: 'refs' must be a list of strings (or 'ref' one string), found "
                         f"{str(refs)[:60]}")
    return refs


def _score(value, path, number: int, where: str) -> Optional[float]:
    """A JSON score (a number, or Sockeye 3's list whose first item is the score) as a finite float
    or None (absent, null or not finite)."""
    first = value[0] if isinstance(value, list) and value else value
    if first is None:
        return None
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        raise InputError(f"{path}: line {number}: {where} is {str(value)[:40]}, not a number")
    return float(first) if math.isfinite(first) else None


class _Table:
    """RowBatches whose optional columns (source, references, id) the first line decides."""

    def __init__(self, fmt: str, first: dict, batch_rows, batch_bytes, extra: list):
        columns = [("segment_id", INT), ("rank", INT), ("hypothesis", STRING), ("model_score", FLOAT)]
        columns += extra
        self.optional = [name for name, present in (("source", first["source"] is not None),
                                                    ("references", first["references"] is not None),
                                                    ("id", first.get("id") is not None)) if present]
        columns += [(name, STRINGS if name == "references" else STRING) for name in self.optional]
        columns += [("record", STRING)]
        self.rows = RowBatches(columns, {b"kbest_bleu.format": fmt.encode()}, batch_rows, batch_bytes)

    def add(self, segment: int, hyps: list, scores: list, seg: dict, record: str, path, number: int,
            per_hyp: dict) -> None:
        if not hyps:  # left out, the lines after it would take its references and the written lines shift
            raise InputError(f"{path}: line {number}: an empty list of hypotheses; every source needs one to be "
                             "scored (an empty hypothesis is the string \"\")")
        if ("references" in self.optional) != (seg["references"] is not None):  # (dropped, or the line's only)
            said = "no 'refs', but the first line has them" if seg["references"] is None else \
                "'refs', but the first line has none"
            raise InputError(f"{path}: line {number}: {said}; expected references on every line or on none (give "
                             "them with -r then)")
        v = self.rows.values
        for rank, (hyp, score) in enumerate(zip(hyps, scores)):
            v["segment_id"].append(segment)
            v["rank"].append(rank)
            v["hypothesis"].append(hyp)
            v["model_score"].append(score)
            for name in self.optional:
                v[name].append(seg[name])
            for name, values in per_hyp.items():
                v[name].append(values[rank])
            v["record"].append(record if rank == 0 else None)
            self.rows.add_text(len(hyp))


def _text(value, path, number: int, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{path}: line {number}: {where} is {json.dumps(value)[:40]}, not a string")
    return value


def read_sockeye(path: "str | os.PathLike", compression: Optional[str] = None, *, option: str = "input",
                 batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of Sockeye's JSON output (the module text). Columns: ``segment_id`` (line
    number from 0), ``rank``, ``hypothesis``, ``model_score`` (minus Sockeye's score),
    ``model_score_text``, ``source`` (``text``) and ``references`` where the first line has them,
    and ``record`` (the line's object without its hypotheses, on each list's first row)."""
    table = None
    for number, obj in _objects(path, compression, option, "Sockeye JSON output"):
        if "translation" not in obj:
            raise InputError(f"{path}: line {number}: no 'translation' key; expected Sockeye's JSON output "
                             "(--output-type json)")
        nbest = "translations" in obj
        hyps = obj["translations"] if nbest else [obj["translation"]]
        raw = obj.get("scores") if nbest else [obj.get("score")]
        if not isinstance(hyps, list) or not isinstance(raw, list) or len(raw) != len(hyps):
            raise InputError(f"{path}: line {number}: expected 'translations' and 'scores' lists of the same length "
                             "(Sockeye --nbest-size)")
        hyps = [_text(h, path, number, "a translation") for h in hyps]
        scores = []
        for s in raw:
            score = _score(s, path, number, "a score")
            scores.append(None if score is None else -score)
        record = dict(obj)
        record.update({"translations": None, "scores": None} if nbest else {"translation": None, "score": None})
        source = obj.get("text")
        seg = {"source": source if isinstance(source, str) else None, "references": _references(obj, path, number)}
        if table is None:
            table = _Table("sockeye", seg, batch_rows, batch_bytes, [("model_score_text", STRING)])
        table.add(number - 1, hyps, scores, seg, json.dumps(record, ensure_ascii=False), path, number,
                  {"model_score_text": [json.dumps(s) for s in raw]})
        while table.rows.full():
            yield table.rows.take()
    if table is None:
        table = _Table("sockeye", {"source": None, "references": None}, batch_rows, batch_bytes,
                       [("model_score_text", STRING)])
    yield table.rows.take()


def read_nested(path: "str | os.PathLike", compression: Optional[str] = None, *, option: str = "input",
                batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Record batches of nested JSON Lines (the module text). Columns: ``segment_id`` (line number
    from 0), ``rank``, ``hypothesis``, ``model_score`` (null where a hypothesis has none),
    ``source`` (``src``), ``references`` (``refs``) and ``id`` (as text: a string as it is, anything
    else as JSON) where the first line has them, ``hyp_fields`` (each hypothesis object, its text
    left out) and ``record`` (the line's object without ``hyps``, on each list's first row)."""
    table = None
    for number, obj in _objects(path, compression, option, "nested JSON Lines ({\"hyps\": [...]} per line)"):
        hyps = obj.get("hyps")
        if not isinstance(hyps, list):
            raise InputError(f"{path}: line {number}: expected a 'hyps' list of hypotheses "
                             "({\"text\": ..., \"score\": ...} objects or strings)")
        texts, scores, fields = [], [], []
        for j, h in enumerate(hyps):
            h = {"text": h} if isinstance(h, str) else h
            if not isinstance(h, dict) or "text" not in h:
                raise InputError(f"{path}: line {number}: hypothesis {j} is {json.dumps(h)[:40]}; expected an object "
                                 "with a 'text' (and optionally a 'score')")
            texts.append(_text(h["text"], path, number, f"hypothesis {j}'s text"))
            scores.append(_score(h.get("score"), path, number, f"hypothesis {j}'s score"))
            fields.append(json.dumps({**h, "text": None}, ensure_ascii=False))
        src, ident = obj.get("src"), obj.get("id")
        seg = {"source": src if isinstance(src, str) else None, "references": _references(obj, path, number),
               "id": None if ident is None else ident if isinstance(ident, str) else json.dumps(ident)}
        if table is None:
            table = _Table("nested", seg, batch_rows, batch_bytes, [("hyp_fields", STRING)])
        table.add(number - 1, texts, scores, seg, json.dumps({**obj, "hyps": None}, ensure_ascii=False), path,
                  number, {"hyp_fields": fields})
        while table.rows.full():
            yield table.rows.take()
    if table is None:
        table = _Table("nested", {"source": None, "references": None}, batch_rows, batch_bytes,
                       [("hyp_fields", STRING)])
    yield table.rows.take()


def write_sockeye(path, out: TextIO, added: list, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """Sockeye JSON lines (``json.dumps(..., sort_keys=True)`` as Sockeye writes them): each read
    line back with every added column (``added``: ``bleu``...) as a list beside ``translations`` (a value
    beside ``translation`` for 1-best lines); a table from elsewhere as ``sentence_id``,
    ``translation``/``score`` (the first row) and ``translations``/``scores``."""
    n = 0
    for segment, rows in numbered(segments(path, ("hypothesis", "model_score", "model_score_text", "record", "source",
                                                  "references", *added), key), path, "sockeye"):
        k = len(rows["hypothesis"])
        if raw and rows.get("model_score_text"):
            scores = [json.loads(s) for s in rows["model_score_text"]]
        else:
            scores = [None if s is None else -s for s in rows.get("model_score") or [None] * k]
        if raw and rows.get("record") and rows["record"][0] is not None:
            obj = json.loads(rows["record"][0])
            nbest = "translations" in obj
        else:
            nbest = k > 1
            obj = {"sentence_id": segment, "translation": rows["hypothesis"][0], "score": scores[0]}
            # the source and references as pass-through keys of the input (--json-input's "text"), as read back
            if rows.get("source") and rows["source"][0] is not None:
                obj["text"] = rows["source"][0]
            if rows.get("references") and rows["references"][0] is not None:
                obj["refs"] = rows["references"][0]
        if nbest:
            obj.update({"translations": rows["hypothesis"], "scores": scores})
            obj.update({c: rows[c] for c in added})
        else:
            obj.update({"translation": rows["hypothesis"][0], "score": scores[0]})
            obj.update({c: rows[c][0] for c in added})
        out.write(json.dumps(obj, sort_keys=True) + "\n")
        n += k
    return n


def write_nested(path, out: TextIO, added: list, raw: bool, key: Sequence[str] = ("segment_id",)) -> int:
    """Nested JSON lines: each read line back (keys in their order) with every added column
    (``added``: ``bleu``...) in each hypothesis object; a table from elsewhere as ``id`` (the segment),
    ``src``, ``refs`` and ``hyps`` with ``text`` and ``score`` (the model score)."""
    n = 0
    for segment, rows in numbered(segments(path, ("hypothesis", "model_score", "source", "references", "id", "record",
                                                  "hyp_fields", *added), key), path, "nested"):
        mine = raw and rows.get("record") and rows["record"][0] is not None
        if mine:
            obj = json.loads(rows["record"][0])
        else:
            obj = {"id": segment}
            if rows.get("source") and rows["source"][0] is not None:
                obj["src"] = rows["source"][0]
            if rows.get("references") and rows["references"][0] is not None:
                obj["refs"] = rows["references"][0]
        hyps = []
        for i, text in enumerate(rows["hypothesis"]):
            if mine and rows.get("hyp_fields") and rows["hyp_fields"][i] is not None:
                h = json.loads(rows["hyp_fields"][i])
            else:
                h = {"text": None}
                if rows.get("model_score") and rows["model_score"][i] is not None:
                    h["score"] = rows["model_score"][i]
            h["text"] = text
            h.update({c: rows[c][i] for c in added})
            hyps.append(h)
        obj["hyps"] = hyps
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        n += len(hyps)
    return n
