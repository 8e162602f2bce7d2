"""BLEU sufficient statistics: computing them (validated wrappers around the text kernel and the
id kernel) and the :class:`BleuStats` container that tuners and corpus scoring work on."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pyarrow as pa

from . import arrow_compute as pc
from . import settings
from .arrays import read_only, string_buffers
from .config import REF_LENGTH_POLICIES, BleuConfig
from .counting import kernels, numpy_engine
from .counting.codes import REF_AVERAGE, REF_CLOSEST, REF_SHORTEST
from .counting.threads import threads_for
from .encode import (
    Encoded,
    encode,
    hypotheses_array,
    is_token_lists,
    list_offsets,
    references_array,
    segment_pointers,
    segment_references,
)
from .errors import InputError
from .jit import python_function
from .smoothing import corpus_totals
from .tokenize import BYTE_CLASS, WIDE_SPACE, prepare

__all__ = ["BleuStats", "check_group_pointers", "counting_args", "counts_in_parallel", "ngram_stats",
           "pair_stats", "segment_argmax", "segment_counter", "segment_stats", "stats_from_encoded", "stats_from_text",
           "text_kernel_stats"]

_POLICY_CODES = dict(zip(REF_LENGTH_POLICIES, (REF_CLOSEST, REF_SHORTEST, REF_AVERAGE)))


def check_group_pointers(ptr: Any, n_rows: int, n_groups: Optional[int] = None, what: str = "group pointers"
                         ) -> np.ndarray:
    """Validate CSR group pointers int64[G+1]: integers, non-decreasing from 0 to ``n_rows``, G =
    ``n_groups`` when given (floats, strings or booleans are refused, not truncated); ``what``
    names them in the message."""
    try:
        a = np.asarray(ptr)
    except (ValueError, TypeError):  # ragged nesting
        a = np.asarray(None)
    if (a.dtype.kind not in "iu" or a.ndim != 1 or a.size == 0 or a[0] != 0 or a[-1] != n_rows
            or (a[1:] < a[:-1]).any() or (n_groups is not None and a.size != n_groups + 1)):
        count = f" of {n_groups + 1} pointers" if n_groups is not None else ""
        raise InputError(f"{what}: expected a non-decreasing integer array{count} from 0 to {n_rows} "
                         f"(rows ptr[g]:ptr[g+1] form group g), found {ptr!r:.200}")
    return a.astype(np.int64, copy=False)


@dataclass(frozen=True)
class BleuStats:
    """Per-hypothesis BLEU sufficient statistics, one row per hypothesis.

    Attributes
    ----------
    matches : int[H, N+1]  clipped n-gram matches m_1..m_{N+1} (clip = max count over references)
    totals : int[H, N+1]   hypothesis n-gram counts l_n = max(0, c - n + 1)
    hyp_len : int[H]       hypothesis length c in tokens
    ref_len : int[H]       effective reference length r (policy chosen at computation time)

    Order N+1 is kept because smoothings 5 and 7 read it (Chen & Cherry 2014, section 2.5).
    Rows are int32 as computed; :meth:`sum` returns int64 so that corpus sums never overflow.
    """

    matches: np.ndarray
    totals: np.ndarray
    hyp_len: np.ndarray
    ref_len: np.ndarray

    def __post_init__(self) -> None:
        h = self.hyp_len.shape[0]
        if (self.matches.ndim != 2 or self.matches.shape != self.totals.shape
                or self.matches.shape[0] != h or self.ref_len.shape != (h,) or self.matches.shape[1] < 2):
            raise InputError(
                "BleuStats: expected matches and totals of shape (H, N+1) with N >= 1 and hyp_len, "
                f"ref_len of shape (H,); found {self.matches.shape}, {self.totals.shape}, "
                f"{self.hyp_len.shape}, {self.ref_len.shape}")

    @property
    def max_order(self) -> int:
        """N, the highest order scored (the arrays hold one more order)."""
        return self.matches.shape[1] - 1

    def __len__(self) -> int:
        return self.hyp_len.shape[0]

    def __getitem__(self, rows: Any) -> "BleuStats":
        """Rows by slice, integer indices (1-best, oracle selections) or boolean mask."""
        if isinstance(rows, (int, np.integer)):
            n = len(self)
            if not -n <= rows < n:  # IndexError also ends iteration: list(stats) has len(stats) rows
                raise IndexError(f"BleuStats row {int(rows)} out of range for {n} rows")
            rows = int(rows) % n
            rows = slice(rows, rows + 1)
        return BleuStats(self.matches[rows], self.totals[rows], self.hyp_len[rows], self.ref_len[rows])

    def sum(self, config: Optional[BleuConfig] = None) -> "BleuStats":
        """Corpus statistics: a one-row BleuStats of int64 column sums; the totals as ``config``'s
        preset adds them up (:func:`kbest_bleu.smoothing.corpus_totals`: NLTK adds max(1, l_n))."""
        totals = self.totals if config is None else corpus_totals(self.totals, config)
        return BleuStats(self.matches.sum(0, dtype=np.int64)[None], totals.sum(0, dtype=np.int64)[None],
                         self.hyp_len.sum(dtype=np.int64)[None], self.ref_len.sum(dtype=np.int64)[None])

    def sum_by(self, ptr: np.ndarray, config: Optional[BleuConfig] = None) -> "BleuStats":
        """Sums over consecutive row groups ``ptr[g]:ptr[g+1]`` (segments, documents); the totals
        as ``config``'s preset adds them up (:meth:`sum`).

        ptr : int64[G+1], non-decreasing, ptr[0] = 0, ptr[-1] = H. Empty groups give zero rows.
        """
        ptr = check_group_pointers(ptr, len(self))

        def reduce(a: np.ndarray) -> np.ndarray:
            csum = np.zeros((len(a) + 1,) + a.shape[1:], np.int64)
            np.cumsum(a, axis=0, dtype=np.int64, out=csum[1:])
            return csum[ptr[1:]] - csum[ptr[:-1]]

        totals = self.totals if config is None else corpus_totals(self.totals, config)
        return BleuStats(reduce(self.matches), reduce(totals), reduce(self.hyp_len), reduce(self.ref_len))

    @staticmethod
    def concat(parts: Sequence["BleuStats"]) -> "BleuStats":
        """Row-wise concatenation; all parts must have the same max order."""
        if not parts:
            raise InputError("BleuStats.concat: expected at least one BleuStats, found none")
        if not all(isinstance(p, BleuStats) for p in parts):
            raise InputError(f"BleuStats.concat: expected BleuStats, found "
                             f"{', '.join(sorted({type(p).__name__ for p in parts}))}")
        if len({p.max_order for p in parts}) != 1:
            raise InputError(f"BleuStats.concat: max orders differ: {sorted({p.max_order for p in parts})}")
        return BleuStats(*(np.concatenate([getattr(p, f) for p in parts])
                           for f in ("matches", "totals", "hyp_len", "ref_len")))

    def to_moses(self) -> np.ndarray:
        """int64[H, 2N+1] in Moses ``extractor`` order: m1 t1 m2 t2 ... mN tN reflen."""
        n = self.max_order
        out = np.empty((len(self), 2 * n + 1), np.int64)
        out[:, 0:2 * n:2] = self.matches[:, :n]
        out[:, 1:2 * n:2] = self.totals[:, :n]
        out[:, 2 * n] = self.ref_len
        return out


def kernel_rows(n_rows: int) -> int:
    """Rows to allocate for a kernel's column-major outputs (matches, totals) of ``n_rows`` rows:
    at least 2, cut back by :func:`kernel_rows_back`. A column-major array of one row is
    C-contiguous too, which numba types as another layout: a second compile of the kernel (~5 s,
    on disk once) the first time a job's last batch, or a reward call, has one row."""
    return max(n_rows, 2)


