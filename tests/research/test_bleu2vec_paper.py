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
