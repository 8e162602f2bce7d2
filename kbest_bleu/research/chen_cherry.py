"""Chen & Cherry (2014) Tables 2-3 on WMT12 and WMT13, with the paper's numbers beside ours.

The paper averages its test sets (Table 1: WMT12 and WMT13, into and out of English, languages
cs, de, es, fr, ru). What the shared data allows: WMT12 cs/de/es/fr <-> en, WMT13 cs/de/es/fr-en
(no ru-en ranks, no out-of-English WMT13 judgments). The WMT13 human system score is
wins / (wins + losses) from the pairs, as for WMT12 (:func:`.metaeval.human_system_scores`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import BleuConfig
from .metaeval import table_by_lp

__all__ = ["INTO_ENGLISH", "OUT_OF_ENGLISH", "PAPER", "chen_cherry_tables", "distinct_pairs"]

INTO_ENGLISH = ("cs-en", "de-en", "es-en", "fr-en")
OUT_OF_ENGLISH = ("en-cs", "en-de", "en-es", "en-fr")

# Chen & Cherry 2014 Tables 2 (into English) and 3 (out of English): (seg tau, sys Pearson, sys Spearman)
PAPER = {
    "into": {"crp": (np.nan, 0.720, 0.887), 0: (0.165, 0.759, 0.887), 1: (0.224, 0.760, 0.887),
             2: (0.226, 0.757, 0.887), 3: (0.224, 0.760, 0.887), 4: (0.228, 0.763, 0.887),
             5: (0.234, 0.765, 0.887), 6: (0.230, 0.754, 0.887), 7: (0.236, 0.766, 0.887)},
    "out": {"crp": (np.nan, 0.712, 0.744), 0: (0.119, 0.715, 0.744), 1: (0.178, 0.722, 0.748),
            2: (0.180, 0.725, 0.744), 3: (0.178, 0.724, 0.744), 4: (0.181, 0.727, 0.744),
            5: (0.184, 0.731, 0.744), 6: (0.182, 0.725, 0.744), 7: (0.187, 0.734, 0.744)},
}


def distinct_pairs(pairs: pa.Table) -> pa.Table:
    """One row per distinct (lp, segment_id, better_system, worse_system): WMT13's pairs come one
    per 5-way ranking, so a pair judged in two rankings appears twice."""
    keys = ["lp", "segment_id", "better_system", "worse_system"]
    return pairs.group_by(keys).aggregate([]).select(keys)


def chen_cherry_tables(wmt12: tuple[pa.Table, pa.Table], wmt13: Optional[tuple[pa.Table, pa.Table]],
                       config: Optional[BleuConfig] = None, distinct: bool = False) -> dict:
    """The blocks of Tables 2-3 (Chen & Cherry 2014 section 3.1): {(direction, test set): {lp: rows}}
    per language pair, rows [(row, seg_tau, sys_pearson, sys_spearman)] for crp and smoothing
    0-7 (seed-paper tau: metric ties half concordant). ``wmt12``/``wmt13``: (segments, pairs);
    ``distinct`` keeps one row per distinct WMT13 pair instead of one per ranking."""
    cfg = config or BleuConfig(tokenize="13a")
    seg12, pairs12 = wmt12
    out = {("into", "WMT12"): table_by_lp(seg12, pairs12, INTO_ENGLISH, cfg),
           ("out", "WMT12"): table_by_lp(seg12, pairs12, OUT_OF_ENGLISH, cfg)}
    if wmt13 is not None:
        seg13, pairs13 = wmt13
        judged = sorted(set(pairs13["lp"].to_pylist()) & set(INTO_ENGLISH))
        seg13 = seg13.filter(pc.is_in(seg13["lp"], pa.array(judged)))
        out[("into", "WMT13")] = table_by_lp(seg13, distinct_pairs(pairs13) if distinct else pairs13, judged, cfg)
    return out
