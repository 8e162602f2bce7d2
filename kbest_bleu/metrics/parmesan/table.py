"""Paraphrase tables for Parmesan: reading, merging, compiling, and the section 3.1 filter.

A table file is tab-separated, one directed pair per line (``#`` lines are comments)::

    lemma_ref  lemma_hyp  pos  source  [prob]

``pos`` empty means "any part of speech"; ``source`` is ``wordnet``, ``meteor`` or ``both``
(Barančíková 2014, section 4: pairs found in both sources are preferred, then WordNet, then
Meteor); ``prob`` is the Meteor paraphrase probability (empty for WordNet pairs).
"""

from __future__ import annotations

import gzip
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import settings
from ...errors import InputError
from ...files.output import atomic_output
from ...files.inputs import reading
from .analyze import analyze_words

__all__ = ["CompiledTable", "ParaphraseTable", "build_table", "compile_table", "read_meteor_pairs",
           "read_synsets", "read_table", "write_table"]

SOURCES = ("both", "wordnet", "meteor")  # preference order: rank 0 is preferred
RANK_BOTH, RANK_WORDNET, RANK_METEOR = 0, 1, 2


@dataclass(frozen=True)
class ParaphraseTable:
    """Directed lemma pairs, merged: one entry per (ref, hyp, pos).

    ref, hyp, pos : list[str] [E]; rank : int8[E] (0 both, 1 wordnet, 2 meteor);
    prob : float64[E] (0 where unknown); order : int64[E], the line of first appearance
    (the last tie-break between equally ranked candidates).
    """

    ref: list
    hyp: list
    pos: list
    rank: np.ndarray
    prob: np.ndarray
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.ref)


@dataclass(frozen=True)
class CompiledTable:
    """A table as arrays for the kernel: lemmas interned to ids 0..V-1 (``vocab``), the
    candidates of reference lemma v at ``ptr[v]:ptr[v+1]`` in preference order (rank, then
    higher probability, then file order), each with its hypothesis lemma id and POS."""

    vocab: pa.Array    # string [V]
    ptr: np.ndarray    # int64 [V+1]
    hyp: np.ndarray    # int32 [E]
    pos: pa.Array      # string [E], "" = any
    rank: np.ndarray   # int8 [E]
    prob: np.ndarray   # float64 [E]


