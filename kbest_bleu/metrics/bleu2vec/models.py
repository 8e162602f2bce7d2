"""N-gram embedding models of BLEU2VEC: loading (word2vec binary or text) and training.

Paper section 2.1 (separate models): one word2vec model per order, whose tokens are the n-grams
joined with ``_`` (``this_is``, ``this_is_a``). Section 2.2 (joint model): words and n-grams are
lexical entries of one model. A model directory holds ``<name>.<n>gram.w2v.bin`` per order (the
layout of ``bleu2vec_toy_models/``) or ``<name>.joint.w2v.bin``; ``.txt``/``.vec`` files are the
word2vec text format. gensim (the ``[bleu2vec]`` extra) is imported only to read and train.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...arrays import string_buffers
from ...errors import InputError, install_extra
from ...files.output import atomic_outputs
from ...files.temporaries import created_directories, temporary_directory
from ...files.inputs import reading, register_input

__all__ = ["Embeddings", "from_arrays", "joint_epoch", "load_embeddings", "ngram_tokens", "read_corpus",
           "train"]

_MODEL_FILE = re.compile(r"^(?P<name>.+)\.(?:(?P<order>\d+)gram|(?P<joint>joint))\.w2v\.(?P<ext>bin|txt|vec)$")
# Paper section 2.1: bigrams seen fewer than 30 times and trigrams fewer than 50 are dropped.
PAPER_MIN_COUNTS = {1: 5, 2: 30, 3: 50}
JOINT_BETA = 1.0 / 8.0  # paper section 2.2: an n-gram is sampled with probability f^-beta


@dataclass(frozen=True)
class Embeddings:
    """Unit-normalised n-gram vectors, one float32 matrix per order (picklable, no gensim object).

    keys : order -> string array [V_n] of the model's tokens (``_``-joined n-grams)
    vectors : order -> float32 [V_n, d], each row of norm 1 (normalised once, as gensim's
        ``unitvec``, so a dot product is gensim's ``similarity``)
    joint : True when one joint model (section 2.2) serves every order
    fingerprint : 16 hex digits of a hash over every key and vector (the metric's signature)
    """

    keys: dict
    vectors: dict
    joint: bool
    fingerprint: str
    _rows: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def orders(self) -> list[int]:
        return sorted(self.keys)

    def has_order(self, n: int) -> bool:
        return self.joint or n in self.keys

    def _order_key(self, n: int) -> int:
        return 0 if self.joint else n

    def matrix(self, n: int) -> np.ndarray:
        """float32 [V, d] unit vectors of order ``n`` (the joint matrix for a joint model)."""
        return self.vectors[self._order_key(n)]

    def rows(self, strings: pa.Array, n: int) -> np.ndarray:
        """Row of each string in the order-``n`` matrix, -1 when unknown: int64 [len(strings)]."""
        k = self._order_key(n)
        if k not in self.keys:
            return np.full(len(strings), -1, np.int64)
        idx = pc.index_in(strings, value_set=self.keys[k])
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def ngram_rows(self, ids: np.ndarray, starts: np.ndarray, vocab: pa.Array, n: int) -> np.ndarray:
        """Row of the n-gram ``vocab[ids[s]] + "_" + ... + vocab[ids[s + n - 1]]`` for each s in
        ``starts`` in the order-``n`` matrix (-1: unknown), by hashing bytes in numba: int64[len(starts)].
        The keys' hash table is built once per model and order."""
        from . import _kernels
        k = self._order_key(n)
        if k not in self.keys:
            return np.full(len(starts), -1, np.int64)
        if k not in self._rows:
            key_data, key_off = string_buffers(self.keys[k])
            self._rows[k] = (key_data, key_off, _kernels.key_table(key_data, key_off))
        vdata, voff = string_buffers(vocab)
        return _kernels.ngram_rows(ids, starts, n, vdata, voff, *self._rows[k])

    def similarity(self, a: str, b: str, n: int) -> Optional[float]:
        """Cosine of two n-gram strings (float32 dot product, as gensim); None when either is unknown."""
        ra, rb = self.rows(pa.array([a, b], pa.string()), n)
        if ra < 0 or rb < 0:
            return None
        m = self.matrix(n)
        return float(np.dot(m[ra], m[rb]))


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their norm in float32 (gensim ``matutils.unitvec``); zero rows stay zero.
    Rows whose float32 squares overflow (norm above ~1e19) or fall into subnormals (below ~1e-19)
    are normalised in float64 instead: a vector's direction, not its scale, is what BLEU2VEC
    compares (cosines), so a model scaled by 1e30 or 1e-30 scores as the model itself."""
    v = np.asarray(vectors, dtype=np.float32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # such rows are redone below
        norms = np.linalg.norm(v, axis=1).astype(np.float32)
        out = v / np.where(norms > 0, norms, np.float32(1))[:, None]
    if v.ndim == 2 and v.shape[1]:
        odd = (~(norms < 1e18)) | ((norms < 1e-18) & (np.abs(v).max(axis=1) > 0))
        if odd.any():
            wide = v[odd].astype(np.float64)
            out[odd] = (wide / np.linalg.norm(wide, axis=1)[:, None]).astype(np.float32)
    return np.ascontiguousarray(out, dtype=np.float32)


def from_arrays(keys: dict, vectors: dict, joint: bool = False) -> Embeddings:
    """Embeddings from plain arrays: ``keys`` order -> list of strings, ``vectors`` order -> [V, d]
    (order 0 for a joint model). Vectors are normalised here."""
    h = hashlib.blake2b(digest_size=8)
    k_out, v_out = {}, {}
    for n in sorted(keys):
        k_out[n] = pa.array(list(keys[n]), pa.string())
        raw = np.asarray(vectors[n])
        if raw.size and not np.isfinite(raw).all():  # a NaN vector would make every cosine with it NaN
            row = int(np.flatnonzero(~np.isfinite(raw).all(axis=-1))[0]) if raw.ndim == 2 else 0
            key = k_out[n][row].as_py() if row < len(k_out[n]) else row
            raise InputError(f"embeddings order {n}: the vector of {key!r} holds NaN or inf; expected finite "
                             "vectors (retrain or repair the model)")
        v_out[n] = _normalised(raw)
        if len(k_out[n]) != len(v_out[n]):
            raise InputError(f"embeddings order {n}: expected one vector per key, found "
                             f"{len(k_out[n])} keys and {len(v_out[n])} vectors")
        h.update(f"{n}:{len(k_out[n])}\n".encode())
        h.update("\n".join(k_out[n].to_pylist()).encode())
        h.update(v_out[n].tobytes())
    return Embeddings(k_out, v_out, joint, h.hexdigest())


def _read_word2vec(path: Path) -> tuple[list, np.ndarray]:
    try:
        from gensim.models import KeyedVectors
    except ImportError:
        raise InputError(f"BLEU2VEC embeddings need gensim; install it with {install_extra('bleu2vec')}") from None
    register_input(path, "--embeddings")  # never an output of the running command
    try:
        kv = KeyedVectors.load_word2vec_format(str(path), binary=path.suffix == ".bin")
    except MemoryError:  # a header claiming more vectors than memory holds
        raise InputError(f"{path}: the word2vec header declares more vectors than fit in memory; expected a "
                         "complete word2vec model (a corrupt or foreign file?)") from None
    except (OSError, ValueError, UnicodeDecodeError, EOFError, KeyError, IndexError) as exc:
        raise InputError(f"{path}: expected a word2vec {'binary' if path.suffix == '.bin' else 'text'} "
                         f"model, could not read it ({exc})") from None
    return list(kv.index_to_key), kv.vectors


def load_embeddings(path: "str | Path") -> Embeddings:
    """Load a model directory (``<name>.<n>gram.w2v.bin`` per order, or ``<name>.joint.w2v.bin``).

    Parameters
    ----------
    path : directory laid out as ``bleu2vec_toy_models/`` (what :func:`train` writes)

    Returns
    -------
    Embeddings with one float32 unit-vector matrix per order. A directory holding both separate
    and joint models loads the separate ones (paper section 2.1, BLEU2VEC_SEP); pass the joint
    file's own directory to use the joint model.
    """
    d = Path(path)
    if not d.is_dir():
        raise InputError(f"embeddings: expected a model directory (<name>.1gram.w2v.bin, ...), found {str(d)!r}, "
                         "which is not a directory; train one with 'kbest-bleu bleu2vec train'")
    separate, joint, separate_files = {}, [], []
    for f in sorted(d.iterdir()):
        m = _MODEL_FILE.match(f.name)
        if m and m["joint"]:
            joint.append(f)
        elif m:
            separate[int(m["order"])] = f
            separate_files.append(f)
    if not separate and not joint:
        raise InputError(f"embeddings: {str(d)!r} holds no <name>.<n>gram.w2v.bin or <name>.joint.w2v.bin file; "
                         "train one with 'kbest-bleu bleu2vec train'")
    # one model set: a second name prefix (two trainings in one directory) or a gap in the orders
    # would mix models or silently score an order with nothing
    names = sorted({_MODEL_FILE.match(f.name)["name"] for f in (separate_files or joint)})
    if len(names) > 1:
        raise InputError(f"embeddings: {str(d)!r} holds models of {len(names)} names ({', '.join(names)}); expected "
                         "one model set per directory: move the others away")
    if separate and sorted(separate) != list(range(1, max(separate) + 1)):
        raise InputError(f"embeddings: {str(d)!r} holds orders {sorted(separate)}; expected every order from 1 to "
                         f"{max(separate)} (<name>.1gram.w2v.bin, <name>.2gram.w2v.bin, ...)")
    if separate:
        read = {n: _read_word2vec(f) for n, f in separate.items()}
        return from_arrays({n: k for n, (k, _) in read.items()}, {n: v for n, (_, v) in read.items()})
    keys, vectors = _read_word2vec(joint[0])
    return from_arrays({0: keys}, {0: vectors}, joint=True)


def ngram_tokens(tokens: Sequence[str], n: int) -> list[str]:
    """The ``_``-joined n-grams of a token list (paper section 2.1)."""
    return ["_".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def read_corpus(path: "str | Path", tokenize: str = "13a") -> list[list[str]]:
    """Sentences of a text file (``.gz`` read transparently), tokenized by a core tokenizer."""
    from ...tokenize import tokenize as core_tokenize
    p = Path(path)
    if not p.is_file():
        raise InputError(f"corpus: expected a text file, one sentence per line, found {str(p)!r}")
    opener = gzip.open if p.suffix == ".gz" else open
    with reading(p, "corpus", "UTF-8 text, one sentence per line (.gz allowed)"), \
            opener(p, "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh]
    tokens, ptr = core_tokenize(pa.array(lines, pa.string()), tokenize)
    flat = tokens.to_pylist()
    return [flat[ptr[i]:ptr[i + 1]] for i in range(len(lines)) if ptr[i + 1] > ptr[i]]


def joint_epoch(sentences: list, orders: Sequence[int], counts: dict, min_counts: dict, rng: np.random.Generator,
                beta: float = JOINT_BETA) -> Iterator[list[str]]:
    """One epoch of the joint model's text (paper section 2.2): walking each sentence left to right,
    an n-gram of order > 1 starting here that passed its frequency filter is joined into one entry
    with probability f^-beta (longest order first); the joined words are skipped, so n-grams never
    overlap, and the choice is redrawn every epoch."""
    high = sorted((n for n in orders if n > 1), reverse=True)
    for s in sentences:
        out, i = [], 0
        while i < len(s):
            for n in high:
                g = "_".join(s[i:i + n])
                f = counts[n].get(g, 0)
                if i + n <= len(s) and f >= min_counts[n] and rng.random() < f ** -beta:
                    out.append(g)
                    i += n
                    break
            else:
                out.append(s[i])
                i += 1
        yield out


def _parse_min_counts(min_counts: "str | Sequence[int] | None", orders: Sequence[int]) -> dict:
    if min_counts is None:
        return {n: PAPER_MIN_COUNTS.get(n, 50) for n in orders}
    values = min_counts.split(",") if isinstance(min_counts, str) else list(min_counts)
    try:
        values = [int(v) for v in values]
    except ValueError:
        raise InputError(f"min_counts: expected integers, found {min_counts!r}") from None
    if len(values) < max(orders):
        raise InputError(f"min_counts: expected one count per order up to {max(orders)}, found {min_counts!r}")
    return {n: values[n - 1] for n in orders}


def train(corpus: "str | Path", out_dir: "str | Path", orders: Sequence[int] = (1, 2, 3), joint: bool = False,
          name: str = "model", tokenize: str = "13a", vector_size: int = 300, epochs: int = 5,
          min_counts: "str | Sequence[int] | None" = None, workers: int = 2, seed: int = 1,
          progress: bool = True) -> list[Path]:
    """Train BLEU2VEC models (skip-gram word2vec, gensim) and write them in word2vec binary format.

    Parameters
    ----------
    corpus : text file, one sentence per line (``.gz`` allowed), tokenized with ``tokenize``
    out_dir : directory to write ``<name>.<n>gram.w2v.bin`` (section 2.1) and, with ``joint``,
        ``<name>.joint.w2v.bin`` (section 2.2)
    orders : n-gram orders of the separate models
    min_counts : minimum frequency per order 1..N (default 5, 30, 50: the paper's bigram/trigram filters)
    vector_size, epochs, workers, seed : word2vec settings (skip-gram, window 5, negative sampling 5)

    Each model trains from a temporary text file of its tokens (gensim's ``corpus_file`` mode:
    no Python lists of n-grams in memory, and the workers do not contend for the GIL).
    Returns the written paths.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():  # not replaced: models go into a directory
        raise InputError(f"-o {out}: is an existing file; expected a model directory (a new one, or one to add "
                         "models to)")
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise InputError(f"bleu2vec train needs gensim; install it with {install_extra('bleu2vec')}") from None
    if not orders or sorted(orders) != list(range(1, max(orders) + 1)) or len(set(orders)) != len(orders):
        # the scorer reads every order from 1 to N, each once (load_embeddings refuses a gap)
        raise InputError(f"orders: expected the n-gram orders 1 to N, each once, such as 1,2,3; found "
                         f"{','.join(map(str, orders)) if orders else 'none'}")
    if not name or Path(name).name != name or name in (".", "..") or not _MODEL_FILE.match(f"{name}.1gram.w2v.bin"):
        raise InputError(f"--name: expected a file-name prefix such as 'model' (no directory part), found {name!r}")
    others = sorted({m["name"] for f in (out.iterdir() if out.is_dir() else ())
                     if (m := _MODEL_FILE.match(f.name)) and m["name"] != name})
    if others:  # the scorer reads one model set per directory
        raise InputError(f"-o {str(out)!r}: holds the models named {', '.join(others)}; a directory holds one model "
                         f"set: train into another directory, or pass --name {others[0]} to replace them")
    mc = _parse_min_counts(min_counts, orders)
    sentences = read_corpus(corpus, tokenize)
    if not sentences:
        raise InputError(f"corpus {str(corpus)!r}: expected sentences, found no token")
    settings = dict(vector_size=vector_size, window=5, sg=1, negative=5, workers=workers, seed=seed)
    jobs = [(n, f"{name}.{n}gram.w2v.bin") for n in orders] + ([(0, f"{name}.joint.w2v.bin")] if joint else [])
    bar = _progress(len(jobs) * epochs, progress)
    paths = [out / fname for _, fname in jobs]
    # every model is written beside its target and renamed into place with the others at the end:
    # a failed or interrupted run leaves the models that were there, and no directory it made
    with created_directories(out), atomic_outputs([(path, "-o") for path in paths], [corpus]) as partials, \
            temporary_directory("kbest_bleu-bleu2vec-") as tmp:
        text = Path(tmp) / "tokens.txt"
        for (n, _), partial in zip(jobs, partials):
            if n:
                _write_lines(text, (ngram_tokens(s, n) for s in sentences))
                model = Word2Vec(min_count=mc[n], **settings)
                model.build_vocab(corpus_file=str(text))
                if not model.wv.index_to_key:
                    raise InputError(f"order {n}: no n-gram is seen {mc[n]} times in the corpus; lower min_counts "
                                     "or train on more text")
                model.train(corpus_file=str(text), total_examples=model.corpus_count,
                            total_words=model.corpus_total_words, epochs=epochs, callbacks=[_EpochBar(bar)])
            else:
                model = _train_joint(Word2Vec, sentences, orders, mc, epochs, settings, seed, bar, text)
            model.wv.save_word2vec_format(str(partial), binary=True)
    bar.close()
    return paths


def _write_lines(path: Path, token_lists: Iterable) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for tokens in token_lists:
            if tokens:
                fh.write(" ".join(tokens) + "\n")


def _train_joint(word2vec, sentences, orders, mc, epochs, settings, seed, bar, text: Path):
    """Section 2.2: one model over words and n-grams; the joined n-grams are redrawn each epoch
    (one training pass per epoch over that epoch's text, the learning rate decaying linearly
    across the passes as in one multi-epoch run)."""
    from collections import Counter
    counts = {n: Counter(g for s in sentences for g in ngram_tokens(s, n)) for n in orders if n > 1}
    rng = np.random.default_rng(seed)
    # Vocabulary: words (order-1 filter) plus every n-gram passing its order's filter.
    vocab: dict = {}
    for n, c in [(1, Counter(w for s in sentences for w in s))] + list(counts.items()):
        vocab.update((g, f) for g, f in c.items() if f >= mc.get(n, 1))
    model = word2vec(min_count=1, **settings)
    model.build_vocab_from_freq(vocab)
    alpha, min_alpha = model.alpha, model.min_alpha
    for e in range(epochs):
        _write_lines(text, joint_epoch(sentences, orders, counts, mc, rng))
        start = alpha - (alpha - min_alpha) * e / epochs
        end = alpha - (alpha - min_alpha) * (e + 1) / epochs
        words = sum(len(line.split()) for line in open(text, encoding="utf-8"))
        model.train(corpus_file=str(text), total_examples=len(sentences), total_words=words, epochs=1,
                    start_alpha=start, end_alpha=end)
        bar.update(1)
    return model


class _EpochBar:
    """gensim callback advancing the progress bar at the end of each epoch."""

    def __init__(self, bar):
        self.bar = bar

    def on_epoch_begin(self, model) -> None:
        pass

    def on_epoch_end(self, model) -> None:  # noqa: ARG002
        self.bar.update(1)

    def on_train_begin(self, model) -> None:
        pass

    def on_train_end(self, model) -> None:
        pass


class _NoBar:
    def update(self, k: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool):
    """A tqdm progress bar over training epochs when tqdm is installed (gensim's own logging is quiet)."""
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc="bleu2vec train (epochs)", unit="epoch")
