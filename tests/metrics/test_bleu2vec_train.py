"""BLEU2VEC training (paper sections 2.1 and 2.2), model loading, and the CLI commands."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kbest_bleu.errors import InputError
from kbest_bleu.metrics.bleu2vec import cli
from kbest_bleu.metrics.bleu2vec.models import joint_epoch, load_embeddings, ngram_tokens, read_corpus, train
from kbest_bleu.metrics.bleu2vec.score import bleu2vec_scores

gensim = pytest.importorskip("gensim")
CORPUS = Path(__file__).resolve().parents[1] / "data" / "bleu2vec" / "tiny_corpus.txt"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    paths = train(CORPUS, out, orders=(1, 2, 3), joint=True, name="tiny", vector_size=8, epochs=2,
                  min_counts="2,3,3", workers=1, progress=False)
    return out, paths


def test_train_writes_the_toy_layout(trained):
    out, paths = trained
    assert sorted(p.name for p in paths) == ["tiny.1gram.w2v.bin", "tiny.2gram.w2v.bin", "tiny.3gram.w2v.bin",
                                             "tiny.joint.w2v.bin"]
    emb = load_embeddings(out)
    assert emb.orders == [1, 2, 3] and not emb.joint
    sentences = read_corpus(CORPUS)
    for n, min_count in ((1, 2), (2, 3), (3, 3)):
        counts = Counter(g for s in sentences for g in ngram_tokens(s, n))
        # section 2.1: the model's tokens are exactly the '_'-joined n-grams seen min_count times
        assert set(emb.keys[n].to_pylist()) == {g for g, c in counts.items() if c >= min_count}
        assert emb.matrix(n).dtype == np.float32 and emb.matrix(n).shape[1] == 8


def test_loaded_vectors_give_gensims_similarity(trained):
    out, _ = trained
    emb = load_embeddings(out)
    kv = gensim.models.KeyedVectors.load_word2vec_format(str(out / "tiny.2gram.w2v.bin"), binary=True)
    pairs = list(zip(kv.index_to_key[:10], kv.index_to_key[10:20]))
    for a, b in pairs:
        assert emb.similarity(a, b, 2) == pytest.approx(float(kv.similarity(a, b)), abs=1e-6)
    assert emb.similarity("the_cat", "no_such", 2) is None


def test_joint_model_serves_every_order(trained, tmp_path):
    out, _ = trained
    (tmp_path / "tiny.joint.w2v.bin").write_bytes((out / "tiny.joint.w2v.bin").read_bytes())
    emb = load_embeddings(tmp_path)
    assert emb.joint and emb.has_order(2) and emb.has_order(3)
    keys = set(emb.keys[0].to_pylist())
    assert "mat" in keys and "the_mat" in keys  # words and n-grams are entries of one model
    scores = bleu2vec_scores(["the kitten sat on the rug ."], ["the cat sat on the mat ."], embeddings=emb)
    assert 0 < scores[0] < 1


def test_joint_epoch_never_overlaps_and_redraws():
    """Section 2.2: joined n-grams cover disjoint words, rarer n-grams are kept more often
    (p = f^-1/8), and the choice changes between epochs."""
    sentences = [["a", "b", "c", "d"]] * 50
    counts = {2: Counter({"a_b": 1, "b_c": 1, "c_d": 4096}), 3: Counter()}
    rng = np.random.default_rng(0)
    epochs = [list(joint_epoch(sentences, (1, 2, 3), counts, {1: 1, 2: 1, 3: 1}, rng)) for _ in range(2)]
    for epoch in epochs:
        for s in epoch:
            assert "".join(w.replace("_", "") for w in s) == "abcd"
    flat = Counter(g for s in epochs[0] for g in s)
    assert flat["a_b"] == 50  # f = 1: always sampled
    assert 10 < flat["c_d"] < 40  # f = 4096: p = 4096^-1/8 = 0.35, when not blocked by b_c
    assert epochs[0] != epochs[1]


def _parser():
    p = argparse.ArgumentParser()
    cli.add_commands(p.add_subparsers(dest="command"))
    return p


def test_cli_train_and_score_options(tmp_path, capsys):
    args = _parser().parse_args(["bleu2vec", "train", str(CORPUS), "-o", str(tmp_path), "--orders", "1,2",
                                 "--vector-size", "8", "--epochs", "1", "--min-counts", "2,3", "--workers", "1",
                                 "-q"])
    assert args.func(args) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"model.1gram.w2v.bin", "model.2gram.w2v.bin"}
    assert str(tmp_path / "model.1gram.w2v.bin") in capsys.readouterr().out
    score = argparse.ArgumentParser()
    cli.add_score_options(score.add_argument_group("bleu2vec"))
    options = cli.metric_options(score.parse_args(["--embeddings", str(tmp_path), "--bleu2vec-weights", "0.5,0.5",
                                                   "--bleu2vec-min-similarity", "0.2"]))
    assert options == {"embeddings": str(tmp_path), "mode": "corrected", "min_similarity": 0.2, "weights": "0.5,0.5"}
    from kbest_bleu.metrics import load_metric
    assert "orders:2|w:0.5,0.5" in load_metric("bleu2vec", **options).signature()


def test_cli_bad_input_exits_2(tmp_path, capsys):
    p = _parser()
    for argv, message in ((["bleu2vec", "train", str(tmp_path / "none.txt"), "-o", str(tmp_path)], "expected a text"),
                          (["bleu2vec", "train", str(CORPUS), "-o", str(tmp_path), "--orders", "1,x"], "--orders")):
        args = p.parse_args(argv)
        assert args.func(args) == 2
        assert message in capsys.readouterr().err


def test_metaeval_segment_table_on_real_data(shared_data, extensions):
    """The sentence-BLEU column equals the check values published with wmt15_daseg (Pearson of
    sacrebleu sentence_bleu with the DA scores); the BLEU2VEC columns are correlations in [-1, 1]."""
    from kbest_bleu.research.bleu2vec_paper import _markdown, segment_table
    from kbest_bleu.metrics.bleu2vec.score import from_options
    emb = load_embeddings(extensions / "bleu2vec_toy_models")
    variants = {"faithful": from_options(emb, "faithful"), "corrected": from_options(emb, tokenize="none")}
    lps, table = segment_table(shared_data, variants, "wmt15_daseg", ("cs-en", "de-en", "fi-en", "ru-en"))
    assert table["sentBLEU (sacrebleu 13a)"] == pytest.approx([0.4930, 0.5295, 0.5251, 0.5345], abs=6e-5)
    assert all(-1 <= v <= 1 for name in variants for v in table[name])
    assert _markdown("metric", lps, table).splitlines()[0] == "| metric | cs-en | de-en | fi-en | ru-en | average |"


def test_cli_metaeval_without_data_exits_2(tmp_path, capsys):
    args = _parser().parse_args(["bleu2vec", "metaeval", "--data", str(tmp_path)])
    assert args.func(args) == 2
    assert "expected the shared data" in capsys.readouterr().err


def test_train_refuses_an_existing_file_as_its_model_directory(tmp_path):
    """The library call, not only the command: an existing file is never replaced by a directory."""
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat\n")
    (tmp_path / "model").write_text("keep me")
    with pytest.raises(InputError, match="is an existing file; expected a model directory"):
        train(tmp_path / "corpus.txt", tmp_path / "model", orders=(1,))
    assert (tmp_path / "model").read_text() == "keep me"


@pytest.mark.parametrize("min_counts", ["999,999,999", "1,999,999"])  # refused at order 1, or after order 1 is written
def test_a_failed_training_leaves_no_directory_and_no_new_model(tmp_path, min_counts):
    """`bleu2vec train -o a/b/c` on too little text failed (exit 2) but left a/b/c behind."""
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "other.bin").write_bytes(b"something of the user's")
    for out in (tmp_path / "a" / "b" / "c", tmp_path / "keep"):
        with pytest.raises(InputError, match="no n-gram is seen 999 times"):
            train(CORPUS, out, orders=(1, 2, 3), name="tiny", vector_size=8, epochs=1, min_counts=min_counts,
                  workers=1, progress=False)
    assert not (tmp_path / "a").exists()
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["other.bin"]


def test_a_failed_training_keeps_the_models_that_were_there(tmp_path):
    """Models are renamed into place together at the end: an order that fails leaves every model
    file as it was (the first order's was replaced before, its old file lost)."""
    out = tmp_path / "models"
    train(CORPUS, out, orders=(1,), name="m", vector_size=8, epochs=1, min_counts="1", workers=1, progress=False)
    old = (out / "m.1gram.w2v.bin").read_bytes()
    with pytest.raises(InputError, match="order 2: no n-gram is seen"):
        train(CORPUS, out, orders=(1, 2), name="m", vector_size=4, epochs=1, min_counts="1,1000000", workers=1,
              progress=False)
    assert (out / "m.1gram.w2v.bin").read_bytes() == old and sorted(p.name for p in out.iterdir()) == ["m.1gram.w2v.bin"]
    new = tmp_path / "a" / "b"
    with pytest.raises(InputError):
        train(CORPUS, new, orders=(1, 2), name="m", vector_size=4, epochs=1, min_counts="1,1000000", workers=1,
              progress=False)
    assert not (tmp_path / "a").exists()  # the directories it made are gone with it


@pytest.mark.parametrize("options, words", [
    (dict(name="../evil"), "--name: expected a file-name prefix"),
    (dict(orders=(2,)), "orders: expected the n-gram orders 1 to N"),
    (dict(orders=(1, 1)), "orders: expected the n-gram orders 1 to N"),
    (dict(name="other"), "holds the models named m"),
])
def test_models_the_scorer_could_not_load_are_refused_before_training(tmp_path, options, words):
    """A model set outside -o (--name ../evil), one without every order from 1, or a second name
    beside another set: each was written with exit 0, then refused by the scorer."""
    out = tmp_path / "models"
    train(CORPUS, out, orders=(1,), name="m", vector_size=4, epochs=1, min_counts="1", workers=1, progress=False)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    kwargs = dict(orders=(1,), name="m", vector_size=4, epochs=1, min_counts="1", workers=1, progress=False)
    with pytest.raises(InputError, match=words):
        train(CORPUS, out, **{**kwargs, **options, "min_counts": None})
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
