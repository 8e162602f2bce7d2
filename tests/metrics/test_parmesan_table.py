"""Parmesan section 3.1 table filtering (``kbest-bleu parmesan build-table``) and its CLI hooks."""

import argparse
import gzip

import pytest

from kbest_bleu.metrics.parmesan import cli, from_options
from kbest_bleu.metrics.parmesan.table import build_table, read_meteor_pairs, read_synsets, read_table

METEOR = [("0.5", "cars", "automobiles"), ("0.2", "big", "large"), ("0.1", "the car", "an auto"),
          ("0.3", "Big", "big"), ("0.4", "big", "large"), ("0.05", "cars", "xqzzyvw")]
SYNSETS = "big\n01\nlarge\n01 02\nhuge\n02\nalone\n03\nbig_deal\n01\n"


def _files(tmp_path):
    with gzip.open(tmp_path / "paraphrase-xx.gz", "wt") as f:
        f.write("".join(f"{p}\n{a}\n{b}\n" for p, a, b in METEOR))
    (tmp_path / "pairs.tsv").write_text("# comment\n" + "".join(f"{p}\t{a}\t{b}\n" for p, a, b in METEOR))
    (tmp_path / "x.synsets").write_text(SYNSETS)


def _read(path):
    return [tuple(line.rstrip("\n").split("\t")) for line in open(path) if not line.startswith("#")]


def test_both_meteor_formats_read_alike(tmp_path):
    _files(tmp_path)
    for name in ("paraphrase-xx.gz", "pairs.tsv"):
        prob, a, b = read_meteor_pairs(tmp_path / name)
        assert list(zip(prob.tolist(), a.to_pylist(), b.to_pylist())) == [(float(p), x, y) for p, x, y in METEOR]
    assert sorted(zip(*read_synsets(tmp_path / "x.synsets"))) == [
        ("big", "large"), ("huge", "large"), ("large", "big"), ("large", "huge")]


def test_filter_words_lowercased(tmp_path):
    """Single words only, different lemmas (Big = big dropped), duplicates keep the best prob,
    WordNet pairs tagged wordnet, and both where Meteor has them too."""
    _files(tmp_path)
    counts = build_table(tmp_path / "paraphrase-xx.gz", tmp_path / "out.tsv", analyzer="lower",
                         synonyms=str(tmp_path / "x.synsets"))
    assert counts == {"read": 6, "single-word": 5, "kept": 6, "wordnet": 3, "both": 1}
    assert sorted(_read(tmp_path / "out.tsv")) == [
        ("big", "large", "", "both", "0.4"), ("cars", "automobiles", "", "meteor", "0.5"),
        ("cars", "xqzzyvw", "", "meteor", "0.05"), ("huge", "large", "", "wordnet", ""),
        ("large", "big", "", "wordnet", ""), ("large", "huge", "", "wordnet", "")]


def test_filter_with_simplemma_lemmas_and_unknown_words(tmp_path):
    pytest.importorskip("simplemma")
    _files(tmp_path)
    build_table(tmp_path / "pairs.tsv", tmp_path / "out.tsv", analyzer="simplemma", lang="en", min_prob=0.3)
    # cars/automobiles lemmatized; big/large below min_prob at 0.2 but kept at 0.4; xqzzyvw unknown
    assert sorted(_read(tmp_path / "out.tsv")) == [("big", "large", "", "meteor", "0.4"),
                                                   ("car", "automobile", "", "meteor", "0.5")]


def _parser():
    """A parser like kbest-bleu's: the parmesan command, and the score options of Meteor and Parmesan."""
    from kbest_bleu.metrics.meteor import cli as meteor_cli
    parser = argparse.ArgumentParser()
    cli.add_commands(parser.add_subparsers(dest="command"))
    meteor_cli.add_score_options(parser.add_argument_group("meteor"))
    cli.add_score_options(parser.add_argument_group("parmesan"))
    return parser


