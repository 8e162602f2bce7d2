"""The warm-up of each area (:mod:`kbest_bleu.warmup`): its kernels run once through the public
functions and with the kinds of inputs the commands use (``score --metric X`` on parquet files of
``string`` and ``large_string`` columns, ``corpus``, ``tune``, MBR, ``metaeval``, the one-call
helpers), on tiny tables: numba specialises a kernel on its argument types (dtype, layout,
writability), not on sizes. Temporary files go in the folder each warm-up is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["AREAS", "NEEDS", "OPTIONAL", "STEPS", "TOKENIZERS_WARMED", "available_areas", "on_step"]

# none, 13a and zh share the text kernel (the rules are an argument); 13a adds its unescape scan,
# char its own rewrite; intl and lowercasing run in Arrow
TOKENIZERS_WARMED = ("none", "13a", "char")
_TEXT_TYPES = ("large_string", "string")  # the bundled sample's, and pyarrow's default
# segment_id, hypothesis, references (13a's escapes, digits with a hyphen, non-ASCII, a duplicate)
_ROWS = [(0, "the cat sat on the mat .", ["the cat sat on the mat ."]),
         (0, "the cat sat on a mat", ["the cat sat on the mat ."]),
         (0, "the cat sat on a mat", ["the cat sat on the mat ."]),
         (0, "a cat &amp; the dog", ["the cat sat on the mat ."]),
         (1, "Ein Haus , 1-2 Gärten .", ["Ein Haus mit 1-2 Gärten .", "ein Haus"]),
         (1, "ein haus", ["Ein Haus mit 1-2 Gärten .", "ein Haus"])]
_SEG, _HYP, _REFS = (list(c) for c in zip(*_ROWS))
# a Moses feature string per row (tune reads the sample's) and the decoder's score
_FEATURES = ["d= 0 -3.3 lm= -47.2 tm= -36.7 -58.3 w= -7", "d= 0 -4.4 lm= -42.5 tm= -44.2 -68.0 w= -6",
             "d= 0 -4.4 lm= -42.5 tm= -44.2 -68.0 w= -6", "d= 0 -2.8 lm= -40.1 tm= -37.6 -59.1 w= -6",
             "d= 0 -1.9 lm= -30.3 tm= -20.2 -25.4 w= -6", "d= 0 -0.9 lm= -12.8 tm= -8.5 -9.7 w= -2"]
_PARAPHRASES = "cat\tdog\t\twordnet\t\nmat\trug\t\tmeteor\t0.4\nhaus\tgebäude\t\tboth\t0.2\n"
_reached: list = [None]  # called with a step's name (:data:`STEPS`) once it is done


def on_step(callback: "Callable[[str], None] | None") -> None:
    """Who is told when an area reaches a step of :data:`STEPS` (None: nobody)."""
    _reached[0] = callback


def _parquet(tmp: Path, name: str, text: str = "large_string", tuning: bool = False) -> Path:
    """The tiny K-best table as a parquet file: hypotheses of Arrow type ``text``, references
    list<string> per row (as the sample); with ``tuning``, Moses feature strings and model scores."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    cols = {"segment_id": pa.array(_SEG, pa.int64()), "hypothesis": pa.array(_HYP, getattr(pa, text)()),
            "references": pa.array(_REFS, pa.list_(pa.string()))}
    if tuning:
        cols["features"] = pa.array(_FEATURES, getattr(pa, text)())
        cols["model_score"] = pa.array([-9.3, -9.2, -9.2, -9.1, -5.0, -2.5], pa.float64())
    pq.write_table(pa.table(cols), tmp / f"{name}.parquet")
    return tmp / f"{name}.parquet"


def _score_files(tmp: Path, metrics: Sequence[Any] = (), engine: str = "numpy", **options: Any) -> None:
    """``kbest-bleu score IN`` (with and without ``--stats``) on parquet files of both text types:
    the job's reader (references dictionary-encoded) and chunks; the output is not written (no
    kernel writes it; a file written then removed could share an input's inode within the
    command). Metric areas count BLEU on the numpy engine: the counting kernels are counting's."""
    from ..batch.parquet import score_parquet
    for text in _TEXT_TYPES:
        for stats in (False, True):
            score_parquet(_parquet(tmp, text, text), None, metrics=metrics, stats=stats, engine=engine, **options)


