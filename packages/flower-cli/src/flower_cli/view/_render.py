"""The terminal view of a run: progress on stderr, safe for any terminal, one stateful renderer per run.

Model text is untrusted: every escape sequence and control byte in it is removed before it is printed (only
the renderer's own colours reach the terminal). The status line keeps elapsed time, the main thread's context
and the cumulative cost across the whole run — one renderer lives for the whole command (a renderer per event
would show $0.00 and 0:00 on every line).

Nothing a person must read is cut. On a terminal every line folds at its width onto indented continuation
lines, and a word longer than the width (a path, a URL) is kept whole on a line of its own, never broken or
clipped; into a pipe or a file each message stays one whole line (for grep and logs) unless ``COLUMNS`` asks
for a width.
Colour follows ``--color`` (`use_color`): ``auto`` means a terminal, unless ``NO_COLOR`` is set (or
``FORCE_COLOR`` asks for it without one).

The heartbeat: while something is waited for — a tool running (a worker is a tool call too), a request the
harness retries, a network that is down — one line says what and for how long. On a terminal it is redrawn
in place every couple of seconds (the only line ever shortened, in its middle) and erased before anything
else is written; it hides while a question waits for the person. Into a pipe it is a plain line, once a wait
passes a minute and once a minute after that, so a CI log shows the run is alive without filling up.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..runtime import Event

__all__ = [
    "COLOR_MODES",
    "JsonRenderer",
    "Renderer",
    "is_refusal",
    "sanitize",
    "shorten_middle",
    "terminal_width",
    "use_color",
]

# CSI/OSC/other ESC sequences, then any remaining C0/C1 control character except newline and tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

COLOR_MODES = ("auto", "always", "never")
_MIN_WIDTH, _MAX_WIDTH = 40, 110  # past 110 columns prose gets hard to read; below 40 nothing fits


def is_refusal(event: Event) -> bool:
    """Whether ``event`` is a tool call the harness refused (the event stream marks it ``denied``): the one
    test both renderers count by, so the terminal and ``--json`` agree on the number."""
    return event.kind == "tool_result" and isinstance(event.payload.get("denied"), dict)


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
    return _is_terminal(stream)


def _columns_asked() -> int | None:
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or fake stream
        return False


def terminal_width(stream: TextIO) -> int:
    """The columns ``stream`` has: ``COLUMNS`` when set, else its terminal's, else stdout's, else 100."""
    asked = _columns_asked()
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

    # The heartbeat's pace (seconds): a wait shorter than ``heartbeat_after`` shows nothing; on a terminal the
    # line is redrawn every ``heartbeat_every``; into a pipe a plain line every ``plain_every``.
    heartbeat_after = 2.0
    heartbeat_every = 2.0
    plain_every = 60.0
    _tick = 0.25

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        verbose: bool = False,
        color: bool | None = None,
        live: bool | None = None,
        allow_hint: Callable[[str], str] | None = None,
    ) -> None:
        """``color``: None decides by `use_color` (``auto``: a terminal, ``NO_COLOR``, ``FORCE_COLOR``).
        ``live``: redraw the heartbeat in place (default: when ``stream`` is a terminal). ``allow_hint``: how
        the person lets a refused tool run (`once`: "add it with -t …"); None: no such knob."""
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.allow_hint = allow_hint
        self.refused = 0  # tool calls refused in this run, said again in the closing line
        self.color = use_color(self.stream) if color is None else color
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self.width = max(_MIN_WIDTH, min(terminal_width(self.stream), _MAX_WIDTH))
        # Fold long lines on a terminal (or at an asked-for COLUMNS); a pipe keeps each message one line.
        self.fold = _is_terminal(self.stream) or _columns_asked() is not None
        self._shown_worker: str | None = None  # the worker whose heading the last worker line sits under
        self._running = 0.0  # what the step in progress has cost so far (the harness's running total)
        self._asked: set[str] = set()  # ids of the questions already shown
        self._tools: dict[str, str] = {}  # tool_use id -> tool name, to name a refused call
        self.live = _is_terminal(self.stream) if live is None else live
        self._lock = threading.RLock()  # the ticker thread writes too
        self._waits: dict[str, tuple[str, float]] = {}  # what is being waited for: key -> (label, since)
        self._questions: set[str] = set()  # questions waiting for the person: the heartbeat hides meanwhile
        self._beat_shown = False  # a heartbeat line is on the terminal, without its newline
        self._beat_drawn = 0.0
        self._plain_said = 0.0
        self._ticker: threading.Thread | None = None
        self._stopped = threading.Event()

    # --- output -----------------------------------------------------------------------------------

    def _paint(self, text: str, style: str) -> str:
        codes = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "bold": "1"}
        return f"\x1b[{codes[style]}m{text}\x1b[0m" if self.color and style in codes else text

    def line(self, text: str, style: str = "", *, wrap: bool = True) -> None:
        """Write ``text``, each of its lines folded (when ``fold``) at the width onto indented continuation
        lines: nothing is cut, and a word longer than the width (a path) stays whole on a line of its own.
        ``wrap=False`` writes the lines as they are (text already laid out)."""
        out: list[str] = []
        for raw in sanitize(text).splitlines() or [""]:
            out.extend(self._fit(raw) if wrap else [raw])
        with self._lock:
            self._erase_beat()
            for fitted in out:
                self.stream.write(self._paint(fitted, style) + "\n" if style else fitted + "\n")
            self.stream.flush()

    def _fit(self, raw: str) -> list[str]:
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

    # --- the heartbeat ------------------------------------------------------------------------------

    def begin_wait(self, key: str, label: str) -> None:
        """Something is being waited for (``key`` names it, ``label`` says it): the heartbeat shows it."""
        with self._lock:
            since = self._waits[key][1] if key in self._waits else time.monotonic()
            self._waits[key] = (sanitize(" ".join(label.split())), since)
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._beat_loop, name="flower-heartbeat", daemon=True)
                self._ticker.start()

    def end_wait(self, key: str) -> None:
        with self._lock:
            self._waits.pop(key, None)
            if not self._waits:
                self._erase_beat()

    def _end_waits(self, prefix: str = "") -> None:
        with self._lock:
            for key in [k for k in self._waits if k.startswith(prefix)]:
                del self._waits[key]
            if not self._waits:
                self._erase_beat()

    def heartbeat(self, now: float | None = None) -> str | None:
        """The heartbeat's text now (None: nothing waited for long enough, or a question is open)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if not self._waits or self._questions:
                return None
            label, since = min(self._waits.values(), key=lambda wait: wait[1])  # the longest wait
            more = len(self._waits) - 1
        if now - since < self.heartbeat_after:
            return None
        parts = [f"{label} · {_clock(now - since)}"]
        if more:
            parts.append(f"+{more} more")
        parts.append(self.status().strip(" -"))
        return "  … " + " · ".join(parts)

    def _erase_beat(self) -> None:
        if self._beat_shown:
            self.stream.write("\r\x1b[K")
            self._beat_shown = False

    def _beat_loop(self) -> None:
        while not self._stopped.wait(self._tick):
            try:
                self._beat()
            except (OSError, ValueError):  # the terminal went away: the heartbeat stops, the run does not
                return

    def _beat(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            text = self.heartbeat(now)
            if text is None:
                if self._beat_shown:
                    self._erase_beat()
                    self.stream.flush()
                return
            if self.live:
                if self._beat_shown and now - self._beat_drawn < self.heartbeat_every:
                    return
                # One column short of the terminal: a line that fills it would wrap, and \r could not erase it.
                room = max(20, min(self.width, terminal_width(self.stream)) - 1)
                self.stream.write("\r\x1b[K" + self._paint(shorten_middle(text, room), "dim"))
                self._beat_shown, self._beat_drawn = True, now
            else:
                since = min(since for _, since in self._waits.values())
                if now - since < self.plain_every or now - self._plain_said < self.plain_every:
                    return
                self.stream.write(text + "\n")
                self._plain_said = now
            self.stream.flush()

    def stop(self) -> None:
        """End the heartbeat (the run is over): its line is erased, its thread ends."""
        self._stopped.set()
        with self._lock:
            self._waits.clear()
            self._erase_beat()
            self.stream.flush()

    def _track(self, event: Event) -> None:
        """What the heartbeat waits on: tools between their call and their result, retries, open questions."""
        p = event.payload
        kind = event.kind
        if kind == "tool_call" and isinstance(p.get("id"), str):
            if event.tool in ("Agent", "Task"):
                inp = p.get("input") or {}
                what = " ".join(str(inp.get("description") or inp.get("prompt") or "").split())
                label = f"worker {what}" if what else "a worker"
            else:
                label = f"running {event.tool}" + (f" {event.text}" if event.text else "")
            self.begin_wait(f"tool:{p['id']}", label)
        elif kind == "tool_result" and isinstance(p.get("tool_use_id"), str):
            self.end_wait(f"tool:{p['tool_use_id']}")
        elif kind == "retry":
            self._track_retry(event)
        elif kind == "system" and p.get("subtype") == "api_retry":
            attempt, most = p.get("attempt"), p.get("max_retries")
            why = f"HTTP {p['error_status']}" if p.get("error_status") else str(p.get("error") or "no answer")
            self.begin_wait(
                "harness-retry", f"request failed ({why}), Claude Code retries: attempt {attempt} of {most}"
            )
        elif kind in ("text", "thinking", "turn") and not event.subagent:
            self.end_wait("harness-retry")  # an answer came through
        elif kind == "result":
            self._end_waits()
        elif kind == "ask":
            qid, state = str(p.get("id") or ""), str(p.get("state") or "")
            with self._lock:
                if state == "asked":
                    self._questions.add(qid)
                    self._erase_beat()
                else:
                    self._questions.discard(qid)

    def _track_retry(self, event: Event) -> None:
        p = event.payload
        stage, attempt = p.get("kind"), p.get("attempt")
        if stage == "offline":
            self.begin_wait("retry", f"attempt {attempt} lost the endpoint; waiting for it to answer")
        elif stage == "backoff":
            wait = p.get("wait_s")
            after = f" in {wait:.0f} s" if isinstance(wait, (int, float)) else ""
            self.begin_wait("retry", f"attempt {attempt} failed; attempt {(attempt or 0) + 1}{after}")
        elif stage in ("online", "resumed", "restarted", "gave_up"):
            self.end_wait("retry")

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
        self._track(event)
        p = event.payload
        if not event.subagent and isinstance(p.get("context"), int) and p["context"]:
            self.context = p["context"]
        kind = event.kind
        if kind == "tool_call" and isinstance(p.get("id"), str):
            self._tools[p["id"]] = event.tool
        if is_refusal(event):
            self._refusal(event)
            return
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
        elif kind == "system" and p.get("subtype") == "api_retry" and p.get("attempt") == 1:
            # Said once, as a line (a pipe sees it too); later attempts only move the heartbeat.
            why = f"HTTP {p['error_status']}" if p.get("error_status") else str(p.get("error") or "no answer")
            self.line(
                f"  ~ a request failed ({why}); Claude Code retries it, up to {p.get('max_retries')} times", "yellow"
            )
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
            # what was decided without them, not only that nobody answered.
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

    def closing(
        self, total_cost: float, manifest: str, session_id: str | None = None, *, refused: int | None = None
    ) -> None:
        """The run's last line: cost, the session to ``--resume`` (in full), the manifest, refused calls.

        ``refused``: the count when the events went elsewhere (``--json``: the `JsonRenderer` counted them);
        by default, the calls this renderer saw refused.
        """
        self.stop()
        refused = self.refused if refused is None else refused
        parts = [f"total cost ${total_cost:.4f}"]
        if session_id:
            parts.append(f"session {session_id}")
        parts.append(f"manifest {manifest}")
        if refused:
            parts.append(f"{refused} tool call{'s' if refused != 1 else ''} refused")
        # Not clipped to the width: a session id or a path cut short is no use to copy.
        text = sanitize(" · ".join(parts))
        self.stream.write("\n" + self._paint(text, "yellow" if refused else "dim") + "\n")
        self.stream.flush()


class JsonRenderer:
    """``--json``: one JSON object per event per line, for programs. It counts the refused tool calls as the
    terminal `Renderer` does (`is_refusal`), for the closing line and the ``done`` event."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.refused = 0

    def __call__(self, event: Event) -> None:
        if is_refusal(event):
            self.refused += 1
        self.emit(event.to_json())

    def emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()
