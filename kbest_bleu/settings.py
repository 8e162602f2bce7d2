"""Every setting of the package in one place: the environment variables it reads and the size
thresholds that choose between code paths (docs/settings.md has the same table for users).

Reading a setting never changes the process: the library sets no environment variable. The
``kbest-bleu`` program (:mod:`kbest_bleu.program`) sets some for itself, before the libraries that
read them are imported; those are listed in :data:`PROGRAM_SETS`. A command's ``--spm-model`` is
set for the command alone (:func:`set_spm_model`, undone by :func:`variables_restored`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

__all__ = ["BATCH_BYTES", "COLD_NUMPY_ENGINE_BYTES", "ENVIRONMENT", "FORMAT_BATCH_ROWS", "MAX_PAIRS_PER_CHUNK",
           "MAX_RESAMPLE_CELLS", "MAX_ROW_BYTES", "MMAP_THRESHOLD", "NUMPY_ENGINE_BYTES", "PROGRAM_SETS",
           "RUNS_PER_THREAD", "SMALL_JOB_BYTES", "SMOOTHING_CHUNK_ROWS", "SPM_MODEL_ENV", "STALE_TEMPORARY_S",
           "TEXT_BLOCK_BYTES", "TOKEN_PARALLEL_IDS", "TRIM_THRESHOLD", "aot_enabled", "cache_home", "data_dir",
           "numba_cache_dir", "numba_threads", "set_spm_model", "spm_model", "text_block_bytes", "variables_restored"]

# --- size thresholds (benchmarks/RESULTS.md has the measurements behind each) ---
# below this many input bytes a job runs on the calling thread alone (a parallel launch costs more)
SMALL_JOB_BYTES = 1 << 16
# token ids (kbest_bleu.token_ids): below this many ids, hypotheses plus references, a call counts
# on the calling thread (the same kernel, one run); from it on, runs of segments go to a thread pool
TOKEN_PARALLEL_IDS = 1 << 14
# below this many bytes of hypothesis and reference text, a whole job is faster on the numpy
# engine than with numba's fixed cost (benchmarks/RESULTS.md, "Engines")
NUMPY_ENGINE_BYTES = 4 << 20
# on a first run (no compiled kernel in numba's cache), jobs up to this many bytes of text run on
# the numpy engine rather than compile first; above it, compiling pays off at once
COLD_NUMPY_ENGINE_BYTES = 64 << 20
# runs of segments per thread for the text and token-id kernels, handed out as threads come free
# (one run per thread would leave a core idle while its thread waits behind the job's reader or writer)
RUNS_PER_THREAD = 4
# smoothing runs on row chunks of at least this size in threads
SMOOTHING_CHUNK_ROWS = 32768
# a parquet job's record batches hold about this many bytes of input
BATCH_BYTES = 16 << 20
# rows per record batch when a toolkit's K-best file (fairseq, Marian, Sockeye...) is streamed into
# Arrow (kbest_bleu.files.formats); BATCH_BYTES of hypothesis text caps a batch too
FORMAT_BATCH_ROWS = 1 << 16
# a single row larger than this is refused (its segment would not fit a bounded batch)
MAX_ROW_BYTES = 4 << 20
# CSV/TSV and JSON Lines are parsed by Arrow's streaming readers in blocks of this many bytes
# (KBEST_BLEU_BLOCK_BYTES, score --block-bytes): a row must fit in one block, and the first block
# decides the columns' types. Twice MAX_ROW_BYTES, so that a row the job accepts fits with its
# other columns and JSON escapes; the readers' memory grows with it (JSON: ~64 MiB at 8 MiB)
TEXT_BLOCK_BYTES = 2 * MAX_ROW_BYTES
# MBR: pairs of one chunk of segments (K x R each), so memory stays bounded for K = 1,000
MAX_PAIRS_PER_CHUNK = 4_000_000
# malloc settings of the program (kbest_bleu.program) and of kbest_bleu.keep_freed_memory(): blocks up
# to MMAP_THRESHOLD from the heap, freed memory kept up to TRIM_THRESHOLD
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 128 << 20
# paired significance tests: resamples x segments at most (each cell ~24 bytes of draws and counts)
MAX_RESAMPLE_CELLS = 1 << 27
# a temporary (an output's .NAME.kbest-tmp-*, a $TMPDIR/kbest_bleu-* work directory) this old, whose
# owner cannot be checked (another host's, or its process id reused), was left by a killed run
STALE_TEMPORARY_S = 24 * 3600

# --- environment variables the package reads: name -> (default, meaning) ---
ENVIRONMENT = {
    "KBEST_BLEU_DATA": ("../shared/data beside the checkout, or ./shared/data",
                        "where metaeval and the real-data tests find the shared MT data"),
    "KBEST_BLEU_AOT": ("1", "0 turns off the ahead-of-time text kernels built by 'kbest-bleu warmup'"),
    "KBEST_BLEU_BLOCK_BYTES": ("8388608 (TEXT_BLOCK_BYTES)",
                               "bytes per block when CSV/TSV and JSON Lines are read (also score --block-bytes)"),
    "KBEST_BLEU_COMPILE_AT_INSTALL": ("1", "0: pip install . compiles no kernel (setup.py; first uses compile)"),
    "NUMBA_CACHE_DIR": ("beside the sources (numba's default)",
                        "where compiled kernels (and the ahead-of-time module) are kept"),
    "NUMBA_NUM_THREADS": ("the CPUs the process may use", "the kernels' thread count (also --threads)"),
    "NUMBA_DISABLE_JIT": ("0", "1 runs every kernel as plain Python (slow; for debugging)"),
    "KBEST_BLEU_FLORES101_MODEL": ("sacrebleu's download in $SACREBLEU/models",
                                   "SentencePiece model of tokenize=flores101 (also --spm-model)"),
    "KBEST_BLEU_FLORES200_MODEL": ("sacrebleu's download in $SACREBLEU/models",
                                   "SentencePiece model of tokenize=flores200 (also --spm-model)"),
    "SACREBLEU": ("~/.sacrebleu", "sacrebleu's folder, where its downloaded SentencePiece models are looked for"),
    "XDG_CACHE_HOME": ("~/.cache", "the user cache (metaeval's cached tables, kbest_bleu/)"),
    "MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES": (
        "unset", "the user's malloc tuning: where set (GLIBC_TUNABLES naming malloc), keep_freed_memory leaves it"),
}
# the SentencePiece model files of -t flores101 (and spm) and -t flores200
SPM_MODEL_ENV = {"flores101": "KBEST_BLEU_FLORES101_MODEL", "flores200": "KBEST_BLEU_FLORES200_MODEL"}
# variables the kbest-bleu program sets for its own process, each only where the user did not
PROGRAM_SETS = {
    "NUMBA_THREADING_LAYER": "workqueue",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "ARROW_DEFAULT_MEMORY_POOL": "jemalloc (where pyarrow has it and pages are 4 KiB)",
    "NUMBA_NUM_THREADS / OMP_NUM_THREADS": "the container's CPU quota, where it is below the CPUs",
}


def _get(name: str) -> Optional[str]:
    value = os.environ.get(name)
    return value if value else None


def aot_enabled() -> bool:
    """Whether the ahead-of-time text kernels may serve (``KBEST_BLEU_AOT`` != 0, the JIT on)."""
    return os.environ.get("KBEST_BLEU_AOT") != "0" and os.environ.get("NUMBA_DISABLE_JIT") != "1"


def numba_cache_dir() -> Optional[Path]:
    """``NUMBA_CACHE_DIR`` when set."""
    value = _get("NUMBA_CACHE_DIR")
    return Path(value) if value else None


def user_tunes_malloc() -> bool:
    """Whether the user tunes glibc's malloc (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
    or ``GLIBC_TUNABLES`` naming malloc): then :func:`kbest_bleu.memory.keep_freed_memory` leaves it."""
    return ("MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ
            or "malloc" in os.environ.get("GLIBC_TUNABLES", ""))


def numba_threads() -> Optional[int]:
    """``NUMBA_NUM_THREADS`` when set to a positive integer."""
    value = os.environ.get("NUMBA_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def text_block_bytes() -> int:
    """``KBEST_BLEU_BLOCK_BYTES`` when set, else :data:`TEXT_BLOCK_BYTES`; a value that is not a
    positive integer raises :class:`~kbest_bleu.errors.InputError`."""
    value = _get("KBEST_BLEU_BLOCK_BYTES")
    if value is None:
        return TEXT_BLOCK_BYTES
    if not value.strip().isdigit() or int(value) < 1:
        from .errors import InputError
        raise InputError(f"KBEST_BLEU_BLOCK_BYTES: expected a positive number of bytes, found {value!r}")
    return int(value)


def data_dir() -> Optional[Path]:
    """``KBEST_BLEU_DATA`` when set."""
    value = _get("KBEST_BLEU_DATA")
    return Path(value) if value else None


def cache_home() -> Path:
    """The package's user cache folder: ``$XDG_CACHE_HOME/kbest_bleu`` (``~/.cache/kbest_bleu``)."""
    return Path(_get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbest_bleu"


def spm_model(name: str, file_name: str) -> tuple[Path, bool]:
    """The SentencePiece model of tokenizer ``name`` (flores101, flores200): the file named by
    ``SPM_MODEL_ENV[name]`` (then True), else sacrebleu's download of ``file_name`` (False)."""
    value = _get(SPM_MODEL_ENV[name])
    if value:
        return Path(value), True
    return Path(_get("SACREBLEU") or Path.home() / ".sacrebleu") / "models" / file_name, False


def set_spm_model(name: str, path: Path) -> None:
    """``--spm-model``: the model of tokenizer ``name`` for this command, through the environment so
    that its worker processes (Spark's, the pool's) read it too; :func:`variables_restored` undoes it
    when the command returns (``cli.main`` called from Python leaves the caller's environment as it was)."""
    os.environ[SPM_MODEL_ENV[name]] = str(path)


@contextmanager
def variables_restored() -> Iterator[None]:
    """The variables a command may set (:func:`set_spm_model`) as they were before it, on any exit."""
    saved = {name: os.environ.get(name) for name in SPM_MODEL_ENV.values()}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
