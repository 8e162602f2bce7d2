"""Compile the common jobs' kernels ahead of the first job (``kbest-bleu warmup``; README,
"First run").

numba compiles a kernel on its first use and keeps the machine code in its on-disk cache
(:mod:`kbest_bleu._numba_cache`): the first parquet job after an install compiles for ~12 s on
2 cores, later ones load in ~0.1 s. Compiled kernels are not shipped in the package, because
numba's cache entries are tied to the source files' timestamps (which an install rewrites) and
to the CPU model of the machine that compiled them. Instead, ``kbest-bleu warmup`` runs every
common scoring path once on a tiny table, e.g. in a container build or a cluster's setup step.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
from numba.core import event

from .. import _aot
from .._kernel_codes import kernels
from ..bleu import score_kbest, sentence_bleu
from ..config import BleuConfig
from .stream import score_table

__all__ = ["TOKENIZERS_WARMED", "warm_up"]

# none, 13a and zh share the text kernel (the rules are an argument); 13a adds its unescape
# scan and char its own rewrite; intl and lowercasing run in Arrow
TOKENIZERS_WARMED = ("none", "13a", "char")


class _Compiles(event.Listener):
    """Counts the kbest_bleu functions numba compiles (cache misses), nested ones included."""

    def __init__(self) -> None:
        self.count = 0

    def on_start(self, ev: Any) -> None:
        if ev.data["dispatcher"].py_func.__module__.startswith("kbest_bleu"):
            self.count += 1

    def on_end(self, ev: Any) -> None:
        pass


def warm_up() -> tuple[int, float, str]:
    """Run each common scoring path once: a K-best table with references on every row (their
    equality check included) under each of :data:`TOKENIZERS_WARMED`, the same table
    pre-tokenized (the id encoder's kernels), and one :func:`~kbest_bleu.bleu.sentence_bleu`
    call per tokenizer (the single-call kernel).

    Returns (number of kbest_bleu functions compiled, seconds, numba's cache directory); the
    count is 0 when the cache held every kernel already.
    """
    refs = [["a b c &amp; d"], ["a b c &amp; d"], ["x 1-2 y"]]
    table = pa.table({"segment_id": [0, 0, 1], "hypothesis": ["a b & c", "a b. c", "x 1-2"], "references": refs})
    listener = _Compiles()
    _aot.unload()  # numba's kernels, compiled here, are what the ahead-of-time module is built from
    t0 = time.perf_counter()
    with event.install_listener("numba:compile", listener):
        for tok in TOKENIZERS_WARMED:
            score_table(table, BleuConfig(tokenize=tok))
            sentence_bleu("a b & c", ["a b c &amp; d"], tokenize=tok)
        score_kbest([h.split() for h in table["hypothesis"].to_pylist()], [[r.split() for r in rs] for rs in refs],
                    [0, 0, 1], tokenize="none")
    return listener.count, time.perf_counter() - t0, str(kernels()._text_run_stats._cache._cache_path)
