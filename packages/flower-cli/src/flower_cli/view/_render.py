"""The terminal view of a run: progress on stderr, safe for any terminal, one stateful renderer per run.

The status line keeps elapsed time, the main thread's context and the cumulative cost across the whole run —
one renderer lives for the whole command (a renderer per event would show $0.00 and 0:00 on every line).

Its jobs live apart: ``_text.py`` makes text safe to print, ``_terminal.py`` knows the stream (a terminal?
how wide? colour?), ``_screen.py`` writes and folds the lines, ``_heartbeat.py`` says what is being waited
for, ``_json.py`` is the ``--json`` view. Here each event becomes the lines a person reads.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from .._shared.words import counted
from ..runtime import BUDGET_SPENT
from ._heartbeat import Heartbeat, is_limit_retry
from ._json import is_refusal
from ._screen import Screen
from ._terminal import is_terminal, use_color
from ._text import clock, sanitize, tokens

if TYPE_CHECKING:
    from ..runtime import Event

__all__ = ["Renderer"]


class Renderer:
    """Human progress on ``stream`` (stderr by default). Feed it every `Event` of the run."""

    # The heartbeat's pace (seconds): a wait shorter than ``heartbeat_after`` shows nothing; on a terminal the
    # line is redrawn every ``heartbeat_every``; into a pipe a plain line every ``plain_every``.
    heartbeat_after = 2.0
    heartbeat_every = 2.0
    plain_every = 60.0

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
        stream = stream or sys.stderr
        self.verbose = verbose
        self.allow_hint = allow_hint
        self.refused = 0  # tool calls refused in this run, said again in the closing line
        self.degraded = 0  # handoffs built without the old session's own handoff: the closing line says so too
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self._screen = Screen(stream, color=use_color(stream) if color is None else color)
        self._shown_worker: str | None = None  # the worker whose heading the last worker line sits under
        self._running = 0.0  # what the step in progress has cost so far (the harness's running total)
        self._asked: set[str] = set()  # ids of the questions already shown
        self._tools: dict[str, str] = {}  # tool_use id -> tool name, to name a refused call
        self._heartbeat = Heartbeat(
            self._screen,
            self.status,
            live=is_terminal(stream) if live is None else live,
            after=self.heartbeat_after,
            every=self.heartbeat_every,
            plain_every=self.plain_every,
        )

    # --- the screen and the heartbeat, as the renderer's own ------------------------------------------

    @property
    def stream(self) -> TextIO:
        return self._screen.stream

    @property
    def color(self) -> bool:
        return self._screen.color

    @property
    def width(self) -> int:
        """The columns lines fold at (between 40 and 110)."""
        return self._screen.width

    @width.setter
    def width(self, columns: int) -> None:
        self._screen.width = columns

    @property
    def fold(self) -> bool:
        """Whether long lines fold (a terminal, or an asked-for ``COLUMNS``); a pipe keeps each message whole."""
        return self._screen.fold

    @fold.setter
    def fold(self, on: bool) -> None:
        self._screen.fold = on

    @property
    def live(self) -> bool:
        """Whether the heartbeat is redrawn in place (a terminal) rather than said as a plain line."""
        return self._heartbeat.live

    def line(self, text: str, style: str = "", *, wrap: bool = True) -> None:
        """Write ``text``, each of its lines folded (when ``fold``) at the width onto indented continuation
        lines: nothing is cut, and a word longer than the width (a path) stays whole on a line of its own.
        ``wrap=False`` writes the lines as they are (text already laid out)."""
        self._screen.line(text, style, wrap=wrap)

    def begin_wait(self, key: str, label: str) -> None:
        """Something is being waited for (``key`` names it, ``label`` says it): the heartbeat shows it."""
        self._heartbeat.begin(key, label)

    def end_wait(self, key: str) -> None:
        self._heartbeat.end(key)

    def heartbeat(self, now: float | None = None) -> str | None:
        """The heartbeat's text now (None: nothing waited for long enough, or a question is open)."""
        return self._heartbeat.text(now)

    def stop(self) -> None:
        """End the heartbeat (the run is over): its line is erased, its thread ends."""
        self._heartbeat.stop()

    def status(self) -> str:
        parts = []
        if self.context:
            parts.append(f"context {tokens(self.context)}")
        parts.append(f"cost ${self.cost + self._running:.2f}")
        parts.append(clock(time.monotonic() - self.started))
        return "  - " + " · ".join(parts)

    # --- events -----------------------------------------------------------------------------------

    def step(self, name: str, index: int | None, total: int, note: str = "") -> None:
        """A step's header; ``index`` None: a session beside the steps (a judge), with a header of its own."""
        tail = (f"{index}/{total}" if index is not None else "") + (f"  {note}" if note else "")
        tail = tail.strip()
        fill = "=" * max(4, self.width - len(name) - len(tail) - 6)
        self.line(f"\n== {name} {fill} {tail}", "bold")

    def __call__(self, event: Event) -> None:
        self.render(event)

    def render(self, event: Event) -> None:
        self._heartbeat.track(event)
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
                self.line(f"  ~ waiting for {counted(len(waiting), 'worker')}: {names}", "dim")
        elif kind == "result":
            self._result(p)
        elif kind == "error":
            self.line(f"  ! {event.text}", "red")
        elif kind in ("retry", "reset"):
            if not _first_and_final(p):
                self.line(f"  ~ {event.text}", "yellow")
        elif kind == "limit":
            self._limit(event)
        elif kind == "system" and p.get("subtype") == "api_retry" and p.get("attempt") == 1 and not is_limit_retry(p):
            # Said once, as a line (a pipe sees it too); later attempts only move the heartbeat.
            why = f"HTTP {p['error_status']}" if p.get("error_status") else str(p.get("error") or "no answer")
            self.line(
                f"  ~ a request failed ({why}); Claude Code retries it, up to {p.get('max_retries')} times", "yellow"
            )
        elif kind == "task":
            self._task(event)
        elif kind == "step":
            index = None if p.get("side") else int(p.get("index", 1))
            self.step(event.text, index, int(p.get("total", 1)), str(p.get("note", "")))
        elif kind == "handoff":
            self._handoff(event)
        elif kind == "ask":
            self._ask(event)
        elif kind == "notice":
            self.line(f"  ! {event.text}", "yellow")
        elif kind == "aside":
            self.line(f"# aside: {event.text}", "magenta")
        # system / unknown / future kinds: nothing to show

    def _result(self, p: dict[str, Any]) -> None:
        """One line per step (a judge round is a step of its own), however many turns the step took."""
        cost = float(p.get("cost_usd") or 0.0)
        self.cost += cost
        self._running = 0.0
        elapsed = clock(time.monotonic() - self.started)
        if p.get("is_error") and str(p.get("error") or "").startswith(BUDGET_SPENT):
            # not a failure of the step: the run's budget ended it (or kept it from starting)
            self.line(f"  x {p.get('step')} stopped: {p.get('error')} · ${cost:.4f} · {elapsed}", "yellow")
        elif p.get("is_error"):
            self.line(f"  x failed: {p.get('error') or 'no result'} · ${cost:.4f} · {elapsed}", "red")
        else:
            self.line(f"  + done: {counted(int(p.get('num_turns') or 0), 'turn')} · ${cost:.4f} · {elapsed}", "green")

    def _limit(self, event: Event) -> None:
        """A usage limit: said when met, when waited out, when it ends the step; the countdown is the heartbeat's."""
        phase = event.payload.get("phase")
        if phase in ("reached", "resumed"):
            self.line(f"  ~ {event.text}", "yellow", wrap=True)
        elif phase == "warning":
            self.line(f"  ! {event.text}", "yellow", wrap=True)
        # "ended" and "spend_cap": the step's failed line and the exit line say it (with the command that continues)

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
            self.degraded += bool(p.get("degraded"))
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
            left = f" · {counted(remaining, 'question')} left" if isinstance(remaining, int) and remaining >= 0 else ""
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
            parts.append(f"{counted(refused, 'tool call')} refused")
        if self.degraded:
            # A successor that started from a handoff built without a model knows less: never a silent success.
            n = self.degraded
            parts.append(f"{counted(n, 'handoff')} degraded (no handoff was written)")
        # Not clipped to the width: a session id or a path cut short is no use to copy.
        text = sanitize(" · ".join(parts))
        self.stream.write("\n" + self._screen.paint(text, "yellow" if refused or self.degraded else "dim") + "\n")
        self.stream.flush()


def _first_and_final(p: dict[str, Any]) -> bool:
    """A first attempt that failed for good (a refused credential, an unknown model): nothing was retried,
    and the step's own failure line says the error, so the retry loop's two lines would only repeat it."""
    return p.get("error_kind") == "fatal" and p.get("attempt") == 1 and p.get("kind") in ("attempt_failed", "gave_up")
