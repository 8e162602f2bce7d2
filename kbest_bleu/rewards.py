"""Sentence BLEU as a reward function, in the shape RL trainers call: a function of the batch of
completions and of the dataset's columns as keyword arguments, returning one float per completion.

This is the convention of TRL's ``GRPOTrainer(reward_funcs=[...])`` (and of trainers that follow
it): the trainer calls ``reward(prompts=..., completions=..., completion_ids=..., **columns)``
where ``columns`` are the dataset's other columns, each repeated for every completion of its
prompt, plus entries such as ``trainer_state``; the function returns ``list[float]``. Nothing
here imports an RL library.

A GRPO group (the G completions of one prompt) shares the prompt's references: consecutive rows
with equal references are scored as one K-best list, the references prepared and counted once
(DESIGN.md section 1). Text completions go through the text path
(:func:`kbest_bleu.bleu.score_kbest`, sacrebleu's tokenizers); token ids through
:func:`kbest_bleu.token_ids.token_bleu`. docs/token_ids.md has a worked GRPO example.
"""

from __future__ import annotations

import numbers
import re
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .bleu import score_kbest
from .config import BleuConfig
from .errors import InputError
from .token_ids import token_bleu, token_config

__all__ = ["bleu_reward", "make_bleu_reward"]


def _completion_text(completion: Any, row: int) -> str:
    """A completion in TRL's standard form (a string) or conversational form (a list of messages,
    dicts with a "content" key: the last message is the completion)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion and isinstance(completion[-1], dict) and isinstance(
            completion[-1].get("content"), str):
        return completion[-1]["content"]
    raise InputError(f"completions: row {row} is {type(completion).__name__}; expected a string or a list of "
                     "messages whose last one has a string 'content' (TRL's conversational format)")


def _same(a: Any, b: Any) -> bool:
    """Whether two rows' references are equal: strings, id lists, arrays or tensors, or lists of
    them (several references; a list's own == would ask an array of booleans for its truth)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False
        try:
            return bool(a == b)  # strings and ints: one comparison in C
        except (ValueError, RuntimeError):  # arrays (numpy: ValueError) or tensors (torch: RuntimeError) inside
            return all(map(_same, a, b))
    if hasattr(a, "__array__") or hasattr(b, "__array__"):
        x, y = np.asarray(a), np.asarray(b)
        return x.shape == y.shape and bool(np.array_equal(x, y))
    return a == b


def _runs(rows: Sequence) -> np.ndarray:
    """Start of each run of consecutive equal entries, plus the end: int64[G+1] row pointers (the
    groups of completions sharing their prompt's references)."""
    starts = [0] + [i for i in range(1, len(rows)) if not _same(rows[i], rows[i - 1])]
    return np.array(starts + [len(rows)], np.int64)


def _as_list(x: Any, what: str) -> list:
    """A dataset column (list, tuple, numpy array, tensor) as a Python list of its rows."""
    if isinstance(x, (list, tuple)):
        return list(x)
    if hasattr(x, "tolist"):
        return x.tolist()
    raise InputError(f"{what}: expected one entry per completion (a list), found {type(x).__name__}")


def _text_rewards(completions: Any, references: Any, cfg: BleuConfig) -> np.ndarray:
    hyps = [_completion_text(c, i) for i, c in enumerate(_as_list(completions, "completions"))]
    refs = _as_list(references, "references")
    if len(refs) != len(hyps):
        raise InputError(f"references: expected one entry per completion ({len(hyps)}), found {len(refs)}; a "
                         "dataset column is repeated for each completion of its prompt")
    refs = [r.tolist() if isinstance(r, np.ndarray) and r.ndim == 1 else r for r in refs]  # arrays of strings
    for i, r in enumerate(refs):
        if not (isinstance(r, str) or (isinstance(r, (list, tuple)) and all(isinstance(x, str) for x in r))):
            raise InputError(f"references: row {i} is {r!r:.60}; expected a reference string or a list of them per "
                             "completion")
    if not hyps:  # a batch without completions: no reward
        return np.zeros(0)
    refs = [[r] if isinstance(r, str) else list(r) for r in refs]
    ptr = _runs(refs)
    segments = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return score_kbest(hyps, [refs[i] for i in ptr[:-1]], segments, config=cfg)


def _id_rewards(completion_ids: Any, reference_ids: Any, pad_id: Any, cfg: BleuConfig) -> np.ndarray:
    if completion_ids is None:
        raise InputError("completion_ids: token-id rewards need the completions' ids (TRL passes completion_ids); "
                         "pass completion_ids=[[...], ...]")
    refs = _as_list(reference_ids, "reference_ids")
    try:
        n = len(completion_ids)
    except TypeError:
        raise InputError(f"completion_ids: expected one row of token ids per completion, found "
                         f"{type(completion_ids).__name__}") from None
    if len(refs) != n:
        raise InputError(f"reference_ids: expected one entry per completion ({n}), found {len(refs)}; a dataset "
                         "column is repeated for each completion of its prompt")
    if n == 0:  # a batch without completions: no reward
        return np.zeros(0)
    ptr = _runs(refs)
    try:
        return token_bleu(completion_ids, [refs[i] for i in ptr[:-1]], groups=ptr, pad_id=pad_id, config=cfg)
    except InputError as exc:  # named as the trainer's arguments are, not as token_bleu's
        raise InputError(re.sub(r"^hypotheses|^references", lambda m: _ID_ARGUMENTS[m.group()], str(exc))) from None


_ID_ARGUMENTS = {"hypotheses": "completion_ids", "references": "reference_ids"}


def make_bleu_reward(*, references: str = "references", reference_ids: str = "reference_ids", ids: bool = False,
                     pad_id: Any = None, scale: float = 1.0, name: str = "bleu_reward",
                     config: Optional[BleuConfig] = None, **bleu_options: Any) -> Callable[..., list]:
    """A reward function scoring each completion's sentence BLEU against its row's references.

    Parameters
    ----------
    references : the dataset column of reference texts (a string, or a list of strings, per row)
    reference_ids : the dataset column of reference token ids (a list of ids, or a list of such
        lists, per row), read when ``ids`` is True
    ids : score the completions' token ids (the ``completion_ids`` argument) against
        ``reference_ids`` instead of the texts (no tokenizer; docs/token_ids.md)
    pad_id : padding id of ``completion_ids`` given as a padded array or tensor
    scale : the rewards are BLEU x ``scale`` (1: the 0-1 scale; 100: BLEU points)
    name : the function's ``__name__`` (trainers log each reward under it)
    config, bleu_options : a :class:`~kbest_bleu.config.BleuConfig` and/or its fields (compat,
        smoothing, tokenize for text, ...), e.g. ``compat="moses"`` for BLEU+1

    Returns
    -------
    ``reward(completions=None, *, completion_ids=None, **columns) -> list[float]``
    """
    cfg = token_config(config, **bleu_options) if ids else BleuConfig.make(config, **bleu_options)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real) or not np.isfinite(scale):
        raise InputError(f"scale: expected a finite number, found {scale!r}")
    scale = float(scale)
    text_column, id_column = references, reference_ids

    def reward(completions: Any = None, *, completion_ids: Any = None, **columns: Any) -> list:
        if ids:
            if id_column not in columns:
                raise InputError(f"{id_column}: no such dataset column among {sorted(columns)}; name the column of "
                                 "reference token ids with make_bleu_reward(reference_ids=...)")
            bleu = _id_rewards(completion_ids, columns[id_column], pad_id, cfg)
        else:
            if text_column not in columns:
                raise InputError(f"{text_column}: no such dataset column among {sorted(columns)}; name the column "
                                 "of reference texts with make_bleu_reward(references=...)")
            if completions is None:
                raise InputError("completions: expected the completions' texts (or ids=True to score completion_ids)")
            bleu = _text_rewards(completions, columns[text_column], cfg)
        return (bleu * scale).tolist() if scale != 1 else bleu.tolist()

    reward.__name__ = reward.__qualname__ = name
    reward.__doc__ = f"Sentence BLEU reward ({cfg.signature()}) of each completion, as a list of floats."
    return reward


