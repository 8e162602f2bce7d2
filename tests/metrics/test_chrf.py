"""chrF / chrF++ (kbest_bleu.metrics.chrf) against sacrebleu 2.6.0's CHRF, sentence and corpus, on
real WMT22 outputs and on fuzzed Unicode; pairwise chrF against sacrebleu per pair; aggregated chrF
against a slow reference of the published definition (and fastChrF where it installs); the
``score --metric chrf`` column against sacrebleu."""

import itertools
import string
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import CHRF

from kbest_bleu.errors import InputError
from kbest_bleu.metrics.chrf import (aggregate_chrf, chrf_from_stats, chrf_params, chrf_rows, chrf_scores,
                                     chrf_segments, corpus_chrf, from_options, pairwise_chrf, sentence_chrf)
from kbest_bleu.metrics.chrf import _kernels

TOL = 1e-12  # on sacrebleu's 0-100 scale


def _sacre(hyps, refs, **kw):
    """sacrebleu's sentence scores (0-100) and corpus score of rows with their own reference lists
    (no reference: one empty reference, as our rows without one). The corpus statistics are summed
    over chunks of rows: sacrebleu's corpus_score holds every reference's n-gram Counters at once."""
    metric = CHRF(**kw)
    sent = np.array([metric.sentence_score(h, list(r) or [""]).score for h, r in zip(hyps, refs)])
    total = None
    for a in range(0, len(hyps), 2000):
        part = [list(r) or [""] for r in refs[a:a + 2000]]
        width = max(len(r) for r in part)
        streams = [[r[i] if i < len(r) else None for r in part] for i in range(width)]
        stats = np.sum(metric._extract_corpus_statistics(list(hyps[a:a + 2000]), streams), axis=0)
        total = stats if total is None else total + stats
    return sent, metric._compute_score_from_stats(list(total)).score


def _options(char_order=6, word_order=0, beta=2, whitespace=False, lowercase=False, eps_smoothing=False):
    return dict(char_order=char_order, word_order=word_order, beta=beta, whitespace=whitespace, lowercase=lowercase,
                eps_smoothing=eps_smoothing)


@pytest.fixture(scope="module")
def wmt22(shared_data):
    """240 real rows: 40 segments' outputs of six language pairs (Latin, Cyrillic, CJK), 1-2
    references each, plus a third reference (another row's output) and an empty one on some rows."""
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", columns=["lp", "segment_id", "hypothesis",
                                                                            "references"])
    lps = t["lp"].to_numpy(zero_copy_only=False)
    rows = np.concatenate([np.flatnonzero(lps == lp)[:40] for lp in ("en-de", "cs-en", "en-zh", "en-ja", "en-ru",
                                                                      "en-hr")])
    sub = t.take(pa.array(rows))
    hyps = sub["hypothesis"].to_pylist()
    refs = sub["references"].to_pylist()
    for i in range(0, len(refs), 7):
        refs[i] = refs[i] + [hyps[(i + 3) % len(hyps)]]
    for i in range(0, len(refs), 11):
        refs[i] = refs[i] + [""]
    return hyps, refs


def test_python_whitespace_and_punctuation_sets():
    space = np.array([bool(_kernels._is_space(c)) for c in range(0x110000)])
    assert np.array_equal(space, np.array([chr(c).isspace() for c in range(0x110000)]))
    assert [c for c in range(128) if _kernels._is_punct(c)] == [ord(c) for c in string.punctuation]


# every combination of word order, whitespace, lowercase and smoothing at the defaults of the rest
COMBOS = [_options(word_order=w, whitespace=s, lowercase=c, eps_smoothing=e)
          for w, s, c, e in itertools.product((0, 2), (False, True), (False, True), (False, True))]
# and the orders and betas around them
COMBOS += [_options(char_order=n, word_order=w, beta=b) for n, w, b in ((1, 0, 2), (3, 2, 1), (8, 1, 3), (0, 2, 2),
                                                                          (6, 3, 0), (4, 0, 0.5), (2, 2, 1.5))]


@pytest.mark.parametrize("kw", COMBOS, ids=lambda kw: "-".join(f"{k[:2]}{int(v) if isinstance(v, bool) else v}"
                                                                for k, v in kw.items()))
