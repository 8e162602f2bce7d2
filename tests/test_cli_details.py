"""Issue 37, "CLI and API details": any metric alone and in any order (the batch job's BLEU one of
the selectable metrics), ``-q`` prints nothing but errors, the summary's rate is the job's wall
rate, true help texts and defaults, "did you mean" for a mistyped option, the thread count from
the top level, the tuning example of docs/tuning.md."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kbest_bleu as kb
from kbest_bleu.cli import SAMPLE, build_parser, main
from kbest_bleu.metrics.meteor import meteor_segments

ROOT = Path(__file__).resolve().parents[1]
KEY = ["iteration", "segment_id"]  # the bundled sample's segment key


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def _segments(table) -> list:
    """Row lists of the segments, in order (a plain loop)."""
    out, last = [], None
    for i, row in enumerate(table.select(KEY).to_pylist()):
        key = tuple(row.values())
        if key != last:
            out.append([])
            last = key
        out[-1].append(i)
    return out


def test_a_metric_alone_scores_without_bleu(tmp_path, capsys):
    assert main(["score", str(SAMPLE), "-t", "none", "--metric", "meteor", "--score-col", "model_score", "-q",
                 "--json", "--stats", "-o", str(tmp_path / "m.parquet")]) == 0
    summary = _json(capsys)
    out = pq.read_table(tmp_path / "m.parquet")
    src = pq.read_table(SAMPLE)
    added = [c for c in out.column_names if c not in src.column_names]
    assert added[0] == "meteor" and "bleu" not in added and "m1" not in added  # --stats: meteor's own only
    assert all(c.startswith("meteor_") for c in added[1:])
    meta = out.schema.metadata
    assert b"kbest_bleu.signature" not in meta and b"kbest_bleu.signature.meteor" in meta
    # the column: meteor_segments over the same segments (tests/metrics checks it against the jar)
    segs = _segments(src)
    ptr = np.array([0] + [s[-1] + 1 for s in segs])
    refs = [src["references"][s[0]].as_py() for s in segs]
    want = meteor_segments(src["hypothesis"], refs, ptr).score
    assert out["meteor"].to_pylist() == want.tolist()
    # the summary: means of sentence scores over all rows, the 1-best rows (model score) and the
    # oracle rows (best meteor), 0-100; no BLEU fields
    assert "one_best" not in summary and "mean_sentence_bleu" not in summary
    m = summary["metrics"]["meteor"]
    score = src["model_score"].to_pylist()
    one = [s[max(range(len(s)), key=lambda i: (score[s[i]], -i))] for s in segs]
    assert m["mean"] == round(100 * float(np.mean(want)), 4)
    assert m["one_best_mean"] == round(100 * float(np.mean(want[one])), 4)
    assert m["oracle_mean"] == round(100 * float(np.mean([max(want[s]) for s in segs])), 4)
    assert m["signature"].startswith("meteor|version:1.5|")


def test_metrics_in_any_order_and_bleu_unchanged(tmp_path, capsys):
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "-o", str(tmp_path / "b.parquet")]) == 0
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "--metric", "meteor,bleu", "--json",
                 "-o", str(tmp_path / "mb.parquet")]) == 0
    summary = _json(capsys)
    alone, both = pq.read_table(tmp_path / "b.parquet"), pq.read_table(tmp_path / "mb.parquet")
    assert both["bleu"].equals(alone["bleu"])
    assert both.column_names[-2:] == ["bleu", "meteor"]  # BLEU's columns first, then the others in order
    assert summary["oracle"]["score"] == 30.32 and set(summary["metrics"]) == {"meteor"}


@pytest.mark.parametrize("argv, says", [
    (["--metric", "meteor", "--also-smoothing", "1"], "--also-smoothing: adds BLEU columns"),
    (["--metric", "rouge"], "--metric: expected a comma-separated list"),
    (["--metric", " , "], "--metric: expected a comma-separated list"),
    (["--metric", "meteor", "--engine", "spark", "-o", "x"], "--engine spark: scores BLEU beside"),
])
def test_metric_lists_refused(capsys, argv, says):
    assert main(["score", str(SAMPLE), "-t", "none", "-q"] + argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_quiet_prints_nothing_but_errors(tmp_path, capfd):
    capfd.readouterr()
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "-o", str(tmp_path / "o.parquet")]) == 0
    assert capfd.readouterr() == ("", "")
    assert main(["score", str(SAMPLE), "-t", "none", "-q", "--json"]) == 0  # --json asks for the summary
    got = capfd.readouterr()
    assert json.loads(got.out)["rows"] == 5000 and got.err == ""
    assert main(["score", str(tmp_path / "missing.parquet"), "-q"]) == 2
    got = capfd.readouterr()
    assert got.out == "" and "missing.parquet" in got.err


def test_the_rate_is_the_whole_jobs(tmp_path, capsys, monkeypatch):
    """The summary's seconds cover the command (here a slow look at the input's format before the
    scoring loop starts); the rate printed is rows / seconds."""
    import kbest_bleu.files.readers as readers
    (tmp_path / "h.txt").write_text("a b c\nd e f\n")
    (tmp_path / "r.txt").write_text("a b c\nd e g\n")
    fast = readers.input_format

    def input_format(*args, **kwargs):
        time.sleep(0.6)
        return fast(*args, **kwargs)
    monkeypatch.setattr(readers, "input_format", input_format)
    assert main(["score", str(tmp_path / "h.txt"), "-r", str(tmp_path / "r.txt"), "--json"]) == 0
    assert _json(capsys)["seconds"] >= 0.6
    assert main(["score", str(tmp_path / "h.txt"), "-r", str(tmp_path / "r.txt")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    found = re.fullmatch(r"rows 2  segments 2  wall time ([0-9.]+) s \(([0-9,]+) rows/s, whole job\)", first)
    assert found and float(found.group(1)) >= 0.6
    assert int(found.group(2).replace(",", "")) == pytest.approx(2 / float(found.group(1)), abs=1.5)


def _help(command: str) -> dict:
    """{long option: its help text as --help prints it (with argparse's default, if any)} of a command."""
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.choices)._name_parser_map[command]
    formatter = sub._get_formatter()
    return {max(a.option_strings, key=len): formatter._expand_help(a) if a.help else "" for a in sub._actions
            if a.option_strings}


def test_help_texts_are_true():
    score, paired = _help("score"), _help("paired")
    for opt in ("--max-order", "--effective-order", "--no-effective-order", "--ref-length", "--lowercase"):
        assert len(score[opt]) > 20, opt  # each has a help of its own
    assert "(default: 4)" in score["--max-order"] and "(default: closest)" in score["--ref-length"]
    assert "1000 for bs, 10000 for ar" in paired["--n-samples"] and "(default: 0)" not in paired["--n-samples"]
    assert "(default: None)" not in "".join(score.values()) + "".join(paired.values())
    assert "(default: False)" not in "".join(score.values())
    assert "1/N" in score["--bleu2vec-weights"] and "3, exp" in score["--bleu2vec-smoothing"]


def test_bleu2vec_defaults_are_what_the_help_says(extensions):
    from kbest_bleu.metrics.bleu2vec import from_options
    corrected = from_options(extensions / "bleu2vec_toy_models")
    assert corrected.weights == pytest.approx((1 / 3, 1 / 3, 1 / 3)) and corrected.max_order == 3
    assert "|s:exp|" in corrected.signature()
    faithful = from_options(extensions / "bleu2vec_toy_models", mode="faithful")
    assert faithful.weights == (0.33, 0.34, 0.33) and faithful.max_order == 3


@pytest.mark.parametrize("argv, says", [
    (["score", "--smothing", "1"], "did you mean --smoothing?"),
    (["score", "--epslon=0.2", "--smothing", "1"], "did you mean --epsilon for --epslon, --smoothing for --smothing?"),
    (["metaeval", "judged", "t.parquet", "--metric", "b", "--human", "h", "--n-bot", "3"], "did you mean --n-boot?"),
    (["scroe"], "maybe you meant 'score'?"),
    (["score", "--compat", "sacreblue"], "maybe you meant 'sacrebleu'?"),
])
def test_typos_get_a_suggestion(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_no_suggestion_for_what_is_nothing_alike(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--zzz"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzz" in err and "did you mean" not in err


def test_thread_count_from_the_top_level():
    from kbest_bleu.counting.threads import thread_count
    assert "set_threads" in kb.__all__ and "threads" in kb.__all__
    before = thread_count()
    with kb.threads(1) as n:
        assert n == 1 and thread_count() == 1
    assert thread_count() == before
    import numba  # with numba's pool in use: its count comes back too
    outer = numba.get_num_threads()
    with kb.threads(1):
        assert numba.get_num_threads() == 1
        with pytest.raises(kb.InputError, match="positive integer"):
            with kb.threads(0):
                pass
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == outer
    assert kb.set_threads(1) == 1 and numba.get_num_threads() == 1
    kb.set_threads(outer)


def _tuning_doc() -> str:
    text = (ROOT / "docs" / "tuning.md").read_text(encoding="utf-8")
    return " ".join(text[text.index("## `kbest-bleu tune`"):].split())  # line breaks as spaces


def test_tune_command_example_prints_what_the_doc_says(capsys):
    """docs/tuning.md's `kbest-bleu tune` paragraph: the three starts and their results."""
    from kbest_bleu.tuning import KbestLists
    doc = _tuning_doc()
    table = pq.read_table(SAMPLE)
    last = KbestLists.from_table(table.filter(pc.equal(table["iteration"], 5)), score="model_score")
    w = ",".join(map(str, last.decoder_weights()))
    runs = {"init": ["--init", w], "zeros": [], "score": ["--score-col", "model_score"]}
    got = {}
    for name, extra in runs.items():
        assert main(["tune", str(SAMPLE), "-t", "none"] + extra) == 0
        captured = capsys.readouterr()
        got[name] = (json.loads(captured.out), captured.err)
    assert "`start_bleu` is {:.4f} and `bleu` {:.4f}".format(got["init"][0]["start_bleu"], got["init"][0]["bleu"]) in doc
    assert "{:,} candidates".format(got["init"][0]["hypotheses"]) in doc and got["init"][0]["segments"] == 10
    assert "`start_bleu` {:.4f}, `bleu` {:.4f}".format(got["zeros"][0]["start_bleu"], got["zeros"][0]["bleu"]) in doc
    assert "`start_bleu` {:.4f} (`bleu` {:.4f})".format(got["score"][0]["start_bleu"], got["score"][0]["bleu"]) in doc
    off = re.search(r"off by up to ([0-9.]+)", got["score"][1])
    assert off and f"off by up to {off.group(1)}" in doc
    assert "|tok:none|" in got["init"][0]["signature"]
