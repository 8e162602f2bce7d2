"""TensorBLEU's GPU per-sentence BLEU beside kbest_bleu's token_bleu on the CPU, same batches.

    python benchmarks/gpu_tensorbleu.py            # needs torch with CUDA; otherwise says so and exits 0
    python benchmarks/gpu_tensorbleu.py --quick    # 3 repeats

TensorBLEU (Filipek, arXiv 2510.05485; rxlm.metrics.tensorbleu) counts n-grams on the GPU: per
order, the batch's candidate and reference n-grams are unfolded from the padded id tensors,
``torch.unique(dim=0, return_inverse=True)`` gives each distinct n-gram of the batch a compact
id, and one ``bincount`` over ``row * n_unique + id`` counts every sentence at once (references
per reference, then the max over references: the clip counts). This file implements that
algorithm from the paper's description (our own code, not a copy), in float32 as TensorBLEU
scores, with add-1 on every order (Moses BLEU+1), which kbest_bleu scores as ``compat="moses"``.

The batches are benchmarks/bench_token_ids.py's (Zipf-like ids over 32,000, references 80-100%
of the length, ~30% of the tokens changed). GPU times: ids already on the GPU, scores left there,
CUDA synchronized, medians. kbest_bleu: ids in CPU memory (a numpy array, and a CPU torch tensor
read through DLPack), on all of this machine's CPUs and on one. The dense counts of the published
algorithm take rows x distinct n-grams (x references) integers: a batch whose counts do not fit
the GPU's free memory is reported as such instead of run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


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


def dense_bytes(hyp, refs) -> int:
    """An upper bound of the published algorithm's largest count tensor (bytes, int64): rows x
    references x distinct n-grams, the distinct n-grams bounded by the batch's n-gram count."""
    b, length = hyp.shape
    r, lr = refs.shape[1], refs.shape[2]
    return 8 * b * r * min(b * length + b * r * lr, 1 << 40)


def cuda_median(fn, repeats: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpu_median(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeats = 3 if args.quick else args.repeats
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed (pip install torch; a CUDA GPU is needed)")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numba
    import numpy as np
    from bench_token_ids import PAD, batch

    from kbest_bleu.token_ids import token_bleu

    n_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpu = torch.cuda.get_device_name(0)
    print(f"# GPU: {gpu}; CPU: {n_cpus} CPUs (numba threads {numba.config.NUMBA_NUM_THREADS}); torch "
          f"{torch.__version__}; medians of {repeats}; Moses BLEU+1 / TensorBLEU add-1 on every order")
    print("| batch | TensorBLEU (GPU) | kbest_bleu all CPUs | kbest_bleu all CPUs, CPU torch tensor | "
          "kbest_bleu 1 thread | max abs diff |")
    print("|---|---|---|---|---|---|")
    batches = [("256 x 1,024, 1 ref", 256, 1024, 1, 1), ("512 x 1,024, 1 ref", 512, 1024, 1, 1),
               ("1,024 x 256, 1 ref", 1024, 256, 1, 1), ("100,000 x 32, 4 refs, K = 100", 100_000, 32, 4, 100)]
    for name, n, length, n_refs, group in batches:
        hyp, refs = batch(n, length, n_refs, group)
        row_refs = np.repeat(refs, group, axis=0)  # TensorBLEU takes references per row
        ref_arg = refs if n_refs > 1 else refs[:, 0]
        groups = group if group > 1 else None
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        ours = token_bleu(hyp, ref_arg, pad_id=PAD, groups=groups, compat="moses")
        t_all = cpu_median(lambda: token_bleu(hyp, ref_arg, pad_id=PAD, groups=groups, compat="moses"), repeats)
        hyp_t = torch.from_numpy(hyp)
        t_torch = cpu_median(lambda: token_bleu(hyp_t, ref_arg, pad_id=PAD, groups=groups, compat="moses"), repeats)
        numba.set_num_threads(1)
        t_one = cpu_median(lambda: token_bleu(hyp, ref_arg, pad_id=PAD, groups=groups, compat="moses"),
                           max(1, repeats // 2))
        free, _ = torch.cuda.mem_get_info()
        need = dense_bytes(hyp, row_refs)
        if need > free // 2:
            gpu_cell, diff = f"not run: dense counts up to {need / 2**30:.0f} GiB, {free / 2**30:.0f} GiB free", "-"
        else:
            cand, rr = torch.from_numpy(hyp).cuda(), torch.from_numpy(row_refs).cuda()
            try:
                t_gpu = cuda_median(lambda: tensorbleu_moses(cand, rr, PAD), repeats)
                gpu_scores = tensorbleu_moses(cand, rr, PAD).double().cpu().numpy()
                gpu_cell, diff = f"{t_gpu * 1e3:.1f} ms", f"{np.abs(gpu_scores - ours).max():.1e}"
            except RuntimeError as exc:  # out of memory
                gpu_cell, diff = f"failed: {str(exc).splitlines()[0][:80]}", "-"
            del cand, rr
            torch.cuda.empty_cache()
        print(f"| {name} | {gpu_cell} | {t_all * 1e3:.1f} ms | {t_torch * 1e3:.1f} ms | {t_one * 1e3:.1f} ms | "
              f"{diff} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
