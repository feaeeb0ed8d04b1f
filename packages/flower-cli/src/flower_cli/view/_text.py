"""Text as the terminal may show it: model text made safe to print, a line shortened in its middle, a clock
and a token count in few characters.

Model text is untrusted: every escape sequence and control byte in it is removed before it is printed (only
the renderer's own colours reach the terminal).
"""

from __future__ import annotations

import re

__all__ = ["clock", "sanitize", "shorten_middle", "tokens"]

# CSI/OSC/other ESC sequences, then any remaining C0/C1 control character except newline and tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    """Text safe to print: no escape sequences, no control bytes, tabs as spaces."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text)).replace("\t", "    ")


def shorten_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, the middle replaced by "…" (both ends of a path stay).

    Only for lines redrawn in place (the heartbeat): a message is never shortened.
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def clock(seconds: float) -> str:
    """``1:05`` (``1:02:03`` past an hour)."""
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def tokens(n: int) -> str:
    """``12.3K`` (below a thousand, the number)."""
    return f"{n / 1000:.1f}K" if n >= 1000 else str(n)