def _tokens() -> None:
    """The counting kernels the metrics call too: the split and its rewrites under each
    tokenizer, the references' equality check."""
    import pyarrow as pa

    from ..encode import references_array, segment_pointers, segment_references
    from ..tokenize import prepare, split_ids, tokenize
    for text in _TEXT_TYPES:
        for tok in TOKENIZERS_WARMED:
            split_ids(*prepare(pa.array(_HYP, getattr(pa, text)()), tok))
            tokenize(pa.array(_HYP, getattr(pa, text)()), tok)
    segment_references(references_array(_REFS), segment_pointers(_SEG, len(_SEG)), len(_SEG))


def _counting(tmp: Path) -> None:
    """BLEU: first :func:`_tokens`; then parquet jobs and in-memory tables under each tokenizer,
    the one-call helpers, ``corpus``/``paired`` (lists of strings), pre-tokenized lists (the id
    kernels) and the counting ``tune`` and MBR do (the lists' id encoding, the pair kernel)."""
    import pyarrow.parquet as pq

    from ..batch.parquet import read_parquet_table
    from ..batch.stream import score_table
    from ..bleu import corpus_bleu, score_kbest, sentence_bleu
    from ..config import BleuConfig
    from ..tuning import KbestLists, mbr_matrix, mbr_select
    _tokens()
    if _reached[0] is not None:
        _reached[0]("counting.tokens")
    for tok in TOKENIZERS_WARMED:
        cfg = BleuConfig(tokenize=tok)
        _score_files(tmp, engine="kernels", config=cfg)
        for text in _TEXT_TYPES:
            score_table(pq.read_table(_parquet(tmp, text, text)), cfg)
        sentence_bleu(_HYP[3], _REFS[3], tokenize=tok)
        corpus_bleu(_HYP, _REFS, tokenize=tok)
        score_kbest(_HYP, _REFS, _SEG, tokenize=tok)
        KbestLists.from_table(read_parquet_table(_parquet(tmp, "tune", tuning=True), "tune IN"), cfg,
                              score="model_score")
        mbr_select(_HYP, _SEG, config=cfg)
        mbr_matrix(_HYP[:4], config=cfg)
    score_kbest([h.split() for h in _HYP], [[r.split() for r in rs] for rs in _REFS], _SEG, tokenize="none")


def _meteor(tmp: Path) -> None:
    """``score --metric meteor`` (the CLI's options: the jar's quirks, lowercasing) and the Python
    API (rows, one sentence, the system score)."""
    from ..metrics.base import load_metric
    from ..metrics.meteor import meteor_rows, sentence_meteor, system_meteor
    for quirks in (False, True):
        _score_files(tmp, [load_metric("meteor", lang="en", jar_compat=quirks, lowercase=quirks, function_words=None)])
    system_meteor(meteor_rows(_HYP, _REFS))
    sentence_meteor(_HYP[0], _REFS[0])


def _bleu2vec(tmp: Path) -> None:
    """``score --metric bleu2vec`` in both modes with a separate (orders 1-3) and a joint model
    (float32 unit vectors, as read from a model directory), a smoothing that reads order N+1, a
    cosine floor; the Python API."""
    import numpy as np

    from ..metrics.base import load_metric
    from ..metrics.bleu2vec import bleu2vec_scores, sentence_bleu2vec
    from ..metrics.bleu2vec.models import from_arrays
    words = sorted({w.lower() for s in _HYP + sum(_REFS, []) for w in s.split()})
    keys = {n: ["_".join(words[i:i + n]) for i in range(len(words) - n + 1)] for n in (1, 2, 3)}
    vectors = {n: np.random.default_rng(n).standard_normal((len(k), 8)) for n, k in keys.items()}
    for emb in (from_arrays(keys, vectors), from_arrays({0: sum(keys.values(), [])},
                                                        {0: np.concatenate(list(vectors.values()))}, joint=True)):
        _score_files(tmp, [load_metric("bleu2vec", embeddings=emb, mode="faithful", min_similarity=0.0)])
        _score_files(tmp, [load_metric("bleu2vec", embeddings=emb, mode="corrected", min_similarity=0.1,
                                       smoothing="7")])
        bleu2vec_scores(_HYP, _REFS, _SEG, embeddings=emb, stats=True)
        sentence_bleu2vec(_HYP[0], _REFS[0], embeddings=emb, mode="faithful")


