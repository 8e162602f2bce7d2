"""Parmesan as a metric: paraphrase (tested against gold in test_parmesan_paraphrase) + Meteor
exact; the score equals Meteor on the hand-checked paraphrased references."""

import json
import pickle

import numpy as np
import pyarrow as pa
import pytest

from kbest_bleu.errors import InputError
from kbest_bleu.metrics import load_metric
from kbest_bleu.metrics.meteor import meteor_params, meteor_rows
from kbest_bleu.metrics.parmesan import from_options, load_table, paraphrase, parmesan_segments, sentence_parmesan


@pytest.fixture(scope="module")
def demo(extensions):
    return [json.loads(line) for line in (extensions / "parmesan_demo" / "parmesan_demo.jsonl").open()]


@pytest.fixture(scope="module")
def table_path(extensions):
    return str(extensions / "parmesan_toy_table_en.tsv")


def test_scores_are_meteor_on_the_gold_paraphrased_references(demo, table_path):
    metric = load_metric("parmesan", paraphrases=table_path)
    hyps = pa.array([d["hyp"] for d in demo])
    out = metric.score_segments(hyps, pa.array([[d["ref"]] for d in demo]), np.arange(5), pa.table({"x": [0] * 4}),
                                stats=True)
    cols = dict(zip([f.name for f in metric.output_fields(True)], out))
    gold = meteor_rows(hyps, [[d["paraphrased_ref"]] for d in demo])
    np.testing.assert_array_equal(cols["parmesan"].to_numpy(), gold.score)
    np.testing.assert_array_equal(cols["parmesan_chunks"].to_numpy(), gold.stats[:, 20])
    assert cols["parmesan_reference"].to_pylist() == [d["paraphrased_ref"] for d in demo]
    assert cols["parmesan_substitutions"].to_pylist() == [len(d["edits"]) for d in demo]
    assert [f.name for f in metric.output_fields(False)] == ["parmesan", "parmesan_reference"]
    assert (cols["parmesan"].to_numpy() >= meteor_rows(hyps, [[d["ref"]] for d in demo]).score).all()