def _merge(rows: list, directed: bool) -> ParaphraseTable:
    """rows: (ref, hyp, pos, rank, prob). Symmetric unless ``directed``; the same (ref, hyp, pos)
    from several lines merges its sources (wordnet + meteor = both) and keeps the highest prob."""
    merged: dict = {}
    for i, (r, h, pos, rank, prob) in enumerate(rows):
        for key in ((r, h, pos),) if directed else ((r, h, pos), (h, r, pos)):
            if key[0] == key[1]:
                continue
            old = merged.get(key)
            if old is None:
                merged[key] = [rank, prob, i]
            else:
                old[0] = old[0] if old[0] == rank else RANK_BOTH
                old[1] = max(old[1], prob)
    keys = list(merged)
    vals = np.array([merged[k] for k in keys], np.float64).reshape(-1, 3)
    return ParaphraseTable([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                           vals[:, 0].astype(np.int8), vals[:, 1], vals[:, 2].astype(np.int64))


def read_table(path: Union[str, Path], directed: bool = False,
               sources: tuple = ("wordnet", "meteor")) -> ParaphraseTable:
    """Read a paraphrase table file (module docstring format).

    Parameters
    ----------
    path : the TSV file (``.gz`` allowed)
    directed : use each pair only as listed (ref lemma -> hyp lemma); by default pairs are used
        in both directions, as synonymy is symmetric (WordNet synsets, Meteor's pivot paraphrases)
    sources : the sources whose lines are used (``wordnet``, ``meteor``); ``both`` lines are used
        when either is

    Raises :class:`InputError` naming the line for a malformed line or an unknown source.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"paraphrase table: expected a file, found nothing at {path}; "
                         "build one with kbest-bleu parmesan build-table")
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with reading(path, "paraphrase table (--paraphrases)", "a UTF-8 paraphrase table (TSV, .gz allowed)"), \
            opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (4, 5) or not cols[0] or not cols[1]:
                raise InputError(f"paraphrase table {path} line {n}: expected 4-5 tab-separated fields "
                                 f"(lemma_ref lemma_hyp pos source [prob]) with both lemmas, found {line!r}")
            if cols[3] not in SOURCES:
                raise InputError(f"paraphrase table {path} line {n}: expected source one of "
                                 f"{', '.join(SOURCES)}, found {cols[3]!r}")
            try:
                prob = float(cols[4]) if len(cols) == 5 and cols[4] else 0.0
            except ValueError:
                raise InputError(f"paraphrase table {path} line {n}: expected a probability, "
                                 f"found {cols[4]!r}") from None
            if not 0 <= prob < np.inf:  # NaN too; Meteor's own paraphrase-en holds two values above 1
                raise InputError(f"paraphrase table {path} line {n}: expected a finite, non-negative probability, "
                                 f"found {cols[4]!r}")
            if cols[3] in sources or (cols[3] == "both" and sources):
                rows.append((cols[0], cols[1], cols[2], SOURCES.index(cols[3]), prob))
    return _merge(rows, directed)


def compile_table(table: ParaphraseTable) -> CompiledTable:
    """Intern the lemmas and sort each reference lemma's candidates into preference order."""
    vocab = pc.unique(pa.array(table.ref + table.hyp, pa.string()))
    ref_id = pc.index_in(pa.array(table.ref, pa.string()), value_set=vocab).to_numpy(zero_copy_only=False)
    hyp_id = pc.index_in(pa.array(table.hyp, pa.string()), value_set=vocab).to_numpy(zero_copy_only=False)
    order = np.lexsort((table.order, -table.prob, table.rank, ref_id))
    ptr = np.zeros(len(vocab) + 1, np.int64)
    np.cumsum(np.bincount(ref_id, minlength=len(vocab)), out=ptr[1:])
    return CompiledTable(vocab, ptr, hyp_id[order].astype(np.int32), pa.array(table.pos, pa.string()).take(order),
                         table.rank[order], table.prob[order])


def read_meteor_pairs(path: Union[str, Path]) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """Meteor paraphrase pairs: ``paraphrase-xx.gz`` (three lines per pair: prob, phrase,
    paraphrase) or a TSV ``prob<TAB>phrase<TAB>paraphrase`` (``#`` lines are comments).
    Returns prob float64[P], phrase, paraphrase (string arrays)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"build-table: expected a Meteor paraphrase table file, found nothing at {path}")
    import pyarrow.csv as pacsv
    # one column of whole lines (no delimiter, no quoting): Arrow reads millions of lines at once
    if path.stat().st_size == 0:
        raise InputError(f"build-table {path}: the file is empty; expected a Meteor paraphrase table")
    # a line longer than Arrow's block (1 MiB by default) is read in a block as large as the file's
    # longest possible line, up to the file itself (MAX_ROW_BYTES bounds it)
    block = max(1 << 20, min(path.stat().st_size + 1, settings.MAX_ROW_BYTES))
    with reading(path, "build-table IN", "a UTF-8 Meteor paraphrase table (.gz allowed), lines up to "
                 f"{settings.MAX_ROW_BYTES:,} bytes"):
        lines = pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["line"], block_size=block),
                               parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False),
                               convert_options=pacsv.ConvertOptions(column_types={"line": pa.string()}))["line"]
    lines = lines.filter(pc.invert(pc.starts_with(lines, "#"))).combine_chunks()
    tabbed = len(lines) and "\t" in lines[0].as_py()
    if tabbed:
        parts = pc.split_pattern(lines, "\t")
        if not pc.all(pc.equal(pc.list_value_length(parts), 3)).as_py():
            raise InputError(f"build-table {path}: expected prob<TAB>phrase<TAB>paraphrase on every line")
        prob_s, w1, w2 = (pc.list_element(parts, i) for i in range(3))
    else:
        if len(lines) % 3:
            raise InputError(f"build-table {path}: expected three lines per pair (prob, phrase, paraphrase), "
                             f"found {len(lines)} lines")
        idx = np.arange(0, len(lines), 3)
        prob_s, w1, w2 = lines.take(idx), lines.take(idx + 1), lines.take(idx + 2)
    try:
        prob = pc.cast(prob_s, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid as exc:
        raise InputError(f"build-table {path}: expected a probability per pair ({exc})") from None
    # NaN fails both; not capped at 1: Meteor 1.5's paraphrase-en holds two pivoted values above 1 (1.158)
    bad = np.flatnonzero(~((prob >= 0) & (prob < np.inf)))
    if bad.size:
        raise InputError(f"build-table {path}: pair {int(bad[0])} (from 0) has probability {prob[bad[0]]!r}; expected "
                         "finite, non-negative probabilities")
    return prob, w1, w2


def read_synsets(path: Union[str, Path]) -> tuple[list, list]:
    """Synonym pairs (a, b), a != b, of words sharing a synset, from Meteor's synonym file
    (``english.synsets``: a word line, then a line of its synset ids); multi-word entries
    (``_``-joined) are left out. ``path`` may also be
    ``JAR!member`` to read it from inside ``meteor-1.5.jar``. Both directions are listed."""
    jar, _, member = str(path).partition("!")
    if member:
        with reading(jar, "--synonyms", "Meteor's jar holding a UTF-8 synsets file"), zipfile.ZipFile(jar) as z:
            text = io.TextIOWrapper(z.open(member), encoding="utf-8").read()
    elif Path(path).is_file():
        with reading(path, "--synonyms", "a UTF-8 synsets file (a word line, then its synset ids)"):
            text = Path(path).read_text(encoding="utf-8")
    else:
        raise InputError(f"build-table: expected a synsets file, found nothing at {path}")
    lines = text.split("\n")
    members: dict = {}
    for word, ids in zip(lines[0::2], lines[1::2]):
        if "_" in word:  # WordNet's multi-word expressions (single words only, section 3.1)
            continue
        for s in ids.split():
            members.setdefault(s, []).append(word)
    pairs = {(a, b) for words in members.values() for a in words for b in words if a != b}
    a, b = zip(*sorted(pairs)) if pairs else ((), ())
    return list(a), list(b)


def build_table(input: Union[str, Path], output: Union[str, Path], analyzer: str = "simplemma", lang: str = "en",
                synonyms: Optional[str] = None, min_prob: float = 0.0) -> dict:
    """Filter a Meteor paraphrase table as Parmesan section 3.1 and write a table file.

    Keeps single-word pairs only, replaces both words by their lemmas, drops pairs of equal
    lemmas, of different parts of speech (when the analyzer gives POS) and with an unknown
    word (the analyzer's lexicon; ``lower`` knows every word). ``synonyms`` adds WordNet pairs
    (Meteor's synsets format), filtered the same way; a pair in both is tagged ``both``.
    Returns counts of the steps (read, single-word, kept, wordnet, both).
    """
    from ...files.readers import check_output_format
    check_output_format(output, "text", "-o", "a paraphrase table is written as plain text (.txt, .tsv)")
    prob, w1, w2 = read_meteor_pairs(input)
    counts = {"read": len(prob)}
    single = pc.and_(pc.invert(pc.match_substring(w1, " ")), pc.invert(pc.match_substring(w2, " ")))
    single = pc.and_(single, pc.greater_equal(pa.array(prob), min_prob))
    w1, w2, prob = w1.filter(single), w2.filter(single), prob[single.to_numpy(zero_copy_only=False)]
    counts["single-word"] = len(prob)
    sources = [(w1, w2, prob, RANK_METEOR)]
    if synonyms:
        a, b = read_synsets(synonyms)
        sources.append((pa.array(a, pa.string()), pa.array(b, pa.string()), np.zeros(len(a)), RANK_WORDNET))
    words = pc.unique(pa.concat_arrays([pa.concat_arrays([x.cast(pa.string()), y.cast(pa.string())])
                                        for x, y, _, _ in sources]))
    lemma, pos, known = analyze_words(words, analyzer, lang)
    rows = []
    for x, y, p, rank in sources:
        ix = pc.index_in(x.cast(pa.string()), value_set=words).to_numpy(zero_copy_only=False)
        iy = pc.index_in(y.cast(pa.string()), value_set=words).to_numpy(zero_copy_only=False)
        lx, ly = lemma.take(pa.array(ix)), lemma.take(pa.array(iy))
        keep = known[ix] & known[iy] & pc.not_equal(lx, ly).to_numpy(zero_copy_only=False)
        px = py = pa.nulls(len(ix), pa.string()).fill_null("")
        if pos is not None:
            px, py = pos.take(pa.array(ix)), pos.take(pa.array(iy))
            keep &= pc.equal(px, py).to_numpy(zero_copy_only=False)
        k = pa.array(keep)
        rows += zip(lx.filter(k).to_pylist(), ly.filter(k).to_pylist(), px.filter(k).to_pylist(),
                    [rank] * int(keep.sum()), p[keep].tolist())
    merged = _merge(rows, directed=True)
    write_table(merged, output, [input, synonyms])
    counts["kept"] = len(merged)
    counts["wordnet"] = int((merged.rank == RANK_WORDNET).sum())
    counts["both"] = int((merged.rank == RANK_BOTH).sum())
    return counts


def write_table(table: ParaphraseTable, output: Union[str, Path], inputs: Sequence = ()) -> None:
    """Write ``table`` in the table file format, sorted by reference lemma, preference, atomically
    (:func:`kbest_bleu.files.output.atomic_output`: ``inputs`` are refused as ``output``)."""
    order = np.lexsort((table.order, -table.prob, table.rank, np.array(table.ref, dtype=object).astype(str)))
    # atomically: a full disk or a failure leaves the previous table; an input is refused as output
    with atomic_output(output, inputs, "-o") as partial, open(partial, "w", encoding="utf-8") as f:
        f.write("# lemma_ref\tlemma_hyp\tpos\tsource\tprob  (kbest-bleu parmesan build-table)\n")
        for i in order:
            prob = "" if table.rank[i] == RANK_WORDNET else repr(float(table.prob[i]))
            f.write(f"{table.ref[i]}\t{table.hyp[i]}\t{table.pos[i]}\t{SOURCES[table.rank[i]]}\t{prob}\n")
