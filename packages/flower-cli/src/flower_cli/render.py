"""The terminal view of a run: progress on stderr, safe for any terminal, one stateful renderer per run.

Model text is untrusted: every escape sequence and control byte in it is removed before it is printed (only
the renderer's own colours reach the terminal). The status line keeps elapsed time, the main thread's context
and the cumulative cost across the whole run — one renderer lives for the whole command (the original made
a new one per event on ``once`` and always showed $0.00).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from typing import Any, TextIO

from .events import Event

__all__ = ["JsonRenderer", "Renderer", "sanitize"]

# CSI/OSC/other ESC sequences, then any remaining C0/C1 control character except newline and tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    """Text safe to print: no escape sequences, no control bytes, tabs as spaces."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text)).replace("\t", "    ")


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}K" if n >= 1000 else str(n)


class Renderer:
    """Human progress on ``stream`` (stderr by default). Feed it every `Event` of the run."""

    def __init__(self, stream: TextIO | None = None, *, verbose: bool = False, color: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.color = self.stream.isatty() if color is None else color
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self.width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 110))

    # --- output -----------------------------------------------------------------------------------

    def _paint(self, text: str, style: str) -> str:
        codes = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "bold": "1"}
        return f"\x1b[{codes[style]}m{text}\x1b[0m" if self.color and style in codes else text

    def line(self, text: str, style: str = "") -> None:
        for raw in sanitize(text).splitlines() or [""]:
            clipped = raw if len(raw) <= self.width else raw[: self.width - 3] + "..."
            self.stream.write(self._paint(clipped, style) + "\n" if style else clipped + "\n")
        self.stream.flush()

    def status(self) -> str:
        parts = []
        if self.context:
            parts.append(f"context {_tokens(self.context)}")
        parts.append(f"cost ${self.cost:.2f}")
        parts.append(_clock(time.monotonic() - self.started))
        return "  - " + " · ".join(parts)

    # --- events -----------------------------------------------------------------------------------

    def step(self, name: str, index: int, total: int, note: str = "") -> None:
        tail = f"{index}/{total}" + (f"  {note}" if note else "")
        fill = "=" * max(4, self.width - len(name) - len(tail) - 6)
        self.line(f"\n== {name} {fill} {tail}", "bold")

    def __call__(self, event: Event) -> None:
        self.render(event)

    def render(self, event: Event) -> None:
        p = event.payload
        gutter = "  | " if event.subagent else "  "
        if not event.subagent and isinstance(p.get("context"), int) and p["context"]:
            self.context = p["context"]
        kind = event.kind
        if kind == "text":
            if event.subagent and not self.verbose:
                return
            self.line(gutter + event.text.strip().replace("\n", "\n" + gutter))
            if not event.subagent:
                self.line(self.status(), "dim")
        elif kind == "thinking":
            if not event.subagent:
                self.line("  ~ " + event.text.strip()[:300].replace("\n", " "), "dim")
        elif kind == "tool_call":
            if event.tool == "Agent":
                inp = p.get("input") or {}
                what = str(inp.get("description") or inp.get("prompt") or "")[:60]
                self.line(f"{gutter}> dispatch {inp.get('subagent_type', 'agent')}: {what}", "blue")
            else:
                self.line(f"{gutter}* {event.tool} {event.text}", "dim" if event.subagent else "blue")
        elif kind == "tool_result":
            if p.get("is_error"):
                self.line(f"{gutter}x {event.text[:200]}", "red")
            elif self.verbose:
                self.line(f"{gutter}  {event.text[:200]}", "dim")
        elif kind == "prompt":
            if self.verbose:
                self.line(f"{gutter}< {event.text[:200]}", "dim")
        elif kind == "result":
            self.cost += float(p.get("cost_usd") or 0.0)
            mark = "x failed" if p.get("is_error") else "+ done"
            self.line(f"  {mark}: {p.get('num_turns', 0)} turns · ${float(p.get('cost_usd') or 0):.4f} · {_clock(time.monotonic() - self.started)}", "red" if p.get("is_error") else "green")
        elif kind == "error":
            self.line(f"  ! {event.text}", "red")
        elif kind in ("retry", "reset"):
            self.line(f"  ~ {event.text}", "yellow")
        elif kind == "task":
            if event.text:
                self.line(f"  # {event.text}", "magenta")
        elif kind == "step":
            self.step(event.text, int(p.get("index", 1)), int(p.get("total", 1)), str(p.get("note", "")))
        elif kind == "handoff":
            self.line(f"  # {event.text}", "magenta")
        # system / unknown: nothing to show

    def closing(self, total_cost: float, manifest: str) -> None:
        self.line(f"\ntotal cost ${total_cost:.4f} · manifest {manifest}", "dim")


class JsonRenderer:
    """``--json``: one JSON object per event per line, for programs."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.emit(event.to_json())

    def emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()
