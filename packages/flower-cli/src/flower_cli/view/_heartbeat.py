"""The heartbeat: while something is waited for — a tool running (a worker is a tool call too), a request the
harness retries, a network that is down — one line says what and for how long.

On a terminal it is redrawn in place every couple of seconds (the only line ever shortened, in its middle) and
erased before anything else is written; it hides while a question waits for the person. Into a pipe it is a
plain line, once a wait passes a minute and once a minute after that, so a CI log shows the run is alive
without filling up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flower_resilience import until_text, usage_limit

from ._screen import Screen
from ._text import clock, sanitize

if TYPE_CHECKING:
    from ..runtime import Event

__all__ = ["Heartbeat", "is_limit_retry"]


def is_limit_retry(payload: dict[str, Any]) -> bool:
    """Is this harness retry notice (``api_retry``) a usage limit's? Then flower waits it out, not the harness."""
    return payload.get("subtype") == "api_retry" and usage_limit(payload) is not None


class Heartbeat:
    """What is being waited for, and the line that says so on ``screen``; ``status`` adds the run's context,
    cost and time to it.

    The pace (seconds): a wait shorter than ``after`` shows nothing; on a terminal (``live``) the line is
    redrawn every ``every``; into a pipe a plain line every ``plain_every``. The thread wakes every ``tick``.
    """

    tick = 0.25

    def __init__(
        self,
        screen: Screen,
        status: Callable[[], str],
        *,
        live: bool,
        after: float = 2.0,
        every: float = 2.0,
        plain_every: float = 60.0,
    ) -> None:
        self.screen = screen
        self.status = status
        self.live = live
        self.after, self.every, self.plain_every = after, every, plain_every
        self._waits: dict[str, tuple[str, float]] = {}  # what is being waited for: key -> (label, since)
        self._questions: set[str] = set()  # questions waiting for the person: the heartbeat hides meanwhile
        self._drawn = 0.0
        self._plain_said = 0.0
        self._ticker: threading.Thread | None = None
        self._stopped = threading.Event()

    def begin(self, key: str, label: str) -> None:
        """Something is being waited for (``key`` names it, ``label`` says it): the heartbeat shows it."""
        with self.screen.lock:
            since = self._waits[key][1] if key in self._waits else time.monotonic()
            self._waits[key] = (sanitize(" ".join(label.split())), since)
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._loop, name="flower-heartbeat", daemon=True)
                self._ticker.start()

    def end(self, key: str) -> None:
        with self.screen.lock:
            self._waits.pop(key, None)
            if not self._waits:
                self.screen.erase_in_place()

    def end_all(self, prefix: str = "") -> None:
        with self.screen.lock:
            for key in [k for k in self._waits if k.startswith(prefix)]:
                del self._waits[key]
            if not self._waits:
                self.screen.erase_in_place()

    def text(self, now: float | None = None) -> str | None:
        """The heartbeat's text now (None: nothing waited for long enough, or a question is open)."""
        now = time.monotonic() if now is None else now
        with self.screen.lock:
            if not self._waits or self._questions:
                return None
            label, since = min(self._waits.values(), key=lambda wait: wait[1])  # the longest wait
            more = len(self._waits) - 1
        if now - since < self.after:
            return None
        parts = [f"{label} · {clock(now - since)}"]
        if more:
            parts.append(f"+{more} more")
        parts.append(self.status().strip(" -"))
        return "  … " + " · ".join(parts)

    def beat(self, now: float | None = None) -> None:
        """Draw the heartbeat as it is ``now`` (the thread calls this every ``tick``; tests call it directly)."""
        now = time.monotonic() if now is None else now
        screen = self.screen
        with screen.lock:
            text = self.text(now)
            if text is None:
                if screen.in_place:
                    screen.erase_in_place()
                    screen.stream.flush()
                return
            if self.live:
                if screen.in_place and now - self._drawn < self.every:
                    return
                screen.draw_in_place(text)
                self._drawn = now
            else:
                since = min(since for _, since in self._waits.values())
                if now - since < self.plain_every or now - self._plain_said < self.plain_every:
                    return
                screen.stream.write(text + "\n")
                self._plain_said = now
            screen.stream.flush()

    def stop(self) -> None:
        """End the heartbeat (the run is over): its line is erased, its thread ends."""
        self._stopped.set()
        with self.screen.lock:
            self._waits.clear()
            self.screen.erase_in_place()
            self.screen.stream.flush()

    def track(self, event: Event) -> None:
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
            self.begin(f"tool:{p['id']}", label)
        elif kind == "tool_result" and isinstance(p.get("tool_use_id"), str):
            self.end(f"tool:{p['tool_use_id']}")
        elif kind == "retry":
            self._track_retry(event)
        elif kind == "limit":
            self._track_limit(event)
        elif kind == "system" and p.get("subtype") == "api_retry" and not is_limit_retry(p):
            attempt, most = p.get("attempt"), p.get("max_retries")
            why = f"HTTP {p['error_status']}" if p.get("error_status") else str(p.get("error") or "no answer")
            self.begin("harness-retry", f"request failed ({why}), Claude Code retries: attempt {attempt} of {most}")
        elif kind in ("text", "thinking", "turn") and not event.subagent:
            self.end("harness-retry")  # an answer came through
        elif kind == "result":
            self.end_all()
        elif kind == "ask":
            qid, state = str(p.get("id") or ""), str(p.get("state") or "")
            with self.screen.lock:
                if state == "asked":
                    self._questions.add(qid)
                    self.screen.erase_in_place()
                else:
                    self._questions.discard(qid)

    def _track_limit(self, event: Event) -> None:
        """The wait for a usage limit's reset: its label counts down (a ``waiting`` event renews it)."""
        phase = event.payload.get("phase")
        self.end("harness-retry")  # the harness's retry notice was the limit's: flower waits now, not the harness
        if phase in ("reached", "waiting"):
            resets_at = event.payload.get("resets_at")
            when = f" · resets {until_text(resets_at)}" if isinstance(resets_at, (int, float)) else ""
            self.begin("limit", f"waiting out the {event.payload.get('name') or 'usage limit'}{when}")
        elif phase in ("resumed", "ended", "spend_cap"):
            self.end("limit")

    def _track_retry(self, event: Event) -> None:
        p = event.payload
        stage, attempt = p.get("kind"), p.get("attempt")
        if stage == "offline":
            self.begin("retry", f"attempt {attempt} lost the endpoint; waiting for it to answer")
        elif stage == "backoff":
            wait = p.get("wait_s")
            after = f" in {wait:.0f} s" if isinstance(wait, (int, float)) else ""
            self.begin("retry", f"attempt {attempt} failed; attempt {(attempt or 0) + 1}{after}")
        elif stage in ("online", "resumed", "restarted", "gave_up"):
            self.end("retry")

    def _loop(self) -> None:
        while not self._stopped.wait(self.tick):
            try:
                self.beat()
            except (OSError, ValueError):  # the terminal went away: the heartbeat stops, the run does not
                return