def test_several_references_best_one_first_on_ties(demo, table_path):
    """Two references per segment, K = 2: each row's score is the best over its references'
    paraphrases, scored one pair at a time; the reported reference is that one (first on ties)."""
    table = load_table(table_path)
    hyps = [demo[0]["hyp"], demo[2]["hyp"], demo[3]["hyp"], demo[1]["hyp"]]
    refs = [[demo[2]["ref"], demo[0]["ref"]], [demo[3]["ref"], demo[3]["ref"]]]
    r = parmesan_segments(hyps, refs, np.array([0, 2, 4]), table, meteor_params("en"))
    for row, h in enumerate(hyps):
        candidates = [paraphrase(h, ref, table)[0] for ref in refs[row // 2]]
        scores = [meteor_rows([h], [[c]]).score[0] for c in candidates]
        assert r.meteor.score[row] == max(scores)
        assert r.references[row].as_py() == candidates[int(np.argmax(scores))]
    assert r.meteor.best_reference.tolist()[2:] == [0, 0]  # equal references: the first


def test_lemma_and_pos_columns(table_path):
    """Lemmas from columns: 'bought'/'purchased' carry lemmas buy/purchase, so the table pair
    applies (the lowercase analyzer leaves them); POS columns must agree."""
    metric = from_options(paraphrases=table_path, analyzer="columns", hyp_lemma_col="hl", ref_lemma_col="rl",
                          hyp_pos_col="hp", ref_pos_col="rp")
    assert metric.input_columns() == ["hl", "hp", "rl", "rp"]
    hyps = pa.array(["he bought it", "he bought it"])
    refs = pa.array([["he purchased it"]])
    table = pa.table({"hl": ["he buy it", "he buy it"], "hp": ["P V P", "P N P"],
                      "rl": [["he purchase it"], ["he purchase it"]], "rp": [["P V P"], ["P V P"]]})
    out = metric.score_segments(hyps, refs, np.array([0, 2]), table, stats=False)
    assert out[1].to_pylist() == ["he bought it", "he purchased it"]  # second row: POS differ
    np.testing.assert_array_equal(out[0].to_numpy(), meteor_rows(hyps, [["he bought it"], ["he purchased it"]]).score)


def test_signature_pickle_and_option_errors(table_path, tmp_path):
    metric = from_options(paraphrases=table_path, lang="cz")
    sig = metric.signature()
    assert sig.startswith("parmesan|table:parmesan_toy_table_en.tsv:8072:") and "depfix:no" in sig
    assert "lang:cz" in sig and "analyzer:lower" in sig and "sources:wordnet+meteor" in sig
    assert "sources:wordnet|" in from_options(paraphrases=table_path, sources="wordnet").signature()
    assert pickle.loads(pickle.dumps(metric)).signature() == sig
    for kwargs, message in [({}, "expected a paraphrase table"),
                            ({"paraphrases": table_path, "analyzer": "columns"}, "expects --hyp-lemma-col"),
                            ({"paraphrases": table_path, "hyp_lemma_col": "x"}, "with --analyzer columns only"),
                            ({"paraphrases": str(tmp_path / "none.tsv")}, "found nothing at")]:
        with pytest.raises(InputError, match=message):
            from_options(**kwargs)


def test_repeated_hypotheses_scored_once_equal_scoring_every_row(demo, table_path):
    """K-best lists repeat hypotheses; Parmesan scores each distinct (hypothesis, paraphrased
    references) row once. The result equals Meteor on every row's own paraphrased references."""
    table = load_table(table_path)
    hyps = [d["hyp"] for d in demo] * 3 + [demo[0]["hyp"]]
    refs = [[demo[0]["ref"], demo[2]["ref"]], [demo[3]["ref"]]]
    r = parmesan_segments(hyps, refs, np.array([0, 6, 13]), table, meteor_params("en"))
    every = meteor_rows(hyps, r.paraphrases.references, meteor_params("en"))
    for name in ("score", "precision", "recall", "fragmentation", "stats", "best_reference"):
        np.testing.assert_array_equal(getattr(r.meteor, name), getattr(every, name))
    assert r.references.to_pylist()[0] == r.references.to_pylist()[4]  # the same hypothesis in segment 0
    with pytest.raises(InputError, match="expected hypotheses as strings"):
        parmesan_segments([["a", "b"]], [["a b"]], None, table)


def test_sentence_parmesan_one_pair(demo, table_path):
    table = load_table(table_path)
    d = demo[0]
    assert sentence_parmesan(d["hyp"], d["ref"], table) == meteor_rows([d["hyp"]], [[d["paraphrased_ref"]]]).score[0]
    both = sentence_parmesan(d["hyp"], [demo[1]["ref"], d["ref"]], table, meteor_params("cz"))
    assert both == meteor_rows([d["hyp"]], [[d["paraphrased_ref"]]], meteor_params("cz")).score[0]


def test_parmesan_alone_takes_meteors_options_on_the_command_line(tmp_path, table_path, capsys):
    """Parmesan scores with Meteor: --meteor-lower with --metric parmesan alone is Parmesan's option
    too (an option of a metric not selected is refused: parmesan.cli.OPTIONS_FROM)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kbest_bleu.cli import main
    src = tmp_path / "k.parquet"
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["The cat sat"], "references": [["the cat sat"]]}), src)
    for lower, want in ((False, None), (True, 1.0)):
        out = tmp_path / f"o{lower}.parquet"
        assert main(["score", str(src), "-o", str(out), "-q", "--metric", "parmesan", "--paraphrases", str(table_path),
                     *(["--meteor-lower"] if lower else [])]) == 0, capsys.readouterr().err
        got = pq.read_table(out)["parmesan"][0].as_py()
        assert (got == want) if want is not None else got < 1.0
