"""Token-id BLEU (issue 35): kbest_bleu.token_ids.token_bleu against the text path fed the same ids
joined into strings, and against NLTK's sentence_bleu loop, on the issue's random batches.

    python benchmarks/bench_token_ids.py                 # every batch, medians of --repeats
    python benchmarks/bench_token_ids.py --quick         # fewer repeats, smaller NLTK sample
    python benchmarks/bench_token_ids.py --batches 1     # the first batch only (256 x 1,024), then 64 x 64
    python benchmarks/bench_token_ids.py --keep-freed-memory  # malloc set as a training loop would set it

Batches (seeded): ids Zipf-like over a vocabulary of 32,000 (1-based: 0 is the pad id); each
hypothesis is a reference of 80-100% of the row length with ~30% of its tokens replaced, then
filled to the full length, right-padded where shorter. Scoring: Moses BLEU+1 (``compat="moses"``,
TensorBLEU's add-1 on every order). In-process, warm (one call first), medians of wall times
(perf_counter), and the calling thread's CPU time for one-thread runs (steadier on a shared
machine). Rows:

- ``token_bleu``: padded int64 array in, float64 scores out (conversion, counting, scoring);
- ``text path``: the ids joined into strings in Python (``" ".join(map(str, row))``), then
  :func:`kbest_bleu.bleu.score_kbest` with ``tokenize="none"`` (conversion included);
- ``NLTK``: ``sentence_bleu`` per row on integer lists (method2), on a seeded sample of rows,
  extrapolated to the batch (said so in the table).

The 64 x 64 row also splits one call into its parts by CPU time (conversion of both arrays with the
segment table, as the call makes them in one kernel call; scoring; and the rest: counting and the
glue between), and times the reusable scorer (``TokenBleuScorer``: references converted once).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from kbest_bleu.bleu import score_kbest, score_rows
from kbest_bleu.token_ids import TokenBleuScorer, token_bleu, token_config, token_ngram_stats
from kbest_bleu.token_ids._inputs import batch_inputs

PAD = 0
VOCAB = 32000


def zipf_ids(rng: np.random.Generator, size, vocab: int = VOCAB) -> np.ndarray:
    """Ids 1..vocab with Zipf-like frequencies (rank^-1.1), as subword ids are."""
    ranks = np.arange(1, vocab + 1)
    p = ranks ** -1.1
    return rng.choice(vocab, size=size, p=p / p.sum()) + 1


def batch(n_rows: int, length: int, n_refs: int = 1, group: int = 1, seed: int = 0):
    """(hypotheses int64[n_rows, length], references int64[n_rows // group, n_refs, length]), pad 0.

    A group's references are each 80-100% of ``length`` long; each hypothesis is one of its
    group's references with ~30% of the tokens replaced, filled to ``length`` (a sampled
    completion runs to the length limit)."""
    rng = np.random.default_rng(seed)
    n_groups = n_rows // group
    refs = np.full((n_groups, n_refs, length), PAD, np.int64)
    ref_len = rng.integers(int(0.8 * length), length + 1, (n_groups, n_refs))
    base = zipf_ids(rng, (n_groups, length))
    for r in range(n_refs):
        body = np.where(rng.random((n_groups, length)) < (0.0 if r == 0 else 0.3), zipf_ids(rng, (n_groups, length)),
                        base)
        refs[:, r] = np.where(np.arange(length) < ref_len[:, r:r + 1], body, PAD)
    hyp = np.repeat(base, group, axis=0)
    changed = rng.random(hyp.shape) < 0.3
    hyp[changed] = zipf_ids(rng, int(changed.sum()))
    return hyp, refs


def _texts(hyp: np.ndarray, refs: np.ndarray, group: int):
    """The text path's input: each row's non-pad ids joined by spaces, one list of references per
    group, segment ids."""
    hyps = [" ".join(map(str, row[row != PAD].tolist())) for row in hyp]
    ref_texts = [[" ".join(map(str, r[r != PAD].tolist())) for r in g if (r != PAD).any()] for g in refs]
    return hyps, ref_texts, np.repeat(np.arange(len(refs)), group)


def timed(fn, repeats: int):
    """(median wall seconds, median CPU seconds of the calling thread) after one warm-up call, each
    over its own ``repeats`` calls: reading the thread's CPU clock is a system call (~0.5 us),
    which would count in a small call's wall time."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
    for _ in range(repeats):
        c0 = time.thread_time()
        fn()
        cpu.append(time.thread_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def set_threads(n: int) -> None:
    import numba
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def run_batch(name: str, n_rows: int, length: int, n_refs: int, group: int, repeats: int, nltk_rows: int,
              max_threads: int) -> dict:
    hyp, refs = batch(n_rows, length, n_refs, group)
    groups = group if group > 1 else None
    ref_arg = refs if n_refs > 1 else refs[:, 0]
    out = {"batch": name}
    scores = None
    for n_threads in sorted({1, max_threads}):
        set_threads(n_threads)
        scores = token_bleu(hyp, ref_arg, pad_id=PAD, groups=groups, compat="moses")
        out[f"ours_{n_threads}t"], out[f"ours_{n_threads}t_cpu"] = timed(
            lambda: token_bleu(hyp, ref_arg, pad_id=PAD, groups=groups, compat="moses"), repeats)
    set_threads(max_threads)

    def text_path():
        h, r, seg = _texts(hyp, refs, group)
        return score_kbest(h, r, seg, compat="moses", tokenize="none")
    text_scores = text_path()
    out["same_as_text"] = bool(np.array_equal(scores, text_scores))
    out["text"], _ = timed(text_path, max(1, repeats // 3))
    out["join_only"], _ = timed(lambda: _texts(hyp, refs, group), max(1, repeats // 3))
    out["nltk"], out["nltk_rows"] = nltk_time(hyp, refs, group, nltk_rows)
    return out


def nltk_time(hyp: np.ndarray, refs: np.ndarray, group: int, n_sample: int):
    """NLTK's loop on ``n_sample`` seeded rows (integer lists), extrapolated to the batch; checks
    our NLTK preset on the same rows."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(len(hyp), size=min(n_sample, len(hyp)), replace=False))
    h = [row[row != PAD].tolist() for row in hyp[rows]]
    r = [[x[x != PAD].tolist() for x in refs[i // group] if (x != PAD).any()] for i in rows]
    fn = SmoothingFunction().method2
    t0 = time.perf_counter()
    want = [sentence_bleu(rr, hh, smoothing_function=fn) for hh, rr in zip(h, r)]
    seconds = (time.perf_counter() - t0) * len(hyp) / len(rows)
    got = token_bleu(h, r, compat="nltk", smoothing=2)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-300), "NLTK preset differs from NLTK"
    return seconds, len(rows)


def small_call_parts(repeats: int) -> dict:
    """64 x 64, 1 reference: one call by CPU time, and its parts."""
    set_threads(1)
    hyp, refs = batch(64, 64)
    ref = refs[:, 0]
    cfg = token_config(compat="moses")
    out = {}
    out["call"], out["call_cpu"] = timed(lambda: token_bleu(hyp, ref, pad_id=PAD, compat="moses"), repeats)
    out["rows"] = timed(lambda: batch_inputs(hyp, ref, PAD, None), repeats)[1]  # the call's conversion in one call
    stats = token_ngram_stats(hyp, ref, pad_id=PAD, config=cfg)  # (counted to order 5: the call counts 4)
    out["scores"] = timed(lambda: score_rows(stats, cfg, "sentence"), repeats)[1]  # as the call scores (no value check)
    scorer = TokenBleuScorer(ref, pad_id=PAD, config=cfg)
    out["scorer"], out["scorer_cpu"] = timed(lambda: scorer(hyp), repeats)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="3 repeats, NLTK on 32 rows")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batches", default="1,2,3,4", help="which batches, 1-based, comma-separated (1: 256 x 1,024)")
    ap.add_argument("--keep-freed-memory", action="store_true",
                    help="call kbest_bleu.keep_freed_memory() first (malloc keeps what a call frees for the next)")
    args = ap.parse_args()
    if args.keep_freed_memory:
        import kbest_bleu

        print(f"# kbest_bleu.keep_freed_memory(): {kbest_bleu.keep_freed_memory()}")
    repeats = 3 if args.quick else args.repeats
    nltk_rows = 32 if args.quick else 64
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}; medians of {repeats}")
    batches = [("256 x 1,024, 1 ref", 256, 1024, 1, 1), ("512 x 1,024, 1 ref", 512, 1024, 1, 1),
               ("1,024 x 256, 1 ref", 1024, 256, 1, 1), ("100,000 x 32, 4 refs, K = 100", 100_000, 32, 4, 100)]
    print(f"| batch | token_bleu {args.threads} threads | 1 thread (CPU) | text path (join incl.) | join alone "
          f"| NLTK loop | x text | x NLTK | same as text |")
    print("|---|---|---|---|---|---|---|---|---|")
    wanted = [batches[int(i) - 1] for i in args.batches.split(",")]
    for name, n, length, n_refs, group in wanted:
        r = run_batch(name, n, length, n_refs, group, repeats, nltk_rows, args.threads)
        best = r[f"ours_{args.threads}t"]
        print(f"| {name} | {best * 1e3:.1f} ms | {r['ours_1t'] * 1e3:.1f} ms ({r['ours_1t_cpu'] * 1e3:.1f}) | "
              f"{r['text'] * 1e3:.0f} ms | {r['join_only'] * 1e3:.0f} ms | {r['nltk'] * 1e3:.0f} ms "
              f"({r['nltk_rows']} rows, extrapolated) | {r['text'] / best:.1f}x | {r['nltk'] / best:.0f}x | "
              f"{r['same_as_text']} |", flush=True)
    s = small_call_parts(max(201, 20 * repeats))
    print(f"\n64 x 64, 1 ref, one thread, per call: {s['call'] * 1e6:.0f} us wall, {s['call_cpu'] * 1e6:.0f} us CPU = "
          f"conversion {s['rows'] * 1e6:.0f} + scoring {s['scores'] * 1e6:.0f} + counting and the rest "
          f"{(s['call_cpu'] - s['rows'] - s['scores']) * 1e6:.0f} (us of CPU, medians); the reusable scorer: "
          f"{s['scorer'] * 1e6:.0f} us wall, {s['scorer_cpu'] * 1e6:.0f} us CPU")


if __name__ == "__main__":
    main()
