"""``flower demo``: the whole product in one free command.

A complete `flower go` — clarify, goal, a coordinator and its worker, a judge's "not yet" and "achieved", a
spilled output, a process stopped mid-round and a resume from the store — played by the real `flower` and
the real Claude Code binary against the scripted Messages API (`flower_cli.testing`) on loopback: no account,
no network, no cost, the same story every time. `play_demo` plays it (the command's summary, read back from disk, is in ``cli/actions``).

Names are imported on first use (see `flower_cli._shared.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._play import DemoError as DemoError
    from ._play import DemoRun as DemoRun
    from ._play import play_demo as play_demo

__all__ = lazy_surface(__name__)
