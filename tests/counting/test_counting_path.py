"""One path from options to counts: every face scores a preset whose counted order differs from
max_order (NLTK's methods 5 and 7 read 5-grams whatever N) exactly as NLTK itself does."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

import kbest_bleu as kb
from kbest_bleu.batch import score_table
from kbest_bleu.cli import main
from kbest_bleu.research.metaeval import score_systems
from kbest_bleu.tuning import KbestLists, mbr_matrix

HYPS = ["the cat sat on the mat today", "a cat sat on a mat", "the the the cat", "on the mat the cat sat",
        "there is a cat on the mat"]
SEG = [0, 0, 0, 1, 1]
REFS = [["the cat sat on a mat today", "there is a cat on the mat"], ["the cat sat on the mat"]]
OPTIONS = [dict(compat="nltk", smoothing=s, max_order=2) for s in (5, 7)]


def _nltk(hyp, refs, smoothing):
    method = getattr(SmoothingFunction(), f"method{smoothing}")
    return sentence_bleu([r.split() for r in refs], hyp.split(), weights=(0.5, 0.5), smoothing_function=method)


def _want(smoothing):
    return np.array([_nltk(h, REFS[s], smoothing) for h, s in zip(HYPS, SEG)])


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: f"nltk-{o['smoothing']}")
def test_api_faces_equal_nltk(options):
    want = _want(options["smoothing"])
    assert kb.BleuConfig(**options).counted_order == 4
    assert kb.ngram_stats(HYPS, REFS, SEG, **options).max_order == 4  # counts up to 5-grams
    got = [kb.sentence_bleu(h, REFS[s], **options) for h, s in zip(HYPS, SEG)]
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert np.allclose(kb.score_kbest(HYPS, REFS, SEG, **options), want, rtol=1e-12, atol=0)
    cfg = kb.BleuConfig(**options)
    assert np.allclose(kb.sentence_scores(kb.ngram_stats(HYPS, REFS, SEG, cfg), cfg), want, rtol=1e-12, atol=0)
    table = pa.table({"segment_id": SEG, "hypothesis": HYPS, "references": [REFS[s] for s in SEG]})
    assert np.allclose(score_table(table, cfg)["bleu"].to_numpy(), want, rtol=1e-12, atol=0)
    scored = score_systems(table.append_column("lp", pa.array(["en-de"] * 5)).append_column(
        "system", pa.array([f"s{i}" for i in range(5)])), cfg)
    order = [int(s[1:]) for s in scored.table["system"].to_pylist()]
    assert np.allclose(kb.sentence_scores(scored.stats, cfg), want[order], rtol=1e-12, atol=0)
    kbl = KbestLists.from_table(table.append_column("features", pa.array([[float(i)] for i in range(5)])), cfg)
    assert np.allclose(kb.sentence_scores(kbl.stats, cfg), want, rtol=1e-12, atol=0)
    pairs = mbr_matrix(HYPS[:3], cfg)
    assert pairs[0, 1] == pytest.approx(_nltk(HYPS[0], [HYPS[1]], options["smoothing"]), rel=1e-12)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: f"nltk-{o['smoothing']}")
def test_cli_faces_equal_nltk(tmp_path, capsys, options):
    flags = ["--compat", "nltk", "-s", str(options["smoothing"]), "--max-order", "2", "-t", "none"]
    want = _want(options["smoothing"])
    pq.write_table(pa.table({"segment_id": SEG, "hypothesis": HYPS, "references": [REFS[s] for s in SEG]}),
                   tmp_path / "in.parquet")
    assert main(["score", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"), "-q"] + flags) == 0
    assert np.allclose(pq.read_table(tmp_path / "out.parquet")["bleu"].to_numpy(), want, rtol=1e-12, atol=0)
    # text-file faces: one segment per line (the first reference stream)
    (tmp_path / "a.txt").write_text("\n".join(HYPS[:2]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(HYPS[2:4]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join([REFS[0][0], REFS[1][0]]) + "\n")
    corpus = kb.corpus_bleu(HYPS[:2], [[REFS[0][0]], [REFS[1][0]]], tokenize="none", **options).score
    capsys.readouterr()
    assert main(["paired", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "-r", str(tmp_path / "r.txt"),
                 "--n-samples", "10"] + flags) == 0
    assert f"| Baseline: {tmp_path / 'a.txt'} | {100 * corpus:.2f} |" in capsys.readouterr().out
    # corpus, sacrebleu's shape: REF -i HYP, score only with 6 decimals
    assert main(["corpus", str(tmp_path / "r.txt"), "-i", str(tmp_path / "a.txt"), "-b", "-w", "6"] + flags) == 0
    assert float(capsys.readouterr().out.strip()) == pytest.approx(100 * corpus, abs=5e-7)
