"""Scoring options: one validated, immutable object, and its reproducibility signature."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace
from typing import Any, Optional

from .errors import InputError

__all__ = ["BLEU_PLUS_1", "COMPATS", "MAX_SUPPORTED_ORDER", "REF_LENGTH_POLICIES", "SMOOTHING6_VARIANTS",
           "SMOOTHING_NAMES", "TOKENIZERS", "BleuConfig", "__version__", "allowed_smoothings"]

__version__ = "0.1.0"

TOKENIZERS = ("none", "13a", "intl", "char", "zh", "ja-mecab", "ko-mecab", "flores101", "flores200", "spm")
REF_LENGTH_POLICIES = ("closest", "shortest", "average")
MAX_SUPPORTED_ORDER = 16

COMPATS = ("sacrebleu", "nltk", "mteval", "moses")
# sacrebleu's names for Chen & Cherry smoothings 0-3.
SMOOTHING_NAMES = {"none": 0, "floor": 1, "add-k": 2, "exp": 3}
_NAME_OF = {v: k for k, v in SMOOTHING_NAMES.items()}
BLEU_PLUS_1 = "bleu+1"
_ALLOWED = {"sacrebleu": set(range(8)), "nltk": set(range(8)), "mteval": {0, 3}, "moses": {BLEU_PLUS_1}}
_DEFAULT_SMOOTHING = {"sacrebleu": 3, "nltk": 0, "mteval": 3, "moses": BLEU_PLUS_1}
# Moses' scorers (multi-bleu.perl, mert's extractor and sentence-bleu) take tokenized text and split
# it on whitespace; mteval-v13a.pl tokenizes as 13a; NLTK takes the caller's tokens (any tokenizer)
_DEFAULT_TOKENIZE = {"sacrebleu": "13a", "nltk": "13a", "mteval": "13a", "moses": "none"}
# Readings of smoothing 6 (Chen & Cherry 2014 section 2.6, Eq. 10-11), the first the literal one
# (docs/metaeval.md, "Smoothing 6"): see smoothing.paper_precisions.
SMOOTHING6_VARIANTS = ("literal", "raw-prior", "from-bigram", "floor")


_PARAM_MAX = 1e6  # largest smoothing parameter or weight: far below any overflow of the formulas


def _bounded(name: str, value: Any, low: float, high: float, open_low: bool) -> float:
    """``value`` as a float in (low, high] (``open_low``) or [low, high], else InputError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name}: expected a number, found {value!r} ({type(value).__name__}); pass a float")
    x = float(value)
    if not (low < x <= high if open_low else low <= x <= high):
        bracket = "(" if open_low else "["
        raise InputError(f"{name}: expected a finite number in {bracket}{low:g}, {high:g}], found {value!r}")
    return x


def allowed_smoothings(compat: str, max_order: int = 4) -> list:
    """The smoothings a preset (a validated ``BleuConfig.compat``) supports at ``max_order``, in
    order: 0-7 for sacrebleu and nltk (nltk's 6 from order 3 on), 0 and 3 for mteval, bleu+1 for moses."""
    return sorted((s for s in _ALLOWED[compat] if not _nltk_method6_below_trigrams(compat, s, max_order)), key=str)


def _nltk_method6_below_trigrams(compat: str, smoothing: Any, max_order: int) -> bool:
    """NLTK's method6 interpolates from the trigram precision: below 3 orders it raises
    IndexError whatever the input, so the preset has no such smoothing there."""
    return compat == "nltk" and smoothing == 6 and max_order < 3


# numpy's booleans, named so that this module needs no numpy (the parser imports it)
_NUMPY_BOOLS = ("bool_", "bool")


