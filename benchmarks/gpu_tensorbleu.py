"""The published TensorBLEU on a GPU beside kbest_bleu's token_bleu on the CPU, same batches (issue 35).

    unzip -q -o rxlm-0.3.80-py3-none-any.whl -d /tmp/rxlm   # the published code, not vendored here
    python benchmarks/gpu_tensorbleu.py --tensorbleu-file /tmp/rxlm/rxlm/metrics/tensorbleu.py --out gpu.md
    python benchmarks/gpu_tensorbleu.py --device cpu   # dry run: every row with torch on the CPU, 1 repeat

Without ``--tensorbleu-file`` the file is looked for beside an installed ``rxlm`` package; when it
is found nowhere the output says so and the published column reads "absent". The module file is
loaded by its path (``rxlm/__init__.py`` imports heavy dependencies; the file itself imports only
torch). Without torch, or with ``--device cuda`` and no CUDA device, the script says so and exits 0.

TensorBLEU (Filipek, arXiv 2510.05485; ``rxlm.metrics.tensorbleu.tensor_sentence_bleu``) counts
n-grams on the GPU: per order, the batch's candidate and reference n-grams are unfolded from the
padded id tensors, ``torch.unique(dim=0, return_inverse=True)`` gives each distinct n-gram a
compact id, and one ``bincount`` over ``row * n_unique + id`` counts every sentence at once
(references one by one, then the max over references: the clip counts). Columns:

- published TensorBLEU, ``smoothing_method="add-k", smoothing_k=1`` (add-1 on every order, Moses
  BLEU+1), float32; and its largest absolute difference from ``token_bleu(compat="moses")``;
- ``tensorbleu_moses`` below: the same algorithm written from the paper's description (our own
  code, not a copy), with absent references and the closest-length ties as Moses treats them;
- kbest_bleu ``token_bleu(compat="moses")``, float64: ids in a numpy array; in a CPU torch tensor
  (read through DLPack); in a tensor on the device, copied to the CPU inside the timed call (in RL
  the completions are on the GPU: the copy is part of a reward's cost); on all the CPUs of the
  process and on one thread (``numba.set_num_threads``).

Batches: benchmarks/bench_token_ids.py's (Zipf-like ids over 32,000, references 80-100% of the
length, ~30% of the tokens changed, hypotheses filling the row, so no brevity penalty), TensorBLEU
given the references per row. Times: one warm-up call, then the median of ``--repeats`` calls
(``--small-repeats`` for 64 x 64), wall clock, device synchronized before and after each call;
ids already on the device, scores left there. The dense counts of TensorBLEU take rows x distinct
n-grams integers (x references in ``tensorbleu_moses``): a batch whose estimated peak exceeds 80%
of the free device memory (a quarter of the available memory with ``--device cpu``) is reported
as not run. Each cell fails alone ("failed: ..."); cells begun after ``--deadline-s`` are
skipped. Then three small cases where the published code and Moses differ in principle (ties of
the closest reference length, an absent reference), scored by both, and what token_bleu says of a
tensor on the device. Every line goes to stdout and, flushed line by line, to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def tensorbleu_moses(cand, refs, pad: int, max_n: int = 4):
    """Per-sentence BLEU+1 of ``cand`` (int64[B, L], padded with ``pad``) against ``refs``
    (int64[B, R, Lr]; an all-pad reference is absent), TensorBLEU's counting: float32[B]."""
    import torch

    B, R = cand.shape[0], refs.shape[1]
    dev = cand.device
    cmask, rmask = cand != pad, refs != pad
    c = cmask.sum(1)
    num = torch.zeros(B, max_n, device=dev)
    den = torch.zeros(B, max_n, device=dev)
    for n in range(1, max_n + 1):
        if cand.shape[1] < n:
            continue
        cv = cmask.unfold(1, n, 1).all(2)  # (B, L-n+1): n-grams without pad
        cg = cand.unfold(1, n, 1)[cv]  # (Nc, n)
        den[:, n - 1] = cv.sum(1)
        if refs.shape[2] < n or cg.shape[0] == 0:
            continue
        rv = rmask.unfold(2, n, 1).all(3)  # (B, R, Lr-n+1)
        rg = refs.unfold(2, n, 1)[rv]  # (Nr, n)
        uniq, inv = torch.unique(torch.cat([cg, rg]), dim=0, return_inverse=True)
        u = uniq.shape[0]
        c_row = torch.arange(B, device=dev).unsqueeze(1).expand_as(cv)[cv]
        ccount = torch.bincount(c_row * u + inv[:cg.shape[0]], minlength=B * u).view(B, u)
        r_row = torch.arange(B * R, device=dev).view(B, R, 1).expand_as(rv)[rv]
        rcount = torch.bincount(r_row * u + inv[cg.shape[0]:], minlength=B * R * u).view(B, R, u).amax(1)
        num[:, n - 1] = torch.minimum(ccount, rcount).sum(1).float()
    # closest reference length, ties to the shorter; absent references never closest
    rlen = rmask.sum(2).float()
    present = rmask.any(2)
    dist = torch.where(present, (rlen - c.unsqueeze(1).float()).abs() * 2 + (rlen > c.unsqueeze(1)).float(),
                       torch.full_like(rlen, float("inf")))
    r = torch.where(present.any(1), rlen.gather(1, dist.argmin(1, keepdim=True)).squeeze(1), torch.zeros_like(c.float()))
    logp = (torch.log(num + 1) - torch.log(den + 1)).mean(1)
    cf = c.float()
    brevity = torch.where(cf > 0, torch.clamp(1 - r / cf.clamp(min=1), max=0), torch.where(r > 0, -torch.inf, 0.0))
    return torch.exp(logp + brevity)


