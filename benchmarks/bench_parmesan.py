"""Parmesan (targeted paraphrasing + Meteor exact) on 100-best lists, side by side with a
straightforward Python paraphraser in the same run.

    pip install '.[bench,parmesan]'
    python benchmarks/bench_parmesan.py          # 2,000 x 100-best x 1 ref English (WMT22, generated)

The paraphrase table is the English one of ``kbest-bleu parmesan metaeval`` (Meteor 1.5
paraphrase-en + WordNet synsets from pycocoevalcap==1.2, filtered as section 3.1 with
simplemma); ``--table`` takes another. Lemma columns are simplemma lemmas and POS columns a
coarse proxy (punctuation / number / word), computed before timing: the target is "given
lemma/POS columns". Rows, hypotheses per second, medians of --repeats runs after a warm-up:
- paraphrase, ours: tokens, lemma/POS ids, the numba kernel, the new reference strings;
- paraphrase, Python: the same procedure with sets and dicts per row, from the same Arrow columns
  (to Python lists, split, paraphrase, join; seeded subset of whole segments, extrapolated);
- Parmesan, ours: paraphrase + Meteor exact (meteor_rows on the paraphrased references);
- Parmesan end to end: read a parquet file with the lemma/POS columns, the metric's
  score_segments (as ``kbest-bleu score --metric parmesan --analyzer columns``), write parquet;
- Meteor exact alone on the original references, for the share of each step.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
import workloads  # noqa: E402

from kbest_bleu.encode import segment_pointers, segment_references  # noqa: E402
from kbest_bleu.metrics.meteor import meteor_params, meteor_segments  # noqa: E402
from kbest_bleu.metrics.parmesan import from_options, load_table, paraphrase_segments, parmesan_segments  # noqa: E402
from kbest_bleu.research.parmesan_paper import english_table  # noqa: E402
from kbest_bleu.metrics.parmesan.substitute import words  # noqa: E402
from kbest_bleu.metrics.parmesan.table import read_table  # noqa: E402


def _columns(strings: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Words (as Parmesan splits them), simplemma lemma and proxy POS columns, list<string> each."""
    import simplemma
    flat, off = words(strings)
    enc = flat.dictionary_encode()
    vocab = enc.dictionary.to_pylist()
    lem = pa.array([simplemma.lemmatize(w, lang="en").lower() for w in vocab]).take(enc.indices)
    pos = pa.array(["NUM" if w[:1].isdigit() else "W" if w[:1].isalpha() else "PUNCT" for w in vocab]).take(enc.indices)
    off = pa.array(off.astype(np.int32))
    return tuple(pa.ListArray.from_arrays(off, x) for x in (flat, lem, pos))


def python_paraphrase(hyp, ref, by_ref):
    """The straightforward implementation: hyp/ref lists of (form, lemma, pos); by_ref[r] the
    table's candidates (h, pos) of lemma r in preference order."""
    hyp_lemmas, ref_lemmas = {lem for _, lem, _ in hyp}, {lem for _, lem, _ in ref}
    out = []
    for form, r, p in ref:
        new = form
        if r not in hyp_lemmas:
            for h, tp in by_ref.get(r, ()):
                if h in hyp_lemmas and h not in ref_lemmas and tp in ("", p):
                    forms = [f for f, lem, q in hyp if lem == h and q == p]
                    if forms:
                        new = forms[0]
                        break
        out.append(new)
    return " ".join(out)


def _write_input(table: pa.Table, ptr: np.ndarray, cols, path: Path) -> None:
    """The workload with lemma/POS columns: per row for hypotheses, and per row one
    space-separated string per reference (repeated over the segment's rows, as a table has them)."""
    hl, hp, rl, rp = cols
    owner = pa.array(np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)))

    def per_ref(col):
        joined = pc.binary_join(col, " ")
        return pa.ListArray.from_arrays(pa.array(np.arange(len(joined) + 1, dtype=np.int32)), joined).take(owner)

    out = table.select(["segment_id", "hypothesis", "references"])
    for name, col in (("hyp_lemma", hl), ("hyp_pos", hp), ("ref_lemma", per_ref(rl)), ("ref_pos", per_ref(rp))):
        out = out.append_column(name, col)
    pq.write_table(out, path, compression="zstd")


def _e2e(metric, src: Path, dst: Path) -> None:
    table = pq.read_table(src)
    ptr = segment_pointers(table["segment_id"], table.num_rows)
    refs = segment_references(table["references"].combine_chunks(), ptr, table.num_rows)
    arrays = metric.score_segments(table["hypothesis"].combine_chunks(), refs, ptr, table, stats=False)
    names = [f.name for f in metric.output_fields(False)]
    pq.write_table(table.select(["segment_id"]).append_column(names[0], arrays[0]).append_column(names[1], arrays[1]),
                   dst, compression="zstd")


