"""Workflows: steps in order, each a fresh session, a resume of an earlier step, or a fork of one — with
conditions, gates, send-back rounds, retries and failure policies.

A step's name is its key in the context dict, in ``manifest.json`` and in ``lineage.json``: with
``continuous=True`` a second run in the same directory resumes each step's recorded session instead of
starting over (renaming a step starts it fresh).

One step, attempt by attempt:

- ``when(ctx)`` false → the step is skipped (no run, no event, no ctx write; it may pour values into ctx
  itself, e.g. a frozen file it found).
- The first attempt resumes the session of ``resume_from`` (forked with ``fork=True``), or the session
  lineage recorded for this step (with ``resume_prompt`` instead of ``prompt``), or starts fresh.
- ``gate(result, ctx)`` judges an attempt that ran to its end; it is not called for a failed one. A pass
  ends the step. A rejection starts a new *round* (``name#round2``, …): ``on_reject(result, ctx)`` returns
  feedback and the same session continues with it as the prompt; no ``on_reject``, empty feedback or no
  session → the step's first launch again. A failed attempt (``ok=False``) is a *retry* (``name#retry1``,
  …): the first launch again, except that a session carried from lineage is not resumed a second time (it
  may be what failed). ``retries`` bounds rounds and retries together.
- ``StepAbort`` from ``when``/``gate``/``on_reject`` ends the step at once as failed (``ctx["_aborted"]``
  holds why); any other exception from the user's callables is a `WorkflowError` naming the step.
- After the last attempt: a pass puts ``reduce(result, ctx)`` (default: the answer text) in ``ctx[name]``;
  a failure follows ``on_fail``: ``"stop"`` ends the workflow (``ctx["_failed_at"] = name``), ``"skip"``
  goes on with ``ctx[name] = ""``, ``"continue"`` goes on with the partial answer in ``ctx[name]``.

Callables may be sync or async. A gate may itself call ``ctx["_runtime"].run(...)`` (a judge: a fresh
session under its own step name such as ``"work·judge#1"``); only the step's own sessions enter lineage.
Private ctx keys: ``_runtime _on_event _sessions _results _lineage _woke _aborted _failed_at``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar, Union

from ..runtime import AgentSpec, Event, Lineage, StepResult

if TYPE_CHECKING:
    from flower_workbench import Workbench

    from ..runtime import Channel

__all__ = [
    "Ctx",
    "OnFail",
    "Prompt",
    "Step",
    "StepAbort",
    "StepRunner",
    "Workflow",
    "WorkflowError",
]

Ctx = dict[str, Any]
T = TypeVar("T")
MaybeAwaitable: TypeAlias = Union[T, Awaitable[T]]  # noqa: UP007 - a generic alias needs Union here
Prompt = str | Callable[[Ctx], str]
OnFail = Literal["stop", "skip", "continue"]
EventSink = Callable[[Event], Any]
_ON_FAIL = ("stop", "skip", "continue")


class WorkflowError(ValueError):
    """A mistake in a workflow (unknown ``resume_from``, a gate that raised…): one line naming the step."""


class StepAbort(Exception):  # noqa: N818 - the name says what raising it does
    """Raise from ``when``, ``gate`` or ``on_reject`` to end the step now, as failed (no more rounds).

    The message lands in ``ctx["_aborted"]``; ``on_fail`` decides whether the workflow goes on.
    """


class StepRunner(Protocol):
    """What a workflow needs from a runtime (`flower_cli.Runtime` is one; a test can bring its own)."""

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


@dataclass
class Step:
    """One step: ``spec`` runs ``prompt``; see the module docstring for what each field does."""

    name: str
    spec: AgentSpec
    prompt: Prompt
    when: Callable[[Ctx], MaybeAwaitable[bool]] | None = None
    gate: Callable[[StepResult, Ctx], MaybeAwaitable[bool]] | None = None
    reduce: Callable[[StepResult, Ctx], MaybeAwaitable[Any]] | None = None
    retries: int = 0
    on_fail: OnFail = "stop"
    on_reject: Callable[[StepResult, Ctx], MaybeAwaitable[str]] | None = None
    resume_prompt: Prompt | None = None
    resume_from: str | None = None  # the name of an earlier step whose session this one continues
    fork: bool = False  # with resume_from: branch off that session, leaving it untouched

    def __post_init__(self) -> None:
        where = f"step {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise WorkflowError("every step needs a non-empty name")
        if not isinstance(self.spec, AgentSpec):
            raise WorkflowError(
                f"{where}: spec must be an AgentSpec (e.g. from coordinator() or judge()), got {type(self.spec).__name__}"
            )
        if not (isinstance(self.prompt, str) or callable(self.prompt)):
            raise WorkflowError(f"{where}: prompt must be a string or a function of ctx")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise WorkflowError(f"{where}: retries must be a whole number >= 0, got {self.retries!r}")
        if self.on_fail not in _ON_FAIL:
            raise WorkflowError(f"{where}: on_fail must be one of {', '.join(_ON_FAIL)}, got {self.on_fail!r}")
        for name in ("when", "gate", "reduce", "on_reject"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise WorkflowError(f"{where}: {name} must be a function, got {type(value).__name__}")
        if self.resume_prompt is not None and not (isinstance(self.resume_prompt, str) or callable(self.resume_prompt)):
            raise WorkflowError(f"{where}: resume_prompt must be a string or a function of ctx")
        if self.fork and self.resume_from is None:
            raise WorkflowError(f"{where}: fork=True needs resume_from (the session to branch off)")

    def render(self, ctx: Ctx, resuming: bool = False) -> str:
        """The prompt for this launch: ``resume_prompt`` when continuing a recorded session and one is set."""
        chosen = self.resume_prompt if resuming and self.resume_prompt is not None else self.prompt
        text = chosen(ctx) if callable(chosen) else chosen
        if not isinstance(text, str):
            raise TypeError(f"the prompt function returned {type(text).__name__}, not a string")
        return text


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


@dataclass
class Workflow:
    """Steps in order. ``context`` is the ctx dict the steps share (user keys survive between runs).

    ``channel`` (a `Channel`) gets its ``on_event`` wired to the run's event sink when it has none.
    ``workbench`` is the workbench ``flower run`` gives the runtime (a ``flower_workbench.Workbench`` or
    True). ``continuous`` resumes each step's recorded session from ``lineage.json`` in the run dir.
    """

    steps: list[Step]
    name: str = "workflow"
    context: Ctx = field(default_factory=dict)
    channel: Channel | None = None
    workbench: Workbench | bool | None = None
    continuous: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.steps, list) or not self.steps:
            raise WorkflowError("a workflow needs a non-empty list of steps")
        seen: set[str] = set()
        for step in self.steps:
            if not isinstance(step, Step):
                raise WorkflowError(f"workflow {self.name!r}: {step!r} is not a Step")
            if step.name in seen:
                raise WorkflowError(f"two steps are named {step.name!r}; step names must be unique")
            if step.resume_from is not None and step.resume_from not in seen:
                raise WorkflowError(f"step {step.name!r} resumes {step.resume_from!r}, which is not an earlier step")
            seen.add(step.name)

    async def run(
        self,
        runtime: StepRunner,
        *,
        on_event: EventSink | None = None,
        on_step: Callable[[Step, StepResult], Any] | None = None,
    ) -> Ctx:
        """Run the steps; return ctx. A failed ``stop`` step ends the run with ``ctx["_failed_at"]`` set.

        Raises `WorkflowError` for a mistake in the workflow, naming the step (before anything runs when it
        can be seen up front, e.g. an isolated worker in a workspace that is not a git repository).
        """
        from ..runtime import isolation_problem

        for step in self.steps:
            problem = isolation_problem(step.spec, runtime.workspace)
            if problem:
                raise WorkflowError(f"step {step.name!r}: {problem}")

        ctx = self.context
        for key in ("_failed_at", "_aborted"):
            ctx.pop(key, None)
        ctx["_runtime"] = runtime
        ctx["_on_event"] = on_event
        # Per-run state is rebuilt on every run: a reused ctx must not resume sessions or report failures
        # of an earlier run.
        sessions: dict[str, str] = {}
        ctx["_sessions"] = sessions
        results: dict[str, StepResult] = {}
        ctx["_results"] = results
        if self.channel is not None and on_event is not None and getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = on_event

        lineage: Lineage | None = None
        if self.continuous:
            lineage = Lineage.open(runtime.run_dir, runtime.workspace)
            ctx["_lineage"] = lineage
            ctx["_woke"] = lineage.bump()
            for step_name, sid in lineage.steps.items():
                if runtime.has_session(sid):
                    sessions.setdefault(step_name, sid)
        else:
            ctx.pop("_lineage", None)
            ctx["_woke"] = 1

        total = len(self.steps)
        for index, step in enumerate(self.steps, start=1):
            run = _StepRun(step, index, total, ctx, runtime, lineage, on_event)
            outcome = await run.go()
            if outcome is None:  # skipped by `when`
                continue
            result, passed = outcome
            if on_step is not None:
                await _guarded(step, "on_step", on_step, step, result)
            if passed:
                if step.reduce is not None:
                    ctx[step.name] = await _guarded(step, "reduce", step.reduce, result, ctx)
                else:
                    ctx[step.name] = result.text
            elif step.on_fail == "stop":
                ctx["_failed_at"] = step.name
                break
            elif step.on_fail == "skip":
                ctx[step.name] = ""  # later prompts can still read ctx[name], with no KeyError
            else:
                ctx[step.name] = result.text
        return ctx


async def _guarded(step: Step, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call a user function of ``step``; turn its exception into a one-line `WorkflowError`."""
    try:
        return await _call(fn, *args)
    except (StepAbort, WorkflowError):
        raise
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        hint = ""
        if isinstance(exc, KeyError):
            hint = " (a key another step did not write: skipped by its `when`, or it failed with on_fail='skip')"
        raise WorkflowError(f"step {step.name!r}: its {what} raised {detail}{hint}") from exc


