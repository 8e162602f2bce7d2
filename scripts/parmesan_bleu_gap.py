"""Why is our WMT12 English-to-Czech system-level BLEU correlation 0.789 where Barančíková (2014,
Table 2) has 0.751? (docs/parmesan.md, "The BLEU gap".) Pearson over the 13 en-cs systems between a
system score and the "> others" silver standard wins / (wins + losses), for:

- the BLEU implementation: corpus BLEU (sacrebleu conventions), mean sentence BLEU under each
  smoothing, Chen & Cherry's Eq. 13 document BLEU;
- tokenization (13a, intl = mteval-v14 international, none = whitespace of the released text,
  char) and case (kept, lowercased: mteval-v13a.pl lowercases unless run with -c);
- the silver standard's tie handling: wins / (wins + losses) (ties dropped, the paper's formula),
  (wins + ties / 2) / comparisons, (wins + ties) / comparisons ("\u2265 others", WMT11);
- the judgments: a bootstrap over the 5-way rankings (which we have only a sample of) gives the
  spread of the correlation that the silver standard's sampling alone causes.

    python scripts/parmesan_bleu_gap.py [--data DIR] [--boot 1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kbest_bleu.bleu import corpus_score, document_score, sentence_scores
from kbest_bleu.config import BleuConfig
from kbest_bleu.research.correlation import pearson
from kbest_bleu.stats import ngram_stats

LP = "en-cs"


def human_scores(judg: pa.Table, systems: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ranking and system: wins, losses, ties float64[J, S] (pairs within each 5-way ranking)."""
    index = {s: i for i, s in enumerate(systems)}
    n = judg.num_rows
    wins, losses, ties = (np.zeros((n, len(systems))) for _ in range(3))
    for r, (names, ranks) in enumerate(zip(judg["systems"].to_pylist(), judg["ranks"].to_pylist())):
        judged = [(index[s], k) for s, k in zip(names, ranks) if k >= 0 and s in index]
        for a in range(len(judged)):
            for b in range(a + 1, len(judged)):
                (i, ri), (j, rj) = judged[a], judged[b]
                if i == j:
                    continue
                if ri < rj:
                    wins[r, i] += 1
                    losses[r, j] += 1
                elif rj < ri:
                    wins[r, j] += 1
                    losses[r, i] += 1
                else:
                    ties[r, i] += 1
                    ties[r, j] += 1
    return wins, losses, ties


SILVER = {"wins/(wins+losses)": lambda w, l, _t: w / (w + l),
          "(wins+ties/2)/all": lambda w, l, t: (w + t / 2) / (w + l + t),
          "(wins+ties)/all": lambda w, l, t: (w + t) / (w + l + t)}


def system_metric(seg: pa.Table, systems: list, tok: str, lowercase: bool) -> dict:
    """{variant: float64[S]} of BLEU system scores for one tokenization and case."""
    cfg = BleuConfig(tokenize=tok, lowercase=lowercase)
    sid = seg["segment_id"].to_numpy()
    stats = ngram_stats(seg["hypothesis"], seg["references"], sid, cfg)
    names = seg["system"].to_numpy(zero_copy_only=False)
    out = {"corpus BLEU": [], "Eq. 13 doc BLEU (s3)": []}
    out.update({f"mean sentence BLEU s{s}": [] for s in range(8)})
    sent = {s: sentence_scores(stats, BleuConfig.make(cfg, smoothing=s)) for s in range(8)}
    for s in systems:
        rows = np.flatnonzero(names == s)
        out["corpus BLEU"].append(corpus_score(stats[rows], cfg).score)
        out["Eq. 13 doc BLEU (s3)"].append(float(document_score(stats[rows], None, BleuConfig.make(cfg, smoothing=3))))
        for k in range(8):
            out[f"mean sentence BLEU s{k}"].append(float(sent[k][rows].mean()))
    return {k: np.array(v, float) for k, v in out.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--boot", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)
    a = p.parse_args(argv)
    data = Path(a.data)
    seg = pq.read_table(data / "wmt12_segments.parquet")
    seg = seg.filter(pc.equal(seg["lp"], LP)).sort_by([("segment_id", "ascending"), ("system", "ascending")])
    judg = pq.read_table(data / "wmt12_rank_judgments.parquet")
    judg = judg.filter(pc.equal(judg["lp"], LP))
    systems = sorted(set(seg["system"].to_pylist()))
    w, l, t = human_scores(judg, systems)
    W, L, T = w.sum(0), l.sum(0), t.sum(0)
    print(f"WMT12 {LP}: {len(systems)} systems, {judg.num_rows:,} rankings, {int(W.sum()):,} wins, "
          f"{int(T.sum()) // 2:,} tied pairs\n")
    silver = {k: f(W, L, T) for k, f in SILVER.items()}
    base = silver["wins/(wins+losses)"]
    print("| tokenize | case | system score | Pearson (paper's silver) | (wins+ties/2)/all | (wins+ties)/all |")
    print("|---|---|---|---|---|---|")
    variants = {}
    for tok in ("13a", "intl", "none", "char"):
        for lc in (False, True):
            for name, x in system_metric(seg, systems, tok, lc).items():
                variants[tok, lc, name] = x
                if name.startswith("mean sentence") and name[-1] not in "013":
                    continue
                print(f"| {tok} | {'lower' if lc else 'kept'} | {name} | " +
                      " | ".join(f"{pearson(x, s):.3f}" for s in silver.values()) + " |")
    # the silver standard's sampling: resample whole 5-way rankings
    rng = np.random.default_rng(a.seed)
    x = variants["13a", False, "corpus BLEU"]
    draws = np.empty(a.boot)
    for b in range(a.boot):
        pick = rng.integers(0, judg.num_rows, judg.num_rows)
        draws[b] = pearson(x, w[pick].sum(0) / (w[pick].sum(0) + l[pick].sum(0)))
    lo, hi = np.quantile(draws, [0.025, 0.975])
    print(f"\nBootstrap over the {judg.num_rows:,} rankings ({a.boot} resamples, seed {a.seed}): corpus BLEU "
          f"(13a, case kept) Pearson {pearson(x, base):.3f}, 95% interval [{lo:.3f}, {hi:.3f}], sd {draws.std():.3f}; "
          f"share of resamples at or below the paper's 0.751: {np.mean(draws <= 0.751):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
