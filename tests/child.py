"""Child processes of the tests that signal them: started with SIGINT, SIGTERM and SIGHUP at their
defaults, as a user's shell starts kbest-bleu, whatever the test runner ignores (``nohup`` ignores
SIGHUP, a background shell SIGINT; an ignored signal is inherited, and the program leaves it
ignored)."""

import signal


def default_signals() -> None:
    """A ``preexec_fn``: the signals the tests send back at their default dispositions."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
