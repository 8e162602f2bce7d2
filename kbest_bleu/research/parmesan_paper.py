"""``kbest-bleu parmesan metaeval``: the paper's correlations as far as the shared data allow.

1. WMT12 English-to-Czech, original references (Barančíková 2014, Tables 2 and 4, "Original"):
   system-level Pearson with the silver standard wins / (wins + losses) of BLEU and of Meteor
   with exact matches only.
2. Paraphrased references into English (no Czech WordNet or Czech Meteor table is available):
   WMT12 and WMT13 cs/de/es/fr-en, Meteor exact on original vs paraphrased references ("Before
   Depfix"), system-level Pearson and segment-level Kendall tau (human ties removed, metric ties
   counted half, Chen & Cherry 2014).

Text is tokenized as mteval-v13a and lowercased first (as Meteor's ``-norm`` tokenizes and
lowercases); lemmas come from simplemma (no POS: pairs are not POS-checked).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import settings
from ..errors import InputError
from ..tokenize import tokenize
from .correlation import cell
from .data import require_data

__all__ = ["en_cs", "english_table", "into_english", "run_metaeval"]

PAPER_EN_CS = {"BLEU": 0.751, "Meteor exact (cz)": 0.861}  # Table 2 BLEU original; Table 4 Original / No paraphr.
INTO_EN = ("cs-en", "de-en", "es-en", "fr-en")
CACHE = settings.cache_home()


def _research():
    """The correlation helpers of the seed-paper tables."""
    from . import correlation, metaeval
    return correlation.pearson, correlation.kendall_tau_pairs, metaeval.human_system_scores


def _normalized(strings: pa.Array) -> pa.Array:
    """13a tokens joined by single spaces (case kept)."""
    tokens, ptr = tokenize(strings, "13a")
    return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(ptr), tokens.cast(pa.large_string())),
                          pa.scalar(" ", pa.large_string()))


def _load(data: Path, year: int, lps) -> tuple[pa.Table, np.ndarray, pa.Array, pa.Table]:
    """Segments of ``lps`` sorted by (lp, segment_id, system) with normalized text, their
    segment pointers (all systems of one source segment form one list), each segment's
    normalized reference (list<string> [S]) and the human pairs."""
    seg = pq.read_table(data / f"wmt{year}_segments.parquet", columns=["lp", "segment_id", "system", "hypothesis",
                                                                         "references"])
    seg = seg.filter(pc.is_in(seg["lp"], pa.array(list(lps)))).sort_by(
        [("lp", "ascending"), ("segment_id", "ascending"), ("system", "ascending")])
    seg = seg.set_column(3, "hypothesis", _normalized(seg["hypothesis"].combine_chunks()))
    lp = seg["lp"].combine_chunks().dictionary_encode().indices.to_numpy()
    sid = seg["segment_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (lp[1:] != lp[:-1]) | (sid[1:] != sid[:-1])])
    seg_ptr = np.append(starts, seg.num_rows).astype(np.int64)
    refs = pc.list_flatten(seg["references"].combine_chunks().take(pa.array(starts)))
    if len(refs) != len(starts):
        raise InputError(f"metaeval: expected one reference per segment in wmt{year}_segments, found {len(refs)}")
    ref_lists = pa.ListArray.from_arrays(pa.array(np.arange(len(starts) + 1, dtype=np.int32)), _normalized(refs))
    pairs = pq.read_table(data / f"wmt{year}_rr_pairs.parquet", columns=["lp", "segment_id", "better_system",
                                                                         "worse_system"])
    pairs = pairs.filter(pc.is_in(pairs["lp"], pa.array(list(lps))))
    return seg, seg_ptr, ref_lists, pairs


def _pair_rows(seg: pa.Table, pairs: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of the better and the worse hypothesis of every human pair found, and its lp."""
    keys = seg.select(["lp", "segment_id", "system"]).append_column("row", pa.array(np.arange(seg.num_rows)))
    j = pairs.join(keys, ["lp", "segment_id", "better_system"], ["lp", "segment_id", "system"])
    j = j.rename_columns([("row_b" if c == "row" else c) for c in j.column_names])
    j = j.join(keys, ["lp", "segment_id", "worse_system"], ["lp", "segment_id", "system"])
    return (j["row_b"].to_numpy(), j["row"].to_numpy(), j["lp"].to_numpy(zero_copy_only=False))


def _system_pearson(seg: pa.Table, human: pa.Table, lp: str, score_rows) -> tuple[float, int]:
    """Pearson over the systems of ``lp`` with human scores; score_rows(bool mask) -> system score."""
    pearson, _, _ = _research()
    h = human.filter(pc.equal(human["lp"], lp))
    lp_mask = pc.equal(seg["lp"], lp).to_numpy(zero_copy_only=False)
    systems = seg["system"].to_numpy(zero_copy_only=False)
    xs, ys = [], []
    for name, value in zip(h["system"].to_pylist(), h["human"].to_pylist()):
        rows = lp_mask & (systems == name)
        if rows.any():
            xs.append(score_rows(rows))
            ys.append(value)
    return pearson(np.array(xs), np.array(ys)), len(xs)


