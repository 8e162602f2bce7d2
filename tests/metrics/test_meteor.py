"""Meteor 1.5 exact: equal to the real jar's outputs (../shared/extensions/meteor_oracle), the numba
aligner equal to slow references (an exhaustive search where the beam does not prune, a literal
transcription of the jar's beam search where it does), bad input, the Metric face."""

from __future__ import annotations

import math
import pickle
import re
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbest_bleu.errors import InputError
from kbest_bleu.metrics import load_metric
from kbest_bleu.metrics.meteor import (
    MeteorParams,
    _align,
    from_options,
    meteor_params,
    meteor_rows,
    meteor_segments,
    sentence_meteor,
    system_meteor,
)
from kbest_bleu.metrics.meteor import score as meteor_score

# ---------------------------------------------------------------------------------------------
# gold files


def _lines(path):
    return path.read_text("utf-8").split("\n")[:-1]  # the jar reads lines; files end with a newline


def _vout(lines):
    """[(P, R, fragPenalty, score)] of the 'Segment n score:' lines, in order."""
    rows = [ln.split("\t")[1:] for ln in lines if ln.startswith("Segment ")]
    return [tuple(float(x) for x in r) for r in rows]


def _oracle_sections(extensions):
    text = (extensions / "meteor_oracle" / "oracle_outputs.txt").read_text("utf-8")
    parts = re.split(r"^### (.*)$", text, flags=re.M)
    return {parts[k].strip(): parts[k + 1].splitlines() for k in range(1, len(parts), 2)}


def _final(lines):
    return float(next(ln.split(":")[1] for ln in lines if ln.startswith("Final score:")))


def _assert_vout(result, gold, rows=None):
    rows = range(len(gold)) if rows is None else rows
    ours = np.column_stack([result.precision, result.recall, result.fragmentation, result.score])
    for k in rows:
        for a, b in zip(ours[k], gold[k]):
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-13, abs=1e-15), (k, ours[k], gold[k])


def _czech_words(extensions):
    return extensions / "function_words" / "czech.words"


@pytest.fixture(scope="module")
def small(extensions):
    d = extensions / "meteor_oracle"
    return {lang: (_lines(d / f"hyp_{lang}.txt"), _lines(d / f"ref_{lang}.txt")) for lang in ("en", "cs")}


def test_small_english_vout_and_system(extensions, small):
    sec = _oracle_sections(extensions)["-l en -m exact (english sample) -vOut"]
    hyps, refs = small["en"]
    res = meteor_rows(hyps, [[r] for r in refs], meteor_params("en"))
    _assert_vout(res, _vout(sec))
    assert system_meteor(res, meteor_params("en")) == pytest.approx(_final(sec), rel=1e-14)


def test_small_czech_with_czech_words_vout_ssout_system(extensions, small):
    sections = _oracle_sections(extensions)
    sec = sections["java -Xmx1G -jar meteor-1.5.jar hyp_cs.txt ref_cs.txt -l cz -m exact -s czech.words -vOut"]
    hyps, refs = small["cs"]
    params = meteor_params("cz")  # our Czech uses the Czech list: what the jar does with -s czech.words
    assert params == meteor_params("cs", function_words=_czech_words(extensions)).__class__(
        **{**params.__dict__, "word_list": "czech"})
    res = meteor_rows(hyps, [[r] for r in refs], params)
    _assert_vout(res, _vout(sec))
    assert system_meteor(res, params) == pytest.approx(_final(sec), rel=1e-14)
    ss = [[float(x) for x in ln.split()] for ln in sections["same, -ssOut"] if ln.strip()]
    assert res.stats.tolist() == ss


@pytest.mark.parametrize("section, options", [
    ("-l cz -m exact WITHOUT -s (Meteor 1.5 silently uses english.words) -vOut", {"jar_compat": True}),
    ("-l cz -m exact -s czech.words -lower -vOut", {"lowercase": True}),
])
def test_small_czech_jar_compat_and_lower(extensions, small, section, options):
    lines = _oracle_sections(extensions)[section]
    hyps, refs = small["cs"]
    params = meteor_params("cz", **options)
    res = meteor_rows(hyps, [[r] for r in refs], params)
    _assert_vout(res, _vout(lines))
    assert system_meteor(res, params) == pytest.approx(_final(lines), rel=1e-14)


