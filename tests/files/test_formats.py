"""Issue 37: the K-best formats of the MT toolkits (kbest_bleu.files.formats, docs/formats.md).

The sample files are written by small emulations of each tool's own output code, cited at each
writer below (never only from a layout made up here); the lists have variable K (where the format
marks its lists), empty and duplicate hypotheses. Each format scored by ``kbest-bleu score`` equals
the parquet job on the same rows, and sacrebleu; files read and written back give the same bytes.
"""

import json
import math
import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

from kbest_bleu.batch.parquet import score_parquet
from kbest_bleu.cli import main
from kbest_bleu.errors import InputError
from kbest_bleu.files.formats import classify, iter_batches, read_table, write_format
from kbest_bleu.files.readers import input_format, read_kbest

# (source, reference, [(hypothesis, natural-log probability), ...]): variable K, an empty list
# member, duplicates (segment 0: the same hypothesis twice; segment 2: twice with different scores)
LISTS = [
    ("das ist ein Test .", "this is a test .",
     [("this is a test .", -0.5), ("this is a test", -1.25), ("this is a test .", -0.5)]),
    ("leer", "nothing here", [("", -3.0)]),
    ("Hallo Welt", "hello world !", [("hello world", -0.125), ("", -2.0), ("hi world !", -0.875), ("hello world", -1.5)]),
]
FIXED = [  # K = 3 for the formats without ids (one run's n_best)
    ("eins", "one two three", [("one two three", -0.25), ("", -4.0), ("one two three", -0.75)]),
    ("zwei", "four five", [("four five", -0.5), ("four", -1.0), ("five four", -1.5)]),
]
K_FIXED = 3


# ---- the tools' output code, emulated ---------------------------------------------------------

def fairseq_generate(lists, order, log_lines=True, alignments=False, start=0) -> str:
    """fairseq_cli/generate.py (facebookresearch/fairseq, main(), "Process top predictions"):
    print("S-{}\\t{}"), print("T-{}\\t{}"), then per hypothesis
    print("H-{}\\t{}\\t{}".format(sample_id, score, hypo_str)) with score = hypo["score"] / math.log(2),
    the same for D-, then "P-{}\\t{}" with positional scores "{:.4f}" in base 2, and with
    --print-alignment "A-{}\\t{}" of "{}-{}" pairs. Samples come in the batches' order; ``start``: the
    first sample's id."""
    out = []
    if log_lines:  # logging to stderr merged into the file (2>&1), as often done
        out.append("2024-03-01 10:00:00 | INFO | fairseq_cli.generate | {'_name': None, 'beam': 5, 'nbest': 4}")
    for index in order:
        src, ref, hyps = lists[index]
        sample_id = start + index
        out.append("S-{}\t{}".format(sample_id, src))
        out.append("T-{}\t{}".format(sample_id, ref))
        for hypo_str, logp in hyps:
            score = logp / math.log(2)
            out.append("H-{}\t{}\t{}".format(sample_id, score, hypo_str))
            out.append("D-{}\t{}\t{}".format(sample_id, score, hypo_str))
            positional = [logp / 2 / math.log(2)] * 2
            out.append("P-{}\t{}".format(sample_id, " ".join(map(lambda x: "{:.4f}".format(x), positional))))
            if alignments:
                out.append("A-{}\t{}".format(sample_id, " ".join("{}-{}".format(i, i) for i in range(2))))
    if log_lines:
        out.append("2024-03-01 10:00:05 | INFO | fairseq_cli.generate | NOTE: hypothesis and token scores are "
                   "output in base 2")
        out.append("Generate test with beam=5: BLEU4 = 41.11, 70.0/50.0/40.0/30.0 (BP=1.000, ratio=1.000, syslen=9, "
                   "reflen=9)")
    return "".join(line + "\n" for line in out)


def _cpp(x: float) -> str:
    """C++ ostream << float with the default precision (6 significant digits, %g)."""
    return "%g" % x


def marian_nbest(lists, alignment=True, word_scores=True, breakdown=True, start=0, word_counts=False) -> str:
    """src/translator/output_printer.h (marian-nmt/marian-dev, OutputPrinter::print):
    bestn << lineNum << " ||| " << translation; [" ||| WordCounts=" << srcWords << ',' << words.size()
    (newer versions, --word-counts)]; [" ||| " << alignment]; [" ||| WordScores=" <<
    getWordScores(hypo)] (output_printer.cpp: " " << std::fixed << score, precision 5 per word);
    " |||" then " F" << j << "= " << breakdown[j] (or " F0=" << pathScore); " ||| " << realScore."""
    out = []
    for line_num, (src, _ref, hyps) in enumerate(lists, start):
        for translation, logp in hyps:
            s = f"{line_num} ||| {translation}"
            words = translation.split()
            if word_counts:
                s += f" ||| WordCounts={len(src.split())},{len(words) + 1}"
            if alignment:
                s += " ||| " + " ".join(f"{i}-{i}" for i in range(len(words)))
            if word_scores:
                s += " ||| WordScores=" + "".join(" " + format(logp / (len(words) + 1), ".5f")
                                                  for _ in range(len(words) + 1))
            s += " |||"
            s += "".join(f" F{j}= {_cpp(v)}" for j, v in enumerate([logp, 0.5 * logp])) if breakdown \
                else f" F0={_cpp(logp)}"
            s += " ||| " + _cpp(logp / (len(words) + 1))
            out.append(s)
    return "".join(line + "\n" for line in out)