class _StepRun:
    """One step's attempts: launch, gate, send back or retry, until it passes or runs out."""

    def __init__(
        self,
        step: Step,
        index: int,
        total: int,
        ctx: Ctx,
        runtime: StepRunner,
        lineage: Lineage | None,
        on_event: EventSink | None,
    ) -> None:
        self.step, self.index, self.total, self.ctx = step, index, total, ctx
        self.runtime, self.lineage, self.on_event = runtime, lineage, on_event
        self.sessions: dict[str, str] = ctx["_sessions"]
        self.results: dict[str, StepResult] = ctx["_results"]

    async def _user(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await _guarded(self.step, what, fn, *args)

    def _remember(self, session_id: str) -> None:
        self.sessions[self.step.name] = session_id
        if self.lineage is not None:
            self.lineage.remember(self.step.name, session_id)

    async def go(self) -> tuple[StepResult, bool] | None:
        step, ctx = self.step, self.ctx
        if step.when is not None:
            try:
                if not await self._user("when", step.when, ctx):
                    return None
            except StepAbort as abort:
                ctx["_aborted"] = str(abort) or f"step {step.name!r} aborted"
                return self._aborted_result(), False

        if step.resume_from is not None:
            resume = self.sessions.get(step.resume_from)
            if resume is None:
                raise WorkflowError(
                    f"step {step.name!r} resumes {step.resume_from!r}, which produced no session in this run"
                )
            carried = False
        else:
            resume = self.sessions.get(step.name)
            carried = resume is not None
        woke = int(ctx.get("_woke", 1))
        if self.on_event is not None:
            note = f"continuing the recorded session · wake {woke}" if carried else ""
            self.on_event(
                Event(
                    "step",
                    step.name,
                    payload={"index": self.index, "total": self.total, "resumed": carried, "woke": woke, "note": note},
                )
            )
        first_prompt = await self._user("prompt", step.render, ctx, carried)
        first_resume, first_fork = resume, step.fork and step.resume_from is not None

        prompt, current_resume, fork = first_prompt, first_resume, first_fork
        label = step.name
        rounds, retries = 1, 0
        result: StepResult | None = None
        passed = False
        for attempt in range(step.retries + 1):
            result = await self.runtime.run(
                step.spec,
                prompt,
                step_name=label,
                resume=current_resume,
                fork=fork,
                on_event=self.on_event,
                on_session=self._remember,
            )
            self.results[step.name] = result
            if result.session_id:
                self._remember(result.session_id)
            if result.ok:
                try:
                    passed = step.gate is None or bool(await self._user("gate", step.gate, result, ctx))
                except StepAbort as abort:
                    ctx["_aborted"] = str(abort) or f"step {step.name!r} aborted by its gate"
                    break
            if passed or attempt == step.retries:
                break
            if result.ok:  # the gate rejected it: a new round
                rounds += 1
                label = f"{step.name}#round{rounds}"
                feedback = ""
                if step.on_reject is not None:
                    try:
                        feedback = await self._user("on_reject", step.on_reject, result, ctx)
                    except StepAbort as abort:
                        ctx["_aborted"] = str(abort) or f"step {step.name!r} aborted"
                        break
                    if not isinstance(feedback, str):
                        raise WorkflowError(
                            f"step {step.name!r}: on_reject returned {type(feedback).__name__}, not a string"
                        )
                if feedback.strip() and result.session_id:
                    prompt, current_resume, fork = feedback, result.session_id, False
                    continue
            else:  # the attempt failed: a retry
                retries += 1
                label = f"{step.name}#retry{retries}"
            # The first launch again — but a session carried from lineage is not resumed a second time.
            if carried:
                prompt = await self._user("prompt", step.render, ctx, False)
                current_resume, fork = None, False
            else:
                prompt, current_resume, fork = first_prompt, first_resume, first_fork
        assert result is not None  # retries >= 0: the loop ran at least once
        return result, passed and result.ok

    def _aborted_result(self) -> StepResult:
        result = StepResult(step=self.step.name, ok=False, error=self.ctx.get("_aborted"))
        self.results[self.step.name] = result
        return result