def test_real_rows_equal_sacrebleu_sentence_and_corpus(wmt22, kw):
    hyps, refs = wmt22
    # all rows at sacrebleu's chrF and chrF++ defaults, a third of them elsewhere (sacrebleu takes the time)
    n = len(hyps) if kw in (_options(), _options(word_order=2)) else 80
    sent, corpus = _sacre(hyps[:n], refs[:n], **kw)
    result = chrf_rows(hyps[:n], refs[:n], **kw)
    assert np.abs(100 * result.score - sent).max() <= TOL
    assert abs(100 * corpus_chrf(hyps[:n], refs[:n], **kw) - corpus) <= TOL
    assert abs(100 * chrf_from_stats(result.stats.sum(axis=0), chrf_params(**kw)) - corpus) <= TOL


def test_best_reference_is_sacrebleus_first_highest(wmt22):
    hyps, refs = wmt22
    result = chrf_rows(hyps, refs)
    metric = CHRF()
    for h, r, best in zip(hyps[:60], refs[:60], result.best_reference[:60]):
        scores = [metric.sentence_score(h, [x]).score for x in r]
        assert best == scores.index(max(scores))


def _sacre_rows(args):
    """sacrebleu's per-row statistics of a part of the rows (each against its best reference, as
    ``CHRF.sentence_score`` computes them: it is ``corpus_score`` of the one row)."""
    hyps, refs, kw = args
    part = [list(r) or [""] for r in refs]
    width = max(len(r) for r in part)
    streams = [[r[i] if i < len(r) else None for r in part] for i in range(width)]
    return CHRF(**kw)._extract_corpus_statistics(list(hyps), streams)


