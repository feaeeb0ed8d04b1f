"""The ``flower`` command: the typer app, its commands, argv rewriting, global options and the update notice.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._app import main as main
    from ._update_notice import around_command as around_command

__all__ = lazy_surface(__name__)
