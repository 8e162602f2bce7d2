"""Whole-process wall times of what users run (issue 18), kbest_bleu against the best honest peer
pipeline (``peer_pipeline.py``) and the I/O floor (``io_floor.py``), same parquet in and out.

    python benchmarks/whole_process.py [--rounds 3] [--json OUT.json]   # ~5-8 minutes on 2 cores

Each job runs as a fresh process (``kbest-bleu score IN -o OUT -q -t TOK``), timed wall-clock from
spawn to exit, warm numba cache (``kbest-bleu warmup`` first, untimed) and the package's bytecode
compiled (as pip does at install). Jobs under 4 MiB of text
run on the numpy engine by default; the same command with ``--engine kernels`` is timed beside
them. ``--threads 1`` runs the whole job on one thread. Last, each of three commands runs once
with an empty numba cache (a first run after install). Rounds are interleaved (every
tool of every job once per round, then the next round; the jobs under 100,000 rows, which take
0.2-1 s and vary most, ``SMALL_REPEATS`` times per round) and each figure is the median over all
runs; the 1-minute load average is recorded at the start of every round. From 200,000 rows on the peer
runs in the first and last rounds (6-20 s a run); the 2M-row job's peer figure is the 200k job's x 10. Single-call latency (median, p99 of 10,000 calls on
distinct real pairs) runs in one process per tool. Peer scores are checked against plain
``sacrebleu.sentence_bleu`` on 2,000 sampled rows, and kbest_bleu's against the peer's on all rows.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
KB = str(Path(sys.executable).with_name("kbest-bleu"))
PY = sys.executable


def _jobs() -> list:
    """(name, parquet path, tokenizer), inputs written once to benchmarks/.cache."""
    import workloads
    workloads.CACHE.mkdir(exist_ok=True)

    def put(name: str, make) -> Path:
        path = workloads.CACHE / f"wp_{name}.parquet"
        if not path.exists():
            pq.write_table(make().select(["segment_id", "hypothesis", "references"]), path, compression="zstd")
        return path

    def pooled_all() -> pa.Table:  # every language pair of WMT22, all systems of a segment pooled
        import pyarrow.compute as pc
        t = pq.read_table(workloads.DATA / "wmt22_news_systems.parquet")
        lp = pc.dictionary_encode(t["lp"]).combine_chunks().indices.cast(pa.int64())
        t = pa.table({"segment_id": pc.add(pc.multiply(lp, 100000), t["segment_id"]), "hypothesis": t["hypothesis"],
                      "references": t["references"]})
        return t.take(pc.sort_indices(t, [("segment_id", "ascending")]))

    def times10() -> pa.Table:  # the 200k job 10 times over, distinct segment ids
        base = workloads.generated(2000, 100, 4)
        seg = base["segment_id"].to_numpy()
        return pa.concat_tables([base.set_column(0, "segment_id", pa.array(seg + c * 2000)) for c in range(10)])

    moses = put("moses5k", workloads.moses)
    g20 = put("gen20k", lambda: workloads.generated(200, 100, 4))
    g200 = put("gen200k", lambda: workloads.generated(2000, 100, 4))
    wmt = put("wmt22pooled", pooled_all)
    g2m = put("gen2m", times10)
    return [("real Moses 100-best sample, 5,000 rows", moses, "none"),
            ("generated 200 x 100-best x 4 refs, 20,000 rows", g20, "none"),
            ("generated 2,000 x 100-best x 4 refs, 200,000 rows", g200, "none"),
            ("generated 2,000 x 100-best x 4 refs, 200,000 rows", g200, "13a"),
            ("real WMT22 pooled lists, 363,722 rows", wmt, "13a"),
            ("generated, 2,000,000 rows", g2m, "none")]


def _wall(cmd: list, env: dict | None = None) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{cmd}: {out.stderr[-2000:]}")
    return time.perf_counter() - t0


def _commands(path: Path, tok: str, out: str) -> dict:
    kb = [KB, "score", str(path), "-o", out, "-q", "-t", tok]
    return {"kbest_bleu": kb, "kbest_bleu --threads 1": kb + ["--threads", "1"],
            "kbest_bleu --engine kernels": kb + ["--engine", "kernels"],
            "peer": [PY, str(HERE / "peer_pipeline.py"), str(path), out, "--tokenize", tok],
            "I/O floor": [PY, str(HERE / "io_floor.py"), str(path), out]}


SMALL_REPEATS = 5  # runs per round of each tool on the jobs under 100,000 rows


def rounds(jobs: list, n_rounds: int, tmp: str) -> tuple:
    """Interleaved rounds. The peer runs every round on the small jobs and in the first and last
    rounds from 200k rows on (6-20 s a run); on the 2M job not at all (it is the
    200k job ten times over: its figure is the 200k run's x 10, marked as extrapolated). One
    thread is measured from 200k rows on. The small jobs' tools run SMALL_REPEATS times a round,
    interleaved, the order rotated each time."""
    times: dict = {}
    runs: dict = {}  # (job, tool) -> "round.repeat" of each time, to pair tools run side by side
    loads = []
    for r in range(n_rounds):
        loads.append(os.getloadavg()[0])
        for j, (name, path, tok) in enumerate(jobs):
            n_rows = pq.ParquetFile(path).metadata.num_rows
            tools = [t for t in _commands(path, tok, "") if (t != "peer" or n_rows < 100_000 or r in (0, n_rounds - 1))
                     and not (t == "peer" and n_rows > 1_000_000) and (t != "kbest_bleu --threads 1" or
                                                                     (n_rows >= 200_000 and tok == "none") or j == 4)
                     and (t != "kbest_bleu --engine kernels" or n_rows < 100_000)]
            repeats = SMALL_REPEATS if n_rows < 100_000 else 1
            order = [tools[(r + i) % len(tools):] + tools[:(r + i) % len(tools)] for i in range(repeats)]
            for i, tool in ((i, t) for i, rotated in enumerate(order) for t in rotated):  # rotated each repeat
                cmd = _commands(path, tok, f"{tmp}/{j}_{tool.split()[0].replace('/', '')}.parquet")[tool]
                times.setdefault((j, tool), []).append(_wall(cmd))
                runs.setdefault((j, tool), []).append(f"{r}.{i}")
                print(f"round {r} load {loads[-1]:.1f} | {name} -t {tok} | {tool}: {times[(j, tool)][-1]:.2f} s",
                      file=sys.stderr, flush=True)
    return times, runs, loads


def check_scores(jobs: list, tmp: str) -> list:
    """Per job: max |kbest_bleu - peer| over all rows; max |peer - sacrebleu.sentence_bleu| on 2,000 rows."""
    import sacrebleu
    out = []
    for j, (_, _, tok) in enumerate(jobs):
        if not Path(f"{tmp}/{j}_peer.parquet").exists():
            out.append((float("nan"), float("nan")))
            continue
        ours = pq.read_table(f"{tmp}/{j}_kbest_bleu.parquet")
        peer = pq.read_table(f"{tmp}/{j}_peer.parquet")
        a, b = ours["bleu"].to_numpy(), peer["bleu"].to_numpy()
        rows = np.random.default_rng(0).choice(len(b), min(2000, len(b)), replace=False)
        hyps, refs = peer["hypothesis"].take(rows).to_pylist(), peer["references"].take(rows).to_pylist()
        plain = np.array([sacrebleu.sentence_bleu(h, r, tokenize=tok).score / 100 for h, r in zip(hyps, refs)])
        out.append((float(np.abs(a - b).max()), float(np.abs(b[rows] - plain).max())))
    return out


SINGLE = r"""
import json, sys, time, numpy as np, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]).to_pydict()
pairs = [(h, r[0]) for h, r in zip(t["hypothesis"], t["references"]) if 20 <= len(h.split()) <= 30][:10000]
tool, tok = sys.argv[2], sys.argv[3]
if tool == "sacrebleu":
    from sacrebleu import sentence_bleu
    f = lambda h, r: sentence_bleu(h, [r], tokenize=tok).score
