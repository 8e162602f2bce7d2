#!/bin/bash
# The first run of every command after a fresh install (issue 33): a `git archive` of HEAD
# installed with `pip install -v .` into a new virtual environment in a temporary directory
# (the kernels compile at install; KBEST_BLEU_COMPILE_AT_INSTALL=0 to compare), then each command
# once on the bundled 5,000-row sample, wall times from /usr/bin/time. Run from the checkout:
#     bash benchmarks/first_run.sh
set -u
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$root" archive HEAD | (mkdir -p "$work/src" && cd "$work/src" && tar xf -)
python3 -m venv "$work/venv" && . "$work/venv/bin/activate" && pip install -q --upgrade pip >/dev/null 2>&1
cd "$work/src"
echo "load before install: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "install: %e s wall, %U s user" -o "$work/t" pip install -v . > "$work/install.log" 2>&1
cat "$work/t"; grep -i "kernels compiled at install\|warmup: .*compiled\|kernels ready" "$work/install.log" | tail -12
cd "$work"
S=$(python -c "import kbest_bleu, pathlib; print(pathlib.Path(kbest_bleu.__file__).parent / 'data' / 'moses_100best_sample.parquet')")
python -c "from kbest_bleu.counting import aot; print('ahead-of-time module loaded:', type(aot.loaded()).__name__)"
python - "$S" <<'PY'
import sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
first = {}
for s, h, r in zip(t["segment_id"].to_pylist(), t["hypothesis"].to_pylist(), t["references"].to_pylist()):
    first.setdefault(s, (h, r[0]))
open("hyp.txt", "w").write("".join(h + "\n" for h, _ in first.values()))
open("ref.txt", "w").write("".join(r + "\n" for _, r in first.values()))
open("sys2.txt", "w").write("".join(h.upper() + "\n" for h, _ in first.values()))
PY
run() { local name="$1"; shift; /usr/bin/time -f "$name: %e s wall" "$@" > out.txt 2> err.txt; tail -1 err.txt; grep -i "compiling" err.txt | head -2; }
run "score bleu" kbest-bleu score "$S" -t none -o o.parquet -q
run "score bleu (kernels engine)" kbest-bleu score "$S" -t none --engine kernels -o o.parquet -q
run "score meteor" kbest-bleu score "$S" -t none --metric meteor -o o.parquet -q
run "score chrf" kbest-bleu score "$S" -t none --metric chrf -o o.parquet -q
run "score bleu,meteor,chrf" kbest-bleu score "$S" -t none --metric bleu,meteor,chrf -o o.parquet -q
run "corpus" kbest-bleu corpus ref.txt -i hyp.txt
run "paired" kbest-bleu paired hyp.txt sys2.txt -r ref.txt --n-samples 200
run "tune" kbest-bleu tune "$S" -t none
run "mbr bleu" kbest-bleu mbr "$S" -t none -o m.parquet -q
run "mbr chrf++" kbest-bleu mbr "$S" --utility chrf++ -o m.parquet -q
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