def sockeye_json(lists, version3=True, pass_through=True) -> str:
    """sockeye/output_handler.py JSONOutputHandler: json.dumps(t_output.json(), sort_keys=True);
    sockeye/inference.py TranslatorOutput.json(): the input's pass-through dict (--json-input:
    "text" and any other key), sentence_id (from 1), translation, score, and when
    len(nbest_translations) > 1: translations, scores (Sockeye 3: a list per hypothesis, its first
    item the score). Scores are negative log probabilities."""
    out = []
    for i, (src, ref, hyps) in enumerate(lists):
        d = {"text": src, "refs": [ref]} if pass_through else {}
        scores = [[-logp] if version3 else -logp for _, logp in hyps]
        d["sentence_id"] = i + 1
        d["translation"] = hyps[0][0]
        d["score"] = -hyps[0][1]
        if len(hyps) > 1:
            d["translations"] = [h for h, _ in hyps]
            d["scores"] = scores
        out.append(json.dumps(d, sort_keys=True))
    return "".join(line + "\n" for line in out)


def opennmt_tf(lists) -> str:
    """opennmt/utils/misc.py format_translation_output: "%f ||| %s" % (score, sentence), one line
    per hypothesis of prediction["log_probs"] (n_best per source), best first."""
    return "".join("%f ||| %s" % (logp, hyp) + "\n" for _, _, hyps in lists for hyp, logp in hyps)


def opennmt_py(lists) -> str:
    """onmt/translate/translator.py (-n_best K -with_score): pred + "\\t" + str(score), the
    n_best lines of a source joined with "\\n", then "\\n"."""
    return "".join("\n".join(h + "\t" + str(s) for h, s in hyps) + "\n" for _, _, hyps in lists)


def flat_text(lists) -> str:
    """Hugging Face generate(num_return_sequences=K) decoded with batch_decode: B*K strings, the K
    of a source consecutive; one per line (OpenNMT-py without -with_score writes the same)."""
    return "".join(h + "\n" for _, _, hyps in lists for h, _ in hyps)


def nested_jsonl(lists) -> str:
    """The generic layout of issue 37: {"id", "src", "refs": [...], "hyps": [{"text", "score"}]}."""
    return "".join(json.dumps({"id": f"doc1-{i}", "src": src, "refs": [ref],
                               "hyps": [{"text": h, "score": s} for h, s in hyps]}, ensure_ascii=False) + "\n"
                   for i, (src, ref, hyps) in enumerate(lists))


# format -> (writer of the sample, its lists, file order of the lists, extra score arguments,
#            whether references must come from -r, model score of a (natural log) probability)
SAMPLES = {
    "fairseq": (lambda: fairseq_generate(LISTS, [2, 0, 1]), LISTS, [2, 0, 1], [], False,
                lambda lp: lp / math.log(2)),
    "marian": (lambda: marian_nbest(LISTS), LISTS, [0, 1, 2], [], True, None),
    "sockeye": (lambda: sockeye_json(LISTS), LISTS, [0, 1, 2], [], False, lambda lp: lp),
    "nested": (lambda: nested_jsonl(LISTS), LISTS, [0, 1, 2], [], False, lambda lp: lp),
    "opennmt-tf": (lambda: opennmt_tf(FIXED), FIXED, [0, 1], ["--nbest-size", "3"], True,
                   lambda lp: float("%f" % lp)),
    "opennmt-py": (lambda: opennmt_py(FIXED), FIXED, [0, 1], ["--nbest-size", "3"], True, lambda lp: lp),
    "text": (lambda: flat_text(FIXED), FIXED, [0, 1], ["--nbest-size", "3"], True, None),
}


def _write(tmp_path, fmt, name=None):
    path = tmp_path / (name or f"kbest.{fmt}.out")
    path.write_text(SAMPLES[fmt][0](), encoding="utf-8")
    refs = tmp_path / "ref.txt"
    refs.write_text("".join(ref + "\n" for _, ref, _ in SAMPLES[fmt][1]), encoding="utf-8")
    return path, refs


def _rows(fmt):
    """(segment id, hypothesis, reference, natural-log probability) in file order."""
    _, lists, order, *_ = SAMPLES[fmt]
    return [(i, h, lists[i][1], lp) for i in order for h, lp in lists[i][2]]


# ---- detection --------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", [f for f in SAMPLES if f != "text"])
def test_each_tools_output_is_detected_from_its_content(tmp_path, fmt):
    path, _ = _write(tmp_path, fmt)  # an extension that says nothing: the content decides
    assert classify(path.read_text().splitlines()) == fmt
    assert input_format(path) == (fmt, None)