def _parmesan(tmp: Path) -> None:
    """``score --metric parmesan`` with a paraphrase table file (pairs both ways and directed),
    and the Python API."""
    from ..metrics.base import load_metric
    from ..metrics.parmesan import load_table, paraphrase, sentence_parmesan
    path = tmp / "paraphrases.tsv"
    path.write_text(_PARAPHRASES, encoding="utf-8")
    for directed in (False, True):
        _score_files(tmp, [load_metric("parmesan", paraphrases=str(path), analyzer="lower", lang="en",
                                       directed=directed, sources="wordnet,meteor")])
    paraphrase("the dog sat", "the cat sat", load_table(path))
    sentence_parmesan("the dog sat", ["the cat sat"], load_table(path))


def _tuning(tmp: Path) -> None:
    """``tune`` (MIRA, PRO, expected BLEU, from the decoder's weights) on lists read as the command
    reads them, the oracles, kbmira's background BLEU, MBR (``tuning.mbr``)."""
    from ..batch.parquet import read_parquet_table
    from ..config import BleuConfig
    from ..tuning import KbestLists, hope_fear_model, mbr_select, tune_expected_bleu, tune_mira, tune_pro
    cfg = BleuConfig()
    lists = KbestLists.from_table(read_parquet_table(_parquet(tmp, "tune", tuning=True), "tune IN"), cfg,
                                  score="model_score")
    w0 = lists.decoder_weights()
    lists.corpus_bleu(lists.one_best(w0), cfg)
    tune_mira(lists, w0, epochs=2, config=cfg)
    tune_pro(lists, w0, config=cfg)
    tune_expected_bleu([lists], w0, epochs=2, config=cfg)
    lists.corpus_oracle()
    hope_fear_model(lists, w0, [1.0] * (2 * lists.stats.max_order + 1))
    mbr_select(_HYP, _SEG, config=cfg)


def _research(tmp: Path) -> None:  # noqa: ARG001 (no files)
    """The correlation kernels of ``metaeval`` (Kendall tau-b's merge sort and ties)."""
    import numpy as np

    from ..research.correlation import kendall_tau_b
    kendall_tau_b(np.array([0.1, 0.4, 0.4, 0.9]), np.array([1, 3, 2, 2]))


def _metric(name: str) -> Callable[[Path], None]:
    """A registered metric without a warm-up of its own: ``score --metric name``, default options."""
    def run(tmp: Path) -> None:
        from ..metrics.base import load_metric
        _score_files(tmp, [load_metric(name)])
    return run


def _token_ids(tmp: Path) -> None:
    """Token-id BLEU (RL rewards): padded 2-D arrays of small ids (direct tables) and of ids near
    the int64 limit (hashed), groups sharing references, float64 and float32 scores, a scorer of
    fixed references, pairwise and self-BLEU; ragged lists and Arrow list<int32>; the batch job
    on list<int64|int32> columns."""
    import numpy as np
    import pyarrow as pa

    from ..token_ids import TokenBleuScorer, pairwise_token_bleu, self_token_bleu, token_bleu, token_ngram_stats
    hyps = np.array([[5, 6, 7, 8, 0], [5, 6, 9, 0, 0], [1, 2, 3, 0, 0], [1, 2, 0, 0, 0]], np.int64)
    refs = np.array([[5, 6, 7, 8], [1, 2, 3, 0]], np.int64)
    for scale in (1, 2 ** 59):
        h, r = hyps * scale, refs * scale
        for dtype in (np.float64, np.float32):
            token_bleu(h, r, pad_id=0, groups=2, dtype=dtype)
            pairwise_token_bleu(h, groups=2, pad_id=0, dtype=dtype)
            self_token_bleu(h, groups=[0, 2, 4], pad_id=0, dtype=dtype)
        token_ngram_stats(h, r[[0, 0, 1, 1]], pad_id=0)
        TokenBleuScorer(r, pad_id=0)(h, groups=2)
    token_bleu([[i for i in row if i] for row in hyps.tolist()], [[i for i in row if i] for row in refs.tolist()],
               groups=2)
    token_bleu(pa.array(hyps.tolist(), pa.list_(pa.int32())), pa.array(refs.tolist(), pa.list_(pa.int32())),
               pad_id=0, groups=2)
    import pyarrow.parquet as pq

    from ..batch.parquet import score_parquet
    from ..config import BleuConfig
    for t in (pa.int64(), pa.int32()):  # kbest-bleu score -t none on list<int> and list<list<int>> columns
        pq.write_table(pa.table({"segment_id": [0, 0, 1, 1], "hypothesis": pa.array(hyps.tolist(), pa.list_(t)),
                                 "references": pa.array([[r] for r in refs[[0, 0, 1, 1]].tolist()],
                                                        pa.list_(pa.list_(t)))}), tmp / "ids.parquet")
        score_parquet(tmp / "ids.parquet", None, BleuConfig(tokenize="none"))