def en_cs(data: Path) -> list:
    """Rows (metric, paper, ours, systems) for WMT12 English-to-Czech on original references."""
    from .. import BleuConfig, corpus_score, ngram_stats
    from ..metrics.meteor import meteor_params, meteor_segments, system_meteor
    _, _, human_system_scores = _research()
    seg, seg_ptr, refs, pairs = _load(data, 12, ["en-cs"])
    human = human_system_scores(pairs)
    cfg = BleuConfig(tokenize="none")  # text is already 13a-tokenized
    stats = ngram_stats(seg["hypothesis"], refs, np.repeat(np.arange(len(seg_ptr) - 1), np.diff(seg_ptr)), cfg)
    out = [("BLEU", PAPER_EN_CS["BLEU"], *_system_pearson(seg, human, "en-cs",
                                                          lambda r: corpus_score(stats[r], cfg).score))]
    for label, params in (("Meteor exact (cz)", meteor_params("cz")),
                          ("Meteor exact (cz, jar_compat: English function words)",
                           meteor_params("cz", jar_compat=True))):
        res = meteor_segments(seg["hypothesis"], refs, seg_ptr, params)
        out.append((label, PAPER_EN_CS.get(label, PAPER_EN_CS["Meteor exact (cz)"]),
                    *_system_pearson(seg, human, "en-cs", lambda r: system_meteor(res.take(r), params))))  # noqa: B023
    return out


def english_table(paraphrases: Optional[str]) -> str:
    """The English table: ``paraphrases`` if given, else built once (section 3.1, simplemma) from
    Meteor 1.5's paraphrase-en and WordNet synsets shipped in PyPI ``pycocoevalcap==1.2``."""
    if paraphrases:
        return paraphrases
    target = CACHE / "parmesan_en_simplemma.v1.tsv"  # bump when build_table changes
    if target.is_file():
        return str(target)
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("metaeval into-en: expected Meteor's English data from pycocoevalcap==1.2 (pip install "
                         "pycocoevalcap==1.2), found it not installed; or give --paraphrases TABLE.tsv")
    meteor = Path(list(spec.submodule_search_locations)[0]) / "meteor"
    from ..metrics.parmesan.table import build_table
    CACHE.mkdir(parents=True, exist_ok=True)
    build_table(meteor / "data" / "paraphrase-en.gz", target, analyzer="simplemma", lang="en",
                synonyms=f"{meteor / 'meteor-1.5.jar'}!synonym/english.synsets")
    return str(target)


TABLE_VARIANTS = (("all", ("wordnet", "meteor")), ("WordNet", ("wordnet",)))


def into_english(data: Path, table_path: str) -> list:
    """Rows (year, lp, systems, pairs used, Pearson orig, Pearson paraphrased, tau orig, tau
    paraphrased, mean substitutions per hypothesis, human pairs), for each of
    :data:`TABLE_VARIANTS` (all pairs; WordNet pairs only, ``both`` included)."""
    from ..metrics.meteor import meteor_params, meteor_segments, system_meteor
    from ..metrics.parmesan.api import load_table, parmesan_segments
    _, kendall_tau_pairs, human_system_scores = _research()
    params, out = meteor_params("en"), []
    tables = [(name, load_table(table_path, sources=sources)) for name, sources in TABLE_VARIANTS]
    for year in (12, 13):
        seg, seg_ptr, refs, pairs = _load(data, year, INTO_EN)
        human = human_system_scores(pairs)
        better, worse, pair_lp = _pair_rows(seg, pairs)
        orig = meteor_segments(seg["hypothesis"], refs, seg_ptr, params)
        for name, table in tables:
            para = parmesan_segments(seg["hypothesis"], refs, seg_ptr, table, params, analyzer="simplemma", lang="en")
            for lp in INTO_EN:
                sel = pair_lp == lp
                pear = [_system_pearson(seg, human, lp, lambda r: system_meteor(res.take(r), params))  # noqa: B023
                        for res in (orig, para.meteor)]
                taus = [kendall_tau_pairs(res.score[better[sel]], res.score[worse[sel]]) for res in (orig, para.meteor)]
                lp_rows = pc.equal(seg["lp"], lp).to_numpy(zero_copy_only=False)
                out.append((f"WMT{year}", lp, pear[0][1], name, pear[0][0], pear[1][0], *taus,
                            float(para.substitutions[lp_rows].mean()), int(sel.sum())))
    return out


def run_metaeval(data: Optional[str] = None, paraphrases: Optional[str] = None, experiment: str = "all") -> str:
    """Both experiments as markdown tables (``experiment``: all, en-cs, into-en)."""
    folder = require_data(["wmt12_segments.parquet"], data)[0].parent
    lines = []
    if experiment in ("all", "en-cs"):
        lines += ["WMT12 en-cs, original references: system-level Pearson with wins/(wins+losses)", "",
                  "| metric | paper | ours | systems |", "|---|---|---|---|"]
        lines += [f"| {m} | {cell(float(p))} | {cell(float(o))} | {n} |" for m, p, o, n in en_cs(folder)]
        lines.append("")
    if experiment in ("all", "into-en"):
        lines += ["Into English, Meteor exact on original vs paraphrased references (Before Depfix)", "",
                  "| data | lp | systems | table pairs | Pearson orig | Pearson para | tau orig | tau para | subst/hyp "
                  "| human pairs |", "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {y} | {lp} | {n} | {v} | {cell(float(po))} | {cell(float(pp))} | {cell(float(to), '.4f')} | "
                  f"{cell(float(tp), '.4f')} | {cell(float(s), '.2f')} | {k:,} |"
                  for y, lp, n, v, po, pp, to, tp, s, k in into_english(folder, english_table(paraphrases))]
    return "\n".join(lines)
