"""Lazy package surfaces (a copy of flower-cli's ``flower_cli/_shared/lazy.py``, which explains them): this
package writes each public name once, as ``from ._x import A as A`` under ``if TYPE_CHECKING:``, and `lazy_surface`
reads them from its source, returns them as ``__all__`` and imports a name's module the first time the name is used.

Why a copy: ``flower --help`` imports this package (for its ``fleet`` command) and must not pay for the Temporal
SDK; and flower-fleet may import flower-cli only through flower-cli's public names, of which this helper is not one.
``tests/repo/test_lazy_surface.py`` keeps the functions of the two files the same.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["lazy_surface"]


def lazy_surface(package: str) -> list[str]:
    """The public names of the package ``package`` (which is being imported), read from its source; installs
    its ``__getattr__`` (imports a lazy name's module and caches the value in the package's namespace) and
    ``__dir__``."""
    module = sys.modules[package]
    eager, homes = _exports(module)
    names = sorted(eager | set(homes))
    load = _loader(package, homes)

    def listing() -> list[str]:
        return sorted(set(names) | set(vars(module)))

    vars(module).update(__getattr__=load, __dir__=listing)  # PEP 562: the module's lookup of a missing name
    return names


def _loader(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return load


def _exports(module: ModuleType) -> tuple[set[str], dict[str, str]]:
    """(eager names, {lazy name: its module, relative to the package}) of a package's source."""
    origin = module.__spec__.origin if module.__spec__ else None
    if origin is None or not origin.endswith(".py"):  # a bytecode-only install (origin: the .pyc)
        raise ImportError(f"{module.__name__}: a lazy surface reads its own source, and it has none")
    with open(origin, "rb") as source:
        tree = ast.parse(source.read(), filename=origin)
    eager: set[str] = set()
    homes: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            eager.update(_reexported(node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_"):
            eager.add(node.name)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                if isinstance(child, ast.ImportFrom):
                    if child.module is None and _reexported(child):
                        raise ImportError(f"{module.__name__}: `from . import x as x` is not a lazy export")
                    home = "." * child.level + (child.module or "")
                    homes.update(dict.fromkeys(_reexported(child), home))
    return eager, homes


def _reexported(node: ast.ImportFrom) -> list[str]:
    return [alias.name for alias in node.names if alias.asname == alias.name]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
