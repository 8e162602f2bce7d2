"""BLEU rewards in TRL's reward-function shape (kbest_bleu.rewards): called as a trainer calls them
(prompts, completions, completion_ids, dataset columns repeated per completion, trainer_state),
equal to sacrebleu's sentence BLEU for text and to NLTK on integer lists for ids."""

import sys
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu

from kbest_bleu.errors import InputError
from kbest_bleu.rewards import bleu_reward, make_bleu_reward
from kbest_bleu.token_ids import token_bleu

sys.path.insert(0, str(Path(__file__).parent))
import reference as R  # noqa: E402

# a GRPO batch: 2 prompts x G = 3 completions, each prompt's columns repeated per completion
PROMPTS = ["Translate: Die Katze sitzt auf der Matte."] * 3 + ["Translate: Es regnet."] * 3
COMPLETIONS = ["The cat sits on the mat.", "A cat is sitting on the mat.", "The cat sat on a mat!",
               "It is raining.", "It rains.", "Rain is falling today."]
REFERENCES = [["The cat sits on the mat.", "There is a cat on the mat."]] * 3 + [["It is raining."]] * 3


def _trainer_call(reward, **columns):
    """How TRL's GRPOTrainer calls a reward function (trainer_state and other columns included)."""
    ids = [[ord(ch) for ch in c] for c in COMPLETIONS]
    return reward(prompts=PROMPTS, completions=COMPLETIONS, completion_ids=ids, trainer_state=object(),
                  source_lang=["de"] * 6, **columns)


def test_text_reward_equals_sacrebleu():
    got = _trainer_call(bleu_reward, references=REFERENCES)
    want = [sacrebleu.sentence_bleu(c, r).score / 100 for c, r in zip(COMPLETIONS, REFERENCES)]
    assert isinstance(got, list) and all(type(x) is float for x in got)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_conversational_completions_and_one_reference_strings():
    conv = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    refs = [r[0] for r in REFERENCES]  # one reference per row, as a bare string
    got = bleu_reward(conv, references=refs)
    want = [sacrebleu.sentence_bleu(c, [r]).score / 100 for c, r in zip(COMPLETIONS, refs)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_groups_follow_runs_of_equal_references():
    """A row's reward does not depend on its neighbours: the same rows scored one by one."""
    refs = REFERENCES[:2] + [["Something else entirely."]] + REFERENCES[3:]
    got = bleu_reward(COMPLETIONS, references=refs)
    alone = [bleu_reward([c], references=[r])[0] for c, r in zip(COMPLETIONS, refs)]
    assert got == alone


def test_factory_options_columns_scale_and_name():
    """Moses BLEU+1 on sacrebleu's 13a tokens, and on the text split on whitespace (the preset's own
    tokenization, as Moses' scorers), from the slow reference, in BLEU points."""
    for tokenize, split in (("13a", lambda x: Tokenizer13a()(x).split()), (None, str.split)):
        options = {} if tokenize is None else {"tokenize": tokenize}
        reward = make_bleu_reward(references="gold", compat="moses", scale=100, name="bleu1", **options)
        assert reward.__name__ == "bleu1"
        got = _trainer_call(reward, gold=REFERENCES)
        want = []
        for c, refs in zip(COMPLETIONS, REFERENCES):
            m, t, n, r = R.stats(split(c), [split(x) for x in refs], 4)
            want.append(100 * R.moses_bleu_plus_1(m, t, n, r))
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("method", [1, 2, 4])
def test_id_reward_equals_nltk_on_integer_lists(method):
    rng = np.random.default_rng(method)
    refs, comps = [], []
    for _ in range(4):  # 4 prompts x 4 completions
        ref = [int(t) for t in rng.integers(0, 9, 12)]
        for _ in range(4):
            comps.append([t if rng.random() < 0.7 else int(rng.integers(0, 9)) for t in ref[:int(rng.integers(5, 13))]])
            refs.append(ref)
    reward = make_bleu_reward(ids=True, compat="nltk", smoothing=method)
    got = reward(prompts=["p"] * 16, completions=["?"] * 16, completion_ids=comps, reference_ids=refs,
                 trainer_state=None)
    fn = getattr(SmoothingFunction(), f"method{method}")
    want = [nltk_sentence_bleu([r], c, smoothing_function=fn) for c, r in zip(comps, refs)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_id_reward_padded_tensor_and_several_references():
    comps = np.array([[5, 6, 7, 8, 0], [5, 6, 9, 0, 0]])
    reward = make_bleu_reward(ids=True, pad_id=0, compat="moses")
    got = reward(completion_ids=comps, reference_ids=[[[5, 6, 7, 8], [9, 9]]] * 2)
    assert got[0] == 1.0 and 0 < got[1] < 1
    assert bleu_reward(completion_ids=[[5, 6, 7, 8]], reference_ids=[[5, 6, 7, 8]]) == [1.0]
    arrays = [np.array([5, 6, 7, 8])] * 2  # a column of arrays
    assert bleu_reward(completion_ids=[[5, 6, 7, 8], [1]], reference_ids=arrays)[0] == 1.0
    # a padded (rows, references, length) column: an all-pad reference is absent, as token_bleu reads it
    # (the rows' lists held it as a reference of length 0: 1.0 where sacrebleu gives 0.26359714)
    padded = np.array([[[1, 2, 3, 4, 5, 6, 7], [0] * 7]])
    got = make_bleu_reward(ids=True, pad_id=0)(completion_ids=np.array([[1, 2, 3, 0]]), reference_ids=padded)
    assert got == token_bleu(np.array([[1, 2, 3, 0]]), padded, pad_id=0).tolist()
    assert got[0] == pytest.approx(sacrebleu.sentence_bleu("1 2 3", ["1 2 3 4 5 6 7"], tokenize="none").score / 100,
                                   rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: bleu_reward(COMPLETIONS),
    lambda: bleu_reward(references=REFERENCES),
    lambda: bleu_reward(COMPLETIONS, references=REFERENCES[:2]),
    lambda: bleu_reward([1, 2], references=["a", "b"]),
    lambda: bleu_reward(reference_ids=[[1]]),
    lambda: bleu_reward(completion_ids=[[1], [2]], reference_ids=[[1]]),
    lambda: make_bleu_reward()(COMPLETIONS, gold=REFERENCES),
    lambda: make_bleu_reward(ids=True)(completion_ids=[[1]], references=["a"]),
    lambda: make_bleu_reward(scale=float("nan")),
    lambda: bleu_reward("abc", references=["abc"] * 3),  # a string is not a batch (it scored each character)
    lambda: bleu_reward(completion_ids=5, reference_ids=[[1]]),
    lambda: make_bleu_reward(ids=True, tokenize="13a"),
    lambda: make_bleu_reward(compat="nope"),
])
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError):
        call()


