"""Arrow's compute functions for the scoring path, without importing :mod:`pyarrow.compute`.

``pyarrow.compute`` builds a documented wrapper for each of Arrow's ~290 functions when it is
imported: ~30 ms a process, an eighth of a 5,000-row job (README, "Benchmarks"), and pyarrow's
own ``cast``, ``take``, ``filter``, ``is_null`` and ``dictionary_encode`` methods import it.
This module calls the same functions through Arrow's function registry instead, building a
wrapper on first use of a name: ``_compute.list_flatten(arr)``,
``_compute.split_pattern(arr, pattern=" ")``, ``_compute.cast(arr, pa.string())`` take the
function's arguments, then its options (positional or keyword), as ``pyarrow.compute`` does.
The scoring path calls these, never the methods. Where the registry's Python binding lacks what
this needs (a future pyarrow), the name comes from ``pyarrow.compute`` itself.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = []  # every Arrow compute function, by name, on first use (module __getattr__)


def _wrapper(name: str) -> Callable[..., Any]:
    """A function calling Arrow's ``name`` on positional arguments, the rest as its options."""
    from pyarrow import _compute

    function = _compute.get_function(name)
    arity = function.arity
    options_name = function._doc.options_class
    options_class = getattr(_compute, options_name) if options_name else None

    def call(*args: Any, **options: Any) -> Any:
        n = len(args) if arity is Ellipsis else arity
        if options_class is None:
            if len(args) != n or options:
                raise TypeError(f"{name} takes {n} argument(s) and no options, found {len(args)} and {options}")
            return function.call(args)
        return function.call(args[:n], options_class(*args[n:], **options))

    call.__name__ = call.__qualname__ = name
    return call


def __getattr__(name: str) -> Callable[..., Any]:
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        function = _wrapper(name)
    except (ImportError, AttributeError):  # pyarrow's private binding moved: its public module
        import pyarrow.compute

        function = getattr(pyarrow.compute, name)
    globals()[name] = function  # built once per name
    return function
