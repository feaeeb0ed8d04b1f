"""The options every ``flower`` command shares, in a module of their own.

The commands import this, never ``app`` (which imports the commands): no import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..view import Renderer

__all__ = ["GlobalOptions"]


@dataclass
class GlobalOptions:
    workspace: Path
    run_dir: Path
    verbose: bool
    workbench: bool
    trim: bool
    json: bool
    store: str | None = None  # --store URL / FLOWER_STORE_URL; None: <run dir>/sessions.db
    color: str = "auto"  # --color: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces), always, never

    def renderer(self, *, allow_hint: Callable[[str], str] | None = None) -> Renderer:
        """The human view on stderr, with this command's -v and --color (``allow_hint``: see `Renderer`)."""
        import sys

        from ..view import Renderer, use_color

        return Renderer(verbose=self.verbose, color=use_color(sys.stderr, self.color), allow_hint=allow_hint)
