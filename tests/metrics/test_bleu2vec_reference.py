"""Slow, obviously correct BLEU2VEC references (pure Python), written from the algorithm's
description, not from the package: the tests and the benchmark compare the numba kernels to them.

- :func:`faithful_sentence`: the authors' bc4.py as described (Taettar & Fishel 2017, section 3;
  facts checked by running it): first reference only, residual n-gram *labels* paired greedily by
  a row-major scan for a value above a running maximum that starts at -1, a pair's row and column
  dropped by label (every row with that label goes), unknown n-grams 0.001, denominators
  |H| - n + 1, NLTK 3.2 method0 (stop at the first p_n <= 0, no renormalisation).
- :func:`corrected_sentence`: the corrected definition, one occurrence at a time: exact matches
  clipped by the max count over references; each unmatched hypothesis occurrence may pair with one
  reference occurrence left over in some reference (per n-gram, the most any reference has left);
  weights are cosines >= max(min_similarity, tiny) (unknown n-grams never pair); then the core's
  Chen & Cherry smoothing on the real-valued counts.

Embeddings here are plain dicts {order: {ngram string: vector}}; cosine as gensim's similarity.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

EPS_UNKNOWN = 0.001


def cosine(vectors: dict, a: str, b: str):
    """gensim ``KeyedVectors.similarity``: dot of float32 unit vectors; None when unknown."""
    if a not in vectors or b not in vectors:
        return None
    u = np.asarray(vectors[a], np.float32)
    v = np.asarray(vectors[b], np.float32)
    u = u / np.float32(np.linalg.norm(u))
    v = v / np.float32(np.linalg.norm(v))
    return float(np.dot(u, v))  # float32 dot, as gensim


def grams(tokens: list, n: int) -> list:
    return ["_".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _faithful_order(hyp: list, ref: list, vectors: dict, n: int) -> tuple:
    h, r = Counter(grams(hyp, n)), Counter(grams(ref, n))
    up = float(sum((h & r).values()))
    rows = [g for g, c in (h - r).items() for _ in range(c)]  # residual hypothesis occurrences
    cols = [g for g, c in (r - h).items() for _ in range(c)]  # residual reference occurrences
    value = {}
    for a in rows:
        for b in cols:
            s = cosine(vectors, a, b) if vectors is not None else None
            value[a, b] = EPS_UNKNOWN if s is None else s
    while rows and cols:
        best, vmax = None, -1.0
        for a in rows:
            for b in cols:
                if value[a, b] > vmax:
                    best, vmax = (a, b), value[a, b]
        rows = [a for a in rows if a != best[0]]  # drop by label: all rows named best[0]
        cols = [b for b in cols if b != best[1]]
        up += vmax
    return up, len(grams(hyp, n))


def _clipped_order(hyp: list, refs: list, n: int) -> tuple:
    """NLTK's modified precision (bc4.py for orders above 3): clipped by the max count over refs."""
    h = Counter(grams(hyp, n))
    m = sum(min(c, max(Counter(grams(r, n))[g] for r in refs)) for g, c in h.items())
    return float(m), max(1, sum(h.values()))


def closest_ref_length(refs: list, c: int) -> int:
    return min((len(r) for r in refs), key=lambda x: (abs(x - c), x))


def faithful_sentence(hyp: list, refs: list, models: dict, weights=(0.33, 0.34, 0.33)) -> tuple:
    """bc4.py ``sentence_bleu`` on token lists: (score, [(numerator, denominator) per order])."""
    counts = []
    for n in range(1, len(weights) + 1):
        counts.append(_faithful_order(hyp, refs[0], models.get(n), n) if n < 4 else _clipped_order(hyp, refs, n))
    c = len(hyp)
    r = closest_ref_length(refs, c)
    bp = 1.0 if c > r else (0.0 if c == 0 else math.exp(1 - r / c))
    if counts[0][0] == 0:
        return 0.0, counts
    s = 0.0
    for w, (num, den) in zip(weights, counts):
        p = num / den if den else 0.0
        if not p > 0:
            break
        s += w * math.log(p)
    return bp * math.exp(s), counts


