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
    "JsonRenderer": "_json",
    "Renderer": "_render",
    "STDOUT": "_output",
    "sanitize": "_text",
    "shorten_middle": "_text",
    "terminal_width": "_terminal",
    "use_color": "_terminal",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._json import JsonRenderer
    from ._output import STDOUT
    from ._render import Renderer
    from ._terminal import terminal_width, use_color
    from ._text import sanitize, shorten_middle
