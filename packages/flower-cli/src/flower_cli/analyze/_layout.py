"""Plain-text layout for the terminal report: paragraphs wrapped at a width, a path shortened in its middle, and a
grid whose cells wrap inside their columns. Nothing is ever cut off: text that does not fit goes on the next line
(a word longer than a whole line is split, every character kept); only a path is shortened, keeping both ends."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Column", "grid", "grid_rows", "paragraph", "shorten_middle", "wrap"]

ELLIPSIS = "…"
_LEAST = 8  # the narrowest a capped column gets when the grid must shrink


def wrap(text: str, width: int, *, first: str = "", indent: str = "", hyphens: bool = False) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (and after hyphens, with ``hyphens``),
    a word longer than a line split (never an empty list); the first line starts with ``first``, the others
    with ``indent``."""
    if len(first) + len(text) <= width:
        return [first + text]
    lines = textwrap.wrap(
        text,
        max(width, len(indent) + 1),
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=hyphens,
    )
    return lines or [first]


def paragraph(parts: Sequence[str], width: int, *, sep: str = " · ", first: str = "", indent: str = "") -> list[str]:
    """``parts`` joined by ``sep`` in lines of at most ``width``, broken only between parts (a part longer than a
    line is wrapped by itself); the first line starts with ``first``, the others with ``indent``."""
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and len(line) + len(sep) + len(part) <= width:
            line += sep + part
            continue
        if line:
            lines.append(line)
        *done, line = wrap(part, width, first=indent if lines else first, indent=indent)
        lines += done
    lines.append(line)
    return lines


def shorten_middle(text: str, width: int) -> str:
    """``text`` itself when it fits, else its start and its end (the more telling part of a path) around "…"."""
    if len(text) <= width:
        return text
    room = max(width - len(ELLIPSIS), 2)
    head = room // 3
    return text[:head] + ELLIPSIS + text[len(text) - (room - head) :]


@dataclass(frozen=True)
class Column:
    """One column of a `grid`: ``limit`` caps its width (longer cells wrap), ``flex`` makes it take whatever
    width the others leave (at least ``limit``), and ``right`` aligns its cells to the right. A cell made of
    items joined by ``sep`` wraps between items rather than inside one."""

    header: str
    right: bool = False
    limit: int | None = None
    flex: bool = False
    sep: str | None = None

    def wrap(self, cell: str, width: int) -> list[str]:
        if self.sep is None or len(cell) <= width:
            return wrap(cell, width, hyphens=True)  # a narrow column: a name may break after a hyphen
        items = cell.split(self.sep)
        mark = self.sep.rstrip()  # "," of ", ": kept at the end of a line that breaks after an item
        return paragraph([item + mark for item in items[:-1]] + items[-1:], width, sep=" ")


def grid_rows(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None = None
) -> tuple[list[str], list[list[str]]]:
    """The header and rule lines, and each row's lines: two spaces between columns, and a row whose cells wrap
    takes several lines. Without ``width`` no cell wraps (every column as wide as its widest cell)."""
    natural = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    widths = list(natural)
    if width is not None:
        gaps = 2 * (len(columns) - 1)
        for i, column in enumerate(columns):
            if column.flex:
                widths[i] = min(natural[i], max(column.limit or 0, len(column.header)))
            elif column.limit is not None:
                widths[i] = min(natural[i], max(column.limit, len(column.header)))
        # Still too wide: the capped columns give up width, down to their header (and _LEAST) each.
        excess = sum(widths) + gaps - width
        for i, column in enumerate(columns):
            if excess > 0 and column.limit is not None and not column.flex:
                give = min(excess, max(widths[i] - max(len(column.header), _LEAST), 0))
                widths[i] -= give
                excess -= give
        for i, column in enumerate(columns):
            if column.flex:
                rest = width - sum(w for n, w in enumerate(widths) if n != i) - gaps
                widths[i] = min(natural[i], max(rest, widths[i]))

    def lines(cells: Sequence[str]) -> list[str]:
        wrapped = [column.wrap(cell, w) for column, cell, w in zip(columns, cells, widths, strict=True)]
        out = []
        for n in range(max(len(w) for w in wrapped)):
            parts = []
            for column, w, cell in zip(columns, widths, wrapped, strict=True):
                text = cell[n] if n < len(cell) else ""
                parts.append(text.rjust(w) if column.right else text.ljust(w))
            out.append("  ".join(parts).rstrip())
        return out

    head = lines([c.header for c in columns]) + ["  ".join("-" * w for w in widths).rstrip()]
    return head, [lines(row) for row in rows]


def grid(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None = None) -> list[str]:
    """`grid_rows`, one line after the other."""
    head, body = grid_rows(columns, rows, width)
    return head + [line for row in body for line in row]
