"""The 18 edge cases of shared/conformance/edge_cases.json, against what each peer returned."""

import json
import math
import os
from pathlib import Path

import pytest

import kbest_bleu as kb

CASES_PATH = Path(os.environ.get("KBEST_BLEU_CONFORMANCE", Path(__file__).parent / "data" / "edge_cases.json"))
CASES = json.loads(CASES_PATH.read_text())["cases"]

# peer tool -> the package options that reproduce it (None: corpus_score with defaults); mteval-v13a.pl
# ran with -c (case kept), the mteval preset's lowercase=False (it lowercases by default, as the script)
TOOLS = {
    "mteval13a": dict(compat="mteval", lowercase=False),
    "mteval13a_nosmooth": dict(compat="mteval", smoothing=0, lowercase=False),
    "mteval13a_shortestBP": dict(compat="mteval", ref_length="shortest", lowercase=False),
    "multeval_jbleu": dict(compat="mteval", lowercase=False),
    "moses_bleu+1": dict(compat="moses"),
    "moses_bleu+1_smoothBP": dict(compat="moses", smooth_bp=True),
    "nltk_m0_autoreweigh": dict(compat="nltk", auto_reweigh=True),
    "sacre_corpus_default": None,
    **{f"nltk_m{i}": dict(compat="nltk", smoothing=i) for i in range(8)},
    **{f"sacre_{n}_eff{e}": dict(smoothing=n, effective_order=bool(e))
       for n in ("exp", "floor", "add-k", "none") for e in (0, 1)},
}

# Where a peer crashed, the defined value the package returns (README, "Edge cases" table).
# mteval: its own formula (BP 0 for an empty hypothesis; an empty reference is length 0).
# nltk method6: 0 when there is no trigram match (NLTK asserts there).
CRASH_VALUES = {
    ("C01_empty_hyp", "mteval13a"): 0.0, ("C01_empty_hyp", "mteval13a_shortestBP"): 0.0,
    ("C02_empty_ref", "mteval13a"): 0.2259005009024612, ("C02_empty_ref", "mteval13a_shortestBP"): 0.2259005009024612,
    ("C03_both_empty", "mteval13a"): 0.0, ("C03_both_empty", "mteval13a_shortestBP"): 0.0,
    **{(c, "nltk_m6"): 0.0 for c in ("C04_len1_match", "C05_len2_exact", "C08_nltk_H2_3refs_no34",
                                    "C13_m=2,1,0,0", "C14_unigram_only", "C15_len3_scrambled", "C16_clip_the")},
}
# multeval tokenizes "" as one empty token (Java split); given that token list we reproduce it.
MULTEVAL_EMPTY_TOKEN = {"C01_empty_hyp", "C03_both_empty"}


def _score(case, opts):
    if opts is None:
        return kb.corpus_bleu([case["hypothesis"]], [case["references"]]).score
    return kb.sentence_bleu(case["hypothesis"], case["references"], **opts)


PARAMS = [(c, tool) for c in CASES for tool in c["expected"]]


@pytest.mark.parametrize("case, tool", PARAMS, ids=[f"{c['name']}-{t}" for c, t in PARAMS])
def test_edge_case(case, tool):
    expected = case["expected"][tool]
    opts = TOOLS[tool]
    if tool == "multeval_jbleu" and case["name"] in MULTEVAL_EMPTY_TOKEN:
        tokens = lambda s: s.split() or [""]  # noqa: E731
        got = kb.score_kbest([tokens(case["hypothesis"])], [[tokens(r) for r in case["references"]]], **opts)[0]
    else:
        got = _score(case, opts)
    assert math.isfinite(got)
    if isinstance(expected, dict):  # the peer crashed: our documented value
        assert got == pytest.approx(CRASH_VALUES[case["name"], tool], abs=1e-12)
        return
    tol = 1e-9 if tool.startswith(("nltk", "sacre")) else 1e-4
    assert abs(got - expected) <= tol, (got, expected)


def test_every_tool_is_mapped():
    assert {t for c in CASES for t in c["expected"]} == set(TOOLS)


# mteval-v13a.pl itself (moses-smt/mosesdecoder's copy, Perl 5.36, 2026-11-27), segment scores of its
# --metricsMATR output (%.15g): it lowercases unless -c, A-Z only, after its entity and <skipped> rules
MTEVAL_SCRIPT = [
    ("The Cat sat", ["the cat sat"], [], 1.0),
    ("École de Paris", ["école de paris"], [], 0.638943104246272),
    ("École de Paris", ["école de paris"], ["-c"], 0.379917842825796),
    ("A &AMP; B", ["a & b"], [], 0.236435402250794),
    ("a <SKIPPED> b c", ["a b c"], [], 0.179652055981542),
]


@pytest.mark.parametrize("hyp, refs, flags, want", MTEVAL_SCRIPT)
def test_mteval_preset_lowercases_as_the_script(hyp, refs, flags, want):
    opts = dict(compat="mteval", lowercase=False) if "-c" in flags else dict(compat="mteval")
    assert kb.sentence_bleu(hyp, refs, **opts) == pytest.approx(want, abs=1e-14)
    assert kb.score_kbest([hyp], [refs], **opts)[0] == pytest.approx(want, abs=1e-14)  # the column path too
