"""What one running step has seen so far and whom it tells: its result, its answer, its workers, its handoffs,
and the sinks its events and session ids go to.

Why apart from the step (``_step``): the handoff round (``_handover``) reads and changes the same state, and
neither may import the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._events import Event, EventSink, Workers
from ._handoff import HandoffLoop
from ._result import StepResult
from ._spec import AgentSpec

__all__ = ["Answer", "StepState"]


class Answer:
    """The step's answer: the text of the final turn's result, not every turn's prose joined together.

    A coordinator's first turn ("dispatched two workers") is not its answer; the turn after the last
    worker's notification is. When the final result carries no text, the main thread's prose of that turn
    stands in; a failed attempt never wipes text that came before it.
    """

    def __init__(self) -> None:
        self.turns = 0
        self._last: str | None = None  # text of the latest finished turn
        self._pending: list[str] = []  # main-thread prose since then

    def add(self, text: str) -> None:
        if text.strip():
            self._pending.append(text.strip())

    def turn_ended(self, event: Event) -> None:
        self.turns += 1
        prose = "\n".join(self._pending).strip()
        self._pending = []
        if event.payload.get("is_error"):
            self._last = prose or self._last
            return
        stated = str(event.payload.get("text") or "").strip()
        self._last = stated or prose or self._last

    def final(self, ok: bool) -> str:
        unfinished = "\n".join(self._pending).strip()
        if ok:
            return self._last or unfinished
        return unfinished or self._last or ""


@dataclass
class StepState:
    """One ``run``'s state, which its launches share: what it runs, what it has seen so far, whom it tells."""

    spec: AgentSpec
    prompt: str  # as the caller gave it: a degraded handoff's scene and a resumed session's successor quote it
    result: StepResult
    on_event: EventSink | None
    on_session: tuple[Callable[[str], Any] | None, ...] = ()
    handoffs: HandoffLoop | None = None
    workers: Workers = field(default_factory=Workers)
    answer: Answer = field(default_factory=Answer)

    def emit(self, event: Event) -> None:
        """Every event of the step passes here, to the caller's `EventSink`."""
        if self.on_event is not None:
            self.on_event(event)

    def on_resilience(self, ev: Any) -> None:
        self.emit(Event("retry", ev.message, payload={"step": self.result.step, **_resilience_payload(ev)}))

    def note_session(self, message: Any) -> None:
        """A new session id in ``message``: the step's now, and the callbacks are told at once."""
        sid = getattr(message, "session_id", None)
        if not isinstance(sid, str) or not sid or sid == self.result.session_id:
            return
        self.result.session_id = sid
        for callback in self.on_session:
            if callback is not None:
                try:
                    callback(sid)
                except Exception:  # noqa: BLE001 - a UI or lineage callback must not break the step
                    pass

    def collect(self, event: Event) -> None:
        """A main-thread event's share of the result: the context watermark and the answer's prose."""
        if event.subagent:
            return
        context = event.payload.get("context")
        if isinstance(context, int) and context > self.result.context:
            self.result.context = context
        if event.kind == "text":
            self.answer.add(event.text)


def _resilience_payload(ev: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(ev) and not isinstance(ev, type):
        return {k: v for k, v in dataclasses.asdict(ev).items() if k != "message"}
    return {}
