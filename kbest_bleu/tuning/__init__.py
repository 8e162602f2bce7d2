"""Tuning over K-best lists: the container (:mod:`.lists`), per-step objectives
(:mod:`.objectives`), MIRA / PRO / expected-BLEU tuners (:mod:`.tuners`), MBR (:mod:`.mbr`).
The BLEU statistics are computed once; every step only recomputes model scores w.f."""

from .lists import KbestLists, moses_matrix
from .mbr import aggregate_bleu, mbr_matrix, mbr_select, pairwise_bleu
from .objectives import background_bleu, expected_bleu, hope_fear_model, segment_softmax
from .tuners import TuneResult, tune_expected_bleu, tune_mira, tune_pro

__all__ = ["KbestLists", "TuneResult", "aggregate_bleu", "background_bleu", "expected_bleu", "hope_fear_model",
           "mbr_matrix", "mbr_select", "moses_matrix", "pairwise_bleu", "segment_softmax", "tune_expected_bleu",
           "tune_mira", "tune_pro"]
