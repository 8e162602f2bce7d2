"""Tokenizers over whole Arrow string columns (no per-row Python loop).

``none`` reproduces Python's ``str.split()``: every character for which ``str.isspace()`` is
true separates tokens and runs of them never produce empty tokens. Arrow's own
``utf8_split_whitespace`` differs (leading/trailing blanks give empty tokens, and its
whitespace class is not Python's), so the separators are listed explicitly here.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InputError

TOKENIZERS = ("none",)

# Python's whitespace, read off the running interpreter so it matches str.split() exactly.
_PY_SPACE = "".join(chr(i) for i in range(sys.maxunicode + 1) if chr(i).isspace())
_PY_SPACE_RUN = "[" + "".join(f"\\x{{{ord(ch):x}}}" for ch in _PY_SPACE) + "]+"


def tokenize(strings: pa.Array, tokenize: str = "none", lowercase: bool = False
             ) -> tuple[pa.Array, np.ndarray]:
    """Split every string of an Arrow column into tokens.

    Parameters
    ----------
    strings : pyarrow string or large_string array, no nulls, length n
    tokenize : one of :data:`TOKENIZERS`
    lowercase : lowercase before splitting

    Returns
    -------
    tokens : pyarrow string array of all tokens, row after row
    offsets : int64[n + 1], the tokens of row i are ``tokens[offsets[i]:offsets[i + 1]]``
    """
    if tokenize not in TOKENIZERS:
        raise InputError(f"unknown tokenizer {tokenize!r}: expected one of {', '.join(TOKENIZERS)}")
    if lowercase:
        strings = pc.utf8_lower(strings)
    spaced = pc.replace_substring_regex(strings, _PY_SPACE_RUN, " ")
    pieces = pc.split_pattern(spaced, " ")
    flat = pc.list_flatten(pieces)
    keep = pc.not_equal(pc.binary_length(flat), 0)
    rows = pc.list_parent_indices(pieces).to_numpy()[keep.to_numpy(zero_copy_only=False)]
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=len(strings)), out=offsets[1:])
    return pc.filter(flat, keep), offsets
