"""The terminal view of a run: progress on stderr, safe for any terminal, one stateful renderer per run.

Model text is untrusted: every escape sequence and control byte in it is removed before it is printed (only
the renderer's own colours reach the terminal). The status line keeps elapsed time, the main thread's context
and the cumulative cost across the whole run — one renderer lives for the whole command (the original made
a new one per event on ``once`` and always showed $0.00).

Nothing a person must read is cut: every line folds at the terminal's width onto indented continuation lines,
and a word longer than the width (a path, a URL) is kept whole on a line of its own, never broken or clipped.
Colour follows ``--color`` (`use_color`): ``auto`` means a terminal, unless ``NO_COLOR`` is set (or
``FORCE_COLOR`` asks for it without one).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
import time
from typing import Any, TextIO

from ..runtime import Event

__all__ = ["COLOR_MODES", "JsonRenderer", "Renderer", "sanitize", "shorten_middle", "terminal_width", "use_color"]

# CSI/OSC/other ESC sequences, then any remaining C0/C1 control character except newline and tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

COLOR_MODES = ("auto", "always", "never")
_MIN_WIDTH, _MAX_WIDTH = 40, 110  # past 110 columns prose gets hard to read; below 40 nothing fits


def sanitize(text: str) -> str:
    """Text safe to print: no escape sequences, no control bytes, tabs as spaces."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text)).replace("\t", "    ")


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
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or fake stream
        return False