def _corrected_order(hyp: list, refs: list, vectors, n: int, min_similarity: float) -> tuple:
    h = Counter(grams(hyp, n))
    rcs = [Counter(grams(r, n)) for r in refs]
    clip = {g: min(c, max(rc[g] for rc in rcs)) for g, c in h.items()}
    exact = float(sum(clip.values()))
    rows = [g for g in h for _ in range(h[g] - clip[g])]
    ref_order = list(dict.fromkeys(g for r in refs for g in grams(r, n)))
    cols = [g for g in ref_order for _ in range(max(rc[g] - h[g] for rc in rcs))]
    fuzzy = 0.0
    free_r, free_c = [True] * len(rows), [True] * len(cols)
    sims = [[cosine(vectors, a, b) if vectors is not None else None for b in cols] for a in rows]
    while True:
        best, vmax = None, None
        for i in range(len(rows)):
            for j in range(len(cols)):
                s = sims[i][j]
                if free_r[i] and free_c[j] and s is not None and s > 0 and s >= min_similarity and (
                        vmax is None or s > vmax):
                    best, vmax = (i, j), s
        if best is None:
            return exact, fuzzy, len(grams(hyp, n))
        free_r[best[0]] = free_c[best[1]] = False
        fuzzy += vmax


def corrected_counts(hyp: list, refs: list, models: dict, max_order: int, min_similarity: float = 0.0) -> list:
    """[(exact, fuzzy, hypothesis n-grams) per order 1..max_order]."""
    return [_corrected_order(hyp, refs, models.get(n), n, min_similarity) for n in range(1, max_order + 1)]


def test_faithful_reference_by_hand():
    """A case worked by hand: cos(kitten, cat) = 0.8, 'rug' unknown; the duplicate 'kitten'
    label is dropped whole after its first pairing (one pair, not two)."""
    models = {1: {"kitten": [0.8, 0.6], "cat": [1.0, 0.0], "the": [0.0, 1.0]}}
    hyp, ref = "the kitten kitten sat".split(), "the cat sat on".split()
    score, counts = faithful_sentence(hyp, [ref], models)
    # unigrams: exact the, sat = 2; residual rows {kitten}, cols {cat, on}: kitten-cat 0.8
    assert abs(counts[0][0] - 2.8) < 1e-7 and counts[0][1] == 4
    # bigrams: exact none; rows the_kitten, kitten_kitten, kitten_sat; cols the_cat, cat_sat, sat_on:
    # every pair unknown (0.001), three pairs
    assert abs(counts[1][0] - 0.003) < 1e-12 and counts[1][1] == 3
    assert abs(counts[2][0] - 0.002) < 1e-12 and counts[2][1] == 2
    expected = math.exp(0.33 * math.log(2.8 / 4) + 0.34 * math.log(0.001) + 0.33 * math.log(0.001))
    assert abs(score - expected) < 1e-9  # the cosine is a float32


def test_corrected_reference_by_hand():
    """Occurrences, not labels: both 'kitten's pair (with 'cat' and 'feline'); a negative cosine
    is never taken; the second reference's leftovers are candidates too."""
    models = {1: {"kitten": [0.8, 0.6], "cat": [1.0, 0.0], "feline": [0.6, 0.8], "dog": [-1.0, 0.0]}}
    hyp = "the kitten kitten dog".split()
    refs = ["the cat sat".split(), "a feline".split()]
    (exact, fuzzy, total), = corrected_counts(hyp, refs, models, 1)
    assert exact == 1 and total == 4
    # kitten-cat 0.8 and kitten-feline 0.96 (= 0.8*0.6 + 0.6*0.8): 0.96 first, then 0.8; dog-*: <= 0
    assert abs(fuzzy - (0.96 + 0.8)) < 1e-6
