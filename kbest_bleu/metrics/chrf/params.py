"""chrF's options (sacrebleu 2.6.0's ``CHRF`` names and defaults), validated once, and its signature."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from ...config import __version__
from ...errors import InputError

__all__ = ["CHAR_ORDER", "MAX_ORDER", "ChrfParams", "chrf_params"]

CHAR_ORDER = 6  # sacrebleu's CHRF.CHAR_ORDER; WORD_ORDER 0 (2 = chrF++), BETA 2
MAX_ORDER = 64  # per kind of n-gram: far beyond use, keeps the statistics columns bounded


@dataclass(frozen=True)
class ChrfParams:
    """chrF (Popovic 2015) / chrF++ (Popovic 2017) options, as sacrebleu's ``CHRF``.

    char_order : character n-gram orders 1..char_order (6).
    word_order : word n-gram orders 1..word_order (0; 2 = chrF++).
    beta : recall weight of the F-score (2).
    whitespace : keep whitespace in the character n-grams (False: removed first).
    lowercase : lowercase both sides first (Python's ``str.lower``).
    eps_smoothing : chrF++.py's epsilon smoothing (NLTK, Moses) instead of sacrebleu's default
        effective-order average (sacrebleu's ``eff:yes``).
    """

    char_order: int = CHAR_ORDER
    word_order: int = 0
    beta: float = 2
    whitespace: bool = False
    lowercase: bool = False
    eps_smoothing: bool = False

    @property
    def orders(self) -> int:
        """char_order + word_order: the number of (hyp, ref, match) triples per row."""
        return self.char_order + self.word_order

    @property
    def factor(self) -> float:
        """beta squared, as sacrebleu computes it (``beta ** 2``)."""
        return float(self.beta ** 2)

    @property
    def name(self) -> str:
        """sacrebleu's score name: ``chrF2``, ``chrF2++`` (one + per word order)."""
        return f"chrF{self.beta}" + "+" * self.word_order

    def order_names(self) -> list[str]:
        """``c1``..``c<char_order>`` then ``w1``..``w<word_order>``: the orders of the statistics."""
        return [f"c{n}" for n in range(1, self.char_order + 1)] + [f"w{n}" for n in range(1, self.word_order + 1)]

    def signature(self, nrefs: int | str | None = None) -> str:
        """sacrebleu's chrF signature (``nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:...``)
        behind our name and the score's (``kbest_bleu.chrF2|...``), the version being ours.
        ``nrefs``: the number of references ("var" when it varies), when the caller knows it."""
        parts = [f"nrefs:{nrefs}"] if nrefs is not None else []
        parts += [f"case:{'lc' if self.lowercase else 'mixed'}", f"eff:{'no' if self.eps_smoothing else 'yes'}",
                  f"nc:{self.char_order}", f"nw:{self.word_order}", f"space:{'yes' if self.whitespace else 'no'}",
                  f"version:{__version__}"]
        return f"kbest_bleu.{self.name}|" + "|".join(parts)


def _order(value: object, option: str, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or not 0 <= value <= MAX_ORDER:
        raise InputError(f"chrF {option}: expected an integer from 0 to {MAX_ORDER}, found {value!r} "
                         f"(sacrebleu's default is {default})")
    return int(value)


def chrf_params(char_order: int = CHAR_ORDER, word_order: int = 0, beta: float = 2, whitespace: bool = False,
                lowercase: bool = False, eps_smoothing: bool = False, **unknown: Any) -> ChrfParams:
    """Validated :class:`ChrfParams`; :class:`~kbest_bleu.errors.InputError` for a bad or unknown option.

    ``beta`` may be an integer or a float (a float with an integral value becomes that integer, so
    that the name reads ``chrF2`` as sacrebleu's does)."""
    if unknown:  # the functions pass their keyword options on: a misspelt one is named, as BleuConfig does
        raise InputError(f"chrF: unknown option(s) {', '.join(sorted(unknown))}; expected some of char_order, "
                         "word_order, beta, whitespace, lowercase, eps_smoothing")
    nc = _order(char_order, "char_order", CHAR_ORDER)
    nw = _order(word_order, "word_order", 0)
    if nc + nw == 0:
        raise InputError("chrF: char_order and word_order are both 0; expected at least one n-gram order "
                         "(sacrebleu's defaults: char_order 6, word_order 0)")
    if isinstance(beta, bool) or not isinstance(beta, Real) or not math.isfinite(beta) or not 0 <= beta <= 1e6:
        raise InputError(f"chrF beta: expected a number from 0 to 1e6, found {beta!r} (sacrebleu's default is 2)")
    beta = int(beta) if float(beta).is_integer() else float(beta)
    for option, value in (("whitespace", whitespace), ("lowercase", lowercase), ("eps_smoothing", eps_smoothing)):
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise InputError(f"chrF {option}: expected True or False, found {value!r}")
    return ChrfParams(nc, nw, beta, bool(whitespace), bool(lowercase), bool(eps_smoothing))