def test_detection_leaves_the_other_layouts_alone(tmp_path):
    assert classify(['{"segment_id": 0, "hypothesis": "a b", "references": ["a b"]}']) is None  # rows: jsonl
    assert classify(["a plain hypothesis", "another one"]) is None
    assert classify(["0 ||| a b ||| lm= -2 tm= -1 -3 ||| -4.5"]) == "nbest"  # Moses
    assert classify(["0 ||| a b ||| d= 0 lm= -2 ||| -4.5 ||| 0-0 1-1"]) == "nbest"  # Moses: alignment after the score
    assert classify(["0|||a b|||lm_0=-2|||-4.5"]) == "nbest"  # Joshua without spaces
    assert classify(["0 ||| a b ||| 0-0 1-1 ||| F0= -2 ||| -1"]) == "marian"  # Marian: alignment before the features
    assert classify(["segment_id\thypothesis", "0\ta b"]) is None  # a TSV header
    assert classify([]) is None
    # a .txt with a plain text hypothesis per line stays text; a .jsonl of rows stays jsonl
    (tmp_path / "h.txt").write_text("a b\nc d\n")
    (tmp_path / "h.jsonl").write_text('{"segment_id": 0, "hypothesis": "a"}\n')
    assert input_format(tmp_path / "h.txt") == ("text", None)
    assert input_format(tmp_path / "h.jsonl") == ("jsonl", None)


# ---- reading, scoring: equal to the parquet job and to sacrebleu ---------------------------------

@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_scores_equal_the_parquet_job_on_the_same_rows(tmp_path, fmt, capsys):
    path, refs = _write(tmp_path, fmt)
    *_, extra, needs_refs, model = SAMPLES[fmt]
    out = tmp_path / "scored.parquet"
    args = ["score", str(path), "--format", fmt, *extra, "-o", str(out), "-q"] + (["-r", str(refs)] if needs_refs else [])
    assert main(args) == 0, capsys.readouterr().err
    got = pq.read_table(out)
    rows = _rows(fmt)
    assert got["segment_id"].to_pylist() == [r[0] for r in rows]
    assert got["hypothesis"].to_pylist() == [r[1] for r in rows]
    # the parquet job on the same rows, built here from the lists
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"segment_id": pa.array([r[0] for r in rows], pa.int64()),
                             "hypothesis": [r[1] for r in rows], "references": [[r[2]] for r in rows]}), plain)
    score_parquet(plain, tmp_path / "plain_scored.parquet")
    want = pq.read_table(tmp_path / "plain_scored.parquet")["bleu"].to_pylist()
    assert got["bleu"].to_pylist() == want
    bleu = BLEU(tokenize="13a", effective_order=True)
    np.testing.assert_allclose(want, [bleu.sentence_score(h, [r]).score / 100 for _, h, r, _ in rows], atol=1e-12)
    if model is not None:
        np.testing.assert_allclose(got["model_score"].to_pylist(), [model(lp) for *_, lp in rows], rtol=1e-6)
    if fmt != "text":
        ranks = got["rank"].to_pylist()
        assert ranks == [j for i in SAMPLES[fmt][2] for j in range(len(SAMPLES[fmt][1][i][2]))]


def test_the_model_score_column_picks_the_models_1best(tmp_path, capsys):
    """Sockeye's scores are negative log probabilities (lower is better); model_score is their
    negation, so --score-col model_score gives the same 1-best as fairseq's base-2 log probability."""
    firsts = {}
    for fmt in ("fairseq", "sockeye"):
        path, _ = _write(tmp_path, fmt)
        assert main(["score", str(path), "--score-col", "model_score", "--json", "-q"]) == 0
        firsts[fmt] = json.loads(capsys.readouterr().out)["one_best"]["score"]
    best = [max(hyps, key=lambda h: h[1])[0] for _, _, hyps in LISTS]
    want = BLEU(tokenize="13a").corpus_score(best, [[ref for _, ref, _ in LISTS]]).score
    assert firsts["fairseq"] == firsts["sockeye"] == round(want, 2)


def test_text_with_k_lines_per_source_through_read_kbest(tmp_path):
    path, _ = _write(tmp_path, "text")
    t = read_kbest(path, "text", nbest_size=3)
    assert t["segment_id"].to_pylist() == [0, 0, 0, 1, 1, 1] and t["rank"].to_pylist() == [0, 1, 2] * 2
    plain = read_kbest(path, "text")  # without --nbest-size: one hypothesis per segment, as before
    assert plain.column_names == ["segment_id", "hypothesis"] and plain.num_rows == 6


# ---- writing back -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["fairseq", "marian", "sockeye", "nested", "opennmt-tf", "opennmt-py"])
def test_read_and_written_back_with_the_model_score_gives_the_same_bytes(tmp_path, fmt, capsys):
    path, _ = _write(tmp_path, fmt)
    extra = SAMPLES[fmt][3]
    assert main(["convert", str(path), str(tmp_path / "t.parquet"), "--format", fmt, *extra]) == 0
    assert main(["convert", str(tmp_path / "t.parquet"), str(tmp_path / "back"), "--to", fmt,
                 "--score-field", "model_score"]) == 0
    want = path.read_text(encoding="utf-8")
    if fmt == "fairseq":  # log lines are not kept
        want = fairseq_generate(LISTS, [2, 0, 1], log_lines=False)
    assert (tmp_path / "back").read_text(encoding="utf-8") == want
    capsys.readouterr()