elif tool == "kb.sentence_bleu":
    import kbest_bleu as kb
    f = lambda h, r: kb.sentence_bleu(h, [r], tokenize=tok)
else:  # one scorer per reference, built outside the timed call (references scored many times)
    import kbest_bleu as kb
    scorers = {r: kb.SentenceScorer([r], tokenize=tok) for _, r in pairs}
    f = lambda h, r: scorers[r](h)
f(*pairs[0])
ns = []
for h, r in pairs:
    t0 = time.perf_counter_ns(); f(h, r); ns.append(time.perf_counter_ns() - t0)
print(json.dumps([len(pairs), float(np.median(ns)) / 1e3, float(np.percentile(ns, 99)) / 1e3, max(ns) / 1e3]))
"""


def single_calls(path: Path) -> list:
    rows = []
    for tok in ("none", "13a"):
        for tool in ("sacrebleu", "kb.sentence_bleu", "SentenceScorer"):
            load = os.getloadavg()[0]
            out = subprocess.run([PY, "-c", SINGLE, str(path), tool, tok], capture_output=True, text=True, check=True)
            rows.append((tool, tok, load, *json.loads(out.stdout.strip().splitlines()[-1])))
    return rows


def _peer(times: dict, runs: dict, j: int) -> tuple[dict, str]:
    """The peer's time of job j by run ("round.repeat") and a label: the 2M job's is the 200k job's
    (index 2) of the same run x 10, marked as extrapolated."""
    peer_job, scale, label = (j, 1, "") if (j, "peer") in times else (2, 10, " (200k x 10, extrapolated)")
    return {run: scale * t for run, t in zip(runs[(peer_job, "peer")], times[(peer_job, "peer")])}, label


def _advantage(peer: dict, times: dict, runs: dict, j: int) -> float:
    """Median of peer / kbest_bleu over the runs of job j the peer shares (same round and repeat)."""
    ours = dict(zip(runs[(j, "kbest_bleu")], times[(j, "kbest_bleu")]))
    return statistics.median(peer[run] / ours[run] for run in peer if run in ours)


def _versions() -> str:
    """The libraries the numbers depend on, and the Arrow memory pool of the program's process."""
    import numba
    import sacrebleu
    probe = ("from kbest_bleu.program import _command_process\n_command_process()\n"
             "import pyarrow as pa\nprint(pa.default_memory_pool().backend_name)")
    pool = subprocess.run([PY, "-c", probe], capture_output=True, text=True).stdout.strip() or "?"
    return (f"numpy {np.__version__}, numba {numba.__version__}, pyarrow {pa.__version__}, "
            f"sacrebleu {sacrebleu.__version__}; the program's Arrow pool: {pool}")


