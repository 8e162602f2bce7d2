"""Parmesan targeted paraphrasing (Barančíková 2014, section 4): the hand-checked demo, a slow
obviously-correct reference on random tiny inputs, table reading and errors."""

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbest_bleu.errors import InputError
from kbest_bleu.metrics.parmesan import load_table, paraphrase, paraphrase_segments
from kbest_bleu.metrics.parmesan.substitute import edits
from kbest_bleu.metrics.parmesan.table import RANK_BOTH, RANK_METEOR, RANK_WORDNET, read_table


def slow_paraphrase(hyp, ref, rows, directed, use_pos):
    """The paper's procedure spelled out on Python sets. hyp/ref: [(form, lemma, pos)];
    rows: table lines (lemma_ref, lemma_hyp, pos, source, prob)."""
    pairs = {}  # (r, h, pos) -> [sources, best prob, first line]
    for line, (r, h, pos, source, prob) in enumerate(rows):
        for key in [(r, h, pos)] + ([] if directed else [(h, r, pos)]):
            if key[0] != key[1]:
                entry = pairs.setdefault(key, [set(), 0.0, line])
                entry[0] |= {"wordnet", "meteor"} if source == "both" else {source}
                entry[1] = max(entry[1], prob)
    hyp_lemmas, ref_lemmas = {lem for _, lem, _ in hyp}, {lem for _, lem, _ in ref}
    words, made = [], []
    for i, (form, r, p) in enumerate(ref):
        candidates = []
        for (pr, ph, ppos), (sources, prob, line) in pairs.items():
            if pr != r or r in hyp_lemmas or ph not in hyp_lemmas or ph in ref_lemmas:
                continue
            if use_pos and ppos not in ("", p):
                continue
            forms = [f for f, lem, q in hyp if lem == ph and (q == p or not use_pos)]
            if forms:
                rank = 0 if len(sources) == 2 else 1 if "wordnet" in sources else 2
                candidates.append(((rank, -prob, line), forms[0]))
        if candidates:
            new = min(candidates)[1]
            made.append((i, form, new))
            words.append(new)
        else:
            words.append(form)
    return " ".join(words), made


