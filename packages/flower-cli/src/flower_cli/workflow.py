"""A minimal workflow: steps in order, each a fresh session, a resume of an earlier step, or a fork of one.

This is the foundation the full engine (gates, retries, judges, send-back rounds) grows from. Step names
are the keys of the context dict, of manifest rows and of ``lineage.json``: with ``continuous=True`` a
second run in the same directory resumes each step's recorded session instead of starting over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .events import Event
from .lineage import Lineage
from .result import StepResult
from .spec import AgentSpec

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Step", "Workflow", "WorkflowError"]

Prompt = str | Callable[[dict[str, Any]], str]


class WorkflowError(ValueError):
    """A mistake in the workflow's definition (unknown ``resume_from``, duplicate names…)."""


@dataclass
class Step:
    name: str
    spec: AgentSpec
    prompt: Prompt
    resume_from: str | None = None  # the name of an earlier step whose session this one continues
    fork: bool = False  # with resume_from: branch off that session, leaving it untouched

    def render(self, ctx: dict[str, Any]) -> str:
        return self.prompt(ctx) if callable(self.prompt) else self.prompt


@dataclass
class Workflow:
    steps: list[Step]
    name: str = "workflow"
    context: dict[str, Any] = field(default_factory=dict)
    continuous: bool = True

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for step in self.steps:
            if not step.name:
                raise WorkflowError("every step needs a name")
            if step.name in seen:
                raise WorkflowError(f"two steps are named {step.name!r}; step names must be unique")
            if step.resume_from is not None and step.resume_from not in seen:
                raise WorkflowError(f"step {step.name!r} resumes {step.resume_from!r}, which is not an earlier step")
            if step.fork and step.resume_from is None:
                raise WorkflowError(f"step {step.name!r} sets fork=True without resume_from; fork needs a session to branch")
            seen.add(step.name)

    async def run(
        self,
        runtime: Runtime,
        *,
        on_event: Callable[[Event], Any] | None = None,
        on_step: Callable[[Step, StepResult], Any] | None = None,
    ) -> dict[str, Any]:
        """Run the steps in order; stop at the first failure (``ctx["_failed_at"]`` names it)."""
        ctx = self.context
        ctx.pop("_failed_at", None)
        sessions: dict[str, str] = ctx.setdefault("_sessions", {})
        results: dict[str, StepResult] = ctx.setdefault("_results", {})
        lineage = Lineage.open(runtime.run_dir, runtime.workspace) if self.continuous else None
        if lineage is not None:
            ctx["_woke"] = lineage.bump()
            for step_name, sid in lineage.steps.items():
                if runtime.has_session(sid):
                    sessions.setdefault(step_name, sid)
        total = len(self.steps)
        for index, step in enumerate(self.steps, start=1):
            if step.resume_from is not None:
                resume = sessions.get(step.resume_from)
                if resume is None:
                    raise WorkflowError(f"step {step.name!r} resumes {step.resume_from!r}, which produced no session")
                carried = False
            else:
                resume = sessions.get(step.name)
                carried = resume is not None
            if on_event is not None:
                note = "continuing the recorded session" if carried else ""
                on_event(Event("step", step.name, payload={"index": index, "total": total, "resumed": carried, "note": note}))
            if lineage is not None:
                runtime.on_session = lambda sid, name=step.name: lineage.remember(name, sid)
            try:
                result = await runtime.run(
                    step.spec,
                    step.render(ctx),
                    step_name=step.name,
                    resume=resume,
                    fork=step.fork and step.resume_from is not None,
                    on_event=on_event,
                )
            finally:
                runtime.on_session = None
            results[step.name] = result
            if on_step is not None:
                on_step(step, result)
            if result.session_id:
                sessions[step.name] = result.session_id
                if lineage is not None:
                    lineage.remember(step.name, result.session_id)
            if not result.ok:
                ctx["_failed_at"] = step.name
                break
            ctx[step.name] = result.text
        return ctx
