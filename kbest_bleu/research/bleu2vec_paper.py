"""Does BLEU2VEC help? The paper's correlation tables (section 4, Tables 1-2) rebuilt on the data we have.

Models: separate (section 2.1) and joint (section 2.2), trained on all English text of the shared
data (references and into-English outputs, deduplicated lines, 13a tokens). Segment level: Pearson
with the DA z-scores of WMT15 DAseg (the paper's four language pairs, but 500 DA-scored outputs per
pair instead of WMT15's system outputs) and WMT17 DAseg; system level: Pearson of corpus scores
with the mean DA z-score of each WMT22 into-English system. Sentence BLEU is sacrebleu's (13a, exp
smoothing, effective order); BLEU2VEC runs on 13a tokens in both modes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InputError
from ..files.inputs import clash, refuse
from ..files.output import atomic_output
from ..files.temporaries import created_directories
from .correlation import cell
from .data import require_data

__all__ = ["english_corpus", "main", "segment_table", "system_table", "target_corpus"]

# Tables 1 and 2 of the paper (WMT15, models trained on 50M News Crawl sentences).
PAPER_SEGMENT = {"SENT-BLEU": (0.308, 0.360, 0.391, 0.329), "BLEU2VEC_SEP": (0.327, 0.366, 0.422, 0.320),
                 "BLEU2VEC_JOINT": (0.326, 0.363, 0.417, 0.318)}
PAPER_SYSTEM = {"BLEU": (0.929, 0.865, 0.958, 0.851), "BLEU2VEC_SEP": (0.953, 0.867, 0.970, 0.857),
                "BLEU2VEC_JOINT": (0.946, 0.863, 0.969, 0.846)}
PAPER_LPS = ("fi-en", "de-en", "cs-en", "ru-en")
_TEXT_FILES = ("wmt12_segments", "wmt13_segments", "wmt15_daseg", "wmt17_daseg", "wmt22_news_systems",
               "wmt22_zhen_mtme", "multeval", "moses_mert_nbest", "joshua_bn_en_kbest")


def english_corpus(data: Path, out: Path) -> tuple[int, int]:
    """Write every distinct English line of the shared data (into-English hypotheses and their
    references; files without ``lp`` are English-target) to ``out``. Returns (lines, words)."""
    return target_corpus(data, out, "en")


def target_corpus(data: Path, out: Path, lang: str) -> tuple[int, int]:
    """Write every distinct line of language ``lang`` in the shared data (the hypotheses and
    references of the pairs into ``lang``; files without ``lp`` count as English) to ``out``.
    Returns (lines, words)."""
    seen: dict = {}
    read = [data / f"{name}.parquet" for name in _TEXT_FILES]
    found = clash(out, read)
    if found is not None:  # before reading: never one of the data files
        refuse(out, "--corpus-out", found)
    for path in read:
        if not path.exists():
            continue
        cols = [c for c in ("lp", "hypothesis", "references") if c in pq.read_schema(path).names]
        if "lp" not in cols and lang != "en":
            continue
        t = pq.read_table(path, columns=cols)
        if "lp" in cols:
            t = t.filter(pc.match_substring_regex(t["lp"], f"-{lang}$"))
        for text in (t["hypothesis"], pc.list_flatten(t["references"])):
            seen.update(dict.fromkeys(s.strip() for s in text.to_pylist() if s and s.strip()))
    with created_directories(out.parent, "--corpus-out"), atomic_output(out, read, "--corpus-out") as tmp:
        tmp.write_text("\n".join(seen) + "\n", encoding="utf-8")  # whole or not at all, never over an input
    return len(seen), sum(len(s.split()) for s in seen)


def _tokenized(strings: pa.Array) -> pa.Array:
    """13a tokens joined by spaces: what the models were trained on, as whitespace input."""
    from ..tokenize import tokenize
    tokens, ptr = tokenize(strings, "13a")
    return pa.array([" ".join(tokens[ptr[i]:ptr[i + 1]].to_pylist()) for i in range(len(strings))], pa.string())


def _variants(models: Path) -> dict:
    from ..metrics.bleu2vec.models import load_embeddings
    from ..metrics.bleu2vec.score import from_options
    sep, joint = load_embeddings(models), None
    if any(models.glob("*.joint.w2v.bin")):
        jdir = models / "joint_only"
        jdir.mkdir(exist_ok=True)
        for f in models.glob("*.joint.w2v.bin"):
            if not (jdir / f.name).exists():
                (jdir / f.name).symlink_to(f.resolve())
        joint = load_embeddings(jdir)
    out = {"BLEU2VEC faithful sep": from_options(sep, "faithful"),
           "BLEU2VEC corrected sep": from_options(sep, "corrected", tokenize="none")}
    if joint is not None:
        out["BLEU2VEC faithful joint"] = from_options(joint, "faithful")
        out["BLEU2VEC corrected joint"] = from_options(joint, "corrected", tokenize="none")
    return out


def _rows(metric, hyps: pa.Array, refs: pa.Array) -> tuple:
    seg_ptr = np.arange(len(hyps) + 1, dtype=np.int64)
    return metric.counts(hyps, refs, seg_ptr)


def _pearson(x, y) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def segment_table(data: Path, variants: dict, file: str, lps: Optional[tuple] = None) -> tuple[list, dict]:
    """Pearson with the DA z-scores per language pair: {metric: [r per lp]}."""
    from ..bleu import score_kbest
    t = pq.read_table(data / f"{file}.parquet", columns=["lp", "hypothesis", "references", "human_score"])
    t = t.filter(pc.match_substring_regex(t["lp"], "-en$"))
    lps = lps or tuple(sorted(set(t["lp"].to_pylist())))
    result: dict = {"sentBLEU (sacrebleu 13a)": []}
    result.update({name: [] for name in variants})
    for lp in lps:
        s = t.filter(pc.equal(t["lp"], lp))
        human = s["human_score"].to_numpy()
        hyps, refs = s["hypothesis"].combine_chunks(), s["references"].combine_chunks()
        result["sentBLEU (sacrebleu 13a)"].append(_pearson(score_kbest(hyps, refs, tokenize="13a"), human))
        th = _tokenized(hyps)
        tr = pa.ListArray.from_arrays(refs.offsets, _tokenized(pc.list_flatten(refs)))
        for name, metric in variants.items():
            counts, c, r = _rows(metric, th, tr)
            result[name].append(_pearson(metric.scores(counts, c, r), human))
    return list(lps), result


def system_table(data: Path, variants: dict) -> tuple[list, dict]:
    """WMT22 into-English: Pearson of corpus scores with each system's mean DA z-score."""
    from ..bleu import corpus_bleu
    t = pq.read_table(data / "wmt22_news_systems.parquet", columns=["lp", "system", "hypothesis", "references",
                                                                     "human_score"])
    t = t.filter(pc.match_substring_regex(t["lp"], "-en$"))
    lps = [lp for lp in sorted(set(t["lp"].to_pylist())) if t.filter(pc.equal(t["lp"], lp))["human_score"].null_count
           < t.filter(pc.equal(t["lp"], lp)).num_rows]
    result: dict = {"BLEU (sacrebleu corpus, 13a)": []}
    result.update({name: [] for name in variants})
    for lp in lps:
        s = t.filter(pc.equal(t["lp"], lp))
        rated = s.filter(pc.is_valid(s["human_score"]))["system"].to_pylist()
        s = s.filter(pc.is_in(s["system"], pa.array(sorted(set(rated)))))  # systems without DA scores left out
        systems = s["system"].to_pylist()
        names = sorted(set(systems))
        human = [np.nanmean(np.array(s.filter(pc.equal(s["system"], x))["human_score"].to_pylist(), float))
                 for x in names]
        hyps, refs = s["hypothesis"].combine_chunks(), s["references"].combine_chunks()
        result["BLEU (sacrebleu corpus, 13a)"].append(_pearson(
            [corpus_bleu(s.filter(pc.equal(s["system"], x))["hypothesis"],
                         s.filter(pc.equal(s["system"], x))["references"], tokenize="13a").score for x in names],
            human))
        th = _tokenized(hyps)
        tr = pa.ListArray.from_arrays(refs.offsets, _tokenized(pc.list_flatten(refs)))
        group = np.array([names.index(x) for x in systems])
        for name, metric in variants.items():
            counts, c, r = _rows(metric, th, tr)
            summed = np.stack([counts[group == g].sum(0) for g in range(len(names))])
            cs = np.array([c[group == g].sum() for g in range(len(names))])
            rs = np.array([r[group == g].sum() for g in range(len(names))])
            result[name].append(_pearson(metric.scores(summed, cs, rs), human))
    return lps, result


