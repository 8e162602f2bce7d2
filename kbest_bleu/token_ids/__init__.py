"""Sentence BLEU of integer token ids: RL rewards, in-training evaluation, MBR over samples.

Hypotheses and references are token ids straight from a model: no text, no tokenizer, no
vocabulary-sized table. Ids are compared as 64-bit integers (any value: negative, or near the
int64 limits); the statistics are the ones the text path counts for the same tokens written as
text (``tokenize="none"``), so every smoothing and preset of :mod:`kbest_bleu.smoothing` applies
(docs/token_ids.md).

Inputs (hypotheses, and each reference):

- a 2-D integer array, one row per sentence, with ``pad_id`` marking padding: numpy, or any object
  exposing ``__dlpack__`` (read with ``np.from_dlpack``: a torch tensor on the CPU, zero-copy) or
  ``__array__``; the package never imports torch;
- a ragged sequence of integer sequences (lists, 1-D arrays, tensors);
- an Arrow ``list<int8..int64|uint8..uint64>`` array (or chunked array).

**Padding.** Every id equal to ``pad_id`` is dropped wherever it stands (trailing padding, left
padding, or inside a row): a row is the sequence of its other ids, as a tokenizer's
``decode(skip_special_tokens=True)`` would read it. Without ``pad_id`` every id counts.

**References.** One or more per hypothesis row, or per group of rows (``groups``): G sampled
completions of one prompt share the prompt's references, given once and counted once per group
(the group is a K-best list: DESIGN.md section 1). Several references per entry: a 3-D array
``(entries, references, length)`` (a reference that is all padding is absent, so entries may have
different numbers of references), a ragged sequence of sequences of sequences, or an Arrow
``list<list<int>>``. An entry without references scores as the text path scores one.

Statistics are counted by :mod:`kbest_bleu.token_ids._kernels` (the references' n-grams interned
once per segment, each hypothesis walking them; clip = max count over the references, Papineni
et al. 2002 section 2.1), then scored by :func:`kbest_bleu.bleu.score_rows` (the smoothings of
:func:`~kbest_bleu.bleu.sentence_scores`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache
from typing import Any, Optional

import numpy as np

from .. import settings
from ..bleu import score_rows
from ..config import BleuConfig
from ..errors import InputError
from ..stats import BleuStats, check_group_pointers, counting_args, kernel_rows, kernel_rows_back, threads_for
from ._inputs import batch_inputs, group_pointers, kernels, reference_rows, rows, segment_table

__all__ = ["TokenBleuScorer", "pairwise_token_bleu", "segment_token_stats", "self_token_bleu", "token_bleu",
           "token_config", "token_ngram_stats", "token_rows"]

# segments of one kernel run at most (its table stamps count segments x 32 orders below 2**31)
_MAX_RUN = 1 << 24
# reference ids below this (or below 8x the batch's reference ids) are looked up in a direct table
_DIRECT_IDS = 1 << 16
_DIRECT_PER_ID = 8
_DIRECT_MAX = 1 << 22  # at most 4M entries per direct table (int32 ids, int64 position sets), whatever the batch
_OUT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


# --- options -------------------------------------------------------------------------------------

@lru_cache(maxsize=256)
def _cached_config(key: tuple) -> BleuConfig:
    options = {k: v for k, v, _ in key}
    return _token_config(BleuConfig.make(**options), explicit=options)


def _token_config(cfg: BleuConfig, explicit: dict) -> BleuConfig:
    """``cfg`` for token ids: ids are tokens already, so the tokenizer is "none" (what the
    signature reports); asking for another tokenizer or for lowercasing is a mistake."""
    if "tokenize" in explicit and explicit["tokenize"] != "none":
        raise InputError(f"tokenize: token ids are already tokens; expected tokenize='none' or no tokenize option, "
                         f"found {explicit['tokenize']!r}")
    if cfg.lowercase and (cfg.compat != "mteval" or explicit.get("lowercase")):
        raise InputError("lowercase: token ids have no case; drop lowercase=True (lowercase the text before "
                         "tokenizing it)")
    # mteval's own default lowercases (mteval-v13a.pl without -c): nothing to lower in ids
    return cfg if (cfg.tokenize, cfg.lowercase) == ("none", False) else replace(cfg, tokenize="none", lowercase=False)


def _config(config: Optional[BleuConfig], options: dict) -> BleuConfig:
    """The scoring config of ``config`` and keyword ``options`` (memoized: validating a config
    costs ~10 us, a fifth of a small batch's scoring)."""
    if config is not None and not isinstance(config, BleuConfig):
        raise InputError(f"config: expected a kbest_bleu.config.BleuConfig, found {type(config).__name__}")
    if config is None:
        try:
            return _cached_config(BleuConfig.options_key(options))
        except TypeError:  # unhashable option values (a weights list)
            pass
    return _token_config(BleuConfig.make(config, **options), options)


def token_config(config: Optional[BleuConfig] = None, **options: Any) -> BleuConfig:
    """The :class:`~kbest_bleu.config.BleuConfig` that token ids are scored under, from a config
    and/or its fields: ``tokenize`` is "none" (ids are tokens already; the signature says so),
    another tokenizer or ``lowercase=True`` asked for explicitly is an :class:`InputError`."""
    return _config(config, options)


@lru_cache(maxsize=256)
def _counted_orders(configs: tuple, stats_wanted: bool) -> tuple[int, int]:
    """(columns of the statistics, orders actually counted). Statistics handed to the caller hold
    every order :func:`kbest_bleu.stats.counting_args` names (N+1: smoothings 5 and 7 read it);
    for scores alone, only smoothings 5 and 7 read a column past ``counted_order``
    (:mod:`kbest_bleu.smoothing`), so the others skip counting it (~15% of the work)."""
    n_cols, _ = counting_args(*configs)
    if stats_wanted or any(c.smoothing in (5, 7) for c in configs):
        return n_cols, n_cols
    return n_cols, max(c.counted_order for c in configs)


def _out_dtype(dtype: Any) -> np.dtype:
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d not in _OUT_DTYPES:  # (numpy's float64 dtype compares equal to None)
        raise InputError(f"dtype: expected numpy.float64 or numpy.float32 for the scores, found {dtype!r}")
    return d


def token_rows(x: Any, pad_id: Any = None, what: str = "hypotheses") -> tuple[np.ndarray, np.ndarray]:
    """Token-id rows in any accepted form (module docstring) as CSR without their pad ids.

    Returns
    -------
    ids : int64[T]   the rows' ids, concatenated (uint64 ids read as int64 with the same bits)
    ptr : int64[B+1] row b is ids[ptr[b]:ptr[b+1]]
    """
    return rows(x, pad_id, what)


# --- segments and counting ----------------------------------------------------------------------

def _count(hyp: tuple, ref: tuple, segs: np.ndarray, n_out: int, cfg: "BleuConfig | tuple", stats_wanted: bool,
           dedupe: bool = True, n_vocab: Optional[int] = None, id_range: Optional[tuple] = None) -> BleuStats:
    """Run the kernels over ``segs``; ``n_out`` output rows; ``cfg``: the config, or several
    sharing one count (:func:`kbest_bleu.stats.counting_args`); ``n_vocab``: :func:`_direct_vocab`
    of ``ref``'s ids when known (fixed references), else found here (from ``id_range``, the
    (min, max) of ``ref``'s ids, where the conversion found it)."""
    k = kernels()
    configs = cfg if isinstance(cfg, tuple) else (cfg,)
    tok, hyp_ptr = hyp
    ref_tok, ref_ptr = ref
    for a in (tok, hyp_ptr, ref_tok, ref_ptr):  # this module's own array objects (views at most of a caller's)
        a.setflags(write=False)  # as a scorer's references and Arrow's views: one specialization of the kernels
    n_cols, n_count = _counted_orders(configs, stats_wanted)
    # column-major, as the text kernels' output: each order one contiguous column for the smoothings;
    # the four arrays are views of one zeroed block (one allocation, ~0.5 us less on a small batch)
    n_alloc = kernel_rows(n_out)
    block = np.zeros((2 * n_cols + 2, n_alloc), np.int32)
    matches, totals = block[:n_cols].T, block[n_cols:2 * n_cols].T
    hyp_len, ref_len = block[2 * n_cols], block[2 * n_cols + 1]
    policy = getattr(k, configs[0].ref_length.upper())  # k.CLOSEST, k.SHORTEST or k.AVERAGE
    n_vocab = _direct_vocab(ref_tok, k, id_range) if n_vocab is None else n_vocab
    n_threads, n_ids = 1, tok.size + ref_tok.size
    if n_ids >= settings.TOKEN_PARALLEL_IDS and len(segs) > 1:
        # the reference ids the segments read: a scorer's references may be many more than a batch uses
        n_ids = tok.size + int((ref_ptr[segs[:, k.SEG_R1]] - ref_ptr[segs[:, k.SEG_R0]]).sum())
        if n_ids >= settings.TOKEN_PARALLEL_IDS:
            with threads_for(8 * n_ids) as n_threads:  # the package's thread count for a job this size
                pass
    cut = _thread_cut(hyp_ptr, ref_ptr, segs, n_threads * settings.RUNS_PER_THREAD if n_threads > 1 else 1)

    def run(c: int) -> None:
        k.token_run(tok, hyp_ptr, ref_tok, ref_ptr, segs, cut[c], cut[c + 1], n_count, policy, dedupe, n_vocab,
                    matches, totals, hyp_len, ref_len)
    if n_threads == 1:
        for c in range(len(cut) - 1):
            run(c)
    else:  # runs handed out as threads come free: a core busy elsewhere delays one run, not half the job
        list(_pool(n_threads).map(run, range(len(cut) - 1)))
    return BleuStats(*kernel_rows_back((matches, totals, hyp_len, ref_len), n_out))


def _direct_vocab(ref_tok: np.ndarray, k: Any, id_range: Optional[tuple] = None) -> int:
    """The size of the direct id table for these references, or 0 for the hashed one: direct when
    every reference id is in 0..V-1 with V small next to the batch (no table proportional to a
    vocabulary the batch does not use: a large or sparse id range takes the hashed path).
    ``k``: the kernels module; ``id_range``: (min, max) of ``ref_tok`` where known."""
    if ref_tok.size == 0:
        return 0
    lo, hi = k.id_range(ref_tok) if id_range is None else id_range
    return hi + 1 if lo >= 0 and hi < min(max(_DIRECT_IDS, _DIRECT_PER_ID * ref_tok.size), _DIRECT_MAX) else 0


def _thread_cut(hyp_ptr: np.ndarray, ref_ptr: np.ndarray, segs: np.ndarray, n_runs: int) -> "np.ndarray | tuple":
    """Segment bounds int64[C+1] cutting the segments into about ``n_runs`` runs of about equal
    work (hypothesis plus reference ids), each of at most :data:`_MAX_RUN` segments (a tuple for
    one run: a small batch's call skips making an array)."""
    n = max(1, min(len(segs), max(n_runs, -(-len(segs) // _MAX_RUN))))
    if n == 1:
        return (0, len(segs))
    k = kernels()
    work = (hyp_ptr[segs[:, k.SEG_H1]] - hyp_ptr[segs[:, k.SEG_H0]]
            + ref_ptr[segs[:, k.SEG_R1]] - ref_ptr[segs[:, k.SEG_R0]])
    cum = np.zeros(len(segs) + 1, np.int64)
    np.cumsum(work, out=cum[1:])
    cut = np.searchsorted(cum, (np.arange(n + 1) * cum[-1]) // n)
    cut[0], cut[-1] = 0, len(segs)
    return np.unique(cut)


_POOL: list = [None, 0, 0]  # the executor, its thread count, the process it was made in


def _pool(n_threads: int) -> ThreadPoolExecutor:
    """A thread pool kept between calls (starting threads costs ~50 us each, a small batch's
    whole scoring); made anew for another thread count, or in a forked child (which has the
    parent's executor but not its threads)."""
    ex, size, pid = _POOL
    if ex is None or size != n_threads or pid != os.getpid():
        ex = ThreadPoolExecutor(n_threads, thread_name_prefix="kbest_bleu.token_ids")
        _POOL[:] = [ex, n_threads, os.getpid()]
    return ex


def _scores(stats: BleuStats, cfg: BleuConfig, dtype: np.dtype) -> np.ndarray:
    bleu = score_rows(stats, cfg, "sentence")  # the kernels' own statistics: no check of their values
    return bleu if dtype == bleu.dtype else bleu.astype(dtype)


# --- public API ---------------------------------------------------------------------------------

def token_ngram_stats(hypotheses: Any, references: Any, *, pad_id: Any = None, groups: Any = None,
                      config: Optional[BleuConfig] = None, **bleu_options: Any) -> BleuStats:
    """BLEU statistics of token-id hypotheses: one row per hypothesis, in input order.

    Parameters
    ----------
    hypotheses : H rows of token ids (module docstring: 2-D array or tensor with ``pad_id``,
        ragged sequences, Arrow list<int>)
    references : one entry of references per hypothesis row (``groups`` None) or per group; an
        entry is one reference (a row of ids) or several (3-D array, nested sequences,
        list<list<int>>)
    pad_id : the padding id, dropped wherever it stands; None: every id counts
    groups : None, a group size G (rows g*G:(g+1)*G share entry g), or row pointers int64[G+1]
    config, bleu_options : a :class:`~kbest_bleu.config.BleuConfig` and/or its fields; statistics
        are counted to order ``counted_order`` + 1 (:func:`kbest_bleu.stats.counting_args`)

    Returns
    -------
    BleuStats : matches, totals int32[H, N+1], hyp_len, ref_len int32[H] — equal to
    :func:`kbest_bleu.stats.ngram_stats` of the same ids written as space-separated tokens with
    ``tokenize="none"``; :func:`kbest_bleu.bleu.corpus_score` and the others take them.
    """
    cfg = _config(config, bleu_options)
    hyp, ref, segs, ref_range = batch_inputs(hypotheses, references, pad_id, groups)
    return _count(hyp, ref, segs, len(hyp[1]) - 1, cfg, stats_wanted=True, id_range=ref_range)


def segment_token_stats(hypotheses: Any, references: Any, seg_ptr: Any, *configs: BleuConfig, pad_id: Any = None,
                        row_offset: int = 0) -> BleuStats:
    """Statistics of a K-best table of token ids, as the batch job counts a chunk of segments.

    Parameters
    ----------
    hypotheses : H rows of ids (an Arrow list<int32|int64> column, or any form :func:`token_rows` reads)
    references : the references of each segment (S entries) or of each row (H entries: the rows of
        a segment must repeat its first row's references, as for text)
    seg_ptr : int64[S+1] row pointers of the segments
    configs : the configs sharing this count (a job's extra smoothing columns); none: the default
    row_offset : added to the row numbers of error messages (streaming jobs)

    Returns
    -------
    BleuStats with H rows, counted to every order ``configs`` read (:func:`kbest_bleu.stats.counting_args`).
    """
    configs = tuple(_config(c, {}) for c in configs) or (_config(None, {}),)
    hyp = token_rows(hypotheses, pad_id, "hypotheses")
    n_rows = len(hyp[1]) - 1
    gptr = check_group_pointers(seg_ptr, n_rows)
    ids, ptr, entry_ptr = reference_rows(references, pad_id)
    index = None
    if len(entry_ptr) - 1 == n_rows and n_rows != len(gptr) - 1:
        _check_rows_repeat(ids, ptr, entry_ptr, gptr, row_offset)
        index = gptr[:-1]  # each segment takes its first row's references
    segs = segment_table(n_rows, entry_ptr, gptr, index, " (or one per hypothesis row)")
    return _count(hyp, (ids, ptr), segs, n_rows, configs, stats_wanted=True)


def _check_rows_repeat(ids: np.ndarray, ptr: np.ndarray, entry_ptr: np.ndarray, gptr: np.ndarray,
                       row_offset: int) -> None:
    """Raise :class:`InputError` naming the first row whose references differ from those of the
    first row of its segment (count, lengths or ids); vectorized over the ids."""
    n_rows = len(entry_ptr) - 1
    owner = np.repeat(gptr[:-1], np.diff(gptr))
    n_refs = np.diff(entry_ptr)
    bad = n_refs != n_refs[owner]
    if not bad.any():
        ref_row = np.repeat(np.arange(n_rows), n_refs)
        mate = entry_ptr[owner[ref_row]] + np.arange(len(ref_row)) - entry_ptr[ref_row]  # the owner's k-th reference
        lens = np.diff(ptr)
        diff_len = lens != lens[mate]
        bad[ref_row[diff_len]] = True
        if not bad.any():
            ref_of = np.repeat(np.arange(len(lens)), lens)
            at = ptr[mate[ref_of]] + np.arange(len(ids)) - ptr[ref_of]
            bad[ref_row[ref_of[ids != ids[at]]]] = True
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"references: row {r + row_offset} has references different from row "
                         f"{int(owner[r]) + row_offset}, the first row of its segment; the rows of one segment must "
                         "share their references (or pass segment ids that separate them)")


def token_bleu(hypotheses: Any, references: Any, *, pad_id: Any = None, groups: Any = None,
               config: Optional[BleuConfig] = None, dtype: Any = np.float64, **bleu_options: Any) -> np.ndarray:
    """Sentence BLEU of every token-id hypothesis: float64[H] on the 0-1 scale (float32 with
    ``dtype=np.float32``).

    Arguments as :func:`token_ngram_stats`; ``bleu_options`` are BleuConfig fields (``compat``
    "sacrebleu" (default), "nltk", "mteval" or "moses"; ``smoothing`` 0-7, "floor", "add-k",
    "exp" or "bleu+1"; ``max_order``, ``weights``, ``ref_length``, ...), exactly as the text path
    scores the same tokens. Example, a GRPO group of 2 completions sharing one reference,
    right-padded with 0::

        >>> token_bleu([[5, 6, 7, 8, 0], [5, 6, 9, 0, 0]], [[5, 6, 7, 8]], pad_id=0, groups=2,
        ...            compat="moses").round(4).tolist()
        [1.0, 0.5067]
    """
    cfg = _config(config, bleu_options)
    out = _out_dtype(dtype)
    hyp, ref, segs, ref_range = batch_inputs(hypotheses, references, pad_id, groups)
    return _scores(_count(hyp, ref, segs, len(hyp[1]) - 1, cfg, stats_wanted=False, id_range=ref_range), cfg, out)


class TokenBleuScorer:
    """Sentence BLEU of token-id hypotheses against fixed references, converted once: a
    validation set scored at every evaluation step, a dataset's references looked up per batch.

    ``scorer = TokenBleuScorer(references, pad_id=0, compat="moses")``; then
    ``scorer(hypotheses)`` -> float64[H] (one hypothesis row per reference entry), or
    ``scorer(hypotheses, groups=G)`` (one group per entry), or ``scorer(hypotheses, index=idx)``
    (row or group i scored against entry idx[i]: a batch of prompts drawn from the dataset).

    Parameters
    ----------
    references : entries of references, as :func:`token_ngram_stats` takes them
    pad_id : the padding id of references and hypotheses (None: every id counts)
    config, dtype, bleu_options : as :func:`token_bleu`
    """

    def __init__(self, references: Any, *, pad_id: Any = None, config: Optional[BleuConfig] = None,
                 dtype: Any = np.float64, **bleu_options: Any) -> None:
        self.config = _config(config, bleu_options)
        self.dtype = _out_dtype(dtype)
        self.pad_id = pad_id
        k = kernels()
        # copies: the rows may be views of the caller's array, which may change later (the direct
        # id table is sized from these ids once)
        ids, ptr, self._entry_ptr = (np.array(a) for a in reference_rows(references, pad_id))
        self._refs = (ids, ptr)
        for a in (ids, ptr, self._entry_ptr):
            a.setflags(write=False)
        self._n_vocab = _direct_vocab(ids, k)  # once, not a pass over every reference id per call

    def __len__(self) -> int:
        """The number of reference entries."""
        return len(self._entry_ptr) - 1

    def stats(self, hypotheses: Any, *, groups: Any = None, index: Any = None) -> BleuStats:
        """Statistics (as :func:`token_ngram_stats`) of ``hypotheses`` against the references."""
        return self._stats(hypotheses, groups, index, True)

    def __call__(self, hypotheses: Any, *, groups: Any = None, index: Any = None) -> np.ndarray:
        """Sentence BLEU of ``hypotheses``: float[H] (the scorer's dtype)."""
        return _scores(self._stats(hypotheses, groups, index, False), self.config, self.dtype)

    def _stats(self, hypotheses: Any, groups: Any, index: Any, stats_wanted: bool) -> BleuStats:
        hyp = token_rows(hypotheses, self.pad_id, "hypotheses")
        n_rows = len(hyp[1]) - 1
        segs = segment_table(n_rows, self._entry_ptr, groups, index,
                             " (pass index= to score against some of the scorer's entries)")
        return _count(hyp, self._refs, segs, n_rows, self.config, stats_wanted, n_vocab=self._n_vocab)


def _group_stats(hypotheses: Any, groups: Any, pad_id: Any, cfg: BleuConfig, pairs: bool) -> tuple:
    """Statistics of each hypothesis against the members of its group: every pair (``pairs``:
    sum of G^2 rows, row (i, j) = hypothesis i against hypothesis j alone), or each hypothesis
    against all the others at once. Returns (stats, group pointers)."""
    k = kernels()
    hyp = token_rows(hypotheses, pad_id, "hypotheses")
    n_rows = len(hyp[1]) - 1
    if groups is None:
        raise InputError("groups: expected a group size or row pointers: pairwise BLEU is computed within groups")
    gptr = group_pointers(groups, n_rows)
    sizes = np.diff(gptr)
    if pairs:
        # one segment per (group, reference j): the group's rows against row j
        n_seg = int(sizes.sum())
        g_of = np.repeat(np.arange(len(sizes)), sizes)
        segs = np.empty((n_seg, 6), np.int64)
        segs[:, k.SEG_H0] = gptr[:-1][g_of]
        segs[:, k.SEG_H1] = gptr[1:][g_of]
        segs[:, k.SEG_R0] = np.arange(n_seg)
        segs[:, k.SEG_R1] = np.arange(1, n_seg + 1)
        out_start = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes * sizes, out=out_start[1:])
        j_in_group = np.arange(n_seg) - gptr[:-1][g_of]
        segs[:, k.SEG_OUT] = out_start[:-1][g_of] + j_in_group * sizes[g_of]
        segs[:, k.SEG_SKIP] = -1
        n_out = int(out_start[-1])
    else:
        # one segment per hypothesis: its group's rows as references, itself left out
        g_of = np.repeat(np.arange(len(sizes)), sizes)
        segs = np.empty((n_rows, 6), np.int64)
        segs[:, k.SEG_H0] = np.arange(n_rows)
        segs[:, k.SEG_H1] = np.arange(1, n_rows + 1)
        segs[:, k.SEG_R0] = gptr[:-1][g_of]
        segs[:, k.SEG_R1] = gptr[1:][g_of]
        segs[:, k.SEG_OUT] = np.arange(n_rows)
        segs[:, k.SEG_SKIP] = np.arange(n_rows)
        n_out = n_rows
    return _count(hyp, hyp, segs, n_out, cfg, stats_wanted=False), gptr


def pairwise_token_bleu(hypotheses: Any, *, groups: Any, pad_id: Any = None, config: Optional[BleuConfig] = None,
                        dtype: Any = np.float64, **bleu_options: Any) -> "np.ndarray | list":
    """G x G sentence BLEU within each group: entry [i, j] is hypothesis i scored against
    hypothesis j as its only reference (diversity rewards, MBR over samples: the row means off
    the diagonal are each sample's expected BLEU against the others, Kumar & Byrne 2004).

    ``hypotheses``, ``pad_id``, ``config``, ``dtype``, ``bleu_options``: as :func:`token_bleu`;
    ``groups``: a group size G or row pointers. Returns float[n_groups, G, G] for equal group
    sizes, else a list of float[G_g, G_g] arrays.
    """
    cfg = _config(config, bleu_options)
    out = _out_dtype(dtype)
    stats, gptr = _group_stats(hypotheses, groups, pad_id, cfg, pairs=True)
    flat = _scores(stats, cfg, out)
    sizes = np.diff(gptr)
    # the kernel's row (j, i) is hypothesis i against reference j: transpose to [i, j]
    if sizes.size and (sizes == sizes[0]).all():
        g = int(sizes[0])
        return np.ascontiguousarray(flat.reshape(len(sizes), g, g).transpose(0, 2, 1))
    starts = np.concatenate([[0], np.cumsum(sizes * sizes)])
    return [np.ascontiguousarray(flat[starts[i]:starts[i + 1]].reshape(s, s).T) for i, s in enumerate(sizes)]


def self_token_bleu(hypotheses: Any, *, groups: Any, pad_id: Any = None, config: Optional[BleuConfig] = None,
                    dtype: Any = np.float64, **bleu_options: Any) -> np.ndarray:
    """Self-BLEU (Zhu et al. 2018, Texygen): each hypothesis scored against the other members of
    its group as its references (clip = max over them): float[H]; a low value is a diverse group.
    A group of one has no references (its member scores as the text path scores a hypothesis
    without references). Arguments as :func:`pairwise_token_bleu`."""
    cfg = _config(config, bleu_options)
    out = _out_dtype(dtype)
    stats, _ = _group_stats(hypotheses, groups, pad_id, cfg, pairs=False)
    return _scores(stats, cfg, out)
