"""The one exception type kbest_bleu raises for bad input."""

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input: the message says where, what was expected, what was found and how to fix it."""
