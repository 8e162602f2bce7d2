"""``python -m kbest_bleu``: the ``kbest-bleu`` command."""

from .program import command

command()
