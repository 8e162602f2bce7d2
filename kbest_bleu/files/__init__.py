"""Files: every file a command reads or writes goes through here (DESIGN.md section 2).

:mod:`.output` guards outputs (an output that is one of the command's inputs is refused; written
through a temporary beside it and renamed into place; temporaries removed on every exit, signals
included); :mod:`.references` reads reference text files and reference tables; :mod:`.readers`
turns CSV/TSV/JSON Lines/plain text/n-best files (compressed or not) into K-best tables;
:mod:`.nbest` reads and writes Moses/Joshua n-best text. Nothing here scores.
"""

__all__ = []  # the modules are the public surface: files.output, files.readers, ...