def dense_peak_bytes(b: int, length: int, r: int, lr: int, published: bool) -> int:
    """An upper bound of the dense counts' peak (bytes, int64): the distinct n-grams of one order
    bounded by the batch's n-grams; the published code holds ~5 rows x distinct tensors at once
    (candidate counts, one reference's, their running max, the new max, the clipped counts), the
    re-implementation a rows x references x distinct one and ~3 rows x distinct ones."""
    distinct = b * length + b * r * lr
    return 8 * b * distinct * (5 if published else r + 3)


def median_time(fn, repeats: int, sync) -> float:
    """Median wall seconds of ``repeats`` calls after one warm-up; ``sync`` waits for the device."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:120] if text else ''}"


class Report:
    """Lines to stdout and, flushed one by one, to the ``--out`` file (a timeout keeps what came)."""

    def __init__(self, path: "Path | None"):
        self.file = open(path, "w", encoding="utf-8") if path is not None else None  # noqa: SIM115

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        if self.file is not None:
            self.file.write(line + "\n")
            self.file.flush()


def find_published(option: "str | None") -> "Path | None":
    """The published module file: the option's path, else beside an installed ``rxlm``."""
    if option:
        return Path(option)
    spec = importlib.util.find_spec("rxlm")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "metrics" / "tensorbleu.py"
    return path if path.is_file() else None


