"""Counting: clipped n-gram statistics of every hypothesis (DESIGN.md sections 2, 3 and 8).

One algorithm, written once in numba source (:mod:`._kernels`: the splitter, exact token ids,
each segment's reference trie built once, its K hypotheses streamed through it). Who runs it is
decided here, in one place:

- :func:`kernels` serves the kernels: the ahead-of-time module that ``kbest-bleu warmup`` built
  for this installation (:mod:`.aot`: the text path's five kernels, loaded in under 1 ms without
  importing numba), for any other kernel or argument type numba's JIT build (:mod:`kbest_bleu.jit`).
- :func:`numpy_engine_suits` decides when a job takes the numpy engine instead
  (:mod:`.numpy_engine`: the same integers from Arrow and numpy, with neither numba's ~0.3 s
  import nor a first compile): small jobs, and mid-sized ones while nothing is compiled yet.

Every build is held to ``tests/reference.py`` by the property tests, not only to another build.
The threads the kernels use: :mod:`.threads`. The argument codes: :mod:`.codes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .. import settings
from ..jit import compiled
from .threads import apply_requested

if TYPE_CHECKING:
    from ..config import BleuConfig

# Importing this package stays light (no numpy, pyarrow or numba): the kbest-bleu program imports
# its thread settings before it configures those libraries for its process.

__all__ = ["kernels", "kernels_compiled", "numpy_engine_suits"]


def kernels() -> Any:
    """The counting kernels: those ``kbest-bleu warmup`` compiled ahead of time for this
    installation (:mod:`.aot`; any other kernel or argument type taken from numba's build),
    else :mod:`._kernels` (imports numba on the first call)."""
    from . import aot

    built = aot.loaded()
    if built is not None:
        return built
    from . import _kernels

    apply_requested()
    return _kernels


def kernels_compiled() -> bool:
    """Whether the text kernel is compiled: in this process, or in numba's on-disk cache (False on
    a first run after install, or with a fresh ``NUMBA_CACHE_DIR``). Reads the cache's index only;
    True at once where the ahead-of-time kernels serve."""
    from . import aot

    return aot.loaded() is not None or compiled(kernels()._text_run_stats)


def numpy_engine_suits(configs: Sequence[BleuConfig], n_bytes: int) -> bool:
    """Whether a job of ``n_bytes`` of text scored under ``configs`` is better served by the
    numpy engine than by the kernels: below :data:`~kbest_bleu.settings.NUMPY_ENGINE_BYTES` the
    kernels' fixed cost (~0.2 s: numba and its cached code) exceeds the numpy engine's extra time;
    below :data:`~kbest_bleu.settings.COLD_NUMPY_ENGINE_BYTES` when the kernels are not compiled
    yet. Never when a tokenizer needs a kernel (``char``), nor where the ahead-of-time kernels
    serve (they load in under 1 ms)."""
    from . import aot

    if any(c.tokenize == "char" for c in configs) or aot.loaded() is not None:
        return False
    return n_bytes < settings.NUMPY_ENGINE_BYTES or (n_bytes < settings.COLD_NUMPY_ENGINE_BYTES
                                                     and not kernels_compiled())
