"""Meteor's -norm (the jar's Normalizer, then lowercasing): equal to the real jar's Normalizer on
real WMT13 lines and punctuation stress strings in every language it has (tests/data, outputs of
the jar), and to the jar's ``-norm -m exact`` scores; the CLI option; an optional run of the jar
itself on fresh random strings (skips without java or pycocoevalcap)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.metrics.meteor import meteor_params, meteor_rows, system_meteor
from kbest_bleu.metrics.meteor.normalize import NBP_FILES, normalize_line

DATA = Path(__file__).resolve().parents[1] / "data"
CZECH_WORDS = Path(__file__).resolve().parents[2] / "kbest_bleu" / "metrics" / "meteor" / "function_words" / "czech.words"


def test_normalizer_equals_the_jars_on_real_lines_and_stress_strings():
    gold = json.loads((DATA / "meteor_normalizer.json").read_text("utf-8"))["languages"]
    assert sorted(gold) == sorted(NBP_FILES)
    for lang, g in gold.items():
        assert len(g["lines"]) == len(g["keep"]) == len(g["strip"]) > 100
        for line, keep, strip in zip(g["lines"], g["keep"], g["strip"]):
            assert normalize_line(line, lang) == keep, (lang, line)
            assert normalize_line(line, lang, keep_punctuation=False) == strip, (lang, line)


@pytest.mark.parametrize("lang", ["en", "cz", "fr"])
def test_scores_equal_the_jars_norm(lang):
    """``-l LANG -norm -m exact -vOut`` (Czech with -s czech.words, whose jar equates tokens of
    equal Java hash codes: jar_compat) on 40 real WMT13 pairs: P, R, fragPenalty and score of
    every segment, and the final system score."""
    g = json.loads((DATA / "meteor_norm_scores.json").read_text("utf-8"))["sets"][lang]
    # the jar's own conventions: English function words unless -s (fr), hash-code equality
    jar = {} if lang == "en" else {"jar_compat": True, **({"function_words": CZECH_WORDS} if lang == "cz" else {})}
    params = meteor_params(lang, normalize=True, **jar)
    res = meteor_rows(g["hypotheses"], [[r] for r in g["references"]], params)
    vout = np.array(g["vout"])
    for i, got in enumerate((res.precision, res.recall, res.fragmentation, res.score)):
        np.testing.assert_allclose(got, vout[:, i], rtol=1e-13, atol=0)
    assert system_meteor(res, params) == pytest.approx(g["final"], rel=1e-14)
    # without the normalizer (only lowercased) most of these segments score otherwise
    raw = meteor_rows([h.lower() for h in g["hypotheses"]], [[r.lower()] for r in g["references"]],
                      meteor_params(lang, lowercase=True, **jar))
    assert (np.abs(raw.score - vout[:, 3]) > 1e-9).sum() > len(vout) // 2


def test_norm_params_signature_and_refusals():
    p = meteor_params("de", normalize=True)
    assert p.normalize and p.lowercase  # -norm lowercases, as the jar
    assert "|lower:yes|norm:yes|" in p.signature()
    assert "norm" not in meteor_params("de").signature()  # the signatures without it stay as they were
    with pytest.raises(InputError, match="no normalizer for other languages"):
        meteor_params("other", normalize=True)
    with pytest.raises(InputError, match="expected a language among"):
        normalize_line("x", "pt")


def test_cli_meteor_norm(tmp_path, capsys):
    hyps = ["The U.S.-based firm's sales rose 3.5%.", "Mr. Smith didn't come, did he?"]
    refs = ["The US based firm 's sales rose 3.5 % .", "mr. smith did n't come , did he ?"]
    (tmp_path / "h.txt").write_text("\n".join(hyps) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n")
    assert main(["score", str(tmp_path / "h.txt"), "-r", str(tmp_path / "r.txt"), "--metric", "meteor",
                 "--meteor-norm", "-o", str(tmp_path / "o.parquet"), "-q"]) == 0
    got = pq.read_table(tmp_path / "o.parquet")["meteor"].to_pylist()
    want = meteor_rows(hyps, [[r] for r in refs], meteor_params("en", normalize=True)).score
    assert got == want.tolist()
    lowered = meteor_rows(hyps, [[r] for r in refs], meteor_params("en", lowercase=True)).score
    assert all(g > w for g, w in zip(got, lowered))  # the same tokens once both sides are normalized
    assert "norm:yes" in pq.read_schema(tmp_path / "o.parquet").metadata[b"kbest_bleu.signature.meteor"].decode()


def _jar() -> tuple:
    java = shutil.which("java")
    pcc = pytest.importorskip("pycocoevalcap")
    if java is None:
        pytest.skip("java not installed")
    jar = Path(list(pcc.__path__)[0]) / "meteor" / "meteor-1.5.jar"
    if not jar.exists():
        pytest.skip(f"no Meteor jar at {jar}")
    return java, jar


def test_against_the_real_jars_normalizer():
    """The jar's own Normalizer (its main: one line in, one line out) on fresh random strings."""
    java, jar = _jar()
    pieces = list("aZ09.,'`-\u2013\u2018\u2019\u201c\u201d\"!?;:()/%& \t") + [
        "\u00a0", "\u2009", "\u00e9", "\u017d", "\u0436", "\u4e2d", "\U0001f600", "''", "--", "...", "U.S.", "Mr.",
        "No.", "e.g.", "1,000", "3.5", "don't", "l'homme", "1990's", "DOTMULTI"]
    rng = random.Random(2024)
    lines = ["".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(0, 16))) for _ in range(400)]
    for lang in NBP_FILES:
        for keep in (True, False):
            out = subprocess.run([java, "-Dfile.encoding=UTF-8", "-Dstdout.encoding=UTF-8", "-cp", str(jar),
                                  "edu.cmu.meteor.util.Normalizer", lang, str(keep).lower()],
                                 input="\n".join(lines) + "\n", capture_output=True, text=True, encoding="utf-8",
                                 check=True, env={"LANG": "C.UTF-8", "PATH": str(Path(java).parent)}).stdout
            want = out.split("\n")[:-1]
            assert [normalize_line(x, lang, keep) for x in lines] == want, lang
