"""Where the human view is written, line by line: sanitised, coloured, folded at the width — and the one line
redrawn in place (the heartbeat), erased before anything else is written.

Nothing a person must read is cut. On a terminal every line folds at its width onto indented continuation
lines, and a word longer than the width (a path, a URL) is kept whole on a line of its own, never broken or
clipped; into a pipe or a file each message stays one whole line (for grep and logs) unless ``COLUMNS`` asks
for a width.
"""

from __future__ import annotations

import textwrap
import threading
from typing import TextIO

from ._terminal import columns_asked, is_terminal, terminal_width
from ._text import sanitize, shorten_middle

__all__ = ["Screen"]

_MIN_WIDTH, _MAX_WIDTH = 40, 110  # past 110 columns prose gets hard to read; below 40 nothing fits
_STYLES = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "bold": "1"}
_ERASE_LINE = "\r\x1b[K"


class Screen:
    """Lines on ``stream``; ``lock`` is held for every write (the heartbeat's thread writes too)."""

    def __init__(self, stream: TextIO, *, color: bool) -> None:
        self.stream = stream
        self.color = color
        self.width = max(_MIN_WIDTH, min(terminal_width(stream), _MAX_WIDTH))
        # Fold long lines on a terminal (or at an asked-for COLUMNS); a pipe keeps each message one line.
        self.fold = is_terminal(stream) or columns_asked() is not None
        self.lock = threading.RLock()
        self._in_place = False  # a line drawn in place is on the terminal, without its newline

    def paint(self, text: str, style: str) -> str:
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m" if self.color and style in _STYLES else text

    def line(self, text: str, style: str = "", *, wrap: bool = True) -> None:
        """Write ``text``, each of its lines folded (when ``fold``) at the width onto indented continuation
        lines: nothing is cut, and a word longer than the width (a path) stays whole on a line of its own.
        ``wrap=False`` writes the lines as they are (text already laid out)."""
        out: list[str] = []
        for raw in sanitize(text).splitlines() or [""]:
            out.extend(self.fit(raw) if wrap else [raw])
        with self.lock:
            self.erase_in_place()
            for fitted in out:
                self.stream.write(self.paint(fitted, style) + "\n" if style else fitted + "\n")
            self.stream.flush()

    def fit(self, raw: str) -> list[str]:
        """``raw`` folded at the width (or whole, when the screen does not fold or it fits)."""
        if not self.fold or len(raw) <= self.width:
            return [raw]
        body = raw.lstrip(" ")
        indent = " " * (len(raw) - len(body))
        # Continuation lines sit under the text, past a one-character marker such as "!" or "~".
        marker = len(body) > 1 and not body[0].isalnum() and body[1] == " "
        return textwrap.wrap(
            body,
            self.width,
            initial_indent=indent,
            subsequent_indent=indent + ("  " if marker else ""),
            break_long_words=False,
            break_on_hyphens=False,
        ) or [raw]

    @property
    def in_place(self) -> bool:
        """Whether a line drawn in place is on the terminal now."""
        return self._in_place

    def draw_in_place(self, text: str, style: str = "dim") -> None:
        """Draw ``text`` over the line drawn in place before, shortened in its middle to fit (no newline)."""
        # One column short of the terminal: a line that fills it would wrap, and \r could not erase it.
        room = max(20, min(self.width, terminal_width(self.stream)) - 1)
        self.stream.write(_ERASE_LINE + self.paint(shorten_middle(text, room), style))
        self._in_place = True

    def erase_in_place(self) -> None:
        """Erase the line drawn in place, if one is shown (the caller flushes)."""
        if self._in_place:
            self.stream.write(_ERASE_LINE)
            self._in_place = False
