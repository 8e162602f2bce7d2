"""Where the commands that reproduce published tables (``metaeval`` recipes, ``bleu2vec
metaeval``, ``parmesan metaeval``) find the project's shared real data."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Optional, Sequence

from .. import settings
from ..errors import InputError

__all__ = ["data_dir", "require_data", "shared_data_errors"]

# a source checkout's sibling: <workspace>/main/kbest_bleu/research/data.py -> <workspace>/shared/data
_BESIDE_CHECKOUT = Path(__file__).resolve().parents[3] / "shared" / "data"


def data_dir(given: "Optional[str | os.PathLike]" = None) -> tuple[Path, str]:
    """The shared data directory and where it came from: ``given`` (--data), else
    ``$KBEST_BLEU_DATA``, else ``../shared/data`` from the current directory (the README runs
    its commands in the checkout), else beside the checkout the package was imported from (an
    editable install run from elsewhere)."""
    if given is not None:
        return Path(given), "--data"
    env = settings.data_dir()
    if env is not None:
        return env, "KBEST_BLEU_DATA"
    here = Path.cwd().parent / "shared" / "data"
    if here.is_dir() or not _BESIDE_CHECKOUT.is_dir():
        return here, "../shared/data from the current directory"
    return _BESIDE_CHECKOUT, "the directory beside the package's checkout"


def require_data(names: Sequence[str], given: "Optional[str | os.PathLike]" = None) -> list[Path]:
    """The paths of ``names`` in :func:`data_dir`; :class:`InputError` naming the first missing
    one, where it looked and how to point elsewhere."""
    data, source = data_dir(given)
    for name in names:
        if not (data / name).exists():
            raise InputError(f"{data / name}: not found; looked in {data} (from {source}); expected the shared data "
                             "directory (../shared/data of the project): pass --data DIR or set KBEST_BLEU_DATA")
    return [data / n for n in names]


@contextlib.contextmanager
def shared_data_errors(given: "Optional[str | os.PathLike]" = None) -> Iterator[None]:
    """A recipe's run over the shared data: a file there that does not hold what the recipe reads
    (no rows, other columns, not parquet: a KeyError, an Arrow or numpy error) becomes one
    :class:`InputError` naming the directory and the error, not a traceback."""
    import pyarrow as pa
    try:
        yield
    except InputError:
        raise
    except (KeyError, IndexError, ValueError, pa.ArrowException) as exc:
        data, source = data_dir(given)
        raise InputError(f"{data} (from {source}): a data file does not hold what the recipe reads "
                         f"({type(exc).__name__}: {str(exc)[:200]}); expected the project's shared data, whose "
                         "README lists the files and columns") from None
