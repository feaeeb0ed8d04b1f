"""What a person or a program sees of a run: the terminal renderer, the JSON-lines renderer, and stdout.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "JsonRenderer",
    "Renderer",
    "STDOUT",
    "sanitize",
    "shorten_middle",
    "terminal_width",
    "use_color",
]

_HOMES = {
    "JsonRenderer": "_render",
    "Renderer": "_render",
    "STDOUT": "_output",
    "sanitize": "_render",
    "shorten_middle": "_render",
    "terminal_width": "_render",
    "use_color": "_render",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._output import STDOUT
    from ._render import JsonRenderer, Renderer, sanitize, shorten_middle, terminal_width, use_color
