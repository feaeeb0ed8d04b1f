"""What the stream the view is written to can do: is it a terminal, how wide is it, may it have colour.

Colour follows ``--color`` (`use_color`): ``auto`` means a terminal, unless ``NO_COLOR`` is set (or
``FORCE_COLOR`` asks for it without one).
"""

from __future__ import annotations

import os
import shutil
from typing import TextIO

__all__ = ["COLOR_MODES", "columns_asked", "is_terminal", "terminal_width", "use_color"]

COLOR_MODES = ("auto", "always", "never")


def use_color(stream: TextIO, mode: str = "auto") -> bool:
    """Colour on ``stream``? ``always``/``never`` decide; ``auto``: not with ``NO_COLOR`` (any non-empty value,
    it wins), yes with ``FORCE_COLOR`` (any non-empty value, even into a pipe), else only on a terminal."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_terminal(stream)


def columns_asked() -> int | None:
    """The width ``COLUMNS`` asks for, if it is a positive number."""
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or fake stream
        return False


def terminal_width(stream: TextIO) -> int:
    """The columns ``stream`` has: ``COLUMNS`` when set, else its terminal's, else stdout's, else 100."""
    asked = columns_asked()
    if asked is not None:
        return asked
    try:
        if stream.isatty():
            columns = os.get_terminal_size(stream.fileno()).columns
            if columns > 0:  # a terminal that does not know its size says 0
                return columns
    except (AttributeError, ValueError, OSError):
        pass
    return shutil.get_terminal_size((100, 24)).columns or 100