def bleu_reward(completions: Any = None, *, references: Any = None, completion_ids: Any = None,
                reference_ids: Any = None, **kwargs: Any) -> list:  # noqa: ARG001 (trainers pass more columns)
    """Sentence BLEU of each completion against its row's references: ``list[float]``, 0-1 scale,
    sacrebleu's defaults (13a tokenizer, exp smoothing, effective order) for text.

    TRL's reward-function shape: ``GRPOTrainer(reward_funcs=[bleu_reward], ...)`` on a dataset
    with a ``references`` column (a string or a list of strings per prompt) scores the completions'
    texts; with a ``reference_ids`` column (token ids per prompt) it scores ``completion_ids``
    instead. Other keyword arguments (prompts, other columns, ``trainer_state``) are ignored.
    :func:`make_bleu_reward` chooses the preset, smoothing, columns and scale.

    >>> bleu_reward(["the cat sat on the mat", "a dog"], references=["the cat sat on the mat"] * 2)
    [1.0, 0.0]
    >>> bleu_reward(completion_ids=[[5, 6, 7, 8], [5, 6, 9]], reference_ids=[[5, 6, 7, 8]] * 2)[0]
    1.0
    """
    if reference_ids is not None:
        return _id_rewards(completion_ids, reference_ids, None, _default_config(True)).tolist()
    if references is None:
        raise InputError("references: expected the reference texts (one entry per completion), or reference_ids")
    if completions is None:
        raise InputError("completions: expected the completions' texts")
    return _text_rewards(completions, references, _default_config(False)).tolist()


_DEFAULTS: dict = {}


def _default_config(for_ids: bool) -> BleuConfig:
    if for_ids not in _DEFAULTS:
        _DEFAULTS[for_ids] = token_config() if for_ids else BleuConfig()
    return _DEFAULTS[for_ids]