def kernel_rows_back(arrays: Sequence[np.ndarray], n_rows: int) -> tuple:
    """The first ``n_rows`` rows of outputs allocated with :func:`kernel_rows` rows: the arrays
    themselves, or contiguous copies of the rows kept (a caller may need a contiguous buffer)."""
    if len(arrays[0]) == n_rows:
        return tuple(arrays)
    return tuple(np.ascontiguousarray(a[:n_rows]) for a in arrays)


def segment_argmax(values: np.ndarray, seg_ptr: np.ndarray) -> np.ndarray:
    """Row index of the largest value in each segment (first row on ties; NaN counts as -inf): int64[S].

    values : float[H]; seg_ptr : int64[S+1] pointers of non-empty segments. Used for 1-best
    (model score) and oracle (sentence BLEU) selections, vectorized over segments in O(H).
    """
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isnan(v), -np.inf, v)
    if len(seg_ptr) < 2:
        return np.zeros(0, np.int64)
    best = np.maximum.reduceat(v, seg_ptr[:-1])
    at_max = np.flatnonzero(v == np.repeat(best, np.diff(seg_ptr)))
    return at_max[np.searchsorted(at_max, seg_ptr[:-1])]


def counting_args(*configs: BleuConfig) -> tuple[int, int]:
    """What the kernels count for ``configs``: (number of orders, reference-length policy code).

    The one map from options to counting arguments: every face (one-call helpers, batch jobs,
    Spark, tuning, MBR, significance, metaeval) goes through it. Several configs (a job's extra
    smoothing columns) share one count, up to the highest :attr:`BleuConfig.counted_order` + 1;
    they must agree on what changes the counts themselves.
    """
    if not configs:
        raise InputError("counting_args: expected at least one BleuConfig")
    first = configs[0]
    for cfg in configs[1:]:
        if (cfg.ref_length, cfg.tokenize, cfg.lowercase_rule) != (first.ref_length, first.tokenize,
                                                                   first.lowercase_rule):
            raise InputError("counting_args: configs sharing one count must agree on ref_length, tokenize and "
                             f"lowercase; found {first} and {cfg}")
    return max(c.counted_order for c in configs) + 1, _POLICY_CODES[first.ref_length]


