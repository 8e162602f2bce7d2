"""The Meteor 1.5 jar's ``-norm`` text normalization (``edu.cmu.meteor.util.Normalizer``), the
same character for character: its tokenizer is the Moses tokenizer (revision 3612) with the
jar's additions (quote and dash normalization, dashes between words dropped, dotted
abbreviations undotted: ``U.S.`` -> ``US``). With ``-norm`` the jar normalizes, then lowercases
(Java ``toLowerCase``); :class:`~kbest_bleu.metrics.meteor.params.MeteorParams` with
``normalize=True`` does both.

The jar's patterns are Java regular expressions; their classes are spelled out here as Java reads
them: ``\\p{Digit}`` is ASCII 0-9, ``\\p{Lower}`` ASCII a-z, ``\\s`` the six ASCII white-space
characters, and its "alphabetic" letters are the jar's own list of Latin and Cyrillic ranges.
English, Czech, French, German, Spanish and Russian take the jar's western rules with their own
apostrophes and nonbreaking prefixes (``nonbreaking/``, from the jar, LGPL-2.1); the jar has no
normalizer for ``-l other`` (it stops with "No normalizer for language"), and neither has this.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Callable

from ...errors import InputError

__all__ = ["NBP_FILES", "normalize_line", "normalizer"]

# our language code -> the jar's nonbreaking-prefix file (the jar's language name)
NBP_FILES = {"en": "english", "cz": "czech", "fr": "french", "de": "german", "es": "spanish", "ru": "russian"}
_ANY, _NUMERIC_ONLY = 1, 2  # the jar's Constants.NBP_ANY / NBP_NUM_ONLY

_ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e\u0400-\u04ff\u0500-\u0527"
          "\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \s
_TOKEN_DELIMS = " \t\n\r\f"  # java.util.StringTokenizer's default delimiters

_SEP_OTHER = re.compile(f"([^{_ALNUM}{_JAVA_SPACE}.'`,\\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.(\.+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])")
_COMMAS = [re.compile(r"([^0-9]),([^0-9])"), re.compile(r"([0-9]),([^0-9])"), re.compile(r"([^0-9]),([0-9])")]
_QUOTE = re.compile("[`\u2018\u2019]")
_DOUBLE_QUOTE = re.compile("[\u201c\u201d]|''")
_RM_DASH = re.compile(f"([{_ALNUM}.])-([{_ALNUM}])")
_NOT_A, _A = f"[^{_ALPHA}]", f"[{_ALPHA}]"
# English splits contractions to the right (don 't), French to the left (l' homme): the jar's
# patterns in its order, each replacement "$1 ' $2", the last ones "$1 '$2" / "$1' $2"
_CONT_EN = [(re.compile(f"({_NOT_A})'({_NOT_A})"), r"\1 ' \2"), (re.compile(f"([^{_ALPHA}0-9])'({_A})"), r"\1 ' \2"),
            (re.compile(f"({_A})'({_NOT_A})"), r"\1 ' \2"), (re.compile(f"({_A})'({_A})"), r"\1 '\2"),
            (re.compile(r"([0-9])'(s)"), r"\1 '\2")]
_CONT_FR = [(re.compile(f"({_NOT_A})'({_NOT_A})"), r"\1 ' \2"), (re.compile(f"({_NOT_A})'({_A})"), r"\1 ' \2"),
            (re.compile(f"({_A})'({_NOT_A})"), r"\1 ' \2"), (re.compile(f"({_A})'({_A})"), r"\1' \2")]
_PUNCT_STRIP = re.compile(f"[^{_ALNUM}]")
_WHITE = re.compile("[ \u2000-\u200a\u202f\u205f\u3000\u00a0]+")
_HAS_ALPHA = re.compile(_A)


def _java_trim(text: str) -> str:
    """Java's ``String.trim``: every character up to U+0020 off both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _tokens(text: str) -> list:
    """``java.util.StringTokenizer`` with its default delimiters."""
    return [t for t in re.split(f"[{_TOKEN_DELIMS}]+", text) if t]


