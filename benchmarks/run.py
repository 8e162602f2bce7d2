"""kbest_bleu against its peers, same workloads, same run.  Usage (from the repository root):

    python benchmarks/run.py            # full run (~10 minutes on 2 cores), prints markdown tables
    python benchmarks/run.py --quick    # smaller peer subsets

Every measurement runs in a fresh subprocess (``--one``), so peak memory (ru_maxrss) is per
tool. Times are medians of repeated runs after a warm-up call (numba compilation excluded; it is
reported separately under "cold start"). Peers too slow for a whole workload run on a seeded
subset and are extrapolated (marked *). Scores are compared where the semantics agree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

WORKLOADS = {
    "gen 2000x100 R=1": ("generated", dict(n_seg=2000, k=100, n_refs=1)),
    "gen 2000x100 R=4": ("generated", dict(n_seg=2000, k=100, n_refs=4)),
    "gen 200x1000 R=4": ("generated", dict(n_seg=200, k=1000, n_refs=4)),
    "Moses 100-best (real)": ("moses", {}),
    "WMT22 pooled (real)": ("pooled", {}),
}


def load(name: str):
    import workloads
    fn, kw = WORKLOADS[name]
    t = getattr(workloads, fn)(**kw)
    return t["hypothesis"].to_pylist(), t["segment_id"].to_numpy(), t


def seg_groups(seg):
    starts = np.r_[0, np.flatnonzero(np.diff(seg)) + 1, len(seg)]
    return [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]


def _median_time(fn, reps):
    fn()  # warm-up (JIT, caches)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ------------------------------------------------------------------ single measurements (subprocess)

def one(tool: str, workload: str, limit: int, threads: int, tokenize: str) -> dict:
    import pyarrow as pa
    hyps, seg, table = load(workload)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    refs_rows = table["references"].to_pylist()
    groups = seg_groups(seg)
    if limit and limit < len(groups):  # seeded subset of whole segments
        pick = np.sort(np.random.default_rng(1).choice(len(groups), limit, replace=False))
        groups = [groups[i] for i in pick]
    n_hyp = sum(b - a for a, b in groups)
    out = {"tool": tool, "workload": workload, "n": n_hyp, "threads": threads, "tokenize": tokenize}
    scores = None
    if tool.startswith("kbest_bleu"):
        import numba

        import kbest_bleu as kb
        from kbest_bleu.encode import encode, references_array, segment_references
        from kbest_bleu.stats import stats_from_encoded
        numba.set_num_threads(threads)
        rows = np.concatenate([np.arange(a, b) for a, b in groups])
        sub = table.take(pa.array(rows))
        ptr = np.r_[0, np.cumsum([b - a for a, b in groups])].astype(np.int64)
        cfg = kb.BleuConfig(tokenize=tokenize)
        hyp_arr = sub["hypothesis"].combine_chunks()
        seg_refs = segment_references(references_array(sub["references"].combine_chunks()), ptr, len(sub))
        enc = encode(hyp_arr, seg_refs, ptr, tokenize)
        if tool == "kbest_bleu kernel":  # statistics + sentence BLEU from encoded ids
            run = lambda: kb.sentence_scores(stats_from_encoded(enc, cfg), cfg)  # noqa: E731
        elif tool == "kbest_bleu encode":  # tokenize + encode only
            run = lambda: encode(hyp_arr, seg_refs, ptr, tokenize)  # noqa: E731
        else:  # "kbest_bleu e2e": parquet file -> parquet file, streaming
            import pyarrow.parquet as pq

            from kbest_bleu.batch import score_parquet
            tmp = Path(tempfile.mkdtemp())
            pq.write_table(sub, tmp / "in.parquet")
            # the kernels' in-process rate (small files would take the numpy engine by default)
            run = lambda: score_parquet(tmp / "in.parquet", tmp / "out.parquet", cfg, engine="kernels")  # noqa: E731
        out["seconds"] = _median_time(run, 5)
        scores = kb.sentence_scores(stats_from_encoded(enc, cfg), cfg)
    else:
        fn = PEERS[tool]
        t0 = time.perf_counter()
        scores = fn(hyps, refs_rows, groups, tokenize)
        out["seconds"] = time.perf_counter() - t0
        out["check"] = check(tool, hyps, refs_rows, groups, scores, tokenize)
    # peak memory added by the measurement, above the process with the workload loaded
    out["extra_rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline) / 1024
    return out


def peer_sacrebleu(hyps, refs, groups, tok):
    from sacrebleu.metrics import BLEU
    bleu = BLEU(tokenize=tok, effective_order=True)
    return [bleu.sentence_score(hyps[i], refs[i]).score / 100 for a, b in groups for i in range(a, b)]


def peer_sacrebleu_cached(hyps, refs, groups, tok):
    from sacrebleu.metrics import BLEU
    out = []
    for a, b in groups:  # reference n-grams extracted once per segment
        bleu = BLEU(tokenize=tok, effective_order=True, references=[[r] for r in refs[a]])
        out += [bleu.corpus_score([hyps[i]], None).score / 100 for i in range(a, b)]
    return out


def peer_nltk(hyps, refs, groups, tok):
    import warnings

    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    m3 = SmoothingFunction().method3
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in groups:
            r = [x.split() for x in refs[a]]
            out += [sentence_bleu(r, hyps[i].split(), smoothing_function=m3) for i in range(a, b)]
    return out


def peer_fast_bleu(hyps, refs, groups, tok):
    from fast_bleu import BLEU
    out = []
    for a, b in groups:
        bleu = BLEU([x.split() for x in refs[a]], {4: (0.25,) * 4}, smoothing_func=1)
        out += bleu.get_score([hyps[i].split() for i in range(a, b)])[4]
    return out


def peer_bleuscore(hyps, refs, groups, tok):
    import bleuscore
    return [bleuscore.compute(references=[refs[i]], predictions=[hyps[i]], max_order=4, smooth=True,
                              ref_len_method="closest")["bleu"] for a, b in groups for i in range(a, b)]


PEERS = {"sacrebleu": peer_sacrebleu, "sacrebleu cached refs": peer_sacrebleu_cached, "nltk": peer_nltk,
         "fast-bleu": peer_fast_bleu, "bleuscore": peer_bleuscore}
# the kbest_bleu options with the same semantics as each peer
SAME = {"sacrebleu": {}, "sacrebleu cached refs": {}, "nltk": dict(compat="nltk", smoothing=3),
        "fast-bleu": dict(compat="nltk", smoothing=1), "bleuscore": dict(compat="moses", tokenize="13a")}


def check(tool, hyps, refs, groups, scores, tok) -> str:
    import kbest_bleu as kb
    rows = [i for a, b in groups for i in range(a, b)]
    opts = dict(SAME[tool])
    opts.setdefault("tokenize", tok)
    ours = kb.score_kbest([hyps[i] for i in rows], [refs[i] for i in rows], **opts)
    diff = np.abs(np.asarray(scores) - ours)
    return f"max |diff| {diff.max():.1e}, {int((diff > 1e-9).sum())} of {len(rows)} > 1e-9"


# ------------------------------------------------------------------ orchestration

def spawn(*args) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", *map(str, args)], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_start() -> list:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("empty numba cache (compiles)", "warm numba cache"):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kbest_bleu.cli", "score", "-q"], env=env, check=True,
                           capture_output=True)
            rows.append((label, time.perf_counter() - t0))
    return rows


def tokenizer_speed(n_lines: int = 50000) -> list:
    import pyarrow as pa
    import workloads
    from sacrebleu.tokenizers import tokenizer_13a, tokenizer_char, tokenizer_intl, tokenizer_none, tokenizer_zh

    from kbest_bleu.tokenize import prepare, split_ids
    lines = workloads.pooled()["hypothesis"].to_pylist()[:n_lines]
    arr = pa.array(lines)
    objs = {"none": tokenizer_none.NoneTokenizer(), "13a": tokenizer_13a.Tokenizer13a(),
            "intl": tokenizer_intl.TokenizerV14International(), "char": tokenizer_char.TokenizerChar(),
            "zh": tokenizer_zh.TokenizerZh()}
    rows = []
    for name, obj in objs.items():
        n_tok = len(split_ids(*prepare(arr, name))[0])
        ours = _median_time(lambda: split_ids(*prepare(arr, name)), 3)
        t0 = time.perf_counter()
        for s in lines:  # sacrebleu's lru_cache would hide repeats: all lines here are distinct calls
            obj(s.rstrip()).split()
        theirs = time.perf_counter() - t0
        rows.append((name, n_tok / ours, n_tok / theirs))
    return rows


def tuning_steps() -> list:
    """Per-step costs of the tuners on generated 2,000 segments x 100-best (14 random features)."""
    import pyarrow as pa
    import workloads

    import kbest_bleu as kb
    from kbest_bleu.tuning import KbestLists, expected_bleu, hope_fear_model, moses_matrix, tune_pro
    from kbest_bleu.tuning._kernels import _mira_epoch
    t = workloads.generated(2000, 100, 4)
    rng = np.random.default_rng(0)
    t = t.append_column("features", pa.array(rng.normal(size=(t.num_rows, 14)).tolist(), pa.list_(pa.float64())))
    KbestLists.from_table(t.slice(0, 1000))  # warm-up: compilation is reported under cold start
    t0 = time.perf_counter()
    lists = KbestLists.from_table(t)
    load = time.perf_counter() - t0
    w = rng.normal(size=14)
    bleu = kb.sentence_scores(lists.stats)
    bg = np.ones(9)
    m = moses_matrix(lists.stats)
    order = np.arange(len(lists.seg_ptr) - 1)

    def mira_epoch():
        _mira_epoch(lists.features, m, lists.seg_ptr, order, w.copy(), np.zeros(14), np.zeros(1, np.int64),
                    bg.copy(), 0.01, 0.999, 4)
    rows = [("load + statistics (once)", load),
            ("model scores + 1-best + corpus BLEU", _median_time(lambda: lists.corpus_bleu(lists.one_best(w)), 5)),
            ("expected BLEU + exact gradient", _median_time(lambda: expected_bleu(lists, w, bleu), 5)),
            ("background BLEU + hope/fear/model", _median_time(lambda: hope_fear_model(lists, w, bg), 5)),
            ("k-best MIRA epoch (2,000 online updates)", _median_time(mira_epoch, 5)),
            ("PRO (5,000 samples/segment + logistic regression)", _median_time(lambda: tune_pro(lists, w), 3)),
            ("greedy corpus oracle", _median_time(lists.corpus_oracle, 3))]
    return rows


def mbr_times() -> list:
    import workloads

    from kbest_bleu.tuning.mbr import mbr_select
    out = []
    for n_seg, k in ((200, 100), (10, 1000)):
        t = workloads.generated(n_seg, k, 1, seed=1)
        hyps, seg = t["hypothesis"], t["segment_id"]
        sec = _median_time(lambda: mbr_select(hyps, seg), 3)
        out.append((k, n_seg, sec / n_seg))
    return out


def memory_check() -> list:
    """Peak RSS of `kbest-bleu score` streaming 1M and 10M generated rows (default batch size)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import workloads
    base = workloads.generated(2000, 100, 4)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for copies in (5, 50):
            path = Path(tmp) / f"in{copies}.parquet"
            with pq.ParquetWriter(path, base.schema, compression="zstd") as w:
                for c in range(copies):
                    seg = pa.array(base["segment_id"].to_numpy() + c * 2000)
                    w.write_table(base.set_column(0, "segment_id", seg))
            cmd = [sys.executable, "-c", "import resource, sys; from kbest_bleu.cli import main; main(sys.argv[1:]); "
                   "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)", "score", str(path), "-o",
                   str(Path(tmp) / "out.parquet"), "-q"]
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append((copies * base.num_rows, int(out.stdout.strip().splitlines()[-1]) / 1024,
                         time.perf_counter() - t0))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=5, metavar=("TOOL", "WORKLOAD", "LIMIT", "THREADS", "TOKENIZE"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--memory", action="store_true", help="also stream 1M and 10M generated rows (slow)")
    a = ap.parse_args()
    if a.one:
        tool, workload, limit, threads, tok = a.one
        print(json.dumps(one(tool, workload, int(limit), int(threads), tok)))
        return
    import kbest_bleu
    print(f"# kbest_bleu {kbest_bleu.__version__} benchmark, {time.strftime('%Y-%m-%d')}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {platform.system()}\n")
    subset = {"sacrebleu": 60, "sacrebleu cached refs": 60, "nltk": 20, "fast-bleu": 200, "bleuscore": 60}
    if a.quick:
        subset = {k: max(5, v // 4) for k, v in subset.items()}
    print("x sacrebleu: ratio to sacrebleu's per-hypothesis loop with the same tokenizer; x fast-bleu: ratio to "
          "fast-bleu (C++, whitespace tokens). * = run on a seeded subset of whole segments and extrapolated.\n")
    print("| workload | tool | tokens | threads | hyp/s | x sacrebleu | x fast-bleu | extra peak RSS MB | agreement |")
    print("|---|---|---|---|---|---|---|---|---|")
    for wl in WORKLOADS:
        results = []
        for tool in ("kbest_bleu kernel", "kbest_bleu encode", "kbest_bleu e2e"):
            for th in (1, 2):
                for tok in (("none", "13a") if tool != "kbest_bleu kernel" else ("none",)):
                    results.append(spawn(tool, wl, 0, th, tok))
        for tool, lim in subset.items():
            results.append(spawn(tool, wl, lim, 2, "none"))
        results.append(spawn("sacrebleu", wl, subset["sacrebleu"], 2, "13a"))  # the 13a baseline
        sacre = {r["tokenize"]: r["n"] / r["seconds"] for r in results if r["tool"] == "sacrebleu"}
        fast = next(r["n"] / r["seconds"] for r in results if r["tool"] == "fast-bleu")
        n_all = len(load(wl)[0])
        for r in results:
            rate = r["n"] / r["seconds"]
            star = "*" if r["tool"] in PEERS and r["n"] < n_all else ""
            print(f"| {wl} | {r['tool']}{star} | {r['tokenize']} | {r['threads']} | {rate:,.0f} | "
                  f"{rate / sacre[r['tokenize']]:,.1f} | {rate / fast:,.1f} | {r['extra_rss_mb']:.0f} | "
                  f"{r.get('check', '')} |")
        sys.stdout.flush()
    print("\n| tokenizer | kbest_bleu tokens/s | sacrebleu tokens/s | ratio |\n|---|---|---|---|")
    for name, ours, theirs in tokenizer_speed():
        print(f"| {name} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.1f} |")
    print("\n| cold start of `kbest-bleu score -q` (bundled sample, 5,000 rows) | seconds |\n|---|---|")
    for label, sec in cold_start():
        print(f"| {label} | {sec:.2f} |")
    print("\n| tuner step (2,000 segments x 100-best, 14 features) | seconds |\n|---|---|")
    for label, sec in tuning_steps():
        print(f"| {label} | {sec:.4f} |")
    print("\n| MBR (K x K sentence-BLEU matrix + selection) | segments | seconds per segment |\n|---|---|---|")
    for k, n_seg, sec in mbr_times():
        print(f"| K = {k} | {n_seg} | {sec:.4f} |")
    if a.memory:
        print("\n| streaming `kbest-bleu score` (batch 65,536) | peak RSS MB | seconds |\n|---|---|---|")
        for n, rss, sec in memory_check():
            print(f"| {n:,} rows | {rss:.0f} | {sec:.1f} |")


if __name__ == "__main__":
    main()
