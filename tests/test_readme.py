"""The README shows real output: every value it prints after an example is what the code returns now.

The expected strings are read from README.md, the values computed here; a change of the code that
changes an example's output fails until the README is updated.
"""

import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

import kbest_bleu as kb
from kbest_bleu.cli import main
from kbest_bleu.tuning import KbestLists, tune_mira

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
HYPS = ["the cat sat on the mat", "a cat sat on a mat", "the dog"]
REFS = [["the cat sat on a mat"], ["a dog barked"]]


def _shown_after(call: str) -> str:
    """The ``# ...`` output lines that follow ``call`` in a README code block, comment marks removed."""
    lines = README.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(call))
    out = []
    for line in lines[at + 1:]:
        if not line.startswith("# "):
            break
        out.append(line[2:])
    assert out, f"README: no output shown after {call!r}"
    return "\n".join(out)


def test_python_api_examples():
    got = kb.sentence_bleu("the cat sat on the mat", ["the cat sat on a mat", "there is a cat on the mat"])
    assert _shown_after('kb.sentence_bleu("the cat sat on the mat"').startswith(repr(got) + " ")
    scores = kb.score_kbest(HYPS, REFS, segments=[0, 0, 1], smoothing=7)
    assert _shown_after("kb.score_kbest(hyps, refs") == repr(scores)
    stats = kb.ngram_stats(HYPS, REFS, segments=[0, 0, 1])
    assert _shown_after("stats.to_moses()") == str(stats.to_moses())
    assert _shown_after("print(kb.corpus_score(stats[[0, 2]]))") == str(kb.corpus_score(stats[[0, 2]]))


def test_tokenizer_examples():
    shown = _shown_after('kb.sentence_bleu("The cat, sat.", ["the cat sat ."], tokenize="13a"')
    assert shown.startswith(repr(kb.sentence_bleu("The cat, sat.", ["the cat sat ."], tokenize="13a",
                                                  lowercase=True)) + " ")
    shown = _shown_after('kb.sentence_bleu("The cat, sat.", ["the cat sat ."], tokenize="none")')
    assert shown == repr(kb.sentence_bleu("The cat, sat.", ["the cat sat ."], tokenize="none"))


def test_tuning_example():
    table = pq.read_table(Path(kb.__file__).parent / "data" / "moses_100best_sample.parquet")
    last = KbestLists.from_table(table.filter(pc.equal(table["iteration"], 5)), score="model_score")
    w0 = last.decoder_weights()
    lists = KbestLists.from_table(table)
    block = README[README.index("lists = KbestLists.from_table(table)"):]
    assert f"# {len(table)} rows -> {len(lists.stats)} distinct candidates in {len(lists.seg_ptr) - 1} segments" in block
    for call, value in (("lists.corpus_bleu(lists.one_best(w0))", lists.corpus_bleu(lists.one_best(w0))),
                        ("tune_mira(lists, w0).bleu", tune_mira(lists, w0).bleu),
                        ("lists.corpus_bleu(lists.corpus_oracle())", lists.corpus_bleu(lists.corpus_oracle()))):
        shown = re.search(re.escape(call) + r"\s+# (\d\.\d{4}) ", block)
        assert shown and shown.group(1) == f"{value:.4f}", (call, value)


def test_command_line_session(capsys):
    assert main(["score", "-q", "-t", "none"]) == 0
    got = capsys.readouterr()
    block = README[README.index("$ kbest-bleu score -t none\n"):]
    block = block[:block.index("```")]
    assert got.err.strip() in block  # the bundled-sample line
    shown = block.splitlines()[2:]
    printed = got.out.strip().splitlines()
    assert len(printed) == len(shown)
    # everything but the time is reproducible
    assert re.sub(r"time .*", "", printed[0]) == re.sub(r"time .*", "", shown[0])
    assert printed[1:] == shown[1:]