def _sacre_parallel(hyps, refs, **kw):
    """:func:`_sacre` on every row in two processes (sacrebleu is the slow part of the sweep):
    each row's statistics counted once, its sentence score and the corpus score computed from
    them by sacrebleu's own ``_compute_score_from_stats``."""
    import multiprocessing

    step = 5000
    parts = [(hyps[a:a + step], refs[a:a + step], kw) for a in range(0, len(hyps), step)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        rows = [row for part in pool.map(_sacre_rows, parts) for row in part]
    metric = CHRF(**kw)
    sent = np.array([metric._compute_score_from_stats(list(r)).score for r in rows])
    return sent, metric._compute_score_from_stats(list(np.sum(rows, axis=0))).score


@pytest.mark.exhaustive
def test_all_real_data_equals_sacrebleu(shared_data):
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", columns=["hypothesis", "references"])
    hyps, refs = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    small = 3000  # the parallel oracle against sacrebleu's public sentence_score first
    for kw in (_options(), _options(word_order=2)):
        want, _ = _sacre(hyps[:small], refs[:small], **kw)
        assert np.array_equal(_sacre_parallel(hyps[:small], refs[:small], **kw)[0], want)
        sent, corpus = _sacre_parallel(hyps, refs, **kw)
        assert np.abs(100 * chrf_scores(hyps, refs, **kw) - sent).max() <= TOL
        assert abs(100 * corpus_chrf(hyps, refs, **kw) - corpus) <= TOL


# tiny alphabets where clipping matters; every kind of whitespace (Python's str.split and more), a
# combining mark, punctuation chrF++ splits off, characters whose lowercase differs in length
ALPHABET = "ab" + " \t\n\x0b\x1c\x85\xa0\u1680\u2003\u2028\u3000\u200b" + "\u0301" + ".,(!-" + "AİΣ" + "中"
texts = st.text(alphabet=ALPHABET, max_size=14)


@pytest.mark.jit_free
@given(st.lists(st.tuples(texts, st.lists(texts, max_size=3)), min_size=1, max_size=5),
       st.sampled_from(COMBOS))
def test_fuzzed_unicode_equals_sacrebleu(rows, kw):
    hyps, refs = [h for h, _ in rows], [r for _, r in rows]
    sent, corpus = _sacre(hyps, refs, **kw)
    assert np.abs(100 * chrf_scores(hyps, refs, **kw) - sent).max() <= TOL
    assert abs(100 * corpus_chrf(hyps, refs, **kw) - corpus) <= TOL


def test_k_best_segments_and_repeated_hypotheses():
    hyps = ["a cat sat", "a cat sat", "the cat", "", "a cat sat", "dogs."]
    refs = [["a cat sat down", "the cat"], [], ["dogs!", "Dogs."]]
    ptr = np.array([0, 3, 4, 6])
    result = chrf_segments(hyps, refs, ptr, word_order=2)
    rows = [refs[0]] * 3 + [refs[1]] + [refs[2]] * 2
    sent, _ = _sacre(hyps, rows, word_order=2)
    assert np.abs(100 * result.score - sent).max() <= TOL
    assert result.best_reference[3] == -1 and result.score[3] == 0
    assert sentence_chrf("a cat sat", "a cat sat down") == chrf_scores(["a cat sat"], [["a cat sat down"]])[0]


def test_signature_is_sacrebleus_behind_our_name():
    for kw in COMBOS[:16]:
        metric = CHRF(**kw)
        metric.corpus_score(["a"], [["a"]])
        theirs = metric.get_signature().format()
        ours = chrf_params(**kw).signature(nrefs=1)
        name, fields = ours.split("|", 1)
        assert name == f"kbest_bleu.chrF{kw['beta']}" + "+" * kw["word_order"]
        assert fields.rsplit("|", 1)[0] == theirs.rsplit("|", 1)[0]
    assert "nrefs" not in chrf_params().signature()


# ---- pairwise and aggregated chrF ----

SAMPLES = ["The cat sat on the mat.", "The cat sat on the hat.", "A cat sat on a mat.", "The cat sat on the mat.",
           "x", "", "mat the on sat cat The", "the  cat, sat (on) the mat!"]


@pytest.mark.parametrize("kw", [_options(), _options(word_order=2), _options(eps_smoothing=True, whitespace=True),
                                _options(char_order=3, beta=1, lowercase=True)])
def test_pairwise_equals_sacrebleu_per_pair(kw):
    metric = CHRF(**kw)
    expect = np.array([[metric.sentence_score(h, [r]).score for r in SAMPLES] for h in SAMPLES])
    result = pairwise_chrf(SAMPLES, **kw)
    assert np.abs(100 * result.matrix(0) - expect).max() <= TOL
    weights = np.arange(1, len(SAMPLES) + 1, dtype=float)
    weighted = pairwise_chrf(SAMPLES, weights=weights, matrix=False, **kw)
    assert len(weighted.scores) == 0
    assert np.abs(100 * weighted.expected - expect @ weights / weights.sum()).max() <= TOL
    # three segments of one set (one empty): each its own K x K block
    result = pairwise_chrf(SAMPLES, [0, 3, 3, 8], **kw)
    assert result.matrix(1).shape == (0, 0)
    assert np.abs(100 * result.matrix(0) - expect[:3, :3]).max() <= TOL
    assert np.abs(100 * result.matrix(2) - expect[3:, 3:]).max() <= TOL
    assert np.abs(100 * result.expected - np.r_[expect[:3, :3].mean(1), expect[3:, 3:].mean(1)]).max() <= TOL
    # two segments, each against a separate set of pseudo-references
    cands, pseudo = SAMPLES[:5], SAMPLES[2:] + ["cat"]
    result = pairwise_chrf(cands, [0, 2, 5], pseudo, [0, 4, 7], **kw)
    assert np.abs(100 * result.matrix(0) - expect[:2, 2:6]).max() <= TOL
    tail = np.array([[metric.sentence_score(h, [r]).score for r in pseudo[4:]] for h in cands[2:]])
    assert np.abs(100 * result.matrix(1) - tail).max() <= TOL
    assert np.abs(100 * result.expected - np.r_[expect[:2, 2:6].mean(1), tail.mean(1)]).max() <= TOL


@given(st.lists(st.text(alphabet="ab .,", max_size=8), min_size=1, max_size=6), st.booleans())
def test_pairwise_property_tiny_alphabet(cands, plus):
    kw = _options(word_order=2 if plus else 0)
    metric = CHRF(**kw)
    expect = np.array([[metric.sentence_score(h, [r]).score for r in cands] for h in cands])
    assert np.abs(100 * pairwise_chrf(cands, **kw).matrix(0) - expect).max() <= TOL


def _slow_aggregate(cand, pseudo, weights, kw):
    """Vamvas & Sennrich (2024): chrF of a candidate against the weighted mean n-gram counts of the
    pseudo-references, with sacrebleu's n-gram extraction and F-score."""
    metric = CHRF(**kw)
    counts = [metric._extract_reference_info([r])["ref_ngrams"][0] for r in pseudo]
    mean = [Counter() for _ in counts[0]]
    for w, c in zip(weights, counts):
        for order, ngrams in enumerate(c):
            for g, n in ngrams.items():
                mean[order][g] += w * n / sum(weights)
    hyp = metric._extract_reference_info([cand])["ref_ngrams"][0]
    stats = []
    for h, r in zip(hyp, mean):
        n_ref = sum(r.values())
        stats += [sum(h.values()) if n_ref else 0, n_ref, sum(min(n, r[g]) for g, n in h.items() if g in r)]
    return metric._compute_f_score(stats)


@pytest.mark.parametrize("kw", [_options(), _options(word_order=2), _options(eps_smoothing=True)])
def test_aggregate_equals_slow_reference(kw):
    cands, pseudo = SAMPLES[:5], SAMPLES[1:]
    weights = np.array([0.5, 2.0, 1.0, 0.25, 1.0, 3.0, 1.0])
    got = aggregate_chrf(cands, None, pseudo, weights=weights, **kw)
    expect = [_slow_aggregate(c, pseudo, weights, kw) for c in cands]
    assert np.abs(100 * got - expect).max() <= 1e-9  # the mean counts are fractions here
    unit = aggregate_chrf(cands, None, pseudo, **kw)
    assert np.abs(100 * unit - [_slow_aggregate(c, pseudo, np.ones(len(pseudo)), kw) for c in cands]).max() <= TOL
    # a weight of 2 is the pseudo-reference twice, exactly
    twice = aggregate_chrf(cands, None, pseudo + [pseudo[0]], **kw)
    assert np.array_equal(twice, aggregate_chrf(cands, None, pseudo, weights=[2.0] + [1.0] * 6, **kw))


def test_aggregate_equals_fastchrf():
    fastchrf = pytest.importorskip("fastchrf")
    cands = SAMPLES + [s.upper() for s in SAMPLES[:4]]
    got = aggregate_chrf(cands, [0, 6, 12], None)
    theirs = fastchrf.aggregate_chrf([cands[:6], cands[6:]], [cands[:6], cands[6:]])
    assert np.abs(100 * got - np.concatenate(theirs)).max() <= 1e-4  # fastChrF's float precision



def _with_whitespace_variants(rng, k):
    """k random word strings, then copies of some of them with whitespace added (chrF removes it,
    chrF++ splits words at it: the same n-grams) or repeated as they are, at later rows."""
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "."]
    cands = [" ".join(rng.choice(words, int(rng.integers(0, 7)))) for _ in range(k)]
    for _ in range(int(rng.integers(1, 4))):
        c = cands[int(rng.integers(0, len(cands)))]
        variant = [c.replace(" ", "  ", 1), " " + c, c + " ", c][int(rng.integers(0, 4))]
        cands.insert(int(rng.integers(cands.index(c) + 1, len(cands) + 1)), variant)
    return cands


