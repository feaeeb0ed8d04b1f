"""What travels through Temporal between the client, the workflow and the activities: small dataclasses of
plain values (ids, names, short texts). Never a transcript: those live in the session store, and a workflow's
history is capped (2 MB per payload, 50 MB per run). Standard library only: the workflow sandbox imports this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["GoSpec", "PhaseInput", "Plan", "PlanStep", "RunSpec", "RunState", "RunningStep", "StepInput", "StepOutcome"]


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
    go: GoSpec | None = None  # a go run (`flower fleet submit "ASK"`) instead of a workflow
    budget_usd: float | None = None  # what the whole run may spend (`flower fleet submit --budget`; None: no limit)


@dataclass
class GoSpec:
    """What a go run is asked: the ask, the judged rounds in all, the question quota (None: no limit) and how
    long a question waits for `flower fleet answer` (None: forever; 0: nobody is asked), as ``flower go``'s
    ``--rounds``, ``--asks`` and ``--timeout``."""

    ask: str
    rounds: int = 3
    asks: int | None = None
    question_timeout: float | None = 1800.0
    goal: bool = True  # False: no goal, no judge, one round (``flower go --no-goal``)


@dataclass
class PhaseInput:
    """One phase of a go run (``clarify``, ``goal``, or one judged ``work`` round) for one activity.

    After a question: ``question`` is what was asked, ``answer`` the person's answer ("" with ``timed_out``:
    nobody answered in time), ``resumes`` how many times this phase was paused before (it orders the session
    lease's epochs across the phase's activities), ``asks_used`` the questions the run has used."""

    spec: RunSpec
    phase: str
    round_no: int = 1
    outputs: dict[str, Any] = field(default_factory=dict)
    work_session: str = ""
    feedback: str = ""
    question: str = ""
    answer: str = ""
    timed_out: bool = False
    resumes: int = 0
    asks_used: int = 0
    spent_usd: float = 0.0  # what the run's earlier steps cost: the phase's budget counts it


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
    spent_usd: float = 0.0  # what the run's earlier steps cost: the step's budget counts it


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
    # A go phase: a question it paused on (its activity ended; `answer` resumes it), the questions used so far,
    # and a work round's verdict (achieved, not_yet, unreachable) with the feedback the next round gets.
    question: str = ""
    options: list[str] = field(default_factory=list)
    asks_used: int = 0
    verdict: str = ""
    feedback: str = ""
    # A usage limit stopped the step (Unix time of its reset): the workflow waits for it on a timer, holding no
    # worker slot, then runs the step again, which continues the same session.
    limited_until: float | None = None


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
    paused_cost_usd: float = 0.0  # what activities cost that ended paused: on a question, or a usage limit
    limited_until: float | None = None  # the step waits for a usage limit to reset (Unix time); None: it does not

    @property
    def cost_usd(self) -> float:
        return round(sum(o.cost_usd for o in self.done) + self.paused_cost_usd, 4)
