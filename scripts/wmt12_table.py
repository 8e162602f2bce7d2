"""Reproduce the layout of Chen & Cherry (2014) Tables 2 and 3 on WMT12 (and the WMT22 MQM table).

Usage: python scripts/wmt12_table.py [--data ../shared/data] [--tau-variant seed|wmt12] [mqm]
Same as `kbest-bleu metaeval wmt12`.
"""

import sys

from kbest_bleu.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    dataset = "mqm" if "mqm" in args else "wmt12"
    sys.exit(main(["metaeval", dataset] + [a for a in args if a != "mqm"]))