@pytest.mark.parametrize("seed", range(8))
def test_equal_utilities_are_bit_equal_and_the_lowest_row_is_selected(seed):
    """Two candidates with the same n-grams have equal utilities against every pseudo-reference, so
    equal expected utilities, and MBR takes the lower row (docs/mbr.md). Exact pairs summed each
    candidate's utilities in an order that depended on its row: the two differed in the last bit
    and the later row could win. Against a slow MBR by sacrebleu's sentence chrF per pair, the
    candidates as their own pseudo-references and a separate set, weighted or not, exact and
    aggregated (the slow aggregate of the published definition)."""
    rng = np.random.default_rng(seed)
    segs = [_with_whitespace_variants(rng, int(rng.integers(4, 24))) for _ in range(3)]
    pseudo = [_with_whitespace_variants(rng, int(rng.integers(1, 8))) for _ in range(3)]
    cands, refs = sum(segs, []), sum(pseudo, [])
    ptr, ref_ptr = np.cumsum([0] + [len(x) for x in segs]), np.cumsum([0] + [len(x) for x in pseudo])
    for word_order, weighted, separate in itertools.product((0, 2), (False, True), (False, True)):
        kw = _options(word_order=word_order)
        metric = CHRF(**kw)
        sets = pseudo if separate else segs
        w = rng.uniform(0.1, 2.0, ref_ptr[-1] if separate else ptr[-1]) if weighted else None
        extra = dict(pseudo_references=refs, pseudo_segments=ref_ptr) if separate else {}
        exact = pairwise_chrf(cands, ptr, weights=w, matrix=False, **extra, **kw).expected
        aggregated = aggregate_chrf(cands, ptr, weights=w, **extra, **kw)
        for s, seg in enumerate(segs):
            rows = range(ptr[s], ptr[s + 1])
            at = (ref_ptr if separate else ptr)[s]
            ws = np.ones(len(sets[s])) if w is None else w[at:at + len(sets[s])]
            slow = [sum(wj * metric.sentence_score(c, [r]).score / 100 for wj, r in zip(ws, sets[s])) / ws.sum()
                    for c in seg]
            assert np.abs(exact[rows] - slow).max() <= 1e-12
            slow_aggregate = [_slow_aggregate(c, sets[s], ws, kw) / 100 for c in seg]
            assert np.abs(aggregated[rows] - slow_aggregate).max() <= 1e-9  # fractional mean counts
            for utility in (exact[rows], aggregated[rows]):
                first = {}  # the first row of each n-gram profile: whitespace apart, the same words
                for i, c in enumerate(seg):
                    first.setdefault(" ".join(c.split()), i)
                    assert utility[i] == utility[first[" ".join(c.split())]], (word_order, weighted, separate)
                chosen = int(np.argmax(utility))  # the first of the highest
                assert chosen == first[" ".join(seg[chosen].split())]


