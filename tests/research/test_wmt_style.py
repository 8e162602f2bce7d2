"""The WMT-style table (kbest_bleu.research.wmt_style) and `kbest-bleu metaeval judged --wmt-style`
on hand-built judged tables: the pivot to matrices, acc23 with tie calibration by brute force,
SPA and accuracy against the (separately tested) system-level functions on hand-pivoted matrices;
the chrF columns of scripts/wmt_style_metaeval.py against sacrebleu on real WMT22 rows; its
--bleu2vec-models option and the BLEU2VEC column of each pair against bleu2vec_scores with the
model of the pair's target language."""

import argparse
import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import CHRF

from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.research.system_level import pairwise_accuracy, soft_pairwise_accuracy
from kbest_bleu.research.wmt_style import matrices, wmt_table

SYSTEMS, SEGS = ["A", "B", "C", "D"], [0, 1, 2, 3, 4]
H = np.array([[3, 1, 2, 2, 0], [1, 1, 0, 2, 1], [2, 0, 2, 1, 1], [0, 2, 1, 0, 1]], float)
M1 = np.array([[.9, .2, .5, .6, .1], [.3, .25, .1, .6, .3], [.5, .1, .55, .3, .35], [.1, .6, .3, .2, .3]])
M2 = np.array([[.1, .5, .2, .3, .4], [.6, .2, .3, .1, .2], [.2, .4, .1, .5, .1], [.3, .1, .6, .4, .5]])


def _table(h=H):
    rows = [(s, g, h[i, j], M1[i, j], M2[i, j]) for i, s in enumerate(SYSTEMS) for j, g in enumerate(SEGS)]
    s, g, hh, a, b = zip(*rows)
    return pa.table({"lp": ["xx"] * len(rows), "segment_id": list(g), "system": list(s), "h": list(hh),
                     "m1": list(a), "m2": list(b)})


def _brute_acc23(h, m):
    """Per segment over its systems, every candidate threshold; first maximum of the mean."""
    cands = sorted({0.0} | {abs(m[a, j] - m[b, j]) for j in range(h.shape[1])
                            for a, b in itertools.combinations(range(h.shape[0]), 2)})
    best = None
    for eps in cands:
        accs = []
        for j in range(h.shape[1]):
            ok = [(h[a, j] == h[b, j]) == (abs(m[a, j] - m[b, j]) <= eps) and
                  (h[a, j] == h[b, j] or (h[a, j] - h[b, j]) * (m[a, j] - m[b, j]) > 0)
                  for a, b in itertools.combinations(range(h.shape[0]), 2)]
            accs.append(np.mean(ok))
        v = np.mean(accs)
        if best is None or v > best[0] + 1e-12:
            best = (v, eps)
    return best


def test_matrices_pivot_missing_and_errors():
    t = _table().filter(pa.array([not (r["system"] == "B" and r["segment_id"] == 3) for r in _table().to_pylist()]))
    systems, segs, h, ms = matrices(t, ["m1"], "h", "xx")
    assert systems == SYSTEMS and segs.tolist() == SEGS
    assert np.isnan(h[1, 3]) and np.isnan(ms["m1"][1, 3]) and h[0, 0] == 3
    with pytest.raises(InputError, match="twice"):
        matrices(pa.concat_tables([_table(), _table()]), ["m1"], "h", "xx")
    bad = _table().set_column(4, "m1", pa.array([None] + M1.ravel().tolist()[1:], pa.float64()))
    with pytest.raises(InputError, match="NaN on a row"):
        matrices(bad, ["m1"], "h", "xx")


def test_wmt_table_values():
    rows = {r.metric: r for r in wmt_table(_table(), ["m1", "m2"], human="h", k=200, seed=3)}
    for name, m in (("m1", M1), ("m2", M2)):
        value, eps = _brute_acc23(H, m)
        assert rows[name].seg_acc == pytest.approx(value, abs=1e-12) and rows[name].epsilon == eps
        assert rows[name].spa == pytest.approx(soft_pairwise_accuracy(H, m), abs=1e-12)
        assert rows[name].sys_acc == pytest.approx(pairwise_accuracy(H.mean(axis=1), m.mean(axis=1))[0], abs=1e-12)
        assert rows[name].systems == 4
    # m1 tracks the human scores and m2 does not: ranked first at the segment level
    assert rows["m1"].seg_rank == 1 and rows["m1"].seg_acc > rows["m2"].seg_acc


