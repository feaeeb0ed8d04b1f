"""Where a command's output goes: progress to the person on stderr (`Renderer`), events to the sink (the
renderer itself, or JSON lines on stdout with ``--json``), and results on stdout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO, cast

from ...view import STDOUT, JsonRenderer, Renderer, use_color

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["human_view", "make_view", "write_stdout"]


def human_view(opts: GlobalOptions, *, allow_hint: Callable[[str], str] | None = None) -> Renderer:
    """The human view on stderr, with this command's -v and --color (``allow_hint``: see `Renderer`)."""
    return Renderer(verbose=opts.verbose, color=use_color(sys.stderr, opts.color), allow_hint=allow_hint)


def make_view(opts: GlobalOptions, *, allow_hint: Callable[[str], str] | None = None) -> tuple[Renderer, Any]:
    """The human renderer (stderr) and the event sink: the renderer itself, or JSON lines on stdout.

    ``allow_hint`` says how to let a refused tool run on this command (see `Renderer`).
    """
    human = human_view(opts, allow_hint=allow_hint)
    # cast: a TextIOBase, which is what the renderer uses of a TextIO (write, flush).
    return human, (JsonRenderer(cast("TextIO", STDOUT)) if opts.json else human)


def write_stdout(text: str) -> None:
    """Write a command's result to stdout; a stdout that cannot take it is reported once, at exit (app.main)."""
    STDOUT.write(text)
    STDOUT.flush()
