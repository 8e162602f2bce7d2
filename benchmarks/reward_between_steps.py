"""A reward between training steps: what token_bleu costs where an RL trainer calls it (issue 35).

    python benchmarks/reward_between_steps.py --out steps.md   # a GPU machine with torch
    python benchmarks/reward_between_steps.py --device cpu      # dry run: the "step" on the CPU

The other benchmarks call token_bleu back to back, its code and data in the CPU's caches. A
trainer (GRPO, PPO) calls the reward once per step, between the generation and the policy update
on the GPU and the Python that drives them. This script times one reward call in three settings:

- ``back to back``: the call repeated, as bench_token_ids.py and gpu_tensorbleu.py time it;
- ``after a GPU step``: each call after a stand-in training step on the device (bf16 matrix
  products, ~``--step-ms`` milliseconds, synchronized: the calling thread waits for the GPU);
- ``after 64 MB of other work``: each call after the CPU wrote 64 MB (a step's framework code
  and data taking the caches, without the GPU).

The completions are a tensor on the device, as a trainer holds them: the copy to the CPU is part
of the call (``token_bleu(completions.cpu(), references)``); the references are a numpy array, as
a dataset's column. Beside it, the published TensorBLEU on the device (``--tensorbleu-file``, as
gpu_tensorbleu.py loads it), in the same settings, synchronized. Batches: bench_token_ids.py's
(Zipf-like ids over 32,000), Moses BLEU+1; medians of ``--repeats`` calls, wall clock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gpu_tensorbleu import (  # noqa: E402
    Report, cpu_model, find_published, first_line, fmt, git_commit, load_published, torch_for)


def timed_calls(call, before, repeats: int, sync) -> float:
    """Median wall seconds of ``call()`` over ``repeats`` rounds, each after ``before()`` (not timed)."""
    call()
    sync()
    times = []
    for _ in range(repeats):
        before()
        sync()
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--tensorbleu-file", help="path of rxlm/metrics/tensorbleu.py (default: beside an installed rxlm)")
    ap.add_argument("--out", help="also write the report (markdown) to this file")
    ap.add_argument("--repeats", type=int, default=51)
    ap.add_argument("--step-ms", type=float, default=20.0, help="length of the stand-in training step")
    args = ap.parse_args()
    from kbest_bleu.errors import InputError
    from kbest_bleu.files.output import check_output

    path = find_published(args.tensorbleu_file)
    try:  # the report never replaces an input
        out = None if args.out is None else check_output(
            args.out, inputs=[p for p in (path, Path(__file__)) if p is not None], option="--out")
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
    published, pub_note = None, "absent"
    if path is not None:
        try:
            published, pub_note = load_published(path)
        except Exception as exc:  # a broken file: the other columns still run
            pub_note = f"failed to load: {first_line(exc)}"

    # the stand-in step: bf16 products sized so that one takes ~1 ms on the device, repeated
    n = 4096 if args.device == "cuda" else 256
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16 if args.device == "cuda" else torch.float32)
    a @ a  # the library's first product sets itself up: not part of a step
    sync()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ a
    sync()
    per_product = max((time.perf_counter() - t0) / 10, 1e-6)
    n_products = max(1, round(args.step_ms / 1e3 / per_product))

    def gpu_step() -> None:
        for _ in range(n_products):
            a @ a
        sync()

    junk = np.ones(8 << 20)  # 64 MB

    def other_work() -> None:
        np.add(junk, 1.0, out=junk)

    settings = [("back to back", lambda: None), (f"after a GPU step (~{args.step_ms:.0f} ms)", gpu_step),
                ("after 64 MB of other work", other_work)]
    report("## A reward between training steps (benchmarks/reward_between_steps.py)")
    report()
    report(f"- device: {torch.cuda.get_device_name(0) if args.device == 'cuda' else 'CPU (dry run)'}; CPU: "
           f"{cpu_model()}, numba threads {numba.config.NUMBA_NUM_THREADS}; kbest_bleu commit {git_commit()}")
    report(f"- torch {torch.__version__}, numpy {np.__version__}, numba {numba.__version__}; TensorBLEU: {pub_note}")
    report(f"- medians of {args.repeats} calls; the stand-in step: {n_products} products of {n} x {n}")
    report()
    report("| batch | setting | token_bleu, completions on the device (copy included) | same, 1 thread "
           "| the copy to the CPU alone | token_bleu from a numpy array (no copy) | published TensorBLEU on the device |")
    report("|---|---|---|---|---|---|---|")
    all_threads = numba.config.NUMBA_NUM_THREADS
    for name, rows, length, group in [("64 x 64, 1 ref", 64, 64, 1), ("64 x 64, 8 groups of 8", 64, 64, 8),
                                      ("256 x 1,024, 1 ref", 256, 1024, 1)]:
        hyp, refs = batch(rows, length, 1, group)
        ref = refs[:, 0]
        hyp_d = torch.from_numpy(hyp).to(dev)
        groups = group if group > 1 else None
        ref_rows_d = torch.from_numpy(np.repeat(refs, group, axis=0)).to(dev)  # TensorBLEU: [rows, refs, length]

        def ours(h=None) -> None:
            token_bleu(hyp_d.cpu() if h is None else h, ref, pad_id=PAD, groups=groups, compat="moses")

        def theirs() -> None:
            published(hyp_d, ref_rows_d, pad_token_id=PAD, smoothing_method="add-k", smoothing_k=1)

        # (what, numba threads): the call as a trainer makes it, on all threads and one; its two parts
        columns = [(ours, all_threads), (ours, 1), (hyp_d.cpu, all_threads), (lambda: ours(hyp), all_threads),
                   (theirs if published is not None else None, all_threads)]
        for setting, before in settings:
            cells = []
            for fn, threads in columns:
                if fn is None:
                    cells.append("absent")
                    continue
                numba.set_num_threads(threads)
                try:
                    cells.append(fmt(timed_calls(fn, before, args.repeats, sync)))
                except Exception as exc:  # one failing cell must not end the run
                    cells.append(f"failed: {first_line(exc)}")
            numba.set_num_threads(all_threads)
            report(f"| {name} | {setting} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
