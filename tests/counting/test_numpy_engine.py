"""The numpy engine (kbest_bleu._numpy_counting): the same statistics as the numba kernels,
integer for integer, without loading numba (issue 18: small jobs)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import stats as ref_stats
from test_tokenize import text as fuzzed_text
from sacrebleu.metrics import BLEU

import kbest_bleu as kb
from kbest_bleu.counting import numpy_engine as _numpy_counting
from kbest_bleu.counting.codes import RULES_NONE
from kbest_bleu.tokenize import _PY_SPACE
from kbest_bleu.batch import score_parquet
from kbest_bleu.config import REF_LENGTH_POLICIES
from kbest_bleu.stats import segment_stats

SAMPLE = Path(__file__).resolve().parents[2] / "kbest_bleu" / "data" / "moses_100best_sample.parquet"
# tiny vocabularies, so that n-grams repeat and clipping matters; every byte the 13a/zh rules test
WORDS = ["a", "b", "c", "a.", ".", ",", "1", "1.5", "2-3", "-", "&amp;", "&", "\u4e2d", "x,y", ""]
SPACES = [" ", "  ", "\t", "\u3000", "\x1c", "\n"]
sentence = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SPACES)), max_size=12).map(
    lambda parts: "".join(w + s for w, s in parts))
segments = st.lists(st.tuples(st.lists(sentence, min_size=1, max_size=5), st.lists(sentence, max_size=4)),
                    min_size=1, max_size=5)


def _both(segs, **options):
    hyps = pa.array([h for hs, _ in segs for h in hs], pa.string())
    refs = pa.array([rs for _, rs in segs], pa.list_(pa.string()))
    ptr = np.cumsum([0] + [len(hs) for hs, _ in segs]).astype(np.int64)
    cfg = kb.BleuConfig(**options)
    return segment_stats(hyps, refs, ptr, cfg, engine="numpy"), segment_stats(hyps, refs, ptr, cfg)


@settings(max_examples=300, deadline=None)
@given(segs=segments, tok=st.sampled_from(["none", "13a", "zh", "intl"]), lc=st.booleans(),
       policy=st.sampled_from(REF_LENGTH_POLICIES), order=st.integers(1, 6))
def test_equals_the_kernels_integer_for_integer(segs, tok, lc, policy, order):
    ours, kernels = _both(segs, tokenize=tok, lowercase=lc, ref_length=policy, max_order=order)
    for name in ("matches", "totals", "hyp_len", "ref_len"):
        assert np.array_equal(getattr(ours, name), getattr(kernels, name)), name


@settings(max_examples=200, deadline=None)
@given(segs=segments, tok=st.sampled_from(["none", "13a", "zh"]), policy=st.sampled_from(REF_LENGTH_POLICIES))
def test_equals_the_counter_reference_on_sacrebleu_tokens(segs, tok, policy):
    ours, _ = _both(segs, tokenize=tok, ref_length=policy)
    bleu = BLEU(tokenize=tok)
    row = 0
    for hs, rs in segs:
        ref_toks = [bleu._preprocess_segment(r).split() for r in rs]
        for h in hs:
            m, t, c, r = ref_stats(bleu._preprocess_segment(h).split(), ref_toks, ours.matches.shape[1], policy)
            assert (ours.matches[row].tolist(), ours.totals[row].tolist(), ours.hyp_len[row], ours.ref_len[row]) == (
                m, t, c, r)
            row += 1


@given(rows=st.lists(st.lists(st.sampled_from(["a", "b", "", "a b"]), max_size=3), min_size=1, max_size=12),
       data=st.data())
def test_rows_equal_owner_equals_a_loop(rows, data):
    owner = np.array([data.draw(st.integers(0, i)) for i in range(len(rows))], np.int64)
    arr = pa.array(rows, pa.list_(pa.string()))
    want = [rows[i] == rows[o] for i, o in enumerate(owner)]
    assert _numpy_counting.rows_equal_owner(arr, owner).tolist() == want
    assert _numpy_counting.rows_equal_owner(arr.slice(0), owner).tolist() == want
    encoded = pa.ListArray.from_arrays(arr.offsets, pc.dictionary_encode(pc.list_flatten(arr)))
    assert _numpy_counting.rows_equal_owner(encoded, owner).tolist() == want


@pytest.mark.parametrize("tok", ["none", "13a", "intl"])
def test_real_parquet_job_is_identical_on_both_engines(shared_data, tmp_path, tok):
    """Real pooled WMT22 lists (several references per row, dictionary-read from parquet):
    the output files of the two engines are equal, column for column."""
    t = pq.read_table(shared_data / "wmt22_news_systems.parquet", columns=["lp", "segment_id", "hypothesis",
                                                                           "references"],
                      filters=[("lp", "in", ["de-en", "zh-en"])])
    t = t.take(pc.sort_indices(t, [("lp", "ascending"), ("segment_id", "ascending")])).slice(0, 30000)
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    cols = kb.batch.Columns(segment=("lp", "segment_id"))
    outs = {}
    for engine in ("numpy", "kernels"):
        score_parquet(src, tmp_path / f"{engine}.parquet", kb.BleuConfig(tokenize=tok), columns=cols, stats=True,
                      smoothings="all", engine=engine)
        outs[engine] = pq.read_table(tmp_path / f"{engine}.parquet")
    assert outs["numpy"].equals(outs["kernels"])


def test_small_jobs_choose_the_numpy_engine_and_load_no_numba(tmp_path):
    """The bundled sample is far below NUMPY_ENGINE_BYTES: the CLI job never imports numba (no
    start-up cost, nothing to compile on a first run); tiny thresholds send it to the kernels,
    which then hold a compiled text kernel."""
    def job(threshold):
        code = ("import sys, kbest_bleu.settings as s\n"
                f"s.NUMPY_ENGINE_BYTES = s.COLD_NUMPY_ENGINE_BYTES = {threshold}\n"
                "from kbest_bleu.cli import main\n"
                f"assert main(['score', {str(SAMPLE)!r}, '-o', {str(tmp_path / 'o.parquet')!r}, '-q']) == 0\n"
                "counting = sys.modules.get('kbest_bleu.counting._kernels')\n"
                "print('numba' in sys.modules and bool(counting._text_run_stats.signatures))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[-1], pq.read_table(tmp_path / "o.parquet")
    (small, a), (large, b) = job(4 << 20), job(1)
    assert (small, large) == ("False", "True")
    assert a.equals(b)


def test_engine_option_is_checked(tmp_path):
    with pytest.raises(kb.InputError, match="engine: expected 'kernels', 'numpy' or None"):
        score_parquet(SAMPLE, tmp_path / "o.parquet", engine="gpu")


@settings(max_examples=150, deadline=None)
@given(segs=st.lists(st.tuples(st.lists(fuzzed_text, min_size=1, max_size=4), st.lists(fuzzed_text, max_size=3)),
                     min_size=1, max_size=4), tok=st.sampled_from(["none", "13a", "zh", "intl"]), lc=st.booleans())
def test_fuzzed_unicode_equals_the_kernels(segs, tok, lc):
    """Whitespace, zero-width and combining characters, CJK, case-mapping traps, 13a escapes."""
    ours, kernels = _both(segs, tokenize=tok, lowercase=lc)
    for name in ("matches", "totals", "hyp_len", "ref_len"):
        assert np.array_equal(getattr(ours, name), getattr(kernels, name)), name


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", "  ", *_PY_SPACE])),
                               max_size=8).map(lambda parts: "".join(w + s for w, s in parts)), max_size=6),
       only_spaces=st.booleans())
def test_split_tokens_equals_str_split_on_both_paths(texts, only_spaces):
    """Text whose only whitespace is " " takes the literal split, any other of Python's
    whitespace characters the regex split: both cut as ``str.split()`` does."""
    if only_spaces:
        texts = ["".join(" " if c.isspace() else c for c in t) for t in texts]
    taken = []
    with pytest.MonkeyPatch.context() as mp:  # which split ran
        for name in ("split_pattern", "split_pattern_regex"):
            mp.setattr(_numpy_counting.pc, name, lambda *a, _f=getattr(pc, name), _n=name, **k:
                       taken.append(_n) or _f(*a, **k))
        tokens, counts = _numpy_counting.split_tokens(pa.array(texts, pa.string()), RULES_NONE)
    assert tokens.to_pylist() == [w for t in texts for w in t.split()]
    assert counts.tolist() == [len(t.split()) for t in texts]
    other = any(c.isspace() and c != " " for t in texts for c in t)
    assert taken == ["split_pattern_regex" if other else "split_pattern"]


def test_repeated_runs_give_the_same_counts():
    """Arrow's utf8_split_whitespace returned ' ' as a token for 'a   ' in about 40% of runs
    (pyarrow 26), which a property test caught: the engine's split must not vary between runs."""
    segs = [(["x,y\ta\x1c&\u3000&amp;\tb\u3000", "a.\x1c", ". 2-3\n&  - "],
             [",  -  -\u3000a.\x1ca c 1.5\x1c\x1c1  ", "&amp;\x1c&amp; b\u3000x,y\na. 2-3\u3000", "",
              "b\t1 . 2-3\u3000a\u3000\t"])]
    kernels = _both(segs, tokenize="13a", lowercase=True, ref_length="average")[1]
    for _ in range(100):
        ours = _both(segs, tokenize="13a", lowercase=True, ref_length="average")[0]
        assert np.array_equal(ours.ref_len, kernels.ref_len) and np.array_equal(ours.matches, kernels.matches)
