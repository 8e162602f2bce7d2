"""The README and the docs pages show real output: every value they print after an example is what
the code returns now; and the documentation holds together (links, options, environment variables).

The expected strings are read from README.md and the docs pages its examples moved to (PAGES), the
values computed here; a change of the code that changes an example's output fails until the page is
updated.
"""

import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

import kbest_bleu as kb
from kbest_bleu.cli import main
from kbest_bleu.tuning import KbestLists, tune_mira

ROOT = Path(__file__).resolve().parents[1]
# the README and the pages its examples moved to; an example is looked up in all of them, in order
PAGES = [ROOT / "README.md", ROOT / "docs" / "python_api.md", ROOT / "docs" / "tuning.md"]
DOCS = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
HYPS = ["the cat sat on the mat", "a cat sat on a mat", "the dog"]
REFS = [["the cat sat on a mat"], ["a dog barked"]]


def _shown_after(call: str) -> str:
    """The ``# ...`` output lines that follow ``call`` in a code block of PAGES, comment marks removed."""
    lines = DOCS.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(call))
    out = []
    for line in lines[at + 1:]:
        if not line.startswith("# "):
            break
        out.append(line[2:])
    assert out, f"README/docs: no output shown after {call!r}"
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
    block = DOCS[DOCS.index("lists = KbestLists.from_table(table)"):]
    assert f"# {len(table)} rows -> {len(lists.stats)} distinct candidates in {len(lists.seg_ptr) - 1} segments" in block
    for call, value in (("lists.corpus_bleu(lists.one_best(w0))", lists.corpus_bleu(lists.one_best(w0))),
                        ("tune_mira(lists, w0).bleu", tune_mira(lists, w0).bleu),
                        ("lists.corpus_bleu(lists.corpus_oracle())", lists.corpus_bleu(lists.corpus_oracle()))):
        shown = re.search(re.escape(call) + r"\s+# (\d\.\d{4}) ", block)
        assert shown and shown.group(1) == f"{value:.4f}", (call, value)


def test_command_line_session(capsys):
    assert main(["score", "-t", "none"]) == 0
    got = capsys.readouterr()
    readme = PAGES[0].read_text(encoding="utf-8")
    block = readme[readme.index("$ kbest-bleu score -t none\n"):]
    block = block[:block.index("```")]
    assert got.err.strip() in block  # the bundled-sample line
    shown = block.splitlines()[2:]
    printed = got.out.strip().splitlines()
    assert len(printed) == len(shown)
    # everything but the time is reproducible
    assert re.sub(r"time .*", "", printed[0]) == re.sub(r"time .*", "", shown[0])
    assert printed[1:] == shown[1:]


# --- the documentation holds together -------------------------------------------------------------

LINKED = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
          ROOT / "benchmarks" / "RESULTS.md", ROOT / "benchmarks" / "RESULTS_ARCHIVE.md"]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> list:
    """The lines of a markdown text outside fenced code blocks (whose ``#`` lines are comments)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def _anchors(page: Path) -> set:
    """The anchors GitHub gives the headings of ``page``: lowercased, characters other than word
    characters, spaces and hyphens dropped, spaces made hyphens; a repeated heading gets -1, -2, ..."""
    anchors, counts = set(), {}
    for line in _prose(page.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            anchors.add(f"{slug}-{n}" if n else slug)
    return anchors


def test_anchors_as_github_makes_them(tmp_path):
    """The anchor rule above on headings of the kinds these pages use, against the anchors GitHub
    (github-slugger) gives them: punctuation dropped without collapsing the hyphens around it."""
    page = tmp_path / "p.md"
    page.write_text("# Install (`pip install .`), 2026-11-24\n## Threads: `--threads N`\n```\n# not a heading\n```\n"
                    "## Smoothings 0-7 (Chen & Cherry 2014)\n## Notes\n## Notes\n", encoding="utf-8")
    assert _anchors(page) == {"install-pip-install--2026-11-24", "threads---threads-n",
                              "smoothings-0-7-chen--cherry-2014", "notes", "notes-1"}


def test_every_relative_link_points_to_an_existing_file_and_heading():
    """Every relative link of the README, the docs pages and the benchmark results names a file that
    exists, and a ``#anchor`` in it names a heading of that file."""
    broken = []
    for page in LINKED:
        for line in _prose(page.read_text(encoding="utf-8")):
            for target in _LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                if not dest.exists():
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_readme_is_a_front_door():
    """Issue 33: the README stays short (about 250 lines); depth goes to docs/."""
    assert len(PAGES[0].read_text(encoding="utf-8").splitlines()) <= 260


def _options(parser, path=()) -> list:
    """(command path, long option) of every option of every command and subcommand of ``parser``."""
    import argparse
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _options(sub, (*path, name))
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            out.append((" ".join(path), max(action.option_strings, key=len)))
    return out


def test_cli_page_names_every_option():
    """docs/cli.md names every option of every command the parser has (kbest-bleu --help is the
    authority; the page must not fall behind it)."""
    from kbest_bleu.cli import build_parser
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    options = _options(build_parser())
    assert len(options) > 50
    missing = sorted({f"{cmd}: {opt}" for cmd, opt in options if f"`{opt}" not in page and f" {opt}" not in page})
    assert not missing, missing


def test_settings_page_lists_every_environment_variable_the_package_reads():
    """docs/settings.md names every environment variable the package reads or sets: each upper-case
    name read by a ``get``/``setdefault``/``pop``/``getenv`` call (``os.environ.get``, a settings
    helper ``_get``), indexed in or tested against ``os.environ``, and every ``KBEST_BLEU_*`` name."""
    access = re.compile(r"""(?:\bget|\bsetdefault|\bpop|\bgetenv|\b_get)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
                        r"""|os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']"""
                        r"""|["']([A-Z][A-Z0-9_]*)["']\s+(?:not\s+)?in\s+os\.environ"""
                        r"""|["'](KBEST_BLEU_[A-Z0-9_]+)["']""")
    names = set()
    for source in (ROOT / "kbest_bleu").rglob("*.py"):
        for groups in access.findall(source.read_text(encoding="utf-8")):
            names.update(g for g in groups if g)
    assert {"KBEST_BLEU_AOT", "KBEST_BLEU_DATA", "NUMBA_CACHE_DIR"} <= names  # the pattern still finds them
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert not sorted(n for n in names if f"`{n}`" not in page)