def report(jobs, times, runs, loads, checks, singles, firsts) -> str:
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = [f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 1-minute load average at the start of each "
             f"round: {', '.join(f'{x:.1f}' for x in loads)} (the machine is shared); {_versions()}", "",
             "| job (whole process, wall s, median) | tok | kbest_bleu (2 threads) | 1 thread | 2 vs 1 thread | "
             "`--engine kernels` | best peer pipeline | advantage (same round) | I/O floor | kbest_bleu / floor | runs | "
             "max abs diff vs peer | peer vs sacrebleu |", "|---" * 13 + "|"]
    for j, (name, _, tok) in enumerate(jobs):
        kb, floor = med[(j, "kbest_bleu")], med[(j, "I/O floor")]
        one = med.get((j, "kbest_bleu --threads 1"))
        threads = f"{one:.2f} | {one / kb:.2f}x" if one else "- | -"
        kernels = med.get((j, "kbest_bleu --engine kernels"))
        threads += f" | {kernels:.2f}" if kernels else " | -"
        peer, star = _peer(times, runs, j)
        ratio = _advantage(peer, times, runs, j)  # runs of the same round: the load moves between rounds
        lines.append(f"| {name} | {tok} | {kb:.2f} | {threads} | {statistics.median(peer.values()):.2f}{star} | "
                     f"**{ratio:.1f}x** | {floor:.2f} | {kb / floor:.2f}x | {len(times[(j, 'kbest_bleu')])} / peer "
                     f"{len(times.get((j, 'peer'), []))} | {checks[j][0]:.1e} | {checks[j][1]:.1e} |")
    lines += ["", "| single call (10,000 distinct real 20-30-word pairs) | tok | load | median us | p99 us | max us |",
              "|---|---|---|---|---|---|"]
    for tool, tok, load, _, p50, p99, mx in singles:
        lines.append(f"| {tool} | {tok} | {load:.1f} | {p50:.1f} | {p99:.1f} | {mx:,.0f} |")
    lines += ["", "| first run after install (empty numba cache) | load | wall s |", "|---|---|---|"]
    lines += [f"| {label} | {load:.1f} | {wall:.1f} |" for label, load, wall in firsts]
    return "\n".join(lines)


def first_runs(jobs: list) -> list:
    """Wall time of a first run after install: each command with an empty numba cache."""
    rows = []
    for label, cmd in (("score, 5,000 rows (numpy engine)", [KB, "score", str(jobs[0][1]), "-q", "-t", "13a"]),
                       ("score, 200,000 rows (numpy engine while not compiled)",
                        [KB, "score", str(jobs[2][1]), "-q", "-t", "none"]),
                       ("warmup", [KB, "warmup"])):
        with tempfile.TemporaryDirectory() as cache:
            rows.append((label, os.getloadavg()[0], _wall(cmd, {**os.environ, "NUMBA_CACHE_DIR": cache})))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write the raw times here")
    ap.add_argument("--report", metavar="JSON", help="print the tables of an earlier --json run, measuring nothing")
    a = ap.parse_args()
    if a.report:
        raw = json.loads(Path(a.report).read_text())
        times, runs = ({(int(k.split("|")[0]), k.split("|")[1]): v for k, v in raw[key].items()}
                       for key in ("times", "runs"))
        print(report(_jobs(), times, runs, raw["loads"], raw["checks"], raw["singles"], raw.get("firsts", [])))
        return
    jobs = _jobs()
    # bytecode of the package's modules, as pip writes it at install; an editable checkout run
    # with PYTHONDONTWRITEBYTECODE would compile ~30 modules from source in every process
    compileall.compile_dir(str(HERE.parent / "kbest_bleu"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        _wall([KB, "warmup"])  # the numba cache is filled
        times, runs, loads = rounds(jobs, a.rounds, tmp)
        raw = {key: {f"{j}|{t}": v for (j, t), v in d.items()} for key, d in (("times", times), ("runs", runs))}
        if a.json:  # the raw times first: the checks below take a while
            Path(a.json).write_text(json.dumps({**raw, "loads": loads}))
        checks = check_scores(jobs, tmp)
    singles = single_calls(jobs[4][1])
    firsts = first_runs(jobs)
    if a.json:
        Path(a.json).write_text(json.dumps({**raw, "loads": loads, "checks": checks, "singles": singles,
                                            "firsts": firsts}))
    print(report(jobs, times, runs, loads, checks, singles, firsts))


if __name__ == "__main__":
    main()
