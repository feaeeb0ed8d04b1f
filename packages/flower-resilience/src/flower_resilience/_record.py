"""What a resilient run leaves behind: one `Attempt` per try, the `AttemptRecord` over them, and events."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ._classify import ErrorKind

__all__ = ["Attempt", "AttemptRecord", "EventKind", "ResilienceError", "ResilienceEvent"]

EventKind = Literal["attempt_failed", "offline", "online", "backoff", "resumed", "restarted", "gave_up"]


@dataclass(frozen=True)
class ResilienceEvent:
    """Something the retry loop did, for a caller to show as a "retry" line (``message`` is that line).

    - ``attempt_failed``: attempt ``attempt`` failed with ``error`` (``error_kind``).
    - ``offline`` / ``online``: the endpoint stopped / started answering the probe (once each per outage).
    - ``backoff``: sleeping ``wait_s`` seconds before the next attempt. Not sent when there is no wait: after
      an outage the resume starts as soon as the probe finds the endpoint back.
    - ``resumed``: attempt ``attempt`` continues session ``session_id`` with the resume prompt.
    - ``restarted``: attempt ``attempt`` starts over with the caller's prompt (no session to continue).
    - ``gave_up``: no more attempts; ``error`` is the final error.
    """

    kind: EventKind
    attempt: int
    error: str | None = None
    error_kind: ErrorKind | None = None
    wait_s: float | None = None
    session_id: str | None = None
    message: str = ""


@dataclass(frozen=True)
class Attempt:
    """One run of the harness.

    ``resumed`` is True when this attempt is a retry that continued an earlier attempt's session (a
    caller-supplied ``resume`` on attempt 1 does not count). ``error``/``kind`` are None for a successful
    attempt and for one the caller closed (``closed``). ``wait_s`` is the time spent after this attempt before
    the next one started: ``offline_s`` waiting for the network plus ``backoff_s``. ``probes`` counts the
    connectivity probes made in that wait (the first one included, 0 when none was made).

    ``cost_usd`` is what this attempt added. The harness's own ``total_cost_usd`` (``reported_cost_usd``)
    is cumulative for a resumed session — it restores the transcript's ``cost-state`` — so summing it
    would count earlier attempts again.
    """

    number: int
    error: str | None
    kind: ErrorKind | None
    wait_s: float
    resumed: bool
    session_id: str | None
    cost_usd: float
    num_turns: int
    reported_cost_usd: float | None = None
    status: int | None = None
    api_errors: tuple[str, ...] = ()
    offline_s: float = 0.0
    backoff_s: float = 0.0
    duration_s: float = 0.0
    closed: bool = False
    probes: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.closed


class ResilienceError(Exception):
    """Raised by `AttemptRecord.raise_for_error` (or ``raise_on_failure=True``) when the run did not succeed."""

    def __init__(self, record: AttemptRecord) -> None:
        self.record = record
        self.kind = record.kind
        tries = len(record.attempts)
        reason = record.error or ("closed before the run finished" if record.closed else "the run has not finished")
        super().__init__(f"{reason} (after {tries} attempt{'s' if tries != 1 else ''})")


@dataclass
class AttemptRecord:
    """Every attempt of one `resilient_query` call, filled in live as the run goes.

    ``session_ids`` lists every session seen, in order; ``session_id`` is the last one (the live successor).
    ``error`` is the final error (None on success, and None while running or when the caller closed the
    stream early: see ``finished`` and ``closed``).
    """

    attempts: list[Attempt] = field(default_factory=list)
    error: str | None = None
    kind: ErrorKind | None = None
    session_ids: list[str] = field(default_factory=list)
    finished: bool = False
    closed: bool = False

    @property
    def ok(self) -> bool:
        return self.finished and self.error is None and not self.closed

    @property
    def resumed(self) -> bool:
        return any(a.resumed for a in self.attempts)

    @property
    def session_id(self) -> str | None:
        return self.session_ids[-1] if self.session_ids else None

    @property
    def cost_usd(self) -> float:
        return round(sum(a.cost_usd for a in self.attempts), 6)

    @property
    def num_turns(self) -> int:
        return sum(a.num_turns for a in self.attempts)

    @property
    def errors(self) -> list[str]:
        """Every failed attempt's error, in order, not only the last one."""
        return [a.error for a in self.attempts if a.error]

    def _note_session(self, session_id: str | None) -> None:
        if not session_id or (self.session_ids and self.session_ids[-1] == session_id):
            return
        if session_id in self.session_ids:  # an earlier session became current again: it moves last
            self.session_ids.remove(session_id)
        self.session_ids.append(session_id)

    def raise_for_error(self) -> None:
        """Raise `ResilienceError` unless the run finished successfully (a closed run raises too)."""
        if not self.ok:
            raise ResilienceError(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (for a manifest row)."""
        return {
            "ok": self.ok,
            "error": self.error,
            "kind": self.kind,
            "resumed": self.resumed,
            "session_id": self.session_id,
            "session_ids": list(self.session_ids),
            "cost_usd": self.cost_usd,
            "num_turns": self.num_turns,
            "closed": self.closed,
            "attempts": [asdict(a) for a in self.attempts],
        }