def _chrf(tmp: Path) -> None:
    """chrF and chrF++: ``score --metric chrf`` (with whitespace), the Python API, and MBR's
    pairwise (matrices or expected utilities only; separate weighted pseudo-references) and
    aggregated utilities over several segments and one."""
    import numpy as np

    from ..metrics.chrf import aggregate_chrf, corpus_chrf, from_options, pairwise_chrf, sentence_chrf
    ptr = np.array([0, 4, 6], np.int64)
    for word_order, whitespace in ((0, False), (2, True)):
        opts = {"word_order": word_order, "whitespace": whitespace}
        _score_files(tmp, [from_options(**opts)])
        corpus_chrf(_HYP, _REFS, **opts)
        sentence_chrf(_HYP[0], _REFS[0], **opts)
        for matrix in (True, False):
            pairwise_chrf(_HYP, ptr, matrix=matrix, **opts)
        pairwise_chrf(_HYP, ptr, _HYP, ptr, weights=np.ones(len(_HYP)), **opts)
        aggregate_chrf(_HYP, ptr, **opts)
        aggregate_chrf(_HYP[:4], **opts)


# CPU seconds of each area's compile here (kbest-bleu warmup on empty caches, 2026-11-26): the
# longest are handed out first (counting always runs first, in the calling process)
_CPU = {"counting": 36, "metrics.chrf": 40, "metrics.bleu2vec": 16, "metrics.meteor": 12, "token_ids": 10,
        "research": 2, "tuning": 2, "metrics.parmesan": 2}
# area -> its warm-up
AREAS: dict[str, Callable[[Path], None]] = {
    "counting": _counting, "research": _research, "metrics.meteor": _meteor, "metrics.bleu2vec": _bleu2vec,
    "tuning": _tuning, "metrics.parmesan": _parmesan}
# what each area's kernels call of other areas (their entries are saved by one process: numba
# writes a function's cache index unlocked, and two processes compiling one function for
# different types may overwrite each other's entry); any other area: ``counting``
NEEDS = {"counting": set(), "research": set(), "metrics.chrf": set(), "token_ids": set(),
         "metrics.meteor": {"counting.tokens"}, "metrics.bleu2vec": {"counting.tokens"},
         "metrics.parmesan": {"counting.tokens", "metrics.meteor"}}
STEPS = {"counting.tokens": "counting"}  # a step of an area, reached before it ends (:func:`_tokens`)


# registered metrics that an area above warms up: BLEU is the counting area's (every score job
# counts it, so ``score --metric bleu`` would ask for it twice)
_WARMED_ELSEWHERE = frozenset({"bleu"})

# areas being written: warmed up once their package exists (their failures skip them; the kernels
# they leave uncompiled fail the check)
OPTIONAL = {"metrics.chrf": _chrf, "token_ids": _token_ids}


def available_areas() -> dict[str, Callable[[Path], None]]:
    """:data:`AREAS`, the areas of :data:`OPTIONAL` whose package exists, and each metric of
    :data:`kbest_bleu.metrics.base.REGISTRY` without a warm-up (its default options)."""
    from importlib.util import find_spec

    from ..metrics.base import REGISTRY as METRICS
    areas = {**AREAS, **{a: f for a, f in OPTIONAL.items() if find_spec(".." + a, __package__) is not None}}
    areas.update({f"metrics.{m}": _metric(m) for m in METRICS
                  if f"metrics.{m}" not in areas and m not in _WARMED_ELSEWHERE})
    return dict(sorted(areas.items(), key=lambda item: -_CPU.get(item[0], 0)))