@lru_cache(maxsize=None)
def _prefixes(lang: str) -> dict:
    """The jar's nonbreaking-prefix list of ``lang`` (``Normalizer.nbpList``): the first token of
    each line that is not a comment, NUMERIC_ONLY when its second token says so."""
    text = resources.files(__package__).joinpath("nonbreaking").joinpath(f"{NBP_FILES[lang]}.prefixes")
    out: dict = {}
    for line in text.read_text("utf-8").splitlines():
        tok = _tokens(line)
        if not tok or tok[0].startswith("#"):
            continue
        out[tok[0]] = _NUMERIC_ONLY if len(tok) > 1 and tok[1] == "#NUMERIC_ONLY#" else _ANY
    return out


def _escape_dots(line: str) -> str:
    line = _MULTI_DOT.sub(r" DOTMULTI\1", line)
    while "DOTMULTI." in line:
        line = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", line)
        line = line.replace("DOTMULTI.", "DOTDOTMULTI")
    return line


def _unescape_dots(line: str) -> str:
    while "DOTDOTMULTI" in line:
        line = line.replace("DOTDOTMULTI", "DOTMULTI.")
    return line.replace("DOTMULTI", ".")


def _split_commas_quotes_dashes(line: str) -> str:
    for pattern in _COMMAS:
        line = pattern.sub(r"\1 , \2", line)
    line = _DOUBLE_QUOTE.sub(' " ', _QUOTE.sub("'", line))
    return line.replace("\u2013", "-").replace("--", "-")


def _break_dots(words: list, nbp: dict) -> str:
    """The line rebuilt from its words, a final dot split off unless the word is a dotted
    abbreviation (undotted), a nonbreaking prefix, or followed by a lowercase word (or, for a
    numeric-only prefix, by a number)."""
    out = []
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else None
        if len(word) > 1 and word.endswith("."):
            pre = word[:-1]
            kind = nbp.get(pre)
            if "." in pre and _HAS_ALPHA.search(pre):
                out.append(word.replace(".", ""))  # U.S. -> US
            elif kind == _ANY or (nxt is not None and "a" <= nxt[0] <= "z"):
                out.append(word)
            elif kind == _NUMERIC_ONLY and nxt is not None and "0" <= nxt[0] <= "9":
                out.append(word)
            else:
                out.append(pre + " .")
        else:
            out.append(word)
        out.append(" ")
    return "".join(out)


def _western(line: str, lang: str, keep_punctuation: bool) -> str:
    line = _SEP_OTHER.sub(r" \1 ", f" {line} ")
    line = _split_commas_quotes_dashes(_escape_dots(line))
    line = _RM_DASH.sub(r"\1 \2", line)  # U.S.-based, well-known: partial credit for the parts
    if lang == "en":
        for pattern, repl in _CONT_EN:
            line = pattern.sub(repl, line)
    elif lang == "fr":
        for pattern, repl in _CONT_FR:
            line = pattern.sub(repl, line)
    else:
        line = line.replace("'", " ' ")
    line = _unescape_dots(_break_dots(_tokens(line), _prefixes(lang)))
    if not keep_punctuation:
        line = _PUNCT_STRIP.sub(" ", line)
    return _java_trim(_WHITE.sub(" ", line))


def normalize_line(line: str, lang: str = "en", keep_punctuation: bool = True) -> str:
    """One line as the jar's ``Normalizer.normalizeLine(line, lang, keepPunctuation)`` gives it
    (``-norm``; ``keep_punctuation=False`` is ``-norm -noPunct``); not lowercased.

    lang : en, cz, fr, de, es or ru (:data:`NBP_FILES`); :class:`InputError` for another.
    """
    if lang not in NBP_FILES:
        raise InputError(f"Meteor normalization (-norm): expected a language among {', '.join(NBP_FILES)}, found "
                         f"{lang!r}; the jar has none for other languages either: tokenize the text first")
    return _western(line, lang, keep_punctuation)


def normalizer(lang: str, keep_punctuation: bool = True) -> Callable[[str], str]:
    """:func:`normalize_line` for one language, memoized (K-best lists repeat their references
    and many hypotheses)."""
    normalize_line("", lang)  # an unknown language fails here, not at the first line
    return lru_cache(maxsize=1 << 16)(lambda line: _western(line, lang, keep_punctuation))