def test_fairseq_alignment_lines_and_marian_variants_round_trip(tmp_path):
    for name, text, fmt in [("a.out", fairseq_generate(LISTS, [1, 2, 0], log_lines=False, alignments=True), "fairseq"),
                            ("b.out", marian_nbest(LISTS, alignment=False, word_scores=True, breakdown=False), "marian"),
                            ("c.out", marian_nbest(LISTS, alignment=True, word_scores=False), "marian"),
                            ("d.out", marian_nbest(LISTS, word_counts=True), "marian")]:
        assert classify(text.splitlines()) == fmt
        (tmp_path / name).write_text(text)
        t = read_table(tmp_path / name, fmt)
        pq.write_table(t, tmp_path / "t.parquet")
        assert main(["convert", str(tmp_path / "t.parquet"), str(tmp_path / "back"), "--to", fmt,
                     "--score-field", "model_score"]) == 0
        assert (tmp_path / "back").read_text() == text
    t = read_table(tmp_path / "b.out", "marian")
    assert t["alignment"].null_count == t.num_rows and t["features"][0].as_py().startswith("F0=")
    assert t["word_scores"][0].as_py() == [float(format(-0.5 / 6, ".5f"))] * 6  # 5 words and </s>
    t = read_table(tmp_path / "d.out", "marian")
    assert t["alignment"][0].as_py() == "0-0 1-1 2-2 3-3 4-4" and t["extra_fields"][0].as_py().startswith("WordCounts=5,6 ||| 0-0")


@pytest.mark.parametrize("fmt", ["fairseq", "marian", "opennmt-tf", "opennmt-py", "sockeye", "nested"])
def test_scored_lists_written_back_carry_the_sentence_bleu(tmp_path, fmt, capsys):
    path, refs = _write(tmp_path, fmt)
    *_, extra, needs_refs, _ = SAMPLES[fmt]
    table = tmp_path / "scored.parquet"
    r = ["-r", str(refs)] if needs_refs else []
    assert main(["score", str(path), *extra, *r, "-o", str(table), "-q"]) == 0
    assert main(["score", str(path), *extra, *r, "-o", str(tmp_path / "out"), "--to", fmt, "-q"]) == 0
    bleu = pq.read_table(table)["bleu"].to_pylist()
    lines = (tmp_path / "out").read_text(encoding="utf-8").splitlines()
    if fmt == "fairseq":
        got = [float(ln.split("\t")[1]) for ln in lines if ln.startswith("H-")]
        assert got == [float(ln.split("\t")[1]) for ln in lines if ln.startswith("D-")]
    elif fmt == "marian":
        got = [float(ln.split(" ||| ")[-1]) for ln in lines]
    elif fmt == "opennmt-tf":
        got = [float(ln.split(" ||| ")[0]) for ln in lines]
    elif fmt == "opennmt-py":
        got = [float(ln.rpartition("\t")[2]) for ln in lines]
    elif fmt == "sockeye":
        objs = [json.loads(ln) for ln in lines]
        got = [b for o in objs for b in (o["bleu"] if "translations" in o else [o["bleu"]])]
        assert [o["scores"] if "translations" in o else o["score"] for o in objs] == \
            [[[-lp] for _, lp in hyps] if len(hyps) > 1 else -hyps[0][1] for _, _, hyps in LISTS]
    else:
        got = [h["bleu"] for ln in lines for h in json.loads(ln)["hyps"]]
        assert [h["score"] for ln in lines for h in json.loads(ln)["hyps"]] == [lp for *_, lp in _rows(fmt)]
    assert got == bleu
    capsys.readouterr()


def test_plain_text_has_no_place_for_a_score(tmp_path, capsys):
    path, refs = _write(tmp_path, "text", "hyps.txt")
    assert main(["convert", str(path), str(tmp_path / "t.parquet"), "--nbest-size", "3"]) == 0
    with pytest.raises(SystemExit) as exit_:
        main(["convert", str(tmp_path / "t.parquet"), str(tmp_path / "x.txt"), "--to", "text"])
    assert exit_.value.code == 2 and "invalid choice: 'text'" in capsys.readouterr().err
    with pytest.raises(InputError, match="plain text has no place for a score"):
        write_format(tmp_path / "t.parquet", tmp_path / "x.txt", "text")
    assert main(["score", str(path), "--nbest-size", "3", "-r", str(refs), "--to", "fairseq", "-q"]) == 2
    assert "--to fairseq: expected -o OUTPUT" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "t.parquet"), "--nbest-size", "3", "-q"]) == 2
    assert "--nbest-size: for text, opennmt-tf and opennmt-py input" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["nbest", "fairseq", "marian", "opennmt-tf", "opennmt-py"])
@pytest.mark.parametrize("column, value, said", [
    ("hypothesis", "a\nb", "holds '\\n'"), ("hypothesis", "a ||| b", "holds '|||'"), ("hypothesis", None, "is null"),
    ("model_score", float("nan"), "not a finite number")])
def test_text_that_would_not_read_back_is_refused(tmp_path, capsys, fmt, column, value, said):
    """A line break, the format's separator, a null hypothesis or a NaN score: written with exit
    0 (or a TypeError traceback for the null), the file read back cut, shifted or failed."""
    if said == "holds '|||'" and fmt in ("fairseq", "opennmt-py"):  # no ||| separator: reads back as it was
        value = "a\tb" if fmt == "opennmt-py" else value
    rows = {"segment_id": [0, 0, 1], "hypothesis": ["a b", "c d", "e f"], "model_score": [-1.0, -2.0, -0.5],
            "features": ["lm= -1", "lm= -2", "lm= -3"]}
    rows[column][1] = value
    if fmt.startswith("opennmt"):  # no segment ids: every list of the same size (here 1)
        rows["segment_id"] = [0, 1, 2]
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table(rows), src)
    out = tmp_path / f"out.{fmt}"
    rc = main(["convert", str(src), str(out), "--to", fmt, "--score-field", "model_score"])
    err = capsys.readouterr().err
    if said == "holds '|||'" and fmt in ("fairseq", "opennmt-py"):
        assert rc == 0, err
        again = tmp_path / "again.parquet"
        assert main(["convert", str(out), str(again), "--format", fmt, *(["--nbest-size", "1"] if fmt == "opennmt-py"
                                                                         else [])]) == 0, capsys.readouterr().err
        assert pq.read_table(again)["hypothesis"].to_pylist()[1] == value
        return
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert said in err and ("segment 1, hypothesis 0" if fmt.startswith("opennmt") else "hypothesis 1") in err
    assert not out.exists()


