"""``python -m kbest_bleu``: the ``kbest-bleu`` command."""

import sys

from .cli import main

sys.exit(main())