def test_pairwise_and_aggregate_reject_bad_input():
    with pytest.raises(InputError, match="segments"):
        pairwise_chrf(SAMPLES, [0, 3])
    with pytest.raises(InputError, match="weights"):
        pairwise_chrf(SAMPLES, weights=[1.0])
    with pytest.raises(InputError, match="no pseudo-reference"):
        aggregate_chrf(SAMPLES[:2], None, SAMPLES[:2], weights=[0.0, 0.0])
    with pytest.raises(InputError, match="token lists"):
        pairwise_chrf([["a", "b"]])
    with pytest.raises(InputError, match="char_order"):
        chrf_scores(["a"], [["a"]], char_order=-1)
    with pytest.raises(InputError, match="both 0"):
        from_options(char_order=0, word_order=0)
    with pytest.raises(InputError, match="beta"):
        chrf_params(beta=float("nan"))


# ---- the batch job ----

def test_score_command_adds_a_chrf_column_equal_to_sacrebleu(tmp_path):
    from pathlib import Path

    from kbest_bleu.cli import main
    src = Path(__file__).resolve().parents[2] / "kbest_bleu" / "data" / "moses_100best_sample.parquet"
    t = pq.read_table(src).slice(0, 200)
    path, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(t, path)
    assert main(["score", str(path), "-o", str(out), "-q", "--metric", "bleu,chrf", "--chrf-word-order", "2",
                 "--stats"]) == 0
    got = pq.read_table(out)
    hyps, refs = t["hypothesis"].to_pylist(), t["references"].to_pylist()
    sent, _ = _sacre(hyps, refs, word_order=2)
    assert np.abs(100 * got["chrf"].to_numpy() - sent).max() <= TOL
    assert got.column_names[-25:] == ["chrf"] + [f"chrf_{o}_{x}" for o in ("c1", "c2", "c3", "c4", "c5", "c6", "w1",
                                                                         "w2") for x in ("hyp", "ref", "match")]
    assert got.schema.metadata[b"kbest_bleu.signature.chrf"].decode().startswith("kbest_bleu.chrF2++|")


def test_metric_pickles_for_spark_workers():
    import pickle
    metric = from_options(word_order=2, beta=1)
    assert pickle.loads(pickle.dumps(metric)) == metric
    assert [f.name for f in metric.output_fields(False)] == ["chrf"]


def test_bad_calls_raise_input_error():
    """A misspelt option (sacrebleu-style nc=) and references=None raised TypeError."""
    from kbest_bleu.errors import InputError
    from kbest_bleu.metrics.chrf import corpus_chrf, sentence_chrf
    with pytest.raises(InputError, match="unknown option.*nc"):
        sentence_chrf("a b", ["a b"], nc=3)
    with pytest.raises(InputError, match="unknown option.*order"):
        corpus_chrf(["a b"], [["a b"]], order=3)
    with pytest.raises(InputError, match="references: expected a string or a list of strings"):
        sentence_chrf("a b", None)
