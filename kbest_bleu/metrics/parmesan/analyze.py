"""Lemmas and parts of speech for Parmesan (the paper used the Morče tagger, section 3).

Analyzers, each optional and imported only when used:

``lower``       lemma = the lowercased word, no POS (exact-form paraphrasing)
``simplemma``   dictionary lemmas for 50+ languages (PyPI ``simplemma``), no POS
``nltk``        NLTK's perceptron tagger + WordNet lemmatizer (English; needs NLTK's data packages)
``spacy:NAME``  a spaCy pipeline (e.g. ``spacy:cs_core_news_sm``): lemma_ and the universal pos_

(``columns``, lemmas and POS given in the input table, is read by the metric itself.)
All analyzers return lowercased lemmas, so that tables built with them match.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError, install_extra

__all__ = ["analyze_tokens", "analyze_words", "check_analyzer"]

ANALYZERS = ("lower", "columns", "simplemma", "nltk", "spacy:<model>")


def check_analyzer(analyzer: str) -> None:
    """:class:`InputError` unless ``analyzer`` is one of :data:`ANALYZERS`."""
    if analyzer not in ANALYZERS[:4] and not (analyzer.startswith("spacy:") and len(analyzer) > 6):
        raise InputError(f"analyzer: expected one of {', '.join(ANALYZERS)}, found {analyzer!r}")


def _missing(what: str, exc: object) -> InputError:
    return InputError(f"analyzer: {what} is not available ({exc}); install it ({install_extra('parmesan')}) "
                      "or give lemmas/POS as columns (--analyzer columns)")


@lru_cache(maxsize=4)
def _spacy(model: str):
    try:
        import spacy
        return spacy.load(model)
    except (ImportError, OSError) as exc:
        raise _missing(f"the spaCy pipeline {model!r}", exc) from None


def _nltk():
    try:
        import nltk
        from nltk.stem import WordNetLemmatizer
        nltk.data.find("taggers/averaged_perceptron_tagger_eng")
        nltk.data.find("corpora/wordnet")
    except (ImportError, LookupError) as exc:
        raise _missing("NLTK with its tagger and WordNet data", str(exc).strip().splitlines()[0]) from None
    return nltk, WordNetLemmatizer()


# Penn tag -> WordNet POS for the lemmatizer; the POS kept is the tag's first letter (N, V, J, R...).
_WN = {"N": "n", "V": "v", "J": "a", "R": "r"}


def _simplemma_words(words: list, lang: str) -> tuple[list, np.ndarray]:
    try:
        import simplemma
    except ImportError as exc:
        raise _missing("simplemma", exc) from None
    lang = {"cz": "cs"}.get(lang, lang)  # Meteor's code for Czech is cz, ISO 639-1 (simplemma's) cs
    try:
        lemmas = [simplemma.lemmatize(w, lang=lang).lower() for w in words]
        known = np.array([simplemma.is_known(w, lang=lang) or simplemma.is_known(w.lower(), lang=lang)
                          for w in words], bool)
    except ValueError as exc:
        raise InputError(f"analyzer simplemma: language {lang!r} not supported ({exc})") from None
    return lemmas, known


def _tag_sentences(sentences: list, analyzer: str) -> tuple[list, list]:
    """Flat lemmas and POS of pre-tokenized sentences with a contextual tagger (nltk, spaCy)."""
    lemmas, tags = [], []
    if analyzer == "nltk":
        nltk, wnl = _nltk()
        for tokens in sentences:
            for word, tag in nltk.pos_tag(tokens):
                lemmas.append(wnl.lemmatize(word.lower(), _WN.get(tag[:1], "n")))
                tags.append(tag[:1] if tag[:1] in _WN else tag)
    else:
        nlp = _spacy(analyzer[6:])  # first: a missing spaCy is one message, not an ImportError
        from spacy.tokens import Doc
        for doc in nlp.pipe(Doc(nlp.vocab, words=tokens) for tokens in sentences):
            lemmas += [t.lemma_.lower() for t in doc]
            tags += [t.pos_ for t in doc]
    return lemmas, tags


def analyze_tokens(tokens: pa.Array, ptr: np.ndarray, analyzer: str,
                   lang: str = "en") -> tuple[pa.Array, Optional[pa.Array]]:
    """Lemma and POS of every token of tokenized sentences.

    Parameters
    ----------
    tokens : string [T], the tokens of all sentences one after another
    ptr : int64 [n+1], sentence i = tokens[ptr[i]:ptr[i+1]]
    analyzer : one of :data:`ANALYZERS` but ``columns``

    Returns lemmas string [T] and POS string [T] (None for analyzers without POS). Context-free
    analyzers look each distinct word up once; taggers see each distinct sentence once.
    """
    check_analyzer(analyzer)
    if analyzer == "columns":
        raise InputError("analyzer columns: lemmas/POS come from the input table; give --hyp-lemma-col etc.")
    if analyzer == "lower":
        return pc.utf8_lower(tokens), None
    if analyzer == "simplemma":
        enc = pc.dictionary_encode(tokens)
        lemmas, _ = _simplemma_words(enc.dictionary.to_pylist(), lang)
        return pa.array(lemmas, pa.string()).take(enc.indices), None
    sentences = [tokens[a:b].to_pylist() for a, b in zip(ptr[:-1], ptr[1:])]
    keys = pc.dictionary_encode(pa.array([" ".join(s) for s in sentences], pa.string()))
    first = np.unique(keys.indices.to_numpy(zero_copy_only=False), return_index=True)[1]
    lemmas, tags = _tag_sentences([sentences[i] for i in first], analyzer)
    # the tokens of distinct sentence d start at starts[d]; every sentence takes its copy's tokens
    codes, lengths = keys.indices.to_numpy(zero_copy_only=False), np.diff(ptr)
    starts = np.r_[0, np.cumsum(lengths[first])[:-1]]
    take = pa.array(np.repeat(starts[codes] - ptr[:-1], lengths) + np.arange(ptr[-1]))
    return pa.array(lemmas, pa.string()).take(take), pa.array(tags, pa.string()).take(take)


def analyze_words(words: pa.Array, analyzer: str, lang: str = "en") -> tuple[pa.Array, Optional[pa.Array], np.ndarray]:
    """Lemma, POS (None without) and "known word" flags of single words (table filtering,
    section 3.1). Known: in simplemma's lexicon; for taggers, a POS other than spaCy's ``X``
    (other) / NLTK's ``FW`` (foreign word); ``lower`` knows every word."""
    check_analyzer(analyzer)
    if analyzer == "simplemma":
        lemmas, known = _simplemma_words(words.to_pylist(), lang)
        return pa.array(lemmas, pa.string()), None, known
    lemma, pos = analyze_tokens(words, np.arange(len(words) + 1, dtype=np.int64), analyzer, lang)
    if pos is None:
        return lemma, None, np.ones(len(words), bool)
    known = ~np.isin(np.array(pos.to_pylist(), dtype=object), ["X", "FW"])
    return lemma, pos, known
