"""Meteor 1.5 parameters per language and function-word lists (Denkowski & Lavie, WMT 2014,
section 2; the jar's ``Constants.PARAM_RANK`` and ``resources/function/*.words``).

The ``function_words/`` lists ship with this package; they come from Meteor 1.5
(cmu-mtlab/meteor, LGPL-2.1, see ``function_words/LICENSE``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ...errors import InputError
from ...files.inputs import reading
from .normalize import NBP_FILES

__all__ = ["MeteorParams", "meteor_params", "read_function_words"]

# lang code (as the jar's -l) -> (word-list name, alpha, beta, gamma, delta). Meteor 1.5's default
# task is "rank" for its supported languages; "other" gets the language-independent parameters.
LANGUAGES: dict[str, tuple[str, float, float, float, float]] = {
    "en": ("english", 0.85, 0.20, 0.60, 0.75),
    "cz": ("czech", 0.95, 0.20, 0.60, 0.80),
    "fr": ("french", 0.90, 1.40, 0.60, 0.65),
    "es": ("spanish", 0.65, 1.30, 0.50, 0.80),
    "de": ("german", 0.95, 1.00, 0.55, 0.55),
    "ru": ("russian", 0.75, 1.40, 0.70, 0.50),
    "other": ("other", 0.75, 1.40, 0.70, 0.50),
}
ALIASES = {"cs": "cz", "english": "en", "czech": "cz", "french": "fr", "spanish": "es", "german": "de",
           "russian": "ru", "xx": "other"}
BEAM_SIZE = 40  # the jar's Constants.DEFAULT_BEAM_SIZE


@dataclass(frozen=True)
class MeteorParams:
    """Everything that changes a Meteor (exact) score.

    lang : the jar's language code (en, cz, de, es, fr, ru, other).
    alpha, beta, gamma, delta : Meteor's parameters (Fmean weight, fragmentation exponent and
        weight, content-word weight).
    function_words : the function-word list; a token is a function word when its lowercase is in it.
    word_list : name of that list (a shipped list such as ``english`` or a file path), for the signature.
    lowercase : lowercase hypotheses and references first (the jar's ``-lower``).
    jar_compat : tokens are equal when their Java ``String.hashCode`` values are equal, as in the
        jar (it compares hash codes, so the rare colliding pairs such as ``Aa``/``BB`` match).
    beam_size : width of the alignment beam search (the jar's ``-x``, default 40).
    normalize : the jar's ``-norm``: its tokenizer and normalizer
        (:func:`~kbest_bleu.metrics.meteor.normalize.normalize_line`), then lowercasing (so
        ``lowercase`` is True with it).
    """

    lang: str
    alpha: float
    beta: float
    gamma: float
    delta: float
    function_words: frozenset
    word_list: str
    lowercase: bool = False
    jar_compat: bool = False
    beam_size: int = BEAM_SIZE
    normalize: bool = False

    def signature(self) -> str:
        """Reproducibility signature, e.g. ``meteor|lang:en|words:english|...`` (``norm:yes`` only
        with ``normalize``, so that the signatures without it stay as they were)."""
        return (f"meteor|version:1.5|module:exact|lang:{self.lang}|params:{self.alpha:g}_{self.beta:g}_"
                f"{self.gamma:g}_{self.delta:g}|words:{self.word_list}|lower:{'yes' if self.lowercase else 'no'}"
                f"{'|norm:yes' if self.normalize else ''}"
                f"|jar_compat:{'yes' if self.jar_compat else 'no'}|beam:{self.beam_size}")


@lru_cache(maxsize=None)
def _shipped_words(name: str) -> frozenset:
    text = resources.files(__package__).joinpath("function_words").joinpath(f"{name}.words").read_text("utf-8")
    return frozenset(text.splitlines())


def read_function_words(path: str | Path) -> frozenset:
    """A function-word file as the jar reads it (``-s FILE``): one word per line, UTF-8, kept as is."""
    # one guard (files.inputs.reading): registered as an input; a missing, unreadable or non-UTF-8
    # file is one InputError naming the option
    with reading(path, "Meteor function words (--meteor-function-words)", "a UTF-8 file with one word per line"):
        return frozenset(Path(path).read_text("utf-8").splitlines())


def meteor_params(lang: str = "en", jar_compat: bool = False, lowercase: bool = False,
                  function_words: str | Path | None = None, beam_size: int = BEAM_SIZE,
                  normalize: bool = False) -> MeteorParams:
    """Meteor 1.5 parameters for a language.

    Parameters
    ----------
    lang : en, cz (or cs), de, es, fr, ru, other; as the jar's ``-l``.
    jar_compat : reproduce the jar's behaviour: without ``function_words`` every language uses the
        English function words (the jar's default word file ignores ``-l``), and tokens match when
        their Java hash codes are equal. Default: each language's own list, exact string equality.
    lowercase : the jar's ``-lower``.
    function_words : a word-list file, as the jar's ``-s`` (overrides the language's list).
    beam_size : the jar's ``-x``.
    normalize : the jar's ``-norm`` (its normalizer, then lowercasing); languages en, cz, de, es,
        fr, ru (the jar has no normalizer for ``other``).
    """
    code = ALIASES.get(str(lang).lower(), str(lang).lower())
    if code not in LANGUAGES:
        raise InputError(f"Meteor: expected a language code among {', '.join(LANGUAGES)} (or cs), found "
                         f"{lang!r}; other languages: use 'other' with --meteor-function-words")
    if not isinstance(beam_size, int) or beam_size < 1:
        raise InputError(f"Meteor: beam_size must be a positive integer, found {beam_size!r}")
    name, alpha, beta, gamma, delta = LANGUAGES[code]
    if function_words is not None:
        words, word_list = read_function_words(function_words), str(function_words)
    else:
        word_list = "english" if jar_compat else name
        words = _shipped_words(word_list)
    if normalize and code not in NBP_FILES:
        raise InputError(f"Meteor: -norm (normalize) is defined for {', '.join(NBP_FILES)}, not {lang!r}; the jar "
                         "has no normalizer for other languages either: tokenize the text first")
    return MeteorParams(code, alpha, beta, gamma, delta, words, word_list, bool(lowercase or normalize),
                        bool(jar_compat), beam_size, bool(normalize))
