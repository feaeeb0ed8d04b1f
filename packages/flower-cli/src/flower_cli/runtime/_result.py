"""The outcome of one step run, as it lands in manifest.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["StepResult"]


@dataclass
class StepResult:
    """One ``Runtime.run`` call.

    ``attempts`` counts model attempts (retries included; human interrupts are not failures and are not
    counted). ``errors`` keeps every failed attempt's error in order, not only the last.
    ``attempt_log`` is the resilience layer's record of each attempt (error, kind, wait, resumed, session).
    ``cost_usd`` and ``num_turns`` add up across every attempt; ``cost_estimated_usd`` is the part of ``cost_usd``
    estimated from usage because an attempt ended without the harness's figure (see `PaidLedger`). ``turns`` counts the main thread's turns
    (one more each time a background worker's notification wakes it); ``text`` is the final turn's answer.
    ``workers`` lists the background workers the step dispatched (``id`` = task id, which names their
    transcript ``subagents/agent-<id>`` in the store; ``description``; ``status``). ``loads``: what the load of
    each resumed session sent and trimmed (see `make_room`). ``recovered``: the workers flower carried on when the
    step resumed a session they had not reported to (see `_recovery`: ``id``, ``call``, ``description``, ``how`` =
    delivered / resumed / redispatched, ``session`` = the recovery session, ``status``). ``budget``: the run's
    budget, see `RunBudget`.
    """

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int = 0
    interrupts: int = 0
    turns: int = 0
    workers: list[dict[str, str]] = field(default_factory=list)
    attempt_log: list[dict[str, Any]] = field(default_factory=list)
    # Each resume's load: the session and what the load-time layers changed (`flower_stores.LoadReport` as a
    # dict, with its one-line summary), so `flower analyze` can say what every resume trimmed.
    loads: list[dict[str, Any]] = field(default_factory=list)
    recovered: list[dict[str, str]] = field(default_factory=list)
    # The run's budget when the step ended (`RunBudget.row`: limit and spend, and ``stopped`` when it stopped
    # this step); None for a run without one.
    budget: dict[str, Any] | None = None
    # A usage limit the step stopped on without waiting it out: when it resets (Unix time), so a scheduler (the
    # fleet) or a person knows when to continue the same session.
    limited_until: float | None = None
    limits_waited: int = 0  # usage limits the step waited out (each one resumed the same session)
    cost_estimated_usd: float = 0.0

    @property
    def duration_s(self) -> float:
        return round(max(0.0, self.ended_at - self.started_at), 2)

    def row(self, run_id: str) -> dict[str, Any]:
        """The manifest row: every field, the duration, and the id of the process's run."""
        return {**asdict(self), "duration_s": self.duration_s, "run": run_id}