def test_stdio_stats_lines(extensions, small):
    """The -stdio SCORE lines (reference, hypothesis swapped in the protocol) and the EVAL score."""
    lines = [ln for ln in _oracle_sections(extensions)[
        "stdio mode: printf 'SCORE ||| ref ||| hyp\\nEVAL ||| <stats>\\n' | java -jar meteor-1.5.jar - - -l cz "
        "-m exact -s czech.words -stdio"] if ln.strip()]
    hyps, refs = small["cs"]
    res = meteor_rows(hyps[:2], [[r] for r in refs[:2]], meteor_params("cz"))
    assert sorted(res.stats.tolist()) == sorted([[float(x) for x in ln.split()] for ln in lines[:2]])
    row = res.stats.tolist().index([float(x) for x in lines[0].split()])
    assert res.score[row] == pytest.approx(float(lines[2]), rel=1e-14)


# the stress set: small vocabulary, many repeated words, beam-search ties and pruning
STRESS = [("en_exact_1ref.vOut", "ref.txt", 1, {}), ("en_exact_2ref.vOut", "ref_2per_seg.txt", 2, {}),
          ("cz_exact_1ref_with_s_czech_words.vOut", "ref.txt", 1, {"lang": "cz"})]


def _stress(extensions, gold, ref_file, n_refs, options, rows):
    d = extensions / "meteor_oracle" / "random_dev"
    hyps = _lines(d / "hyp.txt")
    refs = _lines(d / ref_file)
    grouped = [refs[k * n_refs:(k + 1) * n_refs] for k in range(len(hyps))]
    res = meteor_rows(hyps[rows], grouped[rows], meteor_params(**options))
    _assert_vout(res, _vout(_lines(d / gold))[rows])
    return res


@pytest.mark.parametrize("gold, ref_file, n_refs, options", STRESS)
def test_stress_all_1500(extensions, gold, ref_file, n_refs, options):
    _stress(extensions, gold, ref_file, n_refs, options, slice(None))


def test_stress_ssout_all(extensions):
    """Every -ssOut statistic of the 1,500 English stress segments (counts, chunks)."""
    res = _stress(extensions, "en_exact_1ref.vOut", "ref.txt", 1, {}, slice(None))
    gold = [[float(x) for x in ln.split()] for ln in
            _lines(extensions / "meteor_oracle" / "random_dev" / "en_exact_1ref.ssOut")]
    assert res.stats.tolist() == gold


# ---------------------------------------------------------------------------------------------
# slow references for the aligner


def _candidates(hyp, ref):
    cands = [[i for i in range(len(hyp)) if hyp[i] == ref[j]] for j in range(len(ref))]
    cov1 = [sum(hyp[i] == w for w in ref) for i in range(len(hyp))]
    fixed = [c[0] if len(c) == 1 and cov1[c[0]] == 1 else -1 for c in cands]
    return cands, fixed


def exhaustive_alignment(hyp, ref):
    """Every alignment the jar's search can reach, each with its comparison keys at every step;
    the winner is the least under (final key, key at step J, ..., key at step 1, choices), which is
    the order the jar's stable sorts give when nothing is pruned. Also returns the largest number
    of partial paths at one step (the beam prunes nothing when it is at most the beam width)."""
    cands, fixed = _candidates(hyp, ref)
    n_j = len(ref)
    done, level = [], [0] * (n_j + 1)

    def key(state):
        return (-state["cnt"], state["chk"], state["dist"])

    def walk(j, state, keys, choices):
        level[j] += 1
        keys = keys + [key(state)]
        if j == n_j:
            final = dict(state, chk=state["chk"] + (state["last"] != -1))
            done.append(((key(final),) + tuple(reversed(keys)) + tuple(choices), state["match"]))
            return
        if fixed[j] != -1:
            i = fixed[j]
            walk(j + 1, dict(state, cnt=state["cnt"] + 1, chk=state["chk"] + (state["last"] not in (-1, i)),
                             last=i + 1, dist=state["dist"] + abs(j - i), match=state["match"] + [i]), keys, choices + [0])
            return
        free = [i for i in cands[j] if i not in state["used"]]
        for k, i in enumerate(free):
            sibling_dist = sum(abs(j - x) for x in free[:k])  # the jar adds the siblings' distances to the parent
            walk(j + 1, dict(state, cnt=state["cnt"] + 1, chk=state["chk"] + (state["last"] not in (-1, i)),
                             last=i + 1, dist=state["dist"] + sibling_dist, used=state["used"] | {i},
                             match=state["match"] + [i]), keys, choices + [k])
        walk(j + 1, dict(state, chk=state["chk"] + (state["last"] != -1), last=-1,
                         dist=state["dist"] + sum(abs(j - x) for x in free), match=state["match"] + [-1]),
             keys, choices + [len(free)])

    walk(0, {"cnt": 0, "chk": 0, "last": -1, "dist": 0, "used": frozenset(i for i in fixed if i != -1),
             "match": []}, [], [])
    return min(done)[1], max(level)