def stats_from_encoded(enc: Encoded, *configs: BleuConfig) -> BleuStats:
    """Run the id kernel on already encoded CSR arrays (see :class:`kbest_bleu.encode.Encoded`),
    counting what ``configs`` need (:func:`counting_args`)."""
    n_orders, policy = counting_args(*configs)
    with threads_for(enc.tok.nbytes + enc.ref_tok.nbytes) as n_threads:
        # read-only whichever encoder made the arrays (Arrow's indices are, the others not): one
        # specialization of the kernel (it compiled twice, ~6 s more on a first run)
        arrays = (read_only(a) for a in (enc.tok, enc.hyp_ptr, enc.ref_tok, enc.ref_ptr, enc.seg_hyp_ptr,
                                         enc.seg_ref_ptr))
        m, t, c, r = kernels()._ngram_stats(*arrays, n_orders, policy, n_threads)
    return BleuStats(m, t, c, r)


def pair_stats(tok: np.ndarray, row_ptr: np.ndarray, group_ptr: np.ndarray, *configs: BleuConfig,
               ref_ptr: Any = None) -> BleuStats:
    """BLEU statistics of every ordered pair of rows within each group: row j of group g scored
    against row i of the same group as its only reference (MBR's pseudo-references, self-BLEU);
    with ``ref_ptr``, every hypothesis row of group g against every reference row of group g
    (MBR against a separate sample set: only the K x R pairs, not those of the union).

    Parameters
    ----------
    tok : int32[T] token ids (>= 0) of all rows, CSR by ``row_ptr`` int64[H+1]
    group_ptr : int64[G+1] rows group_ptr[g]:group_ptr[g+1] form group g (size K_g): from 0 to H,
        or, with ``ref_ptr``, non-decreasing within 0..H
    configs : what to count (:func:`counting_args`)
    ref_ptr : int64[G+1], optional: rows ref_ptr[g]:ref_ptr[g+1] are group g's references (R_g of
        them; non-decreasing within 0..H, e.g. pseudo-references stored after all hypotheses);
        None: each group's own rows (R_g = K_g)

    Returns
    -------
    BleuStats of sum_g K_g * R_g pairs; group g's block starts at sum_{h<g} K_h * R_h and is laid
    out reference-major: pair (reference i, hypothesis j) -> i * K_g + j.
    """
    tok = np.ascontiguousarray(tok, dtype=np.int32)
    row_ptr = check_group_pointers(row_ptr, len(tok))
    n_rows = len(row_ptr) - 1
    if ref_ptr is None:
        group_ptr = ref_ptr = check_group_pointers(group_ptr, n_rows)
    else:  # hypotheses and references: runs of rows, neither need cover them all
        group_ptr, ref_ptr = np.asarray(group_ptr, dtype=np.int64), np.asarray(ref_ptr, dtype=np.int64)
        for name, ptr in (("group_ptr", group_ptr), ("ref_ptr", ref_ptr)):
            if (ptr.ndim != 1 or ptr.shape != group_ptr.shape or not ptr.size or ptr[0] < 0 or ptr[-1] > n_rows
                    or (np.diff(ptr) < 0).any()):
                raise InputError(f"pair_stats: {name}: expected non-decreasing row numbers within 0..{n_rows}, one "
                                 f"more than the groups, as many as group_ptr ({name}[g]:{name}[g+1] are group g's "
                                 f"rows), found {ptr!r}")
    if len(tok) and tok.min() < 0:
        raise InputError("pair_stats: token ids must be >= 0")
    out_ptr = np.r_[0, np.cumsum(np.diff(group_ptr) * np.diff(ref_ptr))].astype(np.int64)
    n_orders = counting_args(*configs)[0]
    with threads_for(tok.nbytes) as n_threads:
        m, t, c, r = kernels()._pair_stats(tok, row_ptr, group_ptr, ref_ptr, out_ptr, n_orders, n_threads)
    return BleuStats(m, t, c, r)


