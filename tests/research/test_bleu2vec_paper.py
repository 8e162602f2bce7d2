"""The per-language training corpus of kbest_bleu.research.bleu2vec_paper on a hand-built data folder."""

import pyarrow as pa
import pyarrow.parquet as pq

from kbest_bleu.research.bleu2vec_paper import english_corpus, target_corpus


def test_target_corpus_takes_every_distinct_line_into_the_language(tmp_path):
    rows = [("en-cs", "Ahoj svete .", ["Ahoj světe .", "Zdravím ."]), ("en-cs", " Ahoj svete . ", ["Zdravím ."]),
            ("uk-cs", "Dobrý den", ["Dobrý den"]), ("cs-en", "Hello world", ["Hello , world"]),
            ("en-csb", "not Czech", ["still not"]), ("en-cs", "", [" "])]
    lp, hyp, refs = zip(*rows)
    pq.write_table(pa.table({"lp": lp, "hypothesis": hyp, "references": refs}), tmp_path / "wmt17_daseg.parquet")
    pq.write_table(pa.table({"hypothesis": ["An English list"], "references": [["Its reference"]]}),
                   tmp_path / "multeval.parquet")  # no lp: English target
    for lang, reader in (("cs", lambda o: target_corpus(tmp_path, o, "cs")), ("en", lambda o: english_corpus(tmp_path, o))):
        want = {s.strip() for lp_, h, rs in rows if lp_.endswith(f"-{lang}") for s in [h, *rs] if s.strip()}
        if lang == "en":
            want |= {"An English list", "Its reference"}
        out = tmp_path / f"corpus_{lang}.txt"
        n_lines, n_words = reader(out)
        lines = out.read_text(encoding="utf-8").splitlines()
        assert set(lines) == want and len(lines) == n_lines == len(want)
        assert n_words == sum(len(s.split()) for s in want)


def test_the_corpus_never_replaces_a_data_file(tmp_path):
    import pytest

    from kbest_bleu.errors import InputError
    pq.write_table(pa.table({"hypothesis": ["An English list"], "references": [["Its reference"]]}),
                   tmp_path / "multeval.parquet")
    before = (tmp_path / "multeval.parquet").read_bytes()
    with pytest.raises(InputError, match="--corpus-out .*destroy the input"):
        english_corpus(tmp_path, tmp_path / "multeval.parquet")
    assert (tmp_path / "multeval.parquet").read_bytes() == before
    out = tmp_path / "new" / "dir" / "corpus.txt"  # directories made for the corpus
    assert english_corpus(tmp_path, out)[0] == 2 and out.exists()


def test_the_corpus_is_never_written_into_the_models_directory(tmp_path):
    """--corpus-out inside --models replaced a trained model with the corpus text, then was refused."""
    import pytest

    from kbest_bleu.errors import InputError
    from kbest_bleu.research.bleu2vec_paper import main
    pq.write_table(pa.table({"lp": ["fi-en"], "hypothesis": ["a"], "references": [["a"]], "human_score": [0.0]}),
                   tmp_path / "wmt15_daseg.parquet")
    models = tmp_path / "models"
    models.mkdir()
    (models / "shared_en.1gram.w2v.bin").write_bytes(b"MODEL")
    for out in (models / "shared_en.1gram.w2v.bin", models):
        with pytest.raises(InputError, match="--corpus-out .*is inside --models"):
            main(tmp_path, models, out, train_models=True)
    assert (models / "shared_en.1gram.w2v.bin").read_bytes() == b"MODEL"


def test_undefined_correlations_print_as_a_dash_not_nan():
    from kbest_bleu.research.bleu2vec_paper import _markdown
    table = _markdown("metric", ["fi-en", "de-en"], {"sentBLEU": [float("nan"), 0.25]})
    assert "nan" not in table and "| sentBLEU | — | 0.250 |" in table