def jar_beam_search(hyp, ref, beam):
    """Aligner.resolve transcribed literally (paths as dicts, Python's stable sort)."""
    cands, fixed = _candidates(hyp, ref)
    n_j = len(ref)
    used0 = {i for i in fixed if i != -1}
    paths = [{"match": list(fixed), "used": set(used0), "cnt": 0, "chk": 0, "last": -1, "dist": 0}]
    order = lambda p: (-2 * p["cnt"], p["chk"], p["dist"])  # noqa: E731 (matches1 + matches2)
    for current in range(n_j + 1):
        paths.sort(key=order)
        nxt = []
        for path in paths[:beam]:
            if current == n_j:
                if path["last"] != -1:
                    path["chk"] += 1
                nxt.append(path)
                continue
            if fixed[current] != -1:
                i = fixed[current]
                path["cnt"] += 1
                if path["last"] != -1 and i != path["last"]:
                    path["chk"] += 1
                path["last"] = i + 1
                path["dist"] += abs(current - i)
                nxt.append(path)
                continue
            for i in cands[current]:
                if i in path["used"]:
                    continue
                new = {**path, "match": list(path["match"]), "used": set(path["used"])}
                new["used"].add(i)
                new["match"][current] = i
                new["cnt"] += 1
                if new["last"] != -1 and i != new["last"]:
                    new["chk"] += 1
                new["last"] = i + 1
                path["dist"] += abs(current - i)
                nxt.append(new)
            if path["last"] != -1:
                path["chk"] += 1
                path["last"] = -1
            nxt.append(path)
        paths = nxt
    paths.sort(key=order)
    return paths[0]["match"]


words = st.lists(st.integers(0, 2), min_size=0, max_size=5)


@settings(deadline=None)
@given(words, words)
def test_aligner_equals_exhaustive_search_where_nothing_is_pruned(hyp, ref):
    best, widest = exhaustive_alignment(hyp, ref)
    h, r = np.array(hyp, np.int32), np.array(ref, np.int32)
    assert _align.align(h, r, 10 ** 6).tolist() == best
    if widest <= 40:
        assert _align.align(h, r, 40).tolist() == best


@settings(max_examples=400, deadline=None)  # many: the beam's online insertion and eviction, pending sums
@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.integers(0, 3), max_size=12), st.integers(1, 6))
def test_aligner_equals_literal_beam_search_when_pruning(hyp, ref, beam):
    assert _align.align(np.array(hyp, np.int32), np.array(ref, np.int32), beam).tolist() == \
        jar_beam_search(hyp, ref, beam)


def test_aligner_equals_literal_beam_search_past_64_words():
    """Sentences longer than one 64-bit word of the used-word bitset, words repeated, beam 40."""
    rng = np.random.default_rng(3)
    for n_i, n_j in ((70, 66), (130, 65)):
        hyp, ref = rng.integers(0, 12, n_i).tolist(), rng.integers(0, 12, n_j).tolist()
        assert _align.align(np.array(hyp, np.int32), np.array(ref, np.int32), 40).tolist() == \
            jar_beam_search(hyp, ref, 40)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "the", "b", ",", "A"]), max_size=6), min_size=1, max_size=5),
       st.lists(st.lists(st.sampled_from(["a", "the", "b", ",", "The"]), max_size=6), min_size=1, max_size=3))