def write_table(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# lemma_ref\tlemma_hyp\tpos\tsource\tprob\n")
        for r, h, pos, source, prob in rows:
            f.write(f"{r}\t{h}\t{pos}\t{source}\t{'' if source == 'wordnet' else prob}\n")


def as_written(rows):
    """The rows as the table file holds them: WordNet lines have no probability."""
    return [(r, h, pos, source, 0.0 if source == "wordnet" else prob) for r, h, pos, source, prob in rows]


@pytest.fixture(scope="module")
def toy(extensions):
    return load_table(extensions / "parmesan_toy_table_en.tsv")


def test_demo_pairs_equal_the_hand_checked_gold(extensions, toy):
    demo = [json.loads(line) for line in (extensions / "parmesan_demo" / "parmesan_demo.jsonl").open()]
    assert len(demo) == 4
    for d in demo:
        new, made = paraphrase(d["hyp"], d["ref"], toy)
        assert new == d["paraphrased_ref"]
        assert made == [tuple(e) for e in d["edits"]]
    # the same four pairs as one K-best table: segment 0 holds all four hypotheses against demo 0's
    # reference, each paraphrased independently
    hyps = [d["hyp"] for d in demo]
    p, *_ = paraphrase_segments(hyps, [[demo[0]["ref"]], [demo[1]["ref"]]], np.array([0, 3, 4]), toy)
    got = [refs[0] for refs in p.references.to_pylist()]
    assert got[0] == demo[0]["paraphrased_ref"] and got[3] == demo[1]["ref"]  # demo 3's hyp vs demo 1's ref
    assert got[1:3] == [slow_paraphrase([(w, w, "") for w in h.split()],
                                        [(w, w, "") for w in demo[0]["ref"].split()],
                                        _rows(extensions / "parmesan_toy_table_en.tsv"), False, False)[0]
                        for h in hyps[1:3]]


def _rows(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        if not line.startswith("#"):
            r, h, pos, source, prob = line.rstrip("\n").split("\t")
            rows.append((r, h, pos, source, float(prob) if prob else 0.0))
    return rows


LEMMAS = "abcde"
word = st.tuples(st.sampled_from(["A", "B", "a", "b", "c"]), st.sampled_from(LEMMAS), st.sampled_from("NV"))
sentence = st.lists(word, min_size=0, max_size=6)
row = st.tuples(st.sampled_from(LEMMAS), st.sampled_from(LEMMAS), st.sampled_from(["", "", "N", "V", "J"]),
                st.sampled_from(["wordnet", "meteor", "both"]), st.sampled_from([0.1, 0.2, 0.5]))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(row, min_size=1, max_size=12),
       segments=st.lists(st.tuples(st.lists(sentence, min_size=1, max_size=4), st.lists(sentence, max_size=2)),
                         min_size=1, max_size=4),
       directed=st.booleans(), use_pos=st.booleans())
def test_kernel_equals_slow_reference(tmp_path_factory, rows, segments, directed, use_pos):
    path = tmp_path_factory.mktemp("t") / "table.tsv"
    write_table(path, rows)
    rows = as_written(rows)
    table = load_table(path, directed)
    hyps = [h for hs, _ in segments for h in hs]
    refs = [r for _, rs in segments for r in rs]
    seg_ptr = np.cumsum([0] + [len(hs) for hs, _ in segments])

    def col(sents, k):
        return pa.array([[w[k] for w in s] for s in sents], pa.list_(pa.string()))

    text = lambda sents: [" ".join(w[0] for w in s) for s in sents]  # noqa: E731
    ref_lists, at = [], 0
    for _, rs in segments:
        ref_lists.append(text(refs[at:at + len(rs)]))
        at += len(rs)
    p, h, r, unit_ptr = paraphrase_segments(
        text(hyps), ref_lists, seg_ptr, table, analyzer="columns", hyp_lemma=col(hyps, 1), ref_lemma=col(refs, 1),
        hyp_pos=col(hyps, 2) if use_pos else None, ref_pos=col(refs, 2) if use_pos else None)
    got = p.references.to_pylist()
    row_i, at = 0, 0
    for s, (hs, rs) in enumerate(segments):
        for hyp in hs:
            expected = [slow_paraphrase(hyp, ref, rows, directed, use_pos) for ref in rs]
            assert got[row_i] == [e[0] for e in expected]
            assert edits(p, h, r, row_i, unit_ptr, s) == [e[1] for e in expected]
            assert list(p.count[p.units[row_i]:p.units[row_i + 1]]) == [len(e[1]) for e in expected]
            row_i += 1


def test_many_segments_across_threads(tmp_path):
    """Enough segments for every thread's chunk; equal to the reference row by row."""
    rng = np.random.default_rng(7)
    rows = [(LEMMAS[a], LEMMAS[b], "", ["wordnet", "meteor", "both"][s], p)
            for a, b, s, p in zip(rng.integers(0, 5, 15), rng.integers(0, 5, 15), rng.integers(0, 3, 15),
                                  rng.choice([0.1, 0.3], 15))]
    write_table(tmp_path / "t.tsv", rows)
    table, rows = load_table(tmp_path / "t.tsv"), as_written(rows)
    sents = [" ".join(rng.choice(list(LEMMAS), rng.integers(1, 8))) for _ in range(600)]
    hyps, refs = sents[:500], [[s] for s in sents[500:]]
    seg_ptr = np.arange(0, 501, 5)
    p, *_ = paraphrase_segments(hyps, refs, seg_ptr, table)
    for i, h in enumerate(hyps):
        ref = refs[i // 5][0]
        expected = slow_paraphrase([(w, w, "") for w in h.split()], [(w, w, "") for w in ref.split()], rows,
                                   False, False)
        assert p.references[i].as_py() == [expected[0]]


def test_table_merges_sources_and_directions(tmp_path):
    write_table(tmp_path / "t.tsv", [("big", "large", "", "wordnet", 0), ("large", "big", "", "meteor", 0.2),
                                     ("car", "auto", "N", "meteor", 0.1), ("car", "auto", "N", "meteor", 0.3),
                                     ("same", "same", "", "both", 0.5)])
    t = read_table(tmp_path / "t.tsv")
    got = {(r, h, pos): (int(k), float(p)) for r, h, pos, k, p in zip(t.ref, t.hyp, t.pos, t.rank, t.prob)}
    assert got == {("big", "large", ""): (RANK_BOTH, 0.2), ("large", "big", ""): (RANK_BOTH, 0.2),
                   ("car", "auto", "N"): (RANK_METEOR, 0.3), ("auto", "car", "N"): (RANK_METEOR, 0.3)}
    d = read_table(tmp_path / "t.tsv", directed=True)
    assert sorted(zip(d.ref, d.hyp, d.rank.tolist())) == [("big", "large", RANK_WORDNET), ("car", "auto", RANK_METEOR),
                                                          ("large", "big", RANK_METEOR)]


@pytest.mark.parametrize("line, message", [
    ("a\tb\t\tthesaurus\t", "source one of both, wordnet, meteor, found 'thesaurus'"),
    ("a\tb\t", "expected 4-5 tab-separated fields"),
    ("a\tb\t\tmeteor\tlots", "expected a probability, found 'lots'"),
])
def test_bad_table_lines_say_where(tmp_path, line, message):
    (tmp_path / "t.tsv").write_text("# header\nx\ty\t\twordnet\t\n" + line + "\n")
    with pytest.raises(InputError, match="line 3") as exc:
        read_table(tmp_path / "t.tsv")
    assert message in str(exc.value)
    with pytest.raises(InputError, match="found nothing"):
        read_table(tmp_path / "missing.tsv")


def test_lemma_columns_must_match_the_words(toy):
    with pytest.raises(InputError, match="sentence 1 has 2 words but 3 values"):
        paraphrase_segments(["a b", "c d"], [["a b"]], np.array([0, 2]), toy, analyzer="columns",
                            hyp_lemma=pa.array(["a b", "c d e"]), ref_lemma=pa.array(["a b"]))
    with pytest.raises(InputError, match="expected a lemma column"):
        paraphrase_segments(["a b"], [["a b"]], None, toy, analyzer="columns")
    with pytest.raises(InputError, match="analyzer: expected one of"):
        paraphrase("a", "b", toy, analyzer="morce")


@pytest.mark.exhaustive  # loading the spaCy pipeline takes seconds
def test_paper_figure_1_before_depfix_with_spacy_czech(tmp_path):
    """Barančíková 2014, Figure 1: poloha -> místo (same POS, NOUN); klasická stays, as its lemma
    klasický is in the hypothesis too; the result is the "Before Depfix" line."""
    pytest.importorskip("spacy")
    pytest.importorskip("cs_core_news_sm")
    write_table(tmp_path / "cs.tsv", [("poloha", "místo", "NOUN", "both", 0.1),
                                      ("už", "samotný", "ADV", "meteor", 0.1)])
    new, made = paraphrase("Samotné místo je klasické .", "Už poloha je klasická .", load_table(tmp_path / "cs.tsv"),
                           analyzer="spacy:cs_core_news_sm", lang="cz")
    assert (new, made) == ("Už místo je klasická .", [(1, "poloha", "místo")])  # už (ADV) vs samotný (ADJ): no pair


def test_table_sources_select_lines(tmp_path):
    write_table(tmp_path / "t.tsv", [("a", "b", "", "wordnet", 0), ("a", "c", "", "meteor", 0.2),
                                     ("a", "d", "", "both", 0.1)])
    wordnet = read_table(tmp_path / "t.tsv", directed=True, sources=("wordnet",))
    meteor = read_table(tmp_path / "t.tsv", directed=True, sources=("meteor",))
    assert (sorted(wordnet.hyp), sorted(meteor.hyp)) == (["b", "d"], ["c", "d"])
    assert paraphrase("b c d", "a", load_table(tmp_path / "t.tsv", sources=["meteor"]))[0] == "d"  # both first
    assert paraphrase("b c", "a", load_table(tmp_path / "t.tsv", sources=["meteor"]))[0] == "c"
    assert paraphrase("b c", "a", load_table(tmp_path / "t.tsv"))[0] == "b"  # WordNet before Meteor
    with pytest.raises(InputError, match="expected a non-empty subset of wordnet, meteor; found"):
        load_table(tmp_path / "t.tsv", sources=["both"])


def test_tagger_output_reaches_every_copy_of_a_sentence(monkeypatch):
    """Taggers see each distinct sentence once; every sentence, repeated or not, gets its own
    tokens' analyses back in order (a fake tagger: lemma = reversed word, POS = its length)."""
    from kbest_bleu.metrics.parmesan import analyze as an
    seen = []

    def fake(sentences, analyzer):
        seen.extend(" ".join(s) for s in sentences)
        return [w[::-1] for s in sentences for w in s], [str(len(w)) for s in sentences for w in s]

    monkeypatch.setattr(an, "_tag_sentences", fake)
    sents = ["ab c", "", "ab c", "dd eee f", "ab c", "x"]
    tokens = pa.array([w for s in sents for w in s.split()])
    ptr = np.cumsum([0] + [len(s.split()) for s in sents])
    lemma, pos = an.analyze_tokens(tokens, ptr, "spacy:fake")
    assert lemma.to_pylist() == [w[::-1] for s in sents for w in s.split()]
    assert pos.to_pylist() == [str(len(w)) for s in sents for w in s.split()]
    assert sorted(seen) == sorted(set(sents))


def test_simplemma_lemmas_find_inflected_pairs(toy):
    pytest.importorskip("simplemma")
    new, made = paraphrase("the big car was bought by the president .",
                           "the large automobile was purchased by the chairman .", toy, analyzer="simplemma")
    assert made == [(1, "large", "big"), (2, "automobile", "car"), (4, "purchased", "bought"), (7, "chairman", "president")]


def test_words_are_meteors_tokens_and_unchanged_references_stay_byte_identical(toy):
    """Words split on the jar's whitespace only ([ \\t\\n\\r\\f]): a no-break space joins two
    words into one token, as in Meteor. A reference without substitutions is returned as given;
    one with substitutions is rebuilt from its tokens with single spaces."""
    assert paraphrase("the big car", "the  large car ", toy) == ("the big car", [(1, "large", "big")])
    assert paraphrase("the big car", "the\u00a0large  car", toy) == ("the\u00a0large  car", [])
    assert paraphrase("the big car", "a\tlarge\u2003x large", toy) == ("a large\u2003x big", [(2, "large", "big")])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=["a", "é", " ", "\t", "\n", "\x0b", "\x1f", "\xa0", "\u2003", "\u2019", "\u3000"],
                        max_size=8), max_size=6), st.integers(0, 2))
def test_words_split_like_the_jar(strings, start):
    """words() = Java's split on [ \\t\\n\\r\\f]+ without empty strings, whichever path each row takes."""
    import re

    from kbest_bleu.metrics.parmesan.substitute import words
    arr = pa.array(strings, pa.string()).slice(min(start, len(strings)))
    tokens, ptr = words(arr)
    expected = [[w for w in re.split("[ \t\n\r\f]+", s) if w] for s in arr.to_pylist()]
    assert [tokens[a:b].to_pylist() for a, b in zip(ptr[:-1], ptr[1:])] == expected