# ---- streaming and errors -----------------------------------------------------------------------

def test_readers_stream_bounded_batches(tmp_path):
    """Batches hold at most batch_rows rows, and a file is read as it is consumed: the first batch
    comes before a bad line further down is reached."""
    for fmt in ("fairseq", "marian", "sockeye", "nested", "opennmt-py"):
        path, _ = _write(tmp_path, fmt)
        batches = list(iter_batches(path, fmt, nbest_size=3 if fmt == "opennmt-py" else None, batch_rows=2))
        assert all(b.num_rows <= 2 for b in batches) and sum(b.num_rows for b in batches) == len(_rows(fmt))
        with open(path, "a") as f:
            f.write("H-9\tnot a number\tx\n" if fmt == "fairseq" else "{broken\n" if fmt in ("sockeye", "nested")
                    else "0 ||| x ||| F0= 1 ||| nan-ish\n" if fmt == "marian" else "x\tnot-a-score\n")
        stream = iter_batches(path, fmt, nbest_size=3 if fmt == "opennmt-py" else None, batch_rows=2)
        assert next(stream).num_rows == 2
        with pytest.raises(InputError, match=rf"{path.name}: line \d+"):
            list(stream)


@pytest.mark.parametrize("fmt, text, args, said", [
    ("opennmt-tf", "-1.000000 ||| a\n", [], r"does not say how many hypotheses .* --nbest-size K"),
    ("text", "a\nb\nc\nd\n", ["--nbest-size", "3"], r"4 lines, not a multiple of --nbest-size 3"),
    ("fairseq", "H-0\t-1\ta\nH-1\t-1\tb\nH-0\t-2\tc\n", [], r"line 3: sample 0 again after other samples"),
    ("fairseq", "S-0\ts\nT-0\tt\nH-0\t-1\ta\nS-1\ts\nH-1\t-1\tb\n", [], r"line 5: sample 1 has no T- .* -r"),
    ("sockeye", '{"sentence_id": 1, "translation": "a", "score": 1}\nnot json\n', [], r"line 2: not a JSON object"),
    ("sockeye", '{"sentence_id": 1, "translation": "a", "translations": ["a", "b"], "scores": [1]}\n', [],
     r"line 1: expected 'translations' and 'scores' lists of the same length"),
    ("nested", '{"hyps": [{"score": 1}]}\n', [], r"line 1: hypothesis 0 .* expected an object with a 'text'"),
    ("marian", "0 ||| a ||| F0= x ||| -1\n", [], r"line 1: could not parse the id, features or score"),
    ("marian", "0 ||| a ||| F0= -1 ||| -1\n0 ||| b ||| F0= -1 F1= -2 ||| -1\n", [], r"line 2: features F0_0 F1_0, but the first line has F0_0"),
    ("nested", '{"hyps": []}\n', ["--nbest-size", "2"], r"--nbest-size: nested output marks each list itself"),
])
def test_bad_input_is_one_line_naming_the_file_line_and_fix(tmp_path, capsys, fmt, text, args, said):
    path = tmp_path / "bad.out"
    path.write_text(text)
    assert main(["score", str(path), "--format", fmt, *args, "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err
    assert __import__("re").search(said, err), err


def test_lines_are_read_as_read_lines_reads_them(tmp_path):
    """CRLF line ends lose their CR (as references.read_lines), a last line without a newline is
    kept, a chunk boundary inside a line or a UTF-8 character changes nothing, invalid UTF-8 names
    its line and column."""
    from kbest_bleu.files import kbest_io
    from kbest_bleu.files.references import read_lines
    text = "0 ||| é a ||| F0= -1 ||| -1\r\n0 ||| 中 ||| F0= -2 ||| -2\n1 ||| b\r ||| F0= -3 ||| -3"
    (tmp_path / "crlf").write_bytes(text.encode())
    for chunk in (1, 2, 3, 7, 1 << 20):
        kbest_io._CHUNK, saved = chunk, kbest_io._CHUNK
        try:
            assert list(kbest_io.text_lines(tmp_path / "crlf")) == read_lines(tmp_path / "crlf")
        finally:
            kbest_io._CHUNK = saved
    assert read_table(tmp_path / "crlf", "marian")["hypothesis"].to_pylist() == ["é a", "中", "b\r"]
    (tmp_path / "bad").write_bytes(b"-1.0 ||| a\n-2.0 ||| b\n-3.0 ||| c \xff d\n")
    with pytest.raises(InputError, match=r"bad: line 3 is not valid UTF-8 \(byte 0xff at column 11\)"):
        read_table(tmp_path / "bad", "opennmt-tf", nbest_size=1)


# ---- property: what the tools write is what is read --------------------------------------------

WORDS = st.lists(st.sampled_from(["a", "b", "é", "中"]), max_size=4).map(" ".join)
KBEST = st.lists(st.lists(st.tuples(WORDS, st.floats(-20, 0, allow_nan=False).map(lambda x: round(x, 3))),
                          min_size=1, max_size=4), min_size=1, max_size=4)


@given(kbest=KBEST)
def test_every_tools_output_reads_back_as_written(tmp_path_factory, kbest):
    tmp = tmp_path_factory.mktemp("prop")
    lists = [(f"src {i}", f"ref {i}", hyps) for i, hyps in enumerate(kbest)]
    rows = [(i, h, lp) for i, (_, _, hyps) in enumerate(lists) for h, lp in hyps]
    for fmt, text in [("fairseq", fairseq_generate(lists, range(len(lists)))), ("marian", marian_nbest(lists)),
                      ("sockeye", sockeye_json(lists, version3=False)), ("nested", nested_jsonl(lists))]:
        (tmp / fmt).write_text(text, encoding="utf-8")
        t = read_table(tmp / fmt, fmt, batch_rows=3)
        assert t["segment_id"].to_pylist() == [r[0] for r in rows], fmt
        assert t["hypothesis"].to_pylist() == [r[1] for r in rows], fmt
        if fmt != "marian":
            scale = 1 / math.log(2) if fmt == "fairseq" else 1
            np.testing.assert_allclose(t["model_score"].to_pylist(), [r[2] * scale for r in rows], atol=1e-12)


# ---- bounded memory on 1,000,000 rows -------------------------------------------------------------

def _big_file(path, fmt, rows):
    """``rows`` hypotheses (lists of 100) in ``fmt``, written in pieces so the test itself stays small."""
    k = 100 if fmt not in ("opennmt-tf", "opennmt-py", "text") else 10
    block = [(f"source {j}", f"ref {j} w x", [(f"hyp {j} {r} w x y z", -r / 10.0) for r in range(k)])
             for j in range(max(1, 10_000 // k))]
    writer = {"fairseq": lambda ls, n: fairseq_generate(ls, range(len(ls)), log_lines=False, start=n),
              "marian": lambda ls, n: marian_nbest(ls, start=n), "sockeye": lambda ls, n: sockeye_json(ls),
              "nested": lambda ls, n: nested_jsonl(ls), "opennmt-tf": lambda ls, n: opennmt_tf(ls),
              "opennmt-py": lambda ls, n: opennmt_py(ls), "text": lambda ls, n: flat_text(ls)}[fmt]
    with open(path, "w", encoding="utf-8") as f:
        for b in range(rows // (len(block) * k)):  # ids go on from block to block
            f.write(writer(block, b * len(block)))
    return k


PEAK = textwrap.dedent("""
    import resource, sys
    from kbest_bleu.files.formats import to_parquet
    fmt, src, dst, k = sys.argv[1:]
    rows = to_parquet(src, fmt, dst, nbest_size=int(k) if fmt in ("opennmt-tf", "opennmt-py", "text") else None)
    print(rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""")


@pytest.mark.exhaustive
@pytest.mark.parametrize("fmt", ["fairseq", "marian", "sockeye", "nested", "opennmt-tf", "opennmt-py", "text"])
def test_a_million_rows_are_read_in_bounded_memory(tmp_path, fmt):
    """The peak RSS of reading 1,000,000 rows is that of 250,000 (about 4 batches) within 24 MiB:
    memory does not grow with the file (measured: +0 to +10 MiB; docs/formats.md)."""
    peaks = {}
    for rows in (250_000, 1_000_000):
        src = tmp_path / f"{fmt}.{rows}"
        k = _big_file(src, fmt, rows)
        run = subprocess.run([sys.executable, "-c", PEAK, fmt, str(src), str(tmp_path / "o.parquet"), str(k)],
                             capture_output=True, text=True, env={**os.environ, "KBEST_BLEU_AOT": "0"})
        assert run.returncode == 0, run.stderr
        n, peak_kib = map(int, run.stdout.split())
        assert n == rows
        peaks[rows] = peak_kib / 1024
        src.unlink()
    assert peaks[1_000_000] - peaks[250_000] < 24, peaks
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


def test_convert_nbest_to_parquet_streams_the_rows_written(tmp_path):
    """convert n-best text + references -> parquet (streamed through a work file, zstd): every row
    as written, sparse features padded with zeros, each segment's references on its rows."""
    import pyarrow.parquet as pq

    from kbest_bleu.cli import main
    rows = [(s, f"hyp {s} {k} \"q\"", {"lm": -1.5 * k, **({"tm": 0.25 * s} if k % 2 else {})}, -0.5 * s - k)
            for s in range(4) for k in range(3)]
    lines = [f"{s} ||| {h} ||| {' '.join(f'{n}= {v!r}' for n, v in f.items())} ||| {sc!r}" for s, h, f, sc in rows]
    (tmp_path / "k.nbest").write_text("\n".join(lines) + "\n", encoding="utf-8")
    refs = [f"ref of {s}" for s in range(4)]
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    assert main(["convert", str(tmp_path / "k.nbest"), str(tmp_path / "k.parquet"), "-r", str(tmp_path / "ref.txt")]) == 0
    t = pq.read_table(tmp_path / "k.parquet")
    assert pq.ParquetFile(tmp_path / "k.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    assert t["segment_id"].to_pylist() == [s for s, *_ in rows]
    assert t["rank"].to_pylist() == [k for _ in range(4) for k in range(3)]
    assert t["hypothesis"].to_pylist() == [h for _, h, _, _ in rows]
    assert t["feature_values"].to_pylist() == [[f["lm"], f.get("tm", 0.0)] for _, _, f, _ in rows]
    assert t["model_score"].to_pylist() == [sc for *_, sc in rows]
    assert t["references"].to_pylist() == [[refs[s]] for s, *_ in rows]
    # compressed as score reads it: the same table
    import gzip
    (tmp_path / "k.nbest.gz").write_bytes(gzip.compress((tmp_path / "k.nbest").read_bytes()))
    assert main(["convert", str(tmp_path / "k.nbest.gz"), str(tmp_path / "gz.parquet"), "-r",
                 str(tmp_path / "ref.txt")]) == 0
    assert pq.read_table(tmp_path / "gz.parquet").equals(t)


def test_score_to_a_format_names_the_scored_table_not_its_temporary(tmp_path, capsys):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"segment_id": [0, 0], "hypothesis": ["a b", "a c"], "references": [["a b"]] * 2}), src)
    assert main(["score", str(src), "-o", str(tmp_path / "o.nbest"), "--to", "nbest", "--score-field", "bogus",
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "no column 'bogus' in the scored table" in err and "kbest-tmp" not in err and "kbest_bleu-" not in err, err


def test_fairseq_source_and_target_lines_that_would_not_read_back(tmp_path, capsys):
    """A table from elsewhere writes S-/T- lines from its source and references: a line break there
    made a file that read back as another sample ('sample 0 again after other samples')."""
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["a b"], "model_score": [-1.0],
                             "references": [["ref one\nS-9\tinjected"]]}), src)
    out = tmp_path / "o.fairseq"
    assert main(["convert", str(src), str(out), "--to", "fairseq"]) == 2
    err = capsys.readouterr().err
    assert "column 'references' holds '\\n'" in err and not out.exists(), err


# ---- writing back by the segment key --------------------------------------------------------------

def _two_language_pairs(tmp_path):
    """Two lists sharing segment_id 0, told apart by lp (score --seg-col lp,segment_id)."""
    rows = {"lp": ["de", "de", "fr", "fr"], "segment_id": [0, 0, 0, 0],
            "hypothesis": ["the cat sat on the mat", "a cat", "le chat est assis", "un chat"],
            "references": [["the cat sat on the mat"]] * 2 + [["le chat est assis"]] * 2}
    src = tmp_path / "two.parquet"
    pq.write_table(pa.table(rows), src)
    return src, rows


@pytest.mark.parametrize("fmt", ["nested", "sockeye", "fairseq", "nbest", "marian"])
def test_written_lists_follow_the_segment_key(tmp_path, capsys, fmt):
    """Writers split lists by segment_id alone: the de and fr lists of segment 0 became one list
    (nested: one line of 4 hypotheses with the de reference only; its 'le chat est assis' said
    bleu 1.0 and scored 0.0 read back). Each list is now written as one, numbered by its position."""
    src, rows = _two_language_pairs(tmp_path)
    out = tmp_path / f"two.{fmt}"
    assert main(["score", str(src), "--seg-col", "lp,segment_id", "-o", str(out), "--to", fmt, "-q"]) == 0, \
        capsys.readouterr().err
    back = read_kbest(out, "nbest") if fmt == "nbest" else read_table(out, fmt)
    assert back["segment_id"].to_pylist() == [0, 0, 1, 1]
    assert back["hypothesis"].to_pylist() == rows["hypothesis"]
    if fmt == "nested":  # the references travel with the lists; the scores written equal sacrebleu's
        lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        assert [x["refs"] for x in lines] == [["the cat sat on the mat"], ["le chat est assis"]]
        want = [BLEU(effective_order=True).sentence_score(h, r).score / 100
                for h, r in zip(rows["hypothesis"], rows["references"])]
        assert [h["bleu"] for x in lines for h in x["hyps"]] == pytest.approx(want, rel=1e-12)


def test_a_list_in_two_runs_and_a_column_named_as_a_key_are_refused(tmp_path, capsys):
    rows = {"segment_id": [0, 1, 0], "hypothesis": ["a b", "c d", "e f"], "model_score": [-1.0, -2.0, -3.0]}
    src = tmp_path / "runs.parquet"
    pq.write_table(pa.table(rows), src)
    for fmt in ("nested", "fairseq", "marian"):  # nested split segment 0 in two lines; fairseq's file did not read back
        assert main(["convert", str(src), str(tmp_path / f"o.{fmt}"), "--to", fmt]) == 2
        err = capsys.readouterr().err
        assert "(segment_id): the rows of segment 0 are not contiguous (they start again at row 2" in err
        assert "--sort" in err and err.count("\n") == 1
    # a source column named text was written over each hypothesis's text
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["the cat"], "text": ["le chat"]}), src)
    assert main(["convert", str(src), str(tmp_path / "o.nested"), "--to", "nested"]) == 2
    assert "column 'text' has the name of nested's own key" in capsys.readouterr().err
    pq.write_table(pa.table({"segment_id": [0], "hypothesis": ["the cat"], "translations": ["x"]}), src)
    assert main(["convert", str(src), str(tmp_path / "o.json"), "--to", "sockeye"]) == 2
    assert "'translations'" in capsys.readouterr().err
    # OpenNMT has no segment ids: lists of 2 and 1 would read back as three of one, or shifted
    pq.write_table(pa.table({"segment_id": [0, 0, 1], "hypothesis": ["a", "b", "c"], "model_score": [-1.0] * 3}), src)
    assert main(["convert", str(src), str(tmp_path / "o.txt"), "--to", "opennmt-py"]) == 2
    assert "every list needs the same K" in capsys.readouterr().err
    assert not any(p.name.startswith("o.") for p in tmp_path.iterdir())


