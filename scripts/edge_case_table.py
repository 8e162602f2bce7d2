"""Print the README's preset x edge-case table: our value for every case of
shared/conformance/edge_cases.json, with a dagger where the peer tool crashed.

Usage: python scripts/edge_case_table.py [path/to/edge_cases.json]
"""

import json
import sys
from pathlib import Path

import kbest_bleu as kb

COLUMNS = [  # (header, peer key in edge_cases.json, options)
    ("sacrebleu exp", "sacre_exp_eff1", {}),
    ("sacrebleu floor", "sacre_floor_eff1", dict(smoothing="floor")),
    ("nltk m0", "nltk_m0", dict(compat="nltk")),
    ("nltk m4", "nltk_m4", dict(compat="nltk", smoothing=4)),
    ("nltk m6", "nltk_m6", dict(compat="nltk", smoothing=6)),
    ("mteval", "mteval13a", dict(compat="mteval")),
    ("mteval shortest", "mteval13a_shortestBP", dict(compat="mteval", ref_length="shortest")),
    ("moses bleu+1", "moses_bleu+1", dict(compat="moses")),
    ("moses smoothBP", "moses_bleu+1_smoothBP", dict(compat="moses", smooth_bp=True)),
]


def main(path: str) -> None:
    cases = json.loads(Path(path).read_text())["cases"]
    print("| case | " + " | ".join(h for h, _, _ in COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for c in cases:
        cells = []
        for _, peer, opts in COLUMNS:
            v = kb.sentence_bleu(c["hypothesis"], c["references"], **opts)
            crashed = isinstance(c["expected"][peer], dict)
            cells.append(f"{v:.4g}" + (" †" if crashed else ""))
        print(f"| {c['name']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parents[1] / "tests" / "data" / "edge_cases.json"))