def stats_from_text(hypotheses: pa.Array, seg_refs: pa.Array, seg_hyp_ptr: np.ndarray, *configs: BleuConfig,
                    engine: str = "kernels") -> BleuStats:
    """Statistics straight from text, without global token ids (:func:`text_kernel_stats`).

    hypotheses : Arrow string array (H); seg_refs : Arrow list<string>, the references of each
    segment (S); seg_hyp_ptr : int64[S+1] row pointers of the segments. References are
    prepared once per segment, not per row (:func:`kbest_bleu.tokenize.prepare`); the kernel splits the tokens.
    ``configs``: what to count (:func:`counting_args`). ``engine``: "kernels" (numba) or
    "numpy" (:mod:`kbest_bleu._numpy_counting`: the same numbers without loading numba, for
    small jobs; :func:`numpy_engine_suits`).
    """
    return _text_counter(hypotheses, seg_refs, seg_hyp_ptr, configs, engine)()


def _text_counter(hypotheses: pa.Array, seg_refs: pa.Array, seg_hyp_ptr: np.ndarray, configs: Sequence[BleuConfig],
                  engine: str) -> Callable[[], BleuStats]:
    """:func:`stats_from_text` in two steps: the text prepared now, counted when the returned
    function is called."""
    n_orders, policy = counting_args(*configs)
    seg_hyp_ptr, seg_ref_ptr = np.ascontiguousarray(seg_hyp_ptr, dtype=np.int64), list_offsets(seg_refs)
    hyp_text, rules = prepare(hypotheses, configs[0].tokenize, configs[0].lowercase_rule, engine)
    flat = pc.list_flatten(seg_refs)
    ref_text, _ = prepare(flat if not pa.types.is_null(flat.type) else pc.cast(flat, pa.string()),
                          configs[0].tokenize, configs[0].lowercase_rule, engine)
    if engine == "numpy":
        return lambda: BleuStats(*numpy_engine.text_stats(hyp_text, ref_text, rules, seg_hyp_ptr, seg_ref_ptr,
                                                             n_orders, policy))

    def count() -> BleuStats:
        with threads_for(hypotheses.nbytes + seg_refs.nbytes) as n_threads:
            return BleuStats(*text_kernel_stats(hyp_text, ref_text, seg_hyp_ptr, seg_ref_ptr, n_orders, policy, rules,
                                                n_threads))
    return count


def segment_stats(hypotheses: pa.Array, seg_refs: pa.Array, seg_hyp_ptr: np.ndarray, *configs: BleuConfig,
                  engine: str = "kernels") -> BleuStats:
    """Statistics of validated inputs (see :func:`stats_from_text` for the arguments): text takes
    the fused text kernel (or the numpy engine), pre-tokenized lists (list<string>) are encoded
    to ids first (always by the kernels)."""
    return segment_counter(hypotheses, seg_refs, seg_hyp_ptr, *configs, engine=engine)()


