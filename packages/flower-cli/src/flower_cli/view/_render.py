"""The terminal view of a run: progress on stderr, safe for any terminal, one stateful renderer per run.

Model text is untrusted: every escape sequence and control byte in it is removed before it is printed (only
the renderer's own colours reach the terminal). The status line keeps elapsed time, the main thread's context
and the cumulative cost across the whole run — one renderer lives for the whole command (a renderer per event
would show $0.00 and 0:00 on every line).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..runtime import Event

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

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        verbose: bool = False,
        color: bool | None = None,
        allow_hint: Callable[[str], str] | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        # How the person lets a tool the agent was refused run (`once`: "add it with -t …"); None: no such knob.
        self.allow_hint = allow_hint
        self.refused = 0  # tool calls refused in this run, said again in the closing line
        self.color = self.stream.isatty() if color is None else color
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self.width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 110))
        self._shown_worker: str | None = None  # the worker whose heading the last worker line sits under
        self._running = 0.0  # what the step in progress has cost so far (the harness's running total)
        self._asked: set[str] = set()  # ids of the questions already shown
        self._tools: dict[str, str] = {}  # tool_use id -> tool name, to name a refused call

    # --- output -----------------------------------------------------------------------------------

    def _paint(self, text: str, style: str) -> str:
        codes = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "bold": "1"}
        return f"\x1b[{codes[style]}m{text}\x1b[0m" if self.color and style in codes else text

    def line(self, text: str, style: str = "", *, wrap: bool = False) -> None:
        """Write ``text``, each line fitted to the width: clipped (progress: one line per call), or with
        ``wrap`` folded onto indented continuation lines (words meant to be read whole: what the model said,
        warnings, answers to asides)."""
        for raw in sanitize(text).splitlines() or [""]:
            for fitted in self._fit(raw, wrap):
                self.stream.write(self._paint(fitted, style) + "\n" if style else fitted + "\n")
        self.stream.flush()

    def _fit(self, raw: str, wrap: bool) -> list[str]:
        if len(raw) <= self.width:
            return [raw]
        if not wrap:
            return [raw[: self.width - 3] + "..."]
        body = raw.lstrip(" ")
        indent = " " * (len(raw) - len(body))
        # Continuation lines sit under the text, past a one-character marker such as "!" or "~".
        marker = len(body) > 1 and not body[0].isalnum() and body[1] == " "
        return textwrap.wrap(
            body,
            self.width,
            initial_indent=indent,
            subsequent_indent=indent + ("  " if marker else ""),
            break_long_words=True,
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
        if kind == "tool_call" and isinstance(p.get("id"), str):
            self._tools[p["id"]] = event.tool
        if kind == "tool_result" and isinstance(p.get("denied"), dict):
            self._refusal(event)
            return
        if event.subagent and kind in ("text", "tool_call", "tool_result", "prompt", "error"):
            self._worker_event(event)
            return
        if kind in ("text", "thinking", "tool_call", "tool_result", "prompt", "error", "step"):
            self._shown_worker = None  # the next worker line needs its heading again
        if kind == "text":
            self.line("  " + event.text.strip().replace("\n", "\n  "), wrap=True)
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
                self.line(f"  x {event.text[:200]}", "red")
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
                self.line(f"  x failed: {p.get('error') or 'no result'} · ${cost:.4f} · {elapsed}", "red", wrap=True)
            else:
                self.line(f"  + done: {p.get('num_turns', 0)} turns · ${cost:.4f} · {elapsed}", "green")
        elif kind == "error":
            self.line(f"  ! {event.text}", "red", wrap=True)
        elif kind in ("retry", "reset"):
            self.line(f"  ~ {event.text}", "yellow", wrap=True)
        elif kind == "task":
            self._task(event)
        elif kind == "step":
            self.step(event.text, int(p.get("index", 1)), int(p.get("total", 1)), str(p.get("note", "")))
        elif kind == "handoff":
            self._handoff(event)
        elif kind == "ask":
            self._ask(event)
        elif kind == "notice":
            self.line(f"  ! {event.text}", "yellow", wrap=True)
        elif kind == "aside":
            self.line(f"# aside: {event.text}", "magenta", wrap=True)
        # system / unknown / future kinds: nothing to show

    def _refusal(self, event: Event) -> None:
        """A refused tool call, in words for the person (the model's own text only under -v), and counted."""
        p = event.payload
        denied: dict[str, Any] = p["denied"]
        self.refused += 1
        tool = str(denied.get("tool") or self._tools.get(str(p.get("tool_use_id")), "") or "a tool")
        kind = denied.get("kind")
        if kind == "not-allowed":
            said = f"{tool} was refused (not in the allowed tools)"
            hint = self.allow_hint(tool) if self.allow_hint is not None else ""
            said += f": {hint}" if hint else ""
        elif kind == "delegated":
            said = f"{tool} was refused: the coordinator leaves hands-on work to its workers (by design)"
        elif kind == "rule":
            said = f"{tool} was refused by a deny rule"
        elif kind == "rejected":
            said = f"{tool} was refused by the person asked"
        else:
            reason = " ".join(str(denied.get("reason") or "").split())
            said = f"{tool} was refused by a PreToolUse hook" + (f": {reason[:200]}" if reason else "")
        if event.subagent:
            found = p.get("worker")
            worker: dict[str, Any] = found if isinstance(found, dict) else {}
            said += f" (in the worker {worker['description']!r})" if worker.get("description") else " (in a worker)"
        self._shown_worker = None
        self.line(f"  ! {said}", "dim" if kind == "delegated" else "yellow", wrap=True)
        if self.verbose and event.text:
            self.line(f"    the model was told: {' '.join(event.text.split())[:300]}", "dim", wrap=True)

    def _handoff(self, event: Event) -> None:
        """Near the threshold (a warning), writing, the takeover (what the successor was told), or stopped."""
        p = event.payload
        phase = p.get("phase")
        if phase == "near":
            self.line(f"  ~ {event.text}", "yellow", wrap=True)
        elif phase == "stopped":
            self.line(f"  x {event.text}", "red", wrap=True)
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
            self.line(f"{gutter}{'x ' if p.get('is_error') else ''}{event.text[:200]}", style)
        elif kind == "error":
            self.line(f"{gutter}! {event.text}", "red", wrap=True)
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
                self.line(f"  + got it ({kept}; it reads it at its next inbox check): {text[:200]}", "green")
            elif state == "delivered":
                self.line(f"  + delivered: {text[:200]}", "dim")
            return
        shown = str(p.get("id") or "") in self._asked
        if state == "asked":
            self._asked.add(str(p.get("id") or ""))
        if state == "asked" or (state in ("timeout", "over_budget") and not shown):
            # A question that fell through at once (--timeout 0, quota) is shown too: the person should know
            # what was decided without them, not only that nobody answered.
            self.line(f"\n  ? {text}", "bold" if state == "asked" else "dim", wrap=True)
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
            self.line(f"  + {str(p.get('answer') or '')[:300]}", "green")
        elif state == "timeout":
            self.line("  ! nobody answered: it decides itself and records the assumption", "yellow")
        elif state == "over_budget":
            self.line("  ! no questions left: it decides itself and records the assumption", "yellow")
        elif state == "declined":
            self.line("  . skipped: it decides itself" + (f" ({p['reason']})" if p.get("reason") else ""), "dim")
        elif state == "invalid":
            self.line("  ! it asked an empty question", "yellow")
        elif state == "cancelled":
            self.line(f"  . question withdrawn: {text[:200]}", "dim")

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

    def closing(self, total_cost: float, manifest: str, session_id: str | None = None) -> None:
        """The run's last line: cost, the session to ``--resume`` (in full), the manifest, refused calls."""
        parts = [f"total cost ${total_cost:.4f}"]
        if session_id:
            parts.append(f"session {session_id}")
        parts.append(f"manifest {manifest}")
        if self.refused:
            parts.append(f"{self.refused} tool call{'s' if self.refused != 1 else ''} refused")
        # Not clipped to the width: a session id or a path cut short is no use to copy.
        text = sanitize(" · ".join(parts))
        self.stream.write("\n" + self._paint(text, "yellow" if self.refused else "dim") + "\n")
        self.stream.flush()


class JsonRenderer:
    """``--json``: one JSON object per event per line, for programs."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.emit(event.to_json())

    def emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()