# ---- what a file may look like when it reaches us ---------------------------------------------------

@pytest.mark.parametrize("fmt", [f for f in SAMPLES if f != "text"])
def test_a_byte_order_mark_changes_nothing(tmp_path, fmt, capsys):
    """An editor's BOM before the first line: OpenNMT-tf was taken for plain text (the score and
    ||| scored as words: 4.91 where 6.00), Marian for Moses n-best (a misleading error), fairseq's
    first S- line was skipped as a log line."""
    path, refs = _write(tmp_path, fmt)
    if fmt == "fairseq":  # the S- line first: the log lines filtered out (grep "^[STHDP]-"), as people do
        path.write_text(fairseq_generate(LISTS, [2, 0, 1], log_lines=False), encoding="utf-8")
    with_bom = tmp_path / f"bom.{fmt}.out"
    with_bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert input_format(with_bom) == (fmt, None)
    *_, extra, needs_refs, _ = SAMPLES[fmt]
    args = [*extra, *(["-r", str(refs)] if needs_refs else []), "-t", "none", "-q"]
    for src, out in ((path, "a.parquet"), (with_bom, "b.parquet")):
        assert main(["score", str(src), *args, "-o", str(tmp_path / out)]) == 0, capsys.readouterr().err
    a, b = pq.read_table(tmp_path / "a.parquet"), pq.read_table(tmp_path / "b.parquet")
    assert a.drop_columns([c for c in a.column_names if c == "prelude"]).equals(
        b.drop_columns([c for c in b.column_names if c == "prelude"]))
    if fmt == "fairseq":  # the S- line is read, so it is written back
        assert b["source"].to_pylist() == a["source"].to_pylist()


