"""Start-up of whole processes: `kbest-bleu --help`, `--version`, `import kbest_bleu`, beside
`sacrebleu --help`, each the median (and range) of N interleaved runs, with the machine's load.

    python benchmarks/startup.py [--runs 10]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "kbest-bleu --help": [sys.executable, "-m", "kbest_bleu", "--help"],
    "kbest-bleu --version": [sys.executable, "-m", "kbest_bleu", "--version"],
    "python -c 'import kbest_bleu'": [sys.executable, "-c", "import kbest_bleu"],
    "sacrebleu --help": [shutil.which("sacrebleu") or "sacrebleu", "--help"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    n = ap.parse_args().runs
    times: dict = {name: [] for name in COMMANDS}
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for _ in range(n):
        for name, cmd in COMMANDS.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - t0)
    print(f"| command | median s ({n} runs) | min-max s |\n|---|---|---|")
    for name, ts in times.items():
        print(f"| `{name}` | {statistics.median(ts):.3f} | {min(ts):.3f}-{max(ts):.3f} |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
