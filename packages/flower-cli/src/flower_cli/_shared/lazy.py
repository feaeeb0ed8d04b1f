"""Lazy package surfaces: a package lists its public names and the module each lives in, and a name's module is
imported the first time the name is used.

Why: ``flower --help`` must not pay for importing the SDK or the Runtime, yet each subpackage's ``__init__``
should be its documented surface. A package uses it as::

    _load, _names = lazy_exports(__name__, {"Runtime": "_runtime"})
    def __getattr__(name): return _load(name)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(load, names) for ``package``: ``load(name)`` imports ``package.<homes[name]>`` and caches the value in the
    package's namespace; an unknown name raises AttributeError as a module attribute lookup does."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{home}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def names() -> list[str]:
        return sorted(set(homes) | set(vars(sys.modules[package])))

    return load, names
