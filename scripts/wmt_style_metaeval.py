"""The WMT-style meta-evaluation (docs/metaeval.md, "Today's statistics") of every judged table in
../shared/data: sentence BLEU under smoothings 0-7, chrF and chrF++ (sacrebleu's defaults), Meteor
exact, Parmesan (into English, given its table) and BLEU2VEC (every pair into a language given a
trained model directory), scored here, then kbest_bleu.research.wmt_style: segment acc23 with tie
calibration + pairwise-permutation clusters, system soft pairwise accuracy / pairwise accuracy +
PERM-BOTH clusters.

    python scripts/wmt_style_metaeval.py [--data DIR] [--k 1000] [--system-k 1000]
        [--bleu2vec-models DIR | en=DIR,cs=DIR,...] [--parmesan-table TSV] [--no-chrf]
        [--only wmt22,wmt15,...] [-o OUT.md]

Data sets and what "segment level" means in each:
- WMT22 zh-en MQM (15 rated systems, refA as the reference, references excluded as systems):
  acc23 per item (each segment's systems), SPA over 1,875 segments;
- WMT15 / WMT17 DAseg (DA z-scores, mostly one output per segment): acc23 with no grouping, no
  system level (each system is judged on other segments);
- WMT12 5-way rankings (wmt12_rank_judgments, human ties kept): each ranking is an item, gold =
  -rank; system level: pairwise accuracy against wins / (wins + losses);
- WMT13 pairwise preferences (wmt13_rr_pairs, human ties removed): acc23 per segment; system
  level as WMT12.
Sentence BLEU: sacrebleu conventions (13a, case kept, effective order; zh tokenizer into Chinese);
system scores are means of segment scores. Meteor / Parmesan / BLEU2VEC read 13a tokens (BLEU2VEC
into Chinese: zh tokens, as its model was trained); chrF (char order 6, beta 2) and chrF++ (word
order 2) read the raw text, as sacrebleu's CHRF.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kbest_bleu.bleu import sentence_scores
from kbest_bleu.config import BleuConfig
from kbest_bleu.research.cli import markdown
from kbest_bleu.research.metaeval import score_systems
from kbest_bleu.research.ties import pair_set
from kbest_bleu.research.wmt_style import WmtRow, accuracy_block, markdown_rows, segment_block, wmt_table
from kbest_bleu.tokenize import tokenize

SMOOTHINGS = [f"bleu_s{s}" for s in range(8)]
METEOR_LANG = {"en": "en", "cs": "cz", "de": "de", "es": "es", "fr": "fr", "ru": "ru"}


def _normalized(strings: pa.Array, tok: str = "13a") -> pa.Array:
    """``tok`` tokens joined by single spaces, case kept (what Meteor, Parmesan and BLEU2VEC read)."""
    tokens, ptr = tokenize(strings, tok)
    return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(ptr), tokens.cast(pa.large_string())),
                          pa.scalar(" ", pa.large_string()))


CHRF = {"chrf": 0, "chrf++": 2}  # column: word order (sacrebleu's chrF2 and chrF2++)


def bleu2vec_models(value: str) -> dict:
    """``--bleu2vec-models``: one directory (English models) or ``lang=DIR,...`` (one per target
    language) -> {lang: DIR}; each directory must exist (found before any scoring)."""
    items = [v.strip() for v in value.split(",")]
    pairs = [("en", items[0])] if len(items) == 1 and "=" not in items[0] else [v.partition("=")[::2] for v in items]
    out: dict = {}
    for lang, path in pairs:
        if not lang.isalpha() or not path or lang in out:
            raise argparse.ArgumentTypeError(
                f"expected one model directory or lang=DIR,lang=DIR,... (each language once), found {value!r}")
        if not Path(path).is_dir():
            raise argparse.ArgumentTypeError(f"no model directory {path!r} (language {lang}); "
                                             "train one with 'kbest-bleu bleu2vec train'")
        out[lang] = path
    return out


def _cached(cache: dict, key: str, make):
    """One model per run: ``make()`` the first time only."""
    if key not in cache:
        cache[key] = make()
    return cache[key]


def score(t: pa.Table, opts) -> tuple[pa.Table, list]:
    """Score every row of one language pair (lp, segment_id, system, hypothesis, references):
    the table sorted by (segment_id, system) with one column per metric, and the metric names."""
    lp = t["lp"][0].as_py()
    target = lp.split("-")[1]
    cfg = BleuConfig(tokenize="zh" if target == "zh" else "13a")
    scored = score_systems(t, cfg)
    out = scored.table
    for s, name in enumerate(SMOOTHINGS):
        out = out.append_column(name, pa.array(sentence_scores(scored.stats, BleuConfig.make(cfg, smoothing=s))))
    names = list(SMOOTHINGS)
    sid = out["segment_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    seg_ptr = np.append(starts, out.num_rows).astype(np.int64)
    refs = out["references"].combine_chunks().take(pa.array(starts))
    hyps = _normalized(out["hypothesis"].combine_chunks())
    refs13 = pa.ListArray.from_arrays(refs.offsets, _normalized(pc.list_flatten(refs)))
    from kbest_bleu.metrics.meteor import meteor_params, meteor_segments
    params = meteor_params(METEOR_LANG.get(target, "other"))
    out = out.append_column("meteor", pa.array(meteor_segments(hyps, refs13, seg_ptr, params).score))
    names.append("meteor")
    if target == "en" and opts.parmesan_table:
        from kbest_bleu.metrics.parmesan.api import load_table, parmesan_segments
        table = _cached(opts.cache, "parmesan", lambda: load_table(opts.parmesan_table))
        res = parmesan_segments(hyps, refs13, seg_ptr, table, meteor_params("en"), analyzer="simplemma", lang="en")
        out = out.append_column("parmesan", pa.array(res.meteor.score))
        names.append("parmesan")
    if target in (opts.bleu2vec_models or {}):
        from kbest_bleu.metrics.bleu2vec.score import from_options
        metric = _cached(opts.cache, f"bleu2vec {target}",
                         lambda: from_options(opts.bleu2vec_models[target], "corrected", tokenize="none"))
        b2v_hyps, b2v_refs = hyps, refs13
        if target == "zh":  # the zh model was trained on zh tokens (13a leaves Chinese unsplit)
            b2v_hyps = _normalized(out["hypothesis"].combine_chunks(), "zh")
            b2v_refs = pa.ListArray.from_arrays(refs.offsets, _normalized(pc.list_flatten(refs), "zh"))
        counts, c, r = metric.counts(b2v_hyps, b2v_refs, seg_ptr)
        out = out.append_column("bleu2vec", pa.array(metric.scores(counts, c, r)))
        names.append("bleu2vec")
    if opts.chrf:
        from kbest_bleu.metrics.chrf import chrf_segments
        for name, word_order in CHRF.items():
            res = chrf_segments(out["hypothesis"].combine_chunks(), refs, seg_ptr, word_order=word_order)
            out = out.append_column(name, pa.array(res.score))
            names.append(name)
    return out, names


def _by_lp(t: pa.Table, opts) -> tuple[pa.Table, dict]:
    """Every language pair scored: (one table, {lp: its metric names}); a metric a pair lacks
    (Parmesan out of English, BLEU2VEC into a language without a model) is null there."""
    parts, names = [], {}
    for lp in sorted(set(t["lp"].to_pylist())):
        part, names[lp] = score(t.filter(pc.equal(t["lp"], lp)), opts)
        parts.append(part.select(["lp", "segment_id", "system"] + names[lp] +
                                 [c for c in part.column_names if c.startswith("human")]))
    return pa.concat_tables(parts, promote_options="permissive"), names


def _per_lp(scored: pa.Table, names: dict, **kw) -> list:
    """wmt_table one language pair at a time, each with its own metrics."""
    return [r for lp in sorted(names) for r in wmt_table(scored.filter(pc.equal(scored["lp"], lp)), names[lp], **kw)]


def wmt22(data: Path, opts) -> tuple[str, list]:
    t = pq.read_table(data / "wmt22_zhen_mtme.parquet")
    t = t.filter(pc.invert(t["is_reference"]))
    ref_ids = t["ref_ids"][0].as_py()
    a = ref_ids.index("refA")
    refs = pc.list_slice(t["references"], a, a + 1)  # refA: the standard reference of WMT22 zh-en
    t = t.set_column(t.column_names.index("references"), "references", refs)
    scored, names = score(t, opts)
    return "WMT22 zh-en MQM (item grouping)", wmt_table(scored, names, human="human_mqm", k=opts.k,
                                                       system_k=opts.system_k, seed=opts.seed)


def da(data: Path, opts, year: int) -> tuple[str, list]:
    t = pq.read_table(data / f"wmt{year}_daseg.parquet")
    if "system" not in t.column_names:  # WMT15 DAseg: one output per segment, no system names
        t = t.append_column("system", pa.array(["mt"] * t.num_rows))
    scored, names = _by_lp(t, opts)
    return (f"WMT{year} DAseg (no grouping, no system level)",
            _per_lp(scored, names, human="human_score", average_by="none", k=opts.k, seed=opts.seed, system=False))


def wmt12(data: Path, opts) -> tuple[str, list]:
    """Segment level from the 5-way rankings (each ranking an item, human ties kept)."""
    from kbest_bleu.research.judged import system_table
    from kbest_bleu.research.metaeval import _lookup
    seg = pq.read_table(data / "wmt12_segments.parquet")
    scored, by_lp = _by_lp(seg, opts)
    judg = pq.read_table(data / "wmt12_rank_judgments.parquet")
    rr = pq.read_table(data / "wmt12_rr_pairs.parquet")
    rows = []
    for lp in sorted(set(judg["lp"].to_pylist())):
        names = by_lp[lp]
        sys_t = system_table(scored.filter(pc.equal(scored["lp"], lp)), names, pairs=rr)
        j = judg.filter(pc.equal(judg["lp"], lp))
        n = j.num_rows
        width = 5
        systems = pc.list_flatten(j["systems"]).to_pylist()
        ranks = np.array(pc.list_flatten(j["ranks"]).to_pylist(), float).reshape(n, width)
        query = pa.table({"lp": [lp] * (n * width), "segment_id": np.repeat(j["segment_id"].to_numpy(), width),
                          "system": systems}).cast(scored.select(["lp", "segment_id", "system"]).schema)
        idx = _lookup(scored, query, ["lp", "segment_id", "system"], "judged system").reshape(n, width)
        human = np.where(ranks < 0, np.nan, -ranks).T  # [positions, rankings]: lower rank is better
        mats = [scored[m].to_numpy()[idx].T for m in names]
        seg = segment_block(pair_set(human, mats, "item"), names, k=opts.k, seed=opts.seed)
        sub = sys_t.filter(pc.equal(sys_t["lp"], lp))
        acc = accuracy_block(sub["human"].to_numpy(), {m: sub[m].to_numpy() for m in names}, opts.system_k,
                             opts.seed, 0.05)
        for m in sorted(names, key=lambda m: (seg[m][2], -seg[m][0], m)):
            rows.append(WmtRow(lp, m, seg[m][0], seg[m][1], seg[m][2], float("nan"), 0, acc[m][0], acc[m][1],
                               sub.num_rows))
    return "WMT12 5-way rankings (each ranking an item; system: wins / (wins + losses))", rows


def wmt13(data: Path, opts) -> tuple[str, list]:
    pairs = pq.read_table(data / "wmt13_rr_pairs.parquet")
    lps = sorted(set(pairs["lp"].to_pylist()))
    seg = pq.read_table(data / "wmt13_segments.parquet")
    scored, names = _by_lp(seg.filter(pc.is_in(seg["lp"], pa.array(lps))), opts)
    return ("WMT13 pairwise preferences (grouped per segment; system: wins / (wins + losses))",
            _per_lp(scored, names, pairs=pairs, k=opts.k, system_k=opts.system_k, seed=opts.seed))


def summary(blocks: list) -> str:
    """Mean segment acc23 and mean segment rank of each metric over the language pairs of each data set."""
    metrics = list(SMOOTHINGS)
    for _, rows in blocks:
        for r in rows:
            if r.metric not in metrics:
                metrics.append(r.metric)
    header = ["metric"] + [f"{t.split(' (')[0]} {c}" for t, _ in blocks for c in ("acc23", "rank")]
    out = []
    for m in metrics:
        cells = [m]
        for _, rows in blocks:
            mine = [r for r in rows if r.metric == m]
            cells += [float(np.mean([r.seg_acc for r in mine])) if mine else float("nan"),
                      f"{np.mean([r.seg_rank for r in mine]):.2f}" if mine else "—"]
        out.append(cells)
    return markdown(header, out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--k", type=int, default=1000, help="permutations per metric pair, segment level")
    p.add_argument("--system-k", type=int, default=1000, help="permutations per metric pair, system level")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--bleu2vec-models", default=None, type=bleu2vec_models,
                   help="BLEU2VEC model directory for English, or lang=DIR,... per target language "
                        "(kbest-bleu bleu2vec train)")
    p.add_argument("--parmesan-table", default=None, help="English Parmesan table (kbest-bleu parmesan build-table)")
    p.add_argument("--no-chrf", dest="chrf", action="store_false", help="leave chrF and chrF++ out")
    p.add_argument("--only", default="wmt22,wmt15,wmt17,wmt12,wmt13")
    p.add_argument("-o", "--output", default=None)
    opts = p.parse_args(argv)
    opts.cache = {}
    data = Path(opts.data)
    runs = {"wmt22": lambda: wmt22(data, opts), "wmt15": lambda: da(data, opts, 15), "wmt17": lambda: da(data, opts, 17),
            "wmt12": lambda: wmt12(data, opts), "wmt13": lambda: wmt13(data, opts)}
    blocks, text = [], []
    for name in opts.only.split(","):
        t0 = time.perf_counter()
        title, rows = runs[name]()
        blocks.append((title, rows))
        text += [f"\n{title}: {time.perf_counter() - t0:.0f} s\n", markdown(*markdown_rows(rows))]
        print(text[-2] + text[-1], flush=True)
    text += ["\nSummary: mean segment acc23 and mean cluster rank over each data set's language pairs\n",
             summary(blocks)]
    print(text[-1])
    if opts.output:
        Path(opts.output).write_text("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