def _markdown(title: str, lps: list, rows: dict, paper: Optional[dict] = None) -> str:
    head = f"| {title} | " + " | ".join(lps) + " | average |\n|---|" + "---:|" * (len(lps) + 1)
    lines = [head]
    for name, values in (paper or {}).items():
        lines.append(f"| {name} (paper, WMT15) | " + " | ".join(cell(float(v)) for v in values)
                     + f" | {cell(float(np.mean(values)))} |")
    for name, values in rows.items():
        lines.append(f"| {name} | " + " | ".join(cell(float(v)) for v in values) + f" | {cell(float(np.mean(values)))} |")
    return "\n".join(lines)


def main(data: "Optional[str | Path]", models: "str | Path", corpus_out: "str | Path", train_models: bool = False,
         epochs: int = 5, vector_size: int = 100, workers: int = 2) -> str:
    """Train (optionally) and print the paper-layout tables as markdown."""
    data = require_data(["wmt15_daseg.parquet"], data)[0].parent
    models, corpus_out = Path(models), Path(corpus_out)
    notes = []
    if train_models:
        from ..metrics.bleu2vec.models import train
        # the corpus is trained from into the models' directory: neither may be the other, or inside it
        out, where = corpus_out.resolve(), models.resolve()
        if out == where or where in out.parents:
            raise InputError(f"--corpus-out {str(corpus_out)!r}: is inside --models {str(models)!r}, where the models "
                             "are written (a model file would be written over); choose a path outside it")
        t0 = time.perf_counter()
        n_lines, n_words = english_corpus(data, corpus_out)
        train(corpus_out, models, orders=(1, 2, 3), joint=True, name="shared_en", vector_size=vector_size,
              epochs=epochs, min_counts="5,30,50", workers=workers, progress=True)
        notes.append(f"trained on {n_lines:,} distinct English lines ({n_words:,} words), {vector_size}-d, "
                     f"{epochs} epochs, min counts 5/30/50, in {time.perf_counter() - t0:.0f} s")
    if not models.is_dir():
        raise InputError(f"metaeval: no models in {str(models)!r}; run with --train first")
    variants = _variants(models)
    lps15, seg15 = segment_table(data, variants, "wmt15_daseg", PAPER_LPS)
    lps17, seg17 = segment_table(data, variants, "wmt17_daseg")
    lps22, sys22 = system_table(data, variants)
    return "\n\n".join(notes + [
        "Segment level, Pearson with DA z-scores, WMT15 DAseg (500 segments per pair)",
        _markdown("metric", lps15, seg15, PAPER_SEGMENT),
        "Segment level, Pearson with DA z-scores, WMT17 DAseg (560 segments per pair)",
        _markdown("metric", lps17, seg17),
        "System level, Pearson with mean DA z-score per system, WMT22 into English "
        "(paper: WMT15 system level, other systems and judgments)",
        _markdown("metric", lps22, sys22),
        "Paper system level (WMT15; fi-en, de-en, cs-en, ru-en): "
        + "; ".join(f"{k} {' '.join(f'{v:.3f}' for v in vals)} (avg {np.mean(vals):.3f})"
                    for k, vals in PAPER_SYSTEM.items())])