def terminal_width(stream: TextIO) -> int:
    """The columns ``stream`` has: ``COLUMNS`` when set, else its terminal's, else stdout's, else 100."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        pass
    return shutil.get_terminal_size((100, 24)).columns


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
        """``color``: None decides by `use_color` (``auto``: a terminal, ``NO_COLOR``, ``FORCE_COLOR``)."""
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.color = use_color(self.stream) if color is None else color
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self.width = max(_MIN_WIDTH, min(terminal_width(self.stream), _MAX_WIDTH))
        self._shown_worker: str | None = None  # the worker whose heading the last worker line sits under
        self._running = 0.0  # what the step in progress has cost so far (the harness's running total)
        self._asked: set[str] = set()  # ids of the questions already shown

    # --- output -----------------------------------------------------------------------------------

    def _paint(self, text: str, style: str) -> str:
        codes = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "bold": "1"}
        return f"\x1b[{codes[style]}m{text}\x1b[0m" if self.color and style in codes else text

    def line(self, text: str, style: str = "", *, wrap: bool = True) -> None:
        """Write ``text``, each of its lines folded at the width onto indented continuation lines: nothing is
        cut, and a word longer than the width (a path) stays whole on a line of its own. ``wrap=False``
        writes the lines as they are (text already laid out)."""
        out: list[str] = []
        for raw in sanitize(text).splitlines() or [""]:
            out.extend(self._fit(raw) if wrap else [raw])
        for fitted in out:
            self.stream.write(self._paint(fitted, style) + "\n" if style else fitted + "\n")
        self.stream.flush()

    def _fit(self, raw: str) -> list[str]:
        if len(raw) <= self.width:
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

    def status(self) -> str:
        parts = []
        if self.context:
            parts.append(f"context {_tokens(self.context)}")
        parts.append(f"cost ${self.cost + self._running:.2f}")
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
        if not event.subagent and isinstance(p.get("context"), int) and p["context"]:
            self.context = p["context"]
        kind = event.kind
        if event.subagent and kind in ("text", "tool_call", "tool_result", "prompt", "error"):
            self._worker_event(event)
            return
        if kind in ("text", "thinking", "tool_call", "tool_result", "prompt", "error", "step"):
            self._shown_worker = None  # the next worker line needs its heading again
        if kind == "text":
            self.line("  " + event.text.strip().replace("\n", "\n  "))
            self.line(self.status(), "dim")
        elif kind == "thinking":
            self.line("  ~ " + event.text.strip()[:300].replace("\n", " "), "dim")
        elif kind == "tool_call":
            if event.tool in ("Agent", "Task"):
                inp = p.get("input") or {}
                what = " ".join(str(inp.get("description") or inp.get("prompt") or "").split())[:60]
                self.line(f"  > dispatch {inp.get('subagent_type') or 'agent'}: {what}", "blue")
            else:
                self.line(f"  * {event.tool} {event.text}", "blue")
        elif kind == "tool_result":
            if p.get("is_error"):
                self.line(f"  x {event.text}", "red")  # a denial's reason is read whole
            elif self.verbose:
                self.line(f"    {event.text[:200]}", "dim")
        elif kind == "prompt":
            if self.verbose:
                self.line(f"  < {event.text[:200]}", "dim")
        elif kind == "turn":
            total = p.get("total_cost_usd")
            if isinstance(total, (int, float)):
                self._running = max(self._running, float(total))
            waiting = p.get("live_workers") or []
            if waiting:
                names = ", ".join(str(w.get("description") or w.get("id")) for w in waiting)
                self.line(f"  ~ waiting for {len(waiting)} worker{'s' if len(waiting) != 1 else ''}: {names}", "dim")
        elif kind == "result":
            # One line per step (a judge round is a step of its own), however many turns the step took.
            cost = float(p.get("cost_usd") or 0.0)
            self.cost += cost
            self._running = 0.0
            elapsed = _clock(time.monotonic() - self.started)
            if p.get("is_error"):
                self.line(f"  x failed: {p.get('error') or 'no result'} · ${cost:.4f} · {elapsed}", "red")
            else:
                self.line(f"  + done: {p.get('num_turns', 0)} turns · ${cost:.4f} · {elapsed}", "green")
        elif kind == "error":
            self.line(f"  ! {event.text}", "red")
        elif kind in ("retry", "reset"):
            self.line(f"  ~ {event.text}", "yellow")
        elif kind == "task":
            self._task(event)
        elif kind == "step":
            self.step(event.text, int(p.get("index", 1)), int(p.get("total", 1)), str(p.get("note", "")))
        elif kind == "handoff":
            self._handoff(event)
        elif kind == "ask":
            self._ask(event)
        elif kind == "notice":
            self.line(f"  ! {event.text}", "yellow")
        elif kind == "aside":
            self.line(f"# aside: {event.text}", "magenta")
        # system / unknown / future kinds: nothing to show

    def _handoff(self, event: Event) -> None:
        """Near the threshold (a warning), writing, the takeover (what the successor was told), or stopped."""
        p = event.payload
        phase = p.get("phase")
        if phase == "near":
            self.line(f"  ~ {event.text}", "yellow")
        elif phase == "stopped":
            self.line(f"  x {event.text}", "red")
        elif phase == "done":
            self.line(f"  # {event.text}", "yellow" if p.get("degraded") else "magenta")
            self.context = 0  # the successor starts from an empty context
            if p.get("path"):
                self.line(f"    handoff: {p['path']}", "dim")
            sections = p.get("sections")
            if self.verbose and isinstance(sections, dict):
                for key in ("doing", "next_step"):
                    if sections.get(key):
                        self.line(f"    {key}: {' '.join(str(sections[key]).split())[:200]}", "dim")
        else:
            self.line(f"  # {event.text}", "magenta")

    def _worker_event(self, event: Event) -> None:
        """A worker's own event, indented under its description (workers run in parallel and interleave)."""
        p = event.payload
        kind = event.kind
        shown = (
            kind == "tool_call" or (kind == "tool_result" and (p.get("is_error") or self.verbose)) or kind == "error"
        )
        shown = shown or (kind in ("text", "prompt") and self.verbose)
        if not shown:
            return
        found = p.get("worker")
        worker: dict[str, Any] = found if isinstance(found, dict) else {}
        wid = str(worker.get("id") or p.get("parent_tool_use_id") or "")
        if wid != self._shown_worker:
            self._shown_worker = wid
            self.line(f"  | {worker.get('description') or 'worker'}", "magenta")
        gutter = "  |   "
        if kind == "tool_call":
            if event.tool in ("Agent", "Task"):
                inp = p.get("input") or {}
                what = " ".join(str(inp.get("description") or inp.get("prompt") or "").split())[:60]
                self.line(f"{gutter}> dispatch {inp.get('subagent_type') or 'agent'}: {what}", "dim")
            else:
                self.line(f"{gutter}* {event.tool} {event.text}", "dim")
        elif kind == "tool_result":
            style = "red" if p.get("is_error") else "dim"
            shown = event.text if p.get("is_error") else event.text[:200]  # an error is read whole
            self.line(f"{gutter}{'x ' if p.get('is_error') else ''}{shown}", style)
        elif kind == "error":
            self.line(f"{gutter}! {event.text}", "red")
        else:
            self.line(gutter + event.text.strip()[:400].replace("\n", "\n" + gutter), "dim")

    def _ask(self, event: Event) -> None:
        """The human channel: a question with numbered options, how it ended; mail received and delivered."""
        p = event.payload
        state = str(p.get("state") or "")
        text = event.text.strip()
        if p.get("kind") == "mail":
            if state == "queued":
                kept = "appended to the brief" if p.get("amended") else "NOT saved anywhere"
                self.line(f"  + got it ({kept}; it reads it at its next inbox check): {text}", "green")
            elif state == "delivered":
                self.line(f"  + delivered: {text}", "dim")
            return
        shown = str(p.get("id") or "") in self._asked
        if state == "asked":
            self._asked.add(str(p.get("id") or ""))
        if state == "asked" or (state in ("timeout", "over_budget") and not shown):
            # A question that fell through at once (--timeout 0, quota) is shown too: the person should know
            # what was decided without them (the original printed "nobody answered" without the question).
            self.line(f"\n  ? {text}", "bold" if state == "asked" else "dim")
            for i, option in enumerate(p.get("options") or [], 1):
                self.line(f"     {i}) {option}", "" if state == "asked" else "dim")
        if state == "asked":
            remaining = p.get("remaining")
            left = (
                f" · {remaining} question{'s' if remaining != 1 else ''} left"
                if isinstance(remaining, int) and remaining >= 0
                else ""
            )
            pick = "a number or your answer" if p.get("options") else "your answer"
            self.line(f"     (type {pick}, then Enter; an empty line skips{left})", "dim")
        elif state == "answered":
            self.line(f"  + {p.get('answer') or ''}", "green")
        elif state == "timeout":
            self.line("  ! nobody answered: it decides itself and records the assumption", "yellow")
        elif state == "over_budget":
            self.line("  ! no questions left: it decides itself and records the assumption", "yellow")
        elif state == "declined":
            self.line("  . skipped: it decides itself" + (f" ({p['reason']})" if p.get("reason") else ""), "dim")
        elif state == "invalid":
            self.line("  ! it asked an empty question", "yellow")
        elif state == "cancelled":
            self.line(f"  . question withdrawn: {text}", "dim")

    def _task(self, event: Event) -> None:
        p = event.payload
        found = p.get("worker")
        worker: dict[str, Any] = found if isinstance(found, dict) else {}
        name = str(worker.get("description") or event.text or p.get("task_id") or "worker")
        if p.get("kind") == "TaskNotificationMessage":
            status = str(p.get("status") or "finished")
            self._shown_worker = None
            self.line(f"  # {name}: {status}", "red" if status == "failed" else "magenta")
            if self.verbose and event.text:
                self.line(f"    {event.text[:300]}", "dim")

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