def test_kbest_path_equals_rows_and_pairs(hyp_words, ref_words):
    """meteor_segments (references once per segment) = meteor_rows = the best pair, first on ties."""
    hyps = [" ".join(w) for w in hyp_words]
    refs = [" ".join(w) for w in ref_words]
    seg = meteor_segments(hyps, [refs], [0, len(hyps)])
    rows = meteor_rows(hyps, [refs] * len(hyps))
    assert seg.stats.tolist() == rows.stats.tolist() and seg.best_reference.tolist() == rows.best_reference.tolist()
    for k, h in enumerate(hyps):
        singles = [meteor_rows([h], [[r]]) for r in refs]
        scores = [float(s.score[0]) for s in singles]
        assert seg.best_reference[k] == scores.index(max(scores))
        assert seg.stats[k].tolist() == singles[seg.best_reference[k]].stats[0].tolist()


def test_repeated_hypotheses_scored_once_per_segment_only():
    """Repeats within a segment copy the first one's results; the same text in another segment
    (another reference) is scored again."""
    hyps = ["the cat the mat", "a b", "the cat the mat", "the cat the mat"]
    assert meteor_score._first_copies(pa.array(hyps), np.array([0, 3, 4])).tolist() == [0, 1, 0, 3]
    seg = meteor_segments(hyps, [["the mat the cat"], ["the cat on the mat"]], [0, 3, 4])
    rows = meteor_rows(hyps, [["the mat the cat"]] * 3 + [["the cat on the mat"]])
    assert seg.stats.tolist() == rows.stats.tolist() and seg.stats[0].tolist() != seg.stats[3].tolist()


# ---------------------------------------------------------------------------------------------
# tokens, hash codes, parameters


def test_only_the_jars_five_whitespace_characters_split():
    py_only = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() and chr(c) not in " \t\n\r\f")
    assert re.fullmatch(meteor_score.PY_ONLY_SPACE + "+", py_only)
    assert not any(re.fullmatch(meteor_score.PY_ONLY_SPACE, c) for c in " \t\n\r\f")
    # U+00A0 and \v join words for the jar: "a\xa0b" is one token, not matching "a" or "b"
    res = meteor_rows(["a\xa0b c", "a\tb\fc "], [["a b c"], [" a b c"]])
    assert res.stats[:, 0].tolist() == [2, 3] and res.stats[:, 21].tolist() == [1, 3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.sampled_from(["a", "b", "é", " ", "\t", "\xa0", "\u2003", "\x0b", "\n"]), max_size=8),
                min_size=1, max_size=6))
def test_split_equals_the_jars_tokens_on_mixed_rows(texts):
    """Rows with and without Python-only spaces (split by two paths, one vocabulary) = re.split on
    the jar's five separators, row by row."""
    ids, ptr, vocab = meteor_score.split_words(pa.array(texts, pa.large_string()))
    words = vocab.to_pylist()
    assert [[words[i] for i in ids[ptr[k]:ptr[k + 1]]] for k in range(len(texts))] == \
        [[w for w in re.split("[ \t\n\r\f]+", t) if w] for t in texts]
    assert len(set(words)) == len(words)


def test_java_hash_codes_and_jar_compat_matching():
    assert [meteor_score._java_hash(w) for w in ("hello", "Aa", "BB", "")] == [99162322, 2112, 2112, 0]
    assert meteor_score._java_hash("č😀") == (ord("č") * 31 ** 2 + 0xD83D * 31 + 0xDE00) % 2 ** 32
    exact = meteor_rows(["Aa x"], [["BB x"]])
    jar = meteor_rows(["Aa x"], [["BB x"]], meteor_params("en", jar_compat=True))
    assert exact.stats[0, 21] == 1 and jar.stats[0, 21] == 2


def test_parameters_per_language():
    assert [(p.alpha, p.beta, p.gamma, p.delta) for p in map(meteor_params, ("en", "cz", "cs"))] == [
        (0.85, 0.20, 0.60, 0.75), (0.95, 0.20, 0.60, 0.80), (0.95, 0.20, 0.60, 0.80)]
    sizes = {lang: len(meteor_params(lang).function_words) for lang in ("en", "cz", "de", "fr", "es", "ru", "other")}
    assert sizes == {"en": 93, "cz": 68, "de": 92, "fr": 85, "es": 66, "ru": 62, "other": 0}
    assert meteor_params("de", jar_compat=True).function_words == meteor_params("en").function_words


