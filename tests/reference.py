"""Slow, obviously correct reference implementations, written from the papers and tool
sources line by line, one hypothesis at a time, with Python Counters and floats.

Nothing here is shared with the package: the tests compare the two."""

import math
from collections import Counter


def ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def stats(hyp, refs, n_orders, ref_length="closest"):
    """(matches, totals, c, r) for one hypothesis; clip = max count over the references."""
    m, t = [], []
    for n in range(1, n_orders + 1):
        h = ngrams(hyp, n)
        clip = Counter()
        for ref in refs:
            for g, k in ngrams(ref, n).items():
                clip[g] = max(clip[g], k)
        m.append(sum(min(k, clip[g]) for g, k in h.items()))
        t.append(max(0, len(hyp) - n + 1))
    c = len(hyp)
    lens = [len(x) for x in refs]
    if not lens:
        r = 0
    elif ref_length == "shortest":
        r = min(lens)
    elif ref_length == "average":
        r = int(sum(lens) / len(lens))
    else:
        r = min(lens, key=lambda x: (abs(x - c), x))
    return m, t, c, r


def paper_bleu(method, m, t, c, r, N=4, eps=0.1, K=5.0, alpha=5.0, add_k=1.0, effective=True):
    """Chen & Cherry (2014) smoothing 0-7 under the sacrebleu preset's conventions:
    no match at all -> 0; with ``effective`` orders with t_n = 0 are dropped."""
    if c == 0 or sum(m[:N]) == 0:
        return 0.0
    mm = [float(x) for x in m]
    tt = [float(x) for x in t]
    if method == 2:
        for n in range(1, N):
            mm[n] += add_k
            tt[n] += add_k
    if method == 1:
        mm = [eps if (mm[n] == 0 and n < N) else mm[n] for n in range(len(mm))]
    if method == 3:
        inv = 1.0
        for n in range(N):
            if mm[n] == 0 and tt[n] > 0:
                inv *= 2
                mm[n] = 1 / inv
    if method in (4, 7):
        inv = 1.0
        for n in range(N):
            if mm[n] == 0 and tt[n] > 0:
                inv = inv * K / math.log(c) if c > 1 else math.inf
                mm[n] = 1 / inv
    if method in (5, 7):
        prev = mm[0] + 1
        new = []
        for n in range(N):
            prev = (prev + mm[n] + mm[n + 1]) / 3
            new.append(prev)
        mm = new + mm[N:]
    p = [mm[n] / tt[n] if tt[n] > 0 else 0.0 for n in range(N)]
    if method == 6:
        for n in range(2, N):
            p0 = p[n - 1] ** 2 / p[n - 2] if p[n - 2] > 0 else 0.0
            p[n] = (m[n] + alpha * p0) / (t[n] + alpha)
    orders = [n for n in range(N) if tt[n] > 0] if effective else list(range(N))
    if any(p[n] <= 0 for n in orders):
        return 0.0
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return bp * math.exp(sum(math.log(p[n]) for n in orders) / len(orders))


def moses_bleu_plus_1(m, t, c, r, s=1.0, smooth_bp=False, N=4):
    """mert/BleuScorer.cpp smoothedSentenceBleu, transliterated."""
    logbleu = sum(math.log(m[j] + s) - math.log(t[j] + s) for j in range(N)) / N
    reflen = r + (s if smooth_bp else 0.0)
    if c == 0:
        return 0.0 if reflen > 0 else math.exp(logbleu)
    brevity = 1.0 - reflen / c
    if brevity < 0:
        logbleu += brevity
    return math.exp(logbleu)


def moses_corpus_bleu(comps, N=4):
    """mert/BleuScorer.cpp calculateScore, transliterated: comps = m1 t1 ... mN tN reflen (summed)."""
    logbleu = 0.0
    for i in range(N):
        if comps[2 * i] == 0:
            return 0.0
        logbleu += math.log(comps[2 * i]) - math.log(comps[2 * i + 1])
    logbleu /= N
    brevity = 1.0 - comps[2 * N] / comps[1]
    if brevity < 0.0:
        logbleu += brevity
    return math.exp(logbleu)


def smoothing6_bleu(m, t, c, r, variant="literal", N=4, eps=0.1, alpha=5.0):
    """Smoothing 6 (Chen & Cherry 2014 section 2.6) in each reading of BleuConfig.smoothing6_variant,
    sacrebleu preset conventions (effective order on), one order at a time."""
    if c == 0 or sum(m[:N]) == 0:
        return 0.0
    mm = [float(x) for x in m[:N]]
    if variant == "floor":  # zero m_1, m_2 -> eps (smoothing 1) before the prior
        mm = [eps if (n < 2 and mm[n] == 0 and t[n] > 0) else mm[n] for n in range(N)]
    raw = [mm[n] / t[n] if t[n] > 0 else 0.0 for n in range(N)]
    p = list(raw)
    first = 1 if variant == "from-bigram" else 2
    for n in range(first, N):
        src = raw if variant == "raw-prior" else p
        two_below = 1.0 if n == 1 else src[n - 2]  # p_0 = 1 (from-bigram)
        prior = src[n - 1] ** 2 / two_below if two_below > 0 else 0.0
        p[n] = (mm[n] + alpha * prior) / (t[n] + alpha)
    orders = [n for n in range(N) if t[n] > 0]
    if any(p[n] <= 0 for n in orders):
        return 0.0
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return bp * math.exp(sum(math.log(p[n]) for n in orders) / len(orders))


def sacrebleu_exp_bleu(correct, total, sys_len, ref_len):
    """sacrebleu 2.6.0's BLEU.compute_bleu for smooth_method="exp", effective_order=True (0-1), step
    for step on possibly fractional counts and reference length (its BLEUScore formats the lengths
    as integers, so the arithmetic is transcribed): the oracle of aggregated MBR utilities."""
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    if not any(correct):
        return 0.0
    precisions, smooth, eff = [0.0] * 4, 1.0, 4
    for n in range(1, 5):
        if total[n - 1] == 0:
            break
        eff = n
        if correct[n - 1] == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(x) if x > 0 else -9999999999 for x in precisions[:eff]]
    return bp * math.exp(sum(logs) / eff) / 100