def test_cli_wmt_style_human_and_pairs(tmp_path, capsys):
    pq.write_table(_table(), tmp_path / "t.parquet")
    pairs = pa.table({"lp": ["xx"] * 4, "segment_id": [0, 0, 1, 2], "better_system": ["A", "C", "D", "A"],
                      "worse_system": ["B", "D", "A", "B"]})
    pq.write_table(pairs, tmp_path / "p.parquet")
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m1,m2", "--human", "h",
                 "--wmt-style", "--n-perm", "100"]) == 0
    out = capsys.readouterr().out
    body = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| xx")]
    got = {r[1]: float(r[2]) for r in body}
    assert got["m1"] == pytest.approx(_brute_acc23(H, M1)[0], abs=5e-4)
    assert main(["metaeval", "judged", str(tmp_path / "t.parquet"), "--metric", "m1,m2", "--pairs",
                 str(tmp_path / "p.parquet"), "--wmt-style", "--n-perm", "100"]) == 0
    out = capsys.readouterr().out
    body = {r[1]: r for r in ([c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
                              if line.startswith("| xx"))}
    # m1 orders every preference right: segment 0 (A>B .9>.3, C>D .5>.1), 1 (D>A .6>.2), 2 (A>B .5>.1)
    assert float(body["m1"][2]) == 1.0 and body["m1"][3] == "0"
    # m2: segment 0 A>B .1<.6 wrong, C>D .2<.3 wrong; 1 D>A .1<.5 wrong; 2 A>B .2<.3 wrong
    assert float(body["m2"][2]) == 0.0
    assert "SPA" in out and body["m1"][5] == "—"  # no segment-level human scores: no SPA


def _script():
    path = Path(__file__).resolve().parents[2] / "scripts" / "wmt_style_metaeval.py"
    spec = importlib.util.spec_from_file_location("wmt_style_metaeval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_chrf_columns_equal_sacrebleu(shared_data):
    # WMT22 zh-en, 3 segments x 20 systems (references included), 2 references each: the script's
    # chrF / chrF++ columns (one reference list per segment, best reference per row) against
    # sacrebleu's CHRF.sentence_score on each row with its own references
    t = pq.read_table(shared_data / "wmt22_zhen_mtme.parquet", filters=[("segment_id", "in", [3, 4, 5])],
                      columns=["lp", "segment_id", "system", "hypothesis", "references"])
    t = t.take(pc.sort_indices(t, [("system", "descending")]))  # the script must realign rows itself
    opts = argparse.Namespace(chrf=True, parmesan_table=None, bleu2vec_models=None, cache={})
    out, names = _script().score(t, opts)
    assert {"chrf", "chrf++"} <= set(names) and out.num_rows == 60
    rows = out.to_pylist()
    assert len({len(r["references"]) for r in rows}) == 1 and len(rows[0]["references"]) == 2
    for name, word_order in (("chrf", 0), ("chrf++", 2)):
        ref = CHRF(word_order=word_order)
        want = [ref.sentence_score(r["hypothesis"], r["references"]).score / 100 for r in rows]
        assert np.allclose([r[name] for r in rows], want, rtol=0, atol=1e-12)
    assert len({r["chrf"] for r in rows}) > 30  # real spread, not one value everywhere


def test_script_bleu2vec_models_option(tmp_path):
    parse = _script().bleu2vec_models
    en, cs = tmp_path / "en", tmp_path / "cs"
    en.mkdir(), cs.mkdir()
    assert parse(str(en)) == {"en": str(en)}  # the single-directory form: English
    assert parse(f"en={en}, cs={cs}") == {"en": str(en), "cs": str(cs)}
    for bad, match in ((f"en={en},en={cs}", "each language once"), (f"{en},cs={cs}", "lang=DIR"),
                       (f"cs={tmp_path / 'none'}", "no model directory"), ("cs=", "lang=DIR")):
        with pytest.raises(argparse.ArgumentTypeError, match=match):
            parse(bad)


def test_script_bleu2vec_column_uses_the_target_languages_model(tmp_path):
    # tiny models for en and cs (same English corpus, different seeds) and zh (Chinese without
    # spaces, zh tokens): a pair into cs is scored with the cs model (= bleu2vec_scores with it, not
    # the en model), a pair into zh with the zh model on zh tokens (13a would leave each line one
    # token), a pair into de (no model) not at all
    pytest.importorskip("gensim")
    from kbest_bleu.metrics.bleu2vec.models import train
    from kbest_bleu.metrics.bleu2vec.score import bleu2vec_scores
    english = Path(__file__).resolve().parents[1] / "data" / "bleu2vec" / "tiny_corpus.txt"
    rng = np.random.default_rng(0)
    chars = list("我们你他在家吃饭看书学校朋友今天明")
    chinese = tmp_path / "zh.txt"
    chinese.write_text("\n".join("".join(rng.choice(chars, rng.integers(5, 12))) + "。" for _ in range(400)) + "\n")
    corpora = {"en": (english, "13a"), "cs": (english, "13a"), "zh": (chinese, "zh")}
    dirs = {lang: tmp_path / lang for lang in corpora}
    for seed, (lang, (corpus, tok)) in enumerate(corpora.items()):
        train(corpus, dirs[lang], orders=(1, 2), name=lang, vector_size=8, epochs=2, min_counts="2,3", workers=1,
              seed=seed + 1, progress=False, tokenize=tok)
    opts = argparse.Namespace(chrf=False, parmesan_table=None, bleu2vec_models={k: str(v) for k, v in dirs.items()},
                              cache={})
    for lp, corpus in (("en-cs", english), ("en-zh", chinese), ("en-de", english)):
        lines = corpus.read_text().splitlines()
        t = pa.table({"lp": [lp] * 6, "segment_id": [0, 0, 1, 1, 2, 2], "system": ["a", "b"] * 3,
                      "hypothesis": lines[:6], "references": [[lines[10 + i // 2]] for i in range(6)]})
        out, names = _script().score(t, opts)
        if lp == "en-de":
            assert "bleu2vec" not in names
            continue
        rows = list(zip(out["hypothesis"].to_pylist(), out["references"].to_pylist()))
        target, other, tok = ("cs", "en", "13a") if lp == "en-cs" else ("zh", "zh", "zh")
        want = [bleu2vec_scores([h], [r], embeddings=dirs[target], tokenize=tok)[0] for h, r in rows]
        wrong = [bleu2vec_scores([h], [r], embeddings=dirs[other], tokenize="13a")[0] for h, r in rows]
        assert np.allclose(out["bleu2vec"].to_numpy(), want, rtol=0, atol=1e-12)
        assert len(set(want)) > 1 and not np.allclose(want, wrong)  # the other model / tokens score otherwise