@dataclass(frozen=True)
class BleuConfig:
    """Every option that changes a BLEU number.

    compat : "sacrebleu" (default), "nltk", "mteval" or "moses": which tool's conventions to
        reproduce where the paper is silent (README, "Compatibility presets").
    smoothing : Chen & Cherry (2014) method 0-7, a sacrebleu name (none, floor, add-k, exp) or
        "bleu+1" (moses); None = the preset's own default (sacrebleu/mteval 3, nltk 0, moses bleu+1).
    epsilon : smoothing 1 / "floor" value (paper section 2.1, default 0.1).
    add_k : smoothing 2 / "add-k" pseudo-count from order 2 on; moses: s added to every order.
    k : smoothing 4 and 7 constant K (paper section 2.4, default 5).
    alpha : smoothing 6 interpolation weight (paper section 2.6, default 5).
    smoothing6_variant : which reading of smoothing 6 (one of ``SMOOTHING6_VARIANTS``): "literal"
        (default, Eq. 10-11 as printed), "raw-prior" (prior from unsmoothed precisions),
        "from-bigram" (interpolate from n = 2 on, p_0 = 1), "floor" (zero p_1, p_2 floored at
        epsilon / l_n first). sacrebleu preset only; docs/metaeval.md gives each one's tau.
    max_order : N, highest n-gram order (1..16).
    weights : n-gram weights w_1..w_N; None = uniform 1/N.
    effective_order : sacrebleu only: drop orders the hypothesis has no n-grams of (weights
        renormalized); None = on for sentence scores, off for corpus scores, as sacrebleu.
    auto_reweigh : nltk only: NLTK's ``auto_reweigh`` (weights 1/c for hypotheses shorter than 4).
    smooth_bp : moses only: add s to the reference length in the brevity penalty.
    ref_length : "closest" (ties to the shorter), "shortest" or "average" (Moses, truncated).
    tokenize : tokenizer name; None = the preset's own: "none" for moses, whose scorers split
        tokenized text on whitespace, else "13a".
    lowercase : lowercase before scoring; None = the preset's own: True for mteval (mteval-v13a.pl
        lowercases unless given -c), else False. Python's ``str.lower`` (sacrebleu's -lc), except
        under mteval: A-Z only, after 13a's entity and <skipped> rules, as the script
        (:attr:`lowercase_rule`).
    """

    compat: str = "sacrebleu"
    smoothing: Any = None
    epsilon: float = 0.1
    add_k: float = 1.0
    k: float = 5.0
    alpha: float = 5.0
    smoothing6_variant: str = "literal"
    max_order: int = 4
    weights: Optional[tuple] = None
    effective_order: Optional[bool] = None
    auto_reweigh: bool = False
    smooth_bp: bool = False
    ref_length: str = "closest"
    tokenize: Optional[str] = None
    lowercase: Optional[bool] = None

    def __post_init__(self) -> None:
        if self.compat not in COMPATS:
            raise InputError(f"compat: expected one of {', '.join(COMPATS)}, found {self.compat!r}")
        s = self.smoothing
        if s is None:
            s = _DEFAULT_SMOOTHING[self.compat]
        elif isinstance(s, str) and s.isdigit():
            s = int(s)
        elif isinstance(s, str) and s in SMOOTHING_NAMES:
            s = SMOOTHING_NAMES[s]
        if isinstance(s, bool) or s not in _ALLOWED[self.compat]:
            allowed = ", ".join(str(a) for a in sorted(_ALLOWED[self.compat], key=str))
            raise InputError(f"smoothing: compat {self.compat!r} supports {allowed}"
                             f"{' (or none/floor/add-k/exp)' if self.compat != 'moses' else ''}; found {self.smoothing!r}")
        object.__setattr__(self, "smoothing", s)
        if (isinstance(self.max_order, bool) or not isinstance(self.max_order, numbers.Integral)
                or not 1 <= self.max_order <= MAX_SUPPORTED_ORDER):
            raise InputError(f"max_order: expected an integer from 1 to {MAX_SUPPORTED_ORDER}, found {self.max_order!r}")
        object.__setattr__(self, "max_order", int(self.max_order))
        if _nltk_method6_below_trigrams(self.compat, s, self.max_order):
            raise InputError(f"smoothing: NLTK's method6 interpolates from the trigram precision and fails below "
                             f"max_order 3; found max_order={self.max_order}; use max_order >= 3, another smoothing, "
                             "or compat='sacrebleu' (the paper's smoothing 6)")
        # Finite and bounded so that no smoothing overflows: precisions stay in [0, 1] (epsilon
        # <= 1 for floor smoothing), and sums/products of parameters stay far from inf.
        # epsilon from 1e-200: epsilon / l_n must stay a normal float (5e-324 / 6 is 0, a zero precision)
        for name, low, high, open_low in (("epsilon", 1e-200, 1.0, False), ("add_k", 0.0, _PARAM_MAX, False),
                                          ("k", 0.0, _PARAM_MAX, True), ("alpha", 0.0, _PARAM_MAX, True)):
            object.__setattr__(self, name, _bounded(name, getattr(self, name), low, high, open_low))
        if self.weights is not None:
            w = self.weights
            if isinstance(w, (str, bytes)) or not hasattr(w, "__len__"):
                raise InputError(f"weights: expected a sequence of {self.max_order} numbers (one per order), found "
                                 f"{w!r}; e.g. weights=(0.25, 0.25, 0.25, 0.25)")
            w = tuple(_bounded("weights", x, 0.0, _PARAM_MAX, False) for x in w)
            if len(w) != self.max_order or sum(w) <= 0:
                raise InputError(f"weights: expected {self.max_order} non-negative weights (one per order, "
                                 f"max_order={self.max_order}) with a positive sum, found {self.weights!r}")
            object.__setattr__(self, "weights", w)
        if self.ref_length not in REF_LENGTH_POLICIES:
            raise InputError(f"ref_length: expected one of {', '.join(REF_LENGTH_POLICIES)}, found {self.ref_length!r}")
        if self.tokenize is None:
            object.__setattr__(self, "tokenize", _DEFAULT_TOKENIZE[self.compat])
        if self.tokenize not in TOKENIZERS:
            raise InputError(f"tokenize: expected one of {', '.join(TOKENIZERS)}, found {self.tokenize!r}")
        if self.smoothing6_variant not in SMOOTHING6_VARIANTS:
            raise InputError(f"smoothing6_variant: expected one of {', '.join(SMOOTHING6_VARIANTS)}, "
                             f"found {self.smoothing6_variant!r}")
        if self.smoothing6_variant != "literal" and self.compat != "sacrebleu":
            raise InputError(f"smoothing6_variant: only the 'sacrebleu' preset reads the paper's smoothing 6 "
                             f"({self.compat!r} follows its tool); use compat='sacrebleu' or the 'literal' variant")
        if self.lowercase is None:
            object.__setattr__(self, "lowercase", self.compat == "mteval")
        for name in ("effective_order", "auto_reweigh", "smooth_bp", "lowercase"):  # "no" would read as True
            value = getattr(self, name)
            if value is None and name == "effective_order":  # the level decides
                continue
            if not (isinstance(value, bool) or type(value).__name__ in _NUMPY_BOOLS):
                raise InputError(f"{name}: expected True or False, found {value!r}")
            object.__setattr__(self, name, bool(value))
        for name, preset in (("effective_order", "sacrebleu"), ("auto_reweigh", "nltk"), ("smooth_bp", "moses")):
            if getattr(self, name) and self.compat != preset:
                raise InputError(f"{name}: only the {preset!r} preset has this option; compat is {self.compat!r}")

    @classmethod
    def make(cls, config: "BleuConfig | None" = None, **options: Any) -> "BleuConfig":
        """A config from keyword options, optionally overriding an existing config."""
        if config is not None and not isinstance(config, BleuConfig):
            raise InputError(f"config: expected a kbest_bleu.BleuConfig (or keyword options, e.g. compat='nltk'), "
                             f"found {type(config).__name__} {config!r:.60}")
        if config is not None and not options:
            return config
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InputError(f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}")
        return replace(config, **options) if config is not None else cls(**options)

    @staticmethod
    def options_key(options: dict) -> tuple:
        """A memoization key of keyword ``options`` holding each value's type: True, 1 and 1.0 are
        one dict key, but not one option (``max_order=True`` is refused, ``max_order=1`` is not).
        ``{k: v for k, v, _ in key}`` gives the options back; TypeError for unhashable values."""
        key = tuple(sorted((k, v, type(v).__name__ if not isinstance(v, tuple) else tuple(type(x).__name__ for x in v))
                           for k, v in options.items()))
        hash(key)
        return key

    @property
    def lowercase_rule(self) -> "bool | str":
        """How text is lowercased before it is counted (what :func:`kbest_bleu.tokenize.prepare`
        takes): False; True, Python's ``str.lower`` (sacrebleu's -lc); or "ascii" under mteval,
        mteval-v13a.pl's ``tr/[A-Z]/[a-z]/`` after its entity and <skipped> rules (É and Cyrillic
        keep their case there)."""
        return "ascii" if self.lowercase and self.compat == "mteval" else self.lowercase

    @property
    def counted_order(self) -> int:
        """Highest order N the statistics must be counted to (the kernel adds N+1) for this
        config: ``max_order``, except NLTK's methods 5 and 7, which read 5-grams whatever N.
        The one place where options decide what is counted (see :func:`kbest_bleu.stats.counting_args`)."""
        if self.compat == "nltk" and self.smoothing in (5, 7):
            return max(self.max_order, 4)
        return self.max_order

    def effective(self, level: str) -> bool:
        """Whether effective order is on at ``level`` ("sentence" or "corpus")."""
        if self.compat != "sacrebleu":
            return False
        return (level == "sentence") if self.effective_order is None else bool(self.effective_order)

    def smoothing_label(self) -> str:
        """Smoothing with its parameter, e.g. ``exp``, ``floor(eps=0.1)``, ``4(K=5)``."""
        s = self.smoothing
        name = _NAME_OF.get(s, str(s))
        variant = "" if self.smoothing6_variant == "literal" else f",{self.smoothing6_variant}"
        if self.smoothing6_variant == "floor":
            variant += f",eps={self.epsilon:g}"
        param = {1: f"eps={self.epsilon:g}", 2: f"k={self.add_k:g}", 4: f"K={self.k:g}",
                 6: f"alpha={self.alpha:g}{variant}",
                 7: f"K={self.k:g}", BLEU_PLUS_1: f"s={self.add_k:g}{',bp=smoothed' if self.smooth_bp else ''}"}.get(s)
        return f"{name}({param})" if param else name

    def signature(self, level: str = "sentence", *, nrefs: "int | str | None" = None, test: Optional[str] = None,
                  n_samples: int = 0, seed: Optional[int] = None) -> str:
        """sacrebleu-style reproducibility signature naming every option that changes the number.

        ``nrefs``: the number of references (sacrebleu's ``nrefs:``; "var" when it varies), named
        when the caller knows it. ``test`` ("bs" or "ar") with ``n_samples`` and ``seed``: a
        significance test's ``bs:``/``ar:`` and ``seed:`` fields, as sacrebleu's paired tests.
        """
        parts = [f"nrefs:{nrefs}"] if nrefs is not None else []
        if test is not None:
            parts += [f"{test}:{n_samples}", f"seed:{seed}"]
        # Moses' corpus BLEU is unsmoothed whatever the sentence smoothing (smoothing.moses_corpus_bleu)
        smooth = "none" if self.compat == "moses" and level == "corpus" else self.smoothing_label()
        parts += [f"compat:{self.compat}", f"smooth:{smooth}", f"order:{self.max_order}"]
        if self.weights is not None:
            parts.append("w:" + ",".join(f"{x:g}" for x in self.weights))
        if self.compat == "sacrebleu":
            parts.append(f"eff:{'yes' if self.effective(level) else 'no'}")
        if self.auto_reweigh:
            parts.append("reweigh:yes")
        parts += [f"reflen:{self.ref_length}", f"tok:{self.tokenize}",
                  f"case:{'lc' if self.lowercase else 'mixed'}", f"version:{__version__}"]
        return "kbest_bleu|" + "|".join(parts)