def _interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds of each function; the repeats take turns so that load from other jobs on
    this shared machine falls on all rows alike. One warm-up call each first."""
    for fn in fns.values():
        fn()
    times: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _python_rows(path, ptr, hyps, flat_refs, cols, n_rows: int, k: int):
    """The straightforward paraphraser on a seeded subset of whole segments, from the same Arrow
    columns as ours (to Python lists, split, paraphrase, join): a callable returning
    [(row, paraphrased reference)] and the number of rows."""
    raw = read_table(path)
    order = np.lexsort((raw.order, -raw.prob, raw.rank, np.array(raw.ref, dtype=object).astype(str)))
    by_ref: dict = {}
    for i in order:
        by_ref.setdefault(raw.ref[i], []).append((raw.hyp[i], raw.pos[i]))
    segs = np.sort(np.random.default_rng(0).choice(len(ptr) - 1, max(1, n_rows // k), replace=False))
    rows = pa.array(np.concatenate([np.arange(ptr[s], ptr[s + 1]) for s in segs]))
    seg_of = np.repeat(np.arange(len(segs)), np.diff(ptr)[segs])
    sub = [c.take(rows) for c in (hyps, cols["hyp_lemma"], cols["hyp_pos"])]
    ref_sub = [c.take(pa.array(segs)) for c in (flat_refs, cols["ref_lemma"], cols["ref_pos"])]

    def run():
        refs_py = [list(zip(jar_split(t), lem, pos)) for t, lem, pos in zip(*(c.to_pylist() for c in ref_sub))]
        return [(h, python_paraphrase(list(zip(jar_split(t), lem, pos)), refs_py[s], by_ref))
                for h, s, t, lem, pos in zip(rows.to_pylist(), seg_of, *(c.to_pylist() for c in sub))]
    return run, len(rows)


def jar_split(text: str) -> list:
    return [w for w in re.split("[ \t\n\r\f]+", text) if w]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--python-rows", type=int, default=5000)
    ap.add_argument("--table", default=None)
    a = ap.parse_args()
    path = english_table(a.table)
    table = workloads.generated(n_seg=a.segments, k=a.k, n_refs=1)
    ptr = segment_pointers(table["segment_id"], table.num_rows)
    refs = segment_references(table["references"].combine_chunks(), ptr, table.num_rows)
    hyps = table["hypothesis"].combine_chunks().cast(pa.string())
    flat_refs = pc.list_flatten(refs).cast(pa.string())
    t0 = time.perf_counter()
    (_, *hyp_cols), (_, *ref_cols) = _columns(hyps), _columns(flat_refs)
    cols = dict(zip(("hyp_lemma", "hyp_pos", "ref_lemma", "ref_pos"), (*hyp_cols, *ref_cols)))
    analysis = time.perf_counter() - t0
    compiled, params, n = load_table(path), meteor_params("en"), table.num_rows
    python, n_py = _python_rows(path, ptr, hyps, flat_refs, cols, a.python_rows, a.k)
    ours = paraphrase_segments(hyps, refs, ptr, compiled, analyzer="columns", **cols)[0].references
    mismatches = sum(ours[h][0].as_py() != o for h, o in python())
    metric = from_options(paraphrases=path, analyzer="columns", **{f"{c}_col": c for c in cols})
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.parquet", Path(tmp) / "out.parquet"
        _write_input(table, ptr, tuple(cols.values()), src)
        secs = _interleaved({
            "paraphrase, ours": lambda: paraphrase_segments(hyps, refs, ptr, compiled, analyzer="columns", **cols),
            "Parmesan (paraphrase + Meteor exact), ours":
                lambda: parmesan_segments(hyps, refs, ptr, compiled, params, analyzer="columns", **cols),
            "Parmesan end to end from parquet (read, score, write), ours": lambda: _e2e(metric, src, dst),
            "Meteor exact alone, original references": lambda: meteor_segments(hyps, refs, ptr, params),
            "paraphrase, straightforward Python*": python}, a.repeats)
    secs["paraphrase, straightforward Python*"] *= n / n_py
    print(f"{a.segments} segments x {a.k}-best x 1 ref ({n:,} rows); table {Path(path).name} "
          f"({len(compiled.hyp):,} directed pairs); lemma/POS columns built in {analysis:.1f} s (not timed below)")
    print("| what | time (s) | hypotheses/s | vs Python paraphrase |\n|---|---|---|---|")
    py = secs["paraphrase, straightforward Python*"]
    for name, t in secs.items():
        print(f"| {name} | {t:.3f} | {n / t:,.0f} | {py / t:.1f}x |")
    print(f"* extrapolated from {n_py:,} rows (whole segments); its references differ from ours on {mismatches} "
          "of them")


if __name__ == "__main__":
    main()