def test_function_words_by_lowercase_matches_case_sensitive():
    res = meteor_rows(["The cat"], [["the cat"]])
    assert res.stats[0, :8].tolist() == [2, 2, 1, 1, 1, 1, 0, 0]  # "The" is a function word but matches nothing


def test_no_reference_and_empty_hypothesis():
    res = meteor_segments(["a b", ""], [[], ["a"]], [0, 1, 2])
    assert res.score.tolist() == [0.0, 0.0] and res.best_reference.tolist() == [-1, 0]
    assert math.isnan(res.precision[0]) and math.isnan(res.precision[1])  # 0/0, as the jar


@pytest.mark.parametrize("call, message", [
    (lambda: meteor_params("xx-klingon"), "language code"),
    (lambda: meteor_params("en", function_words="/nonexistent/words"), "could not read"),
    (lambda: meteor_rows([["a", "b"]], [["a b"]]), "token lists"),
    (lambda: meteor_rows(["a", "b"], [["a"]]), "one list of references per hypothesis"),
    (lambda: meteor_segments(["a", "b"], [["a"]], [0, 1]), "seg_ptr"),
    (lambda: meteor_rows([None], [["a"]]), "null"),
    (lambda: meteor_rows(["a"], [["a " * 4096]]), "fewer than 4096"),
])
def test_bad_input(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# the Metric face


def test_metric_interface_and_pickle():
    metric = load_metric("meteor", lang="cs", jar_compat=False)
    assert metric == from_options(lang="cz") and pickle.loads(pickle.dumps(metric)) == metric
    assert isinstance(metric.params, MeteorParams) and metric.input_columns() == []
    assert "lang:cz" in metric.signature() and "words:czech" in metric.signature()
    hyps = pa.array(["Kočka seděla na rohožce .", "Na rohožce seděla kočka ."])
    refs = pa.array([["Kočka seděla na rohožce ."]])
    fields = metric.output_fields(True)
    arrays = metric.score_segments(hyps, refs, np.array([0, 2]), pa.table({"h": hyps}), True)
    assert [f.name for f in fields][:4] == ["meteor", "meteor_precision", "meteor_recall", "meteor_frag_penalty"]
    assert len(arrays) == len(fields) == 15 and all(len(a) == 2 for a in arrays)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    assert table["meteor"].to_pylist()[0] == 1.0
    assert table["meteor_chunks"].to_pylist() == [1, 3]
    assert [f.name for f in metric.output_fields(False)] == ["meteor"]
    assert sentence_meteor("Na rohožce seděla kočka .", "Kočka seděla na rohožce .", metric.params) == \
        table["meteor"].to_pylist()[1]


# ---------------------------------------------------------------------------------------------
# optional: the real jar on fresh random data (skips without java or pycocoevalcap)


def test_against_the_real_jar(tmp_path):
    java = shutil.which("java")
    pcc = pytest.importorskip("pycocoevalcap")
    if java is None:
        pytest.skip("java not installed")
    from pathlib import Path
    jar = Path(list(pcc.__path__)[0]) / "meteor" / "meteor-1.5.jar"
    if not jar.exists():
        pytest.skip(f"no Meteor jar at {jar}")
    rng = np.random.default_rng(7)
    vocab = ["the", "a", "cat", "The", "of", ",", "mat", "on", "dog", "."]
    hyps = [" ".join(rng.choice(vocab, rng.integers(0, 14))) for _ in range(300)]
    refs = [" ".join(rng.choice(vocab, rng.integers(1, 14))) for _ in range(600)]
    (tmp_path / "h").write_text("\n".join(hyps) + "\n", "utf-8")
    (tmp_path / "r").write_text("\n".join(refs) + "\n", "utf-8")
    out = subprocess.run([java, "-Xmx1G", "-jar", str(jar), "h", "r", "-l", "en", "-m", "exact", "-r", "2", "-vOut"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    res = meteor_rows(hyps, [refs[2 * k:2 * k + 2] for k in range(300)])
    _assert_vout(res, _vout(out))
    assert system_meteor(res) == pytest.approx(_final(out), rel=1e-14)
