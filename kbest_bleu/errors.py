"""The one exception type kbest_bleu raises for bad input."""

__all__ = ["InputError", "install_extra"]


class InputError(ValueError):
    """Bad input: the message says where, what was expected, what was found and how to fix it."""


def install_extra(extra: str) -> str:
    """How to install one of the package's optional extras, for messages (the package installs
    from its checkout: it is not on PyPI)."""
    return f"pip install '.[{extra}]' in the kbest_bleu checkout"
