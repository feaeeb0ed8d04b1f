"""What a person or a program sees of a run: the terminal renderer, the JSON-lines renderer, and stdout.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._json import JsonRenderer as JsonRenderer
    from ._output import STDOUT as STDOUT
    from ._render import Renderer as Renderer
    from ._terminal import terminal_width as terminal_width
    from ._terminal import use_color as use_color
    from ._text import sanitize as sanitize
    from ._text import shorten_middle as shorten_middle
    from ._text import tokens as tokens

__all__ = lazy_surface(__name__)