def segment_counter(hypotheses: pa.Array, seg_refs: pa.Array, seg_hyp_ptr: np.ndarray, *configs: BleuConfig,
                    engine: str = "kernels") -> Callable[[], BleuStats]:
    """:func:`segment_stats` in two steps: the work before counting is done now, the counting
    when the returned function is called, so that a batch job prepares the next chunk on its
    reader thread while this one is counted (DESIGN.md section 8, "Threads").

    Now: text is prepared (tokenizer rules, 13a unescapes, lowercasing, the references
    flattened: Arrow work and serial ``nogil`` kernels, never a parallel one, so that it may run
    beside any kernel). At the call: the text kernel on the kernels' threads, or the numpy engine;
    pre-tokenized lists (list<string>) are encoded and counted then (parallel kernels:
    :func:`counts_in_parallel`)."""
    if counts_in_parallel(hypotheses, seg_refs):
        def encoded() -> BleuStats:
            with threads_for(hypotheses.nbytes + seg_refs.nbytes):  # the encoder's kernels too
                enc = encode(hypotheses, seg_refs, seg_hyp_ptr, configs[0].tokenize, configs[0].lowercase_rule)
                return stats_from_encoded(enc, *configs)
        return encoded
    return _text_counter(hypotheses, seg_refs, seg_hyp_ptr, configs, engine)


def counts_in_parallel(hypotheses: pa.Array, seg_refs: pa.Array) -> bool:
    """Whether :func:`segment_counter`'s counting of these inputs launches numba's parallel
    kernels (pre-tokenized lists are encoded to ids by them): such a launch must come from one
    thread at a time under numba's workqueue layer. The text kernel runs on plain threads."""
    return is_token_lists(hypotheses.type) or is_token_lists(seg_refs.type.value_type)


def ngram_stats(hypotheses: Any, references: Any, segments: Any = None, config: "BleuConfig | None" = None,
                **options: Any) -> BleuStats:
    """BLEU statistics of every hypothesis of a K-best table.

    Parameters
    ----------
    hypotheses : sequence of H strings (list, numpy, pandas, Arrow), or of token lists
    references : one list of reference strings per segment (length S), or per hypothesis row
        (length H, repeated within a segment); a segment may have any number of references, 0 included
    segments : H segment ids, rows of one segment contiguous; None = every row is its own segment
    config, options : a :class:`~kbest_bleu.config.BleuConfig` and/or its fields (max_order,
        ref_length, tokenize, lowercase, ...); statistics are counted up to order
        ``config.counted_order`` + 1, so they serve that config's smoothing (NLTK 5/7 need 5-grams)

    Returns
    -------
    BleuStats with H rows, in input order.
    """
    hyps = hypotheses_array(hypotheses)
    seg_ptr = segment_pointers(segments, len(hyps))
    refs = segment_references(references_array(references), seg_ptr, len(hyps))
    return segment_stats(hyps, refs, seg_ptr, BleuConfig.make(config, **options))


def text_kernel_stats(hyp_text: pa.Array, ref_text: pa.Array, seg_hyp_ptr: np.ndarray, seg_ref_ptr: np.ndarray,
                      n_orders: int, policy: int, rules: int, n_threads: int) -> tuple:
    """The text kernel (:func:`kbest_bleu.counting._kernels._text_run_stats`) over every segment, on ``n_threads``
    threads: the segments are cut into :data:`~kbest_bleu.settings.RUNS_PER_THREAD` runs per
    thread of about equal bytes, handed to a thread pool as threads come free; one thread runs them
    all on the calling thread. Prepared texts (Arrow string arrays, H hypotheses and R references),
    int64[S+1] row and reference pointers of the segments; returns matches, totals
    int32[H, n_orders], hyp_len, ref_len int32[H]."""
    k = kernels()
    hyp_data, hyp_off = string_buffers(hyp_text)
    ref_data, ref_off = string_buffers(ref_text)
    # the outputs and the runs come from the kernels' numpy helpers run as Python (two loads saved),
    # or compiled in the ahead-of-time module where it serves
    n_rows = len(hyp_off) - 1
    out = python_function(k._new_stats)(kernel_rows(n_rows), n_orders)
    n_runs = n_threads * settings.RUNS_PER_THREAD if n_threads > 1 else 1
    cut = python_function(k._thread_chunks)(hyp_off[seg_hyp_ptr] + ref_off[seg_ref_ptr], n_runs)

    def run(c: int) -> None:
        k._text_run_stats(hyp_data, hyp_off, ref_data, ref_off, seg_hyp_ptr, seg_ref_ptr, cut[c], cut[c + 1],
                          n_orders, policy, rules, BYTE_CLASS, WIDE_SPACE, *out)
    if len(cut) <= 2:
        run(0)
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, range(len(cut) - 1)))
    return kernel_rows_back(out, n_rows)
