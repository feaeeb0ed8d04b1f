"""A workflow run's typed state: the `RunContext` its step callables may ask for, and the `RunResult` it returns.

Why not keys in ctx: ctx is the user's dict (their ``context``, and each step's output under its name), the
one thing a prompt or a condition reads. The engine's own state — the runtime, the event sink, lineage, which
step failed and why — used to live in it under underscored keys, where a typo is a silent ``None`` and every
reader fishes with a string. Now it has types: the engine hands a `RunContext` to the callables that need one
and returns a `RunResult` the commands read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..runtime import Event
from ._errors import WorkflowError

if TYPE_CHECKING:
    from flower_workbench import Workbench

    from ..runtime import AgentSpec, Channel, Lineage, StepResult

__all__ = ["MOVED_KEYS", "Ctx", "EventSink", "RunContext", "RunResult", "StepRunner", "moved_key_hint"]

Ctx = dict[str, Any]
EventSink = Callable[["Event"], Any]

# The underscored ctx keys of earlier versions and where each went: a workflow written against them gets one
# line saying what to use instead, not a bare KeyError (or, worse, a silent None from ``.get``).
_DECLARE_RUN = "declare a parameter named `run` in the callable and use "
MOVED_KEYS: dict[str, str] = {
    "_runtime": _DECLARE_RUN + "run.runtime (or run.side_session(...) for a judge)",
    "_on_event": _DECLARE_RUN + "run.emit(event) or run.on_event",
    "_lineage": _DECLARE_RUN + "run.lineage",
    "_woke": _DECLARE_RUN + "run.woke, or RunResult.woke after the run",
    "_results": "Workflow.run returns a RunResult: use its .results",
    "_sessions": "Workflow.run returns a RunResult: use its .sessions",
    "_failed_at": "Workflow.run returns a RunResult: use its .failed_at",
    "_aborted": "Workflow.run returns a RunResult: use its .aborted",
}


def moved_key_hint(key: object) -> str | None:
    """What replaced ``ctx[key]``, for a key the engine used to keep in ctx; None for any other key."""
    if not isinstance(key, str) or key not in MOVED_KEYS:
        return None
    return f"ctx[{key!r}] is gone: {MOVED_KEYS[key]}"


class StepRunner(Protocol):
    """What a workflow needs from a runtime (`flower_cli.Runtime` is one; a test can bring its own).

    A workflow that brings a ``workbench`` also reads the runner's ``workbench`` and, when it is not that one,
    calls the runner's ``use_workbench(...)`` (as `flower_cli.Runtime` has); a runner without them cannot run it.
    """

    run_dir: Path
    workspace: Path

    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: EventSink | None = None,
        on_session: Callable[[str], Any] | None = None,
    ) -> StepResult: ...

    def has_session(self, session_id: str) -> bool: ...


@dataclass(frozen=True)
class RunContext:
    """One run of a workflow, as the steps' callables see it.

    A ``when``, ``gate``, ``reduce`` or ``on_reject`` that declares a parameter named ``run`` is given this
    (``def gate(result, ctx, run): ...``); one that does not is called as before, with ``ctx`` alone.
    ``workflow`` is the workflow's name; ``workbench`` the one the steps run with; ``lineage`` is None unless
    the workflow is ``continuous``; ``woke`` counts the runs of this workflow in this run dir (1 the first time).
    """

    runtime: StepRunner
    workflow: str = "workflow"
    on_event: EventSink | None = None
    channel: Channel | None = None
    workbench: Workbench | None = None
    lineage: Lineage | None = None
    woke: int = 1
    # Every session the run ran, in order (the steps' attempts and side sessions), for its cost. Frozen-ish:
    # the fields do not change, this list grows (the engine appends to it).
    _ran: list[StepResult] = field(default_factory=list, init=False, repr=False, compare=False)

    def emit(self, event: Event) -> None:
        """Send ``event`` to the run's sink, if it has one (a gate's notice, say)."""
        if self.on_event is not None:
            self.on_event(event)

    async def side_session(self, spec: AgentSpec, prompt: str, *, step_name: str) -> StepResult:
        """Run a session beside the steps — a judge — under its own manifest name (``"work·judge#1"``).

        Its events go to the run's sink and its cost counts in the run's; it never enters lineage, so a second
        run does not resume it.
        """
        # Announced like a step (a header of its own), so what the judge says is not read as the step's words.
        self.emit(Event("step", step_name, payload={"side": True, "note": f"{spec.name} · a fresh session"}))
        result = await self.runtime.run(spec, prompt, step_name=step_name, on_event=self.on_event)
        self._ran.append(result)
        return result


@dataclass(frozen=True, eq=False)
class RunResult(Mapping[str, Any]):
    """What a workflow run leaves: each step's last result, where it stopped and why, what it cost.

    It also reads as the run's ctx (``result["draft"]``: a step's output, or a key of the workflow's
    ``context``), as ``Workflow.run`` returned before; ``context`` is the workflow's own dict, which a later
    run of the same workflow writes to. ``failed_at`` names the step that stopped the run
    (None: every step went through or was let go by its ``on_fail``); ``aborted`` is the message of the last
    `StepAbort` raised in the run. ``results`` holds each step's last attempt by step name, in the order the
    steps ran; ``attempts`` every session the run ran, retries, rounds and side sessions included.
    """

    context: Ctx
    results: Mapping[str, StepResult] = field(default_factory=dict)
    sessions: Mapping[str, str] = field(default_factory=dict)
    failed_at: str | None = None
    aborted: str | None = None
    woke: int = 1
    attempts: tuple[StepResult, ...] = ()

    @property
    def ok(self) -> bool:
        """No step stopped the run."""
        return self.failed_at is None

    @property
    def answer(self) -> StepResult | None:
        """The result a run ends on: the step it stopped at, else the last step that ran (None: none ran)."""
        if self.failed_at is not None:
            return self.results.get(self.failed_at)
        return next(reversed(list(self.results.values())), None)

    @property
    def cost_usd(self) -> float:
        """What every session of the run cost, retries, rounds and side sessions included."""
        return round(sum(r.cost_usd for r in self.attempts), 4)

    def __getitem__(self, key: str) -> Any:
        if key in self.context:
            return self.context[key]
        hint = moved_key_hint(key)
        if hint is not None:
            # Not a KeyError: ``result.get("_failed_at")`` must not quietly answer None for a failed run.
            raise WorkflowError(hint)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.context)

    def __len__(self) -> int:
        return len(self.context)