def test_cli_build_table_and_errors(tmp_path, capsys):
    _files(tmp_path)
    args = _parser().parse_args(["parmesan", "build-table", str(tmp_path / "pairs.tsv"), "-o", str(tmp_path / "o.tsv"),
                                 "--analyzer", "lower"])
    assert args.func(args) == 0
    assert "read 6 single-word 5 kept 3 wordnet 0 both 0" in capsys.readouterr().out
    args = _parser().parse_args(["parmesan", "build-table", str(tmp_path / "nope.gz"), "-o", str(tmp_path / "o.tsv")])
    assert args.func(args) == 2
    assert "found nothing at" in capsys.readouterr().err
    for name in ("t.parquet", "t.tsv.gz"):  # a text table under a name that says otherwise: refused, nothing written
        args = _parser().parse_args(["parmesan", "build-table", str(tmp_path / "pairs.tsv"), "-o", str(tmp_path / name),
                                     "--analyzer", "lower"])
        assert args.func(args) == 2 and not (tmp_path / name).exists()
        assert f"-o '{tmp_path / name}'" in capsys.readouterr().err


def test_score_options_map_to_from_options(extensions):
    args = _parser().parse_args(["--paraphrases", "t.tsv", "--analyzer", "columns", "--hyp-lemma-col", "hl",
                                 "--ref-lemma-col", "rl", "--paraphrases-directed", "--lang", "cz"])
    opts = cli.metric_options(args)
    assert opts["paraphrases"] == "t.tsv" and opts["analyzer"] == "columns" and opts["directed"]
    assert (opts["hyp_lemma_col"], opts["ref_lemma_col"], opts["hyp_pos_col"], opts["lang"]) == ("hl", "rl", None, "cz")
    args = _parser().parse_args(["--paraphrases", str(extensions / "parmesan_toy_table_en.tsv"), "--lang", "cz",
                                 "--meteor-jar-compat"])
    metric = from_options(**cli.metric_options(args))
    assert "lang:cz" in metric.signature() and "jar_compat:yes" in metric.signature()


def test_cli_metaeval_without_data_exits_2(tmp_path, capsys):
    args = _parser().parse_args(["parmesan", "metaeval", "--data", str(tmp_path)])
    assert args.func(args) == 2
    assert "expected the shared data" in capsys.readouterr().err


@pytest.mark.exhaustive
def test_metaeval_en_cs_reproduces_the_papers_meteor_exact(shared_data):
    """Barančíková 2014 Table 4, WMT12 Original / No paraphr.: Pearson 0.861 (Meteor 1.4)."""
    from kbest_bleu.research.parmesan_paper import en_cs
    rows = {m: (paper, ours, n) for m, paper, ours, n in en_cs(shared_data)}
    paper, ours, n = rows["Meteor exact (cz)"]
    assert n == 13 and abs(ours - paper) < 0.005


def test_simplemma_czech_under_meteors_language_code():
    pytest.importorskip("simplemma")
    import pyarrow as pa
    from kbest_bleu.metrics.parmesan.analyze import analyze_words
    lemma, pos, known = analyze_words(pa.array(["klasická", "polohy"]), "simplemma", "cz")
    assert lemma.to_pylist() == ["klasický", "poloha"] and pos is None and known.all()


@pytest.mark.parametrize("value, ok", [("1.158", True), ("0", True), ("-0.1", False), ("nan", False), ("inf", False)])
def test_meteor_probabilities_above_one_are_read_bad_ones_refused(tmp_path, value, ok):
    """Meteor 1.5's own paraphrase-en holds pivoted probabilities a little above 1 (1.158): they
    are weights, read as they are; negative, NaN and infinite values are refused in one line."""
    (tmp_path / "pairs.tsv").write_text(f"0.5\tcars\tautomobiles\n{value}\tbig\tlarge\n")
    (tmp_path / "t.tsv").write_text(f"big\tlarge\t\tmeteor\t{value}\n")
    from kbest_bleu.errors import InputError
    if ok:
        assert read_meteor_pairs(tmp_path / "pairs.tsv")[0].tolist() == [0.5, float(value)]
        assert read_table(tmp_path / "t.tsv").ref[0] == "big"
    else:
        with pytest.raises(InputError, match="finite, non-negative"):
            read_meteor_pairs(tmp_path / "pairs.tsv")
        with pytest.raises(InputError, match="line 1: expected a finite, non-negative probability"):
            read_table(tmp_path / "t.tsv")