def test_opennmt_tf_with_trailing_spaces_stripped_is_still_detected(tmp_path, capsys):
    """An empty hypothesis's line is '-1.5 ||| ' as written; an editor stripping trailing spaces
    leaves '-1.5 |||', which the reader takes but detection did not (scored as plain text)."""
    lists = [("s", "a b c", [("a b c", -0.5), ("", -1.5)])]
    path = tmp_path / "tf.txt"
    path.write_text("".join(line.rstrip() + "\n" for line in opennmt_tf(lists).splitlines()), encoding="utf-8")
    assert input_format(path) == ("opennmt-tf", None)
    assert read_kbest(path, nbest_size=2)["hypothesis"].to_pylist() == ["a b c", ""]


@pytest.mark.parametrize("fmt, line", [
    ("sockeye", {"sentence_id": 2, "translation": "", "score": 0.0, "translations": [], "scores": []}),
    ("nested", {"id": 1, "hyps": []})])
def test_an_empty_list_of_hypotheses_is_refused(tmp_path, capsys, fmt, line):
    """It was dropped: the next line took its references (1-best corpus BLEU 100 without the
    brevity penalty of the missing source), and the written-back file had a line fewer."""
    good = {"sockeye": {"sentence_id": 1, "translation": "a b", "score": 1.0},
            "nested": {"id": 0, "hyps": [{"text": "a b"}]}}[fmt]
    path = tmp_path / f"k.{fmt}.json"
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("a b\nc d e f\na b\n", encoding="utf-8")
    assert main(["score", str(path), "--format", fmt, "-r", str(tmp_path / "ref.txt"), "-o",
                 str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert "line 2: an empty list of hypotheses" in err and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["opennmt-tf", "opennmt-py", "fairseq", "marian", "sockeye", "nested"])
def test_an_output_cut_short_is_refused_against_its_references(tmp_path, capsys, fmt):
    """Fewer sources than reference lines: plain text was refused, the toolkits' formats scored the
    subset (BLEU 100 of a first line against six references lines)."""
    path, refs = _write(tmp_path, fmt)
    refs.write_text(refs.read_text(encoding="utf-8") + "one more reference\n", encoding="utf-8")
    *_, extra, _, _ = SAMPLES[fmt]
    assert main(["score", str(path), *extra, "-r", str(refs), "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert "segments" in err and "expected one reference line per segment" in err and err.count("\n") == 1


def test_convert_to_a_format_says_what_is_wrong_with_its_table(tmp_path, capsys):
    (tmp_path / "g.parquet").write_text("garbage\n")
    for src, said in ((tmp_path / "none.parquet", "no such file"), (tmp_path / "g.parquet", "not a readable parquet")):
        assert main(["convert", str(src), str(tmp_path / "o.m"), "--to", "marian"]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1 and "Traceback" not in err