def test_numpy_scale_and_errors_named_as_the_trainer_passes_them():
    assert make_bleu_reward(scale=np.int64(100))(["a b c d"], references=["a b c d"]) == [100.0]
    assert make_bleu_reward(ids=True, scale=np.float32(100))(completion_ids=[[1, 2, 3, 4]],
                                                              reference_ids=[[1, 2, 3, 4]]) == [100.0]
    with pytest.raises(InputError, match=r"^completion_ids: .*row 0, position 1 holds 2\.5"):
        bleu_reward(completion_ids=[[1, 2.5]], reference_ids=[[1]])
    with pytest.raises(InputError, match=r"^reference_ids: .*starts with 1\.0"):
        bleu_reward(completion_ids=[[1]], reference_ids=np.array([[1.0]]))


def test_several_references_as_arrays_and_bad_rows():
    """Two references per prompt as numpy arrays raised numpy's 'truth value of an array is
    ambiguous' while finding the groups; a None reference a TypeError; an empty batch an IndexError."""
    refs = lambda: [np.array([5, 6, 7, 8]), np.array([5, 6, 9])]  # noqa: E731 (fresh arrays per row, as a dataset)
    completions = [[5, 6, 7, 8], [5, 6, 9], [1, 2, 3]]
    got = make_bleu_reward(ids=True)(completion_ids=completions, reference_ids=[refs(), refs(), refs()])
    assert got == token_bleu(completions, [refs()], groups=3).tolist()
    assert got[:2] == [1.0, 1.0] and got[2] < 0.5
    with pytest.raises(InputError, match="references: row 0 is None"):
        bleu_reward(["a b", "c"], references=[None, None])
    assert bleu_reward([], references=[]) == [] and make_bleu_reward(ids=True)(completion_ids=[], reference_ids=[]) == []


def test_text_references_as_arrays_of_strings():
    """A dataset column of numpy string arrays (several references per prompt) was refused."""
    refs = [np.array(["the cat sat", "a cat"])] * 2
    got = make_bleu_reward()(completions=["the cat sat", "a cat sat"], references=refs)
    assert got == make_bleu_reward()(completions=["the cat sat", "a cat sat"], references=[["the cat sat", "a cat"]] * 2)
    assert got[0] == 1.0
