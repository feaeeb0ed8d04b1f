"""The ``flower`` command: the typer app, its commands, argv rewriting, global options and the update notice.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "around_command",
    "main",
]

_HOMES = {
    "around_command": "_update_notice",
    "main": "_app",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._app import main
    from ._update_notice import around_command