def load_published(path: Path):
    """(tensor_sentence_bleu, "rxlm VERSION" from the wheel's dist-info beside the package)."""
    spec = importlib.util.spec_from_file_location("published_tensorbleu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parents = path.resolve().parents
    site = parents[2] if len(parents) > 2 else parents[-1]  # site/rxlm/metrics/tensorbleu.py
    versions = sorted(p.name[len("rxlm-"):-len(".dist-info")] for p in site.glob("rxlm-*.dist-info"))
    return module.tensor_sentence_bleu, f"rxlm {versions[-1]}" if versions else "rxlm, version unknown"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    head = REPO / ".git" / "HEAD"  # no git program: read the ref by hand
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            ref_file = REPO / ".git" / ref[5:]
            if ref_file.is_file():
                return ref_file.read_text().strip()[:12]
            for line in (REPO / ".git" / "packed-refs").read_text().splitlines():
                if line.endswith(" " + ref[5:]):
                    return line.split()[0][:12]
        return ref[:12]
    except OSError:
        return "unknown (no .git)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


def torch_for(device: str):
    """torch, or None after saying why this script skips: no torch, or no CUDA device for "cuda"."""
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed (pip install torch; a CUDA GPU is needed)")
        return None
    if device == "cuda" and not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device (--device cpu runs a dry run)")
        return None
    return torch


def memory_budget(torch, device: str) -> int:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return int(free * 0.8)
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024 // 4
    return 4 << 30


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="where TensorBLEU runs; cpu: a dry run of every row (tiny repeats)")
    ap.add_argument("--tensorbleu-file", help="path of rxlm/metrics/tensorbleu.py (default: beside an installed rxlm)")
    ap.add_argument("--out", help="also write the report (markdown) to this file, flushed line by line")
    ap.add_argument("--repeats", type=int, help="calls timed per cell (default 11; 1 with --device cpu)")
    ap.add_argument("--small-repeats", type=int, help="repeats of the 64 x 64 row (default 200; 20 with --device cpu)")
    ap.add_argument("--quick", action="store_true", help="3 repeats (1 with --device cpu), 20 for 64 x 64")
    ap.add_argument("--deadline-s", type=float, default=200.0, help="skip the cells begun after this many seconds")
    args = ap.parse_args()
    start = time.perf_counter()
    dry = args.device == "cpu"
    repeats = args.repeats or (1 if dry else 3 if args.quick else 11)
    small_repeats = args.small_repeats or (20 if dry or args.quick else 200)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(REPO))
    from kbest_bleu.errors import InputError
    from kbest_bleu.files.output import check_output

    published_path = find_published(args.tensorbleu_file)
    try:
        out = None if args.out is None else check_output(
            args.out, inputs=[p for p in (published_path, Path(__file__)) if p is not None], option="--out")
        if published_path is not None and not published_path.is_file():
            raise InputError(f"--tensorbleu-file {str(published_path)!r}: no such file; pass the path of "
                             "rxlm/metrics/tensorbleu.py (unzip the rxlm wheel first)")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch = torch_for(args.device)
    if torch is None:
        return 0
    import numba
    import numpy as np
    from bench_token_ids import PAD, batch

    from kbest_bleu.token_ids import token_bleu

    report = Report(out)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    published, pub_name, pub_note = None, "rxlm", "absent (pass --tensorbleu-file PATH/rxlm/metrics/tensorbleu.py)"
    if published_path is not None:
        try:
            published, pub_name = load_published(published_path)
            pub_note = f"{pub_name}, {published_path}"
        except Exception as exc:  # a broken or foreign file: say so, keep the other columns
            pub_note = f"failed to load {published_path}: {first_line(exc)}"
    n_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    all_threads = numba.config.NUMBA_NUM_THREADS
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "none: --device cpu dry run (torch on the CPU)"
    report("## TensorBLEU beside kbest_bleu token_bleu (benchmarks/gpu_tensorbleu.py)")
    report()
    report(f"- GPU: {where}")
    report(f"- CPU: {cpu_model()}; {n_cpus} CPUs for this process (sched_getaffinity), {os.cpu_count()} on the "
           f"machine; numba threads for 'all CPUs': {all_threads}")
    report(f"- versions: python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
           f"numpy {np.__version__}, numba {numba.__version__}; kbest_bleu commit {git_commit()}")
    report(f"- published TensorBLEU: {pub_note}")
    report(f"- scoring: Moses BLEU+1 (token_bleu compat='moses', float64) vs add-1 on every order (float32); "
           f"medians of {repeats} calls ({small_repeats} for 64 x 64) after a warm-up; device synchronized")
    report()
    on = "GPU" if args.device == "cuda" else "torch CPU"
    report(f"| batch | published TensorBLEU ({pub_name}, smoothing add-k k=1), {on} | its max abs diff | "
           f"our re-implementation (tensorbleu_moses), {on} | its max abs diff | kbest_bleu all CPUs | "
           f"kbest_bleu all CPUs, CPU torch tensor | kbest_bleu from a {'CUDA' if args.device == 'cuda' else 'device'} tensor (copy to CPU included) "
           "| kbest_bleu 1 thread |")
    report("|---|---|---|---|---|---|---|---|---|")

    def cell(fn, width: int = 1):
        """``fn()``; its failure, or the deadline passed, in each of its ``width`` cells."""
        if time.perf_counter() - start > args.deadline_s:
            text = "skipped (past --deadline-s)"
        else:
            try:
                return fn()
            except Exception as exc:  # one failing cell (out of memory, a CUDA error) must not end the run
                text = f"failed: {first_line(exc)}"
            finally:
                if args.device == "cuda":
                    torch.cuda.empty_cache()
        return text if width == 1 else (text,) + ("-",) * (width - 1)

    batches = [("64 x 64, 1 ref", 64, 64, 1, 1, small_repeats), ("256 x 1,024, 1 ref", 256, 1024, 1, 1, repeats),
               ("512 x 1,024, 1 ref", 512, 1024, 1, 1, repeats), ("1,024 x 256, 1 ref", 1024, 256, 1, 1, repeats),
               ("100,000 x 32, 4 refs, K = 100", 100_000, 32, 4, 100, repeats)]
    for name, n, length, n_refs, group, reps in batches:
        hyp, refs = batch(n, length, n_refs, group)
        row_refs = np.repeat(refs, group, axis=0)  # TensorBLEU takes references per row
        ref_arg = refs if n_refs > 1 else refs[:, 0]
        groups = group if group > 1 else None

        def ours_fn(h=hyp, r=ref_arg, g=groups):
            return token_bleu(h, r, pad_id=PAD, groups=g, compat="moses")

        numba.set_num_threads(all_threads)
        try:
            ours = ours_fn()
        except Exception as exc:  # the package failing is a result too: the row says so
            report(f"| {name} | token_bleu failed: {first_line(exc)} |" + " - |" * 7)
            continue

        def tensorbleu_cell(fn, is_published: bool):
            if fn is None:
                return "absent", "-"
            need = dense_peak_bytes(n, length, n_refs, length, is_published)
            budget = memory_budget(torch, args.device)
            if need > budget:
                return f"not run: dense counts up to {need / 2**30:,.0f} GiB, budget {budget / 2**30:.0f} GiB", "-"
            cand, rr = torch.from_numpy(hyp).to(dev), torch.from_numpy(row_refs).to(dev)
            call = ((lambda: fn(cand, rr, pad_token_id=PAD, smoothing_method="add-k", smoothing_k=1)) if is_published
                    else (lambda: fn(cand, rr, PAD)))
            t = median_time(call, reps, sync)
            diff = np.abs(call().double().cpu().numpy() - ours).max()
            return fmt(t), f"{diff:.1e}" + (" (beyond float32!)" if diff > 1e-6 else "")

        pub_t, pub_d = cell(lambda: tensorbleu_cell(published, True), 2)
        re_t, re_d = cell(lambda: tensorbleu_cell(tensorbleu_moses, False), 2)
        t_all = cell(lambda: fmt(median_time(ours_fn, reps, lambda: None)))
        hyp_t = torch.from_numpy(hyp)
        t_torch = cell(lambda: fmt(median_time(lambda: ours_fn(h=hyp_t), reps, lambda: None)))

        def from_device() -> str:
            hyp_d, ref_d = torch.from_numpy(hyp).to(dev), torch.from_numpy(ref_arg).to(dev)
            t = median_time(lambda: ours_fn(h=hyp_d.cpu(), r=ref_d.cpu()), reps, sync)
            return fmt(t)

        t_dev = cell(from_device)
        numba.set_num_threads(1)
        t_one = cell(lambda: fmt(median_time(ours_fn, reps if n <= 64 else max(1, reps // 2), lambda: None)))
        numba.set_num_threads(all_threads)
        report(f"| {name} | {pub_t} | {pub_d} | {re_t} | {re_d} | {t_all} | {t_torch} | {t_dev} | {t_one} |")
    report()
    semantic_cases(report, published, token_bleu, torch, dev, np)
    device_tensor_check(report, token_bleu, InputError, torch, args.device)
    report(f"- total wall time: {time.perf_counter() - start:.0f} s")
    return 0


def semantic_cases(report, published, token_bleu, torch, dev, np) -> None:
    """Where the published scoring and Moses BLEU+1 differ by design, scored by both (the
    benchmark's batches have no brevity penalty, so their columns cannot show it)."""
    if published is None:
        report("- semantic cases: skipped (published TensorBLEU absent)")
        return
    h = np.arange(1, 11)[None]  # 10 tokens; references of 11 and 9 tokens: a tie at distance 1
    long_ref, short_ref = np.arange(1, 12), np.r_[np.arange(1, 10), 0, 0]
    cases = [("closest-length tie, longer reference first", h, np.stack([long_ref, short_ref])[None]),
             ("closest-length tie, shorter reference first", h, np.stack([short_ref, long_ref])[None]),
             ("3-token hypothesis, 12-token reference and an absent (all-pad) one",
              np.r_[1, 2, 3, np.zeros(9, int)][None], np.stack([np.arange(1, 13), np.zeros(12, int)])[None])]
    for what, hyp, refs in cases:
        try:
            ours = token_bleu(hyp, refs, pad_id=0, compat="moses")[0]
            theirs = published(torch.from_numpy(hyp).to(dev), torch.from_numpy(refs).to(dev), pad_token_id=0,
                               smoothing_method="add-k", smoothing_k=1)[0].item()
            report(f"- semantic case, {what}: token_bleu moses {ours:.6f}, published {theirs:.6f}"
                   + ("" if abs(ours - theirs) < 1e-6 else " (differ)"))
        except Exception as exc:
            report(f"- semantic case, {what}: failed: {first_line(exc)}")


def device_tensor_check(report, token_bleu, input_error, torch, device: str) -> None:
    """What token_bleu says of a tensor it cannot read on the CPU: a CUDA tensor on a GPU machine; with
    ``--device cpu`` a meta-device tensor stands in (it refuses DLPack and ``__array__`` as a CUDA
    tensor does)."""
    kind = "cuda" if device == "cuda" else "meta"
    try:
        t = torch.ones(2, 3, dtype=torch.int64, device=kind)
    except Exception as exc:  # a CUDA error left by an earlier cell
        report(f"- token_bleu on a {kind} tensor: not checked, the tensor could not be made: {first_line(exc)}")
        return
    try:
        token_bleu(t, t, pad_id=0, compat="moses")
        report(f"- token_bleu on a {kind} tensor: no error (it was read)")
    except input_error as exc:
        lines = str(exc).splitlines()
        report(f"- token_bleu on a {kind} tensor: InputError, {len(lines)} line(s): {str(exc)}")
    except Exception as exc:
        report(f"- token_bleu on a {kind} tensor: NOT an InputError: {type(exc).__module__}.{first_line(exc)}")


if __name__ == "__main__":
    raise SystemExit(main())
