"""What travels through Temporal between the client, the workflow and the activities: small dataclasses of
plain values (ids, names, short texts). Never a transcript: those live in the session store, and a workflow's
history is capped (2 MB per payload, 50 MB per run). Standard library only: the workflow sandbox imports this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "PlanStep", "RunSpec", "RunState", "RunningStep", "StepInput", "StepOutcome"]


@dataclass
class RunSpec:
    """One run, as submitted: a workflow (``file.py:attr`` inside the run's workspace) and where its files come
    from (``repo``/``branch``, or ``shared``: the fleet root is one filesystem every worker sees)."""

    run_id: str
    workflow: str
    repo: str = ""
    branch: str = ""
    shared: bool = False
    # A worker that has not heartbeat for this long is presumed dead: its step is retried on another worker.
    heartbeat_timeout: float = 30.0
    # Attempts of one step's activity (a dead worker, a restart); flower's own Step.retries are inside one.
    max_attempts: int = 10


@dataclass
class PlanStep:
    name: str
    on_fail: str = "stop"


@dataclass
class Plan:
    """What the workflow needs to sequence a run, read by an activity (the workflow never imports user code)."""

    workflow: str
    steps: list[PlanStep] = field(default_factory=list)


@dataclass
class StepInput:
    spec: RunSpec
    step: str
    outputs: dict[str, Any] = field(default_factory=dict)  # earlier steps' outputs (ctx), as JSON values
    sessions: dict[str, str] = field(default_factory=dict)  # earlier steps' session ids (for resume_from)


@dataclass
class StepOutcome:
    step: str
    ok: bool = False
    stop: bool = False  # the step failed with on_fail="stop": the run ends here
    skipped: bool = False  # its `when` said no
    output: Any = None  # what it left in ctx (its reduce, else its answer), as a JSON value
    session_id: str = ""
    error: str = ""
    cost_usd: float = 0.0
    worker: str = ""  # the identity of the worker that ran the last attempt
    attempt: int = 1
    restored_from: str = ""  # the checkpoint commit the last attempt's workspace was restored from ("" if not)
    checkpoint: str = ""  # flower/<run id>'s commit after the step-end checkpoint ("" when its push failed)


@dataclass
class RunningStep:
    """A step in flight, as the server sees it: which worker holds it, which attempt, its heartbeat."""

    step: str
    worker: str = ""  # the identity of the worker of its last attempt ("host/pid")
    attempt: int = 1
    state: str = ""  # scheduled, started, cancel requested
    last_heartbeat: str = ""  # ISO time of its last heartbeat


@dataclass
class RunState:
    """A run as `status` shows it (the workflow's query answers with it)."""

    run_id: str
    workflow: str = ""
    status: str = "starting"  # starting, running, completed, failed, cancelled
    step: str = ""  # the step running now
    steps: list[str] = field(default_factory=list)
    done: list[StepOutcome] = field(default_factory=list)
    running: list[RunningStep] = field(default_factory=list)  # filled by Fleet.state from the server
    question: str = ""  # a question waiting for `flower fleet answer`
    answers: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def cost_usd(self) -> float:
        return round(sum(o.cost_usd for o in self.done), 4)
