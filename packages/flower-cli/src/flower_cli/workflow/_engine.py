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
- ``fresh_after_carried``: when the session carried from lineage is still the one the last attempt ran in,
  and that attempt ran to its end but the gate rejected it, the step is launched once more in a fresh session (its first prompt, ``retries`` again),
  with a ``notice`` event saying so — instead of stopping at the same place on every wake.
- ``StepAbort`` from ``when``/``gate``/``on_reject`` ends the step at once as failed (`RunResult.aborted`
  holds why); any other exception from the user's callables is a `WorkflowError` naming the step.
- After the last attempt: a pass puts ``reduce(result, ctx)`` (default: the answer text) in ``ctx[name]``;
  a failure follows ``on_fail``: ``"stop"`` ends the workflow (`RunResult.failed_at` names the step),
  ``"skip"`` goes on with ``ctx[name] = ""``, ``"continue"`` goes on with the partial answer in ``ctx[name]``.

Callables may be sync or async. ctx holds only the user's keys and the steps' outputs; the run's own state is
typed (``_state``): a ``when``/``gate``/``reduce``/``on_reject`` that declares a parameter named ``run`` gets
the `RunContext` (the runtime, the event sink, lineage…), and `Workflow.run` returns a `RunResult`. A gate may
run a judge with ``run.side_session(...)`` (a fresh session under its own step name such as
``"work·judge#1"``); only the step's own sessions enter lineage.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar, Union

from ..runtime import AgentSpec, Event, Lineage, StepResult
from ._errors import StepAbort, WorkflowError
from ._state import Ctx, EventSink, RunContext, RunResult, StepRunner, moved_key_hint

if TYPE_CHECKING:
    from flower_workbench import Workbench

    from ..runtime import Channel

__all__ = ["Gate", "OnFail", "OnReject", "Prompt", "Reduce", "Step", "When", "Workflow"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
MaybeAwaitable: TypeAlias = Union[T, Awaitable[T]]  # noqa: UP007 - a generic alias needs Union here
Prompt = str | Callable[[Ctx], str]
OnFail = Literal["stop", "skip", "continue"]
_ON_FAIL = ("stop", "skip", "continue")


class _OfCtx(Protocol[T_co]):
    """A ``when`` that asks for the run: ``when(ctx, run)``."""

    def __call__(self, ctx: Ctx, /, *, run: RunContext) -> MaybeAwaitable[T_co]: ...


class _OfResult(Protocol[T_co]):
    """A ``gate``, ``reduce`` or ``on_reject`` that asks for the run: ``gate(result, ctx, run)``."""

    def __call__(self, result: StepResult, ctx: Ctx, /, *, run: RunContext) -> MaybeAwaitable[T_co]: ...


When: TypeAlias = Callable[[Ctx], MaybeAwaitable[bool]] | _OfCtx[bool]
Gate: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[bool]] | _OfResult[bool]
Reduce: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[Any]] | _OfResult[Any]
OnReject: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[str]] | _OfResult[str]


@dataclass
class Step:
    """One step: ``spec`` runs ``prompt``; see the module docstring for what each field does."""

    name: str
    spec: AgentSpec
    prompt: Prompt
    when: When | None = None
    gate: Gate | None = None
    reduce: Reduce | None = None
    retries: int = 0
    on_fail: OnFail = "stop"
    on_reject: OnReject | None = None
    resume_prompt: Prompt | None = None
    resume_from: str | None = None  # the name of an earlier step whose session this one continues
    fork: bool = False  # with resume_from: branch off that session, leaving it untouched
    fresh_after_carried: bool = False  # a carried session whose rounds all fail the gate: one fresh launch

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


def _asks_for_run(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` declares a parameter named ``run`` that can be passed by keyword."""
    try:
        parameter = inspect.signature(fn).parameters.get("run")
    except (TypeError, ValueError):  # a callable without a signature (some builtins) asks for nothing
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


async def _call(fn: Callable[..., Any], *args: Any, run: RunContext | None = None) -> Any:
    value = fn(*args, run=run) if run is not None and _asks_for_run(fn) else fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


@dataclass
class Workflow:
    """Steps in order. ``context`` is the ctx dict the steps share (user keys survive between runs).

    ``channel`` (a `Channel`) gets its ``on_event`` wired to the run's event sink when it has none.
    ``workbench`` is the workbench the steps run with: a ``flower_workbench.Workbench``, or True for one at
    ``<run_dir>/workbench`` unless the runtime has one already; ``run`` gives it to a runtime that runs with
    another or none (``use_workbench``) and gives the runtime its own back afterwards. None or False: the
    runtime's own, whatever it is (``flower run`` opens its runtime with the workflow's workbench, else ``-W``).
    ``continuous`` resumes each step's recorded session from ``lineage.json`` in the run dir.
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
        if not (self.workbench is None or isinstance(self.workbench, bool) or hasattr(self.workbench, "root")):
            raise WorkflowError(
                f"workflow {self.name!r}: workbench must be a flower_workbench.Workbench, True, False or None, "
                f"got {type(self.workbench).__name__}"
            )
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
    ) -> RunResult:
        """Run the steps; return what they left (a `RunResult`, which also reads as ctx). A failed ``stop``
        step ends the run with `RunResult.failed_at` naming it.

        Raises `WorkflowError` for a mistake in the workflow, naming the step (before anything runs when it
        can be seen up front, e.g. an isolated worker in a workspace that is not a git repository).
        """
        from ..runtime import isolation_problem

        for step in self.steps:
            problem = isolation_problem(step.spec, runtime.workspace)
            if problem:
                raise WorkflowError(f"step {step.name!r}: {problem}")

        give_back = self._lend_workbench(runtime)
        try:
            return await self._run(runtime, on_event, on_step)
        finally:
            give_back()

    def _lend_workbench(self, runtime: StepRunner) -> Callable[[], None]:
        """Make ``runtime`` run with this workflow's workbench; return what gives the runtime its own back."""
        wanted = self.workbench
        if wanted is None or wanted is False:
            return lambda: None
        own = getattr(runtime, "workbench", None)
        if own is not None and (wanted is True or own.root == wanted.root):
            return lambda: None  # it runs with this one already
        use = getattr(runtime, "use_workbench", None)
        if not callable(use):
            raise WorkflowError(
                f"workflow {self.name!r} brings a workbench, but its runtime ({type(runtime).__name__}) "
                "cannot take one (it has no use_workbench)"
            )
        use(wanted)
        return lambda: use(own if own is not None else False)

    async def _run(
        self,
        runtime: StepRunner,
        on_event: EventSink | None,
        on_step: Callable[[Step, StepResult], Any] | None,
    ) -> RunResult:
        ctx = self.context
        if self.channel is not None and on_event is not None and getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = on_event

        # Per-run state is rebuilt on every run: a reused ctx must not resume sessions or report failures
        # of an earlier run (the original kept both).
        state = _RunState()
        lineage: Lineage | None = None
        woke = 1
        if self.continuous:
            lineage = Lineage.open(runtime.run_dir, runtime.workspace)
            woke = lineage.bump()
            for note in lineage.notes:  # a corrupt lineage.json was moved aside: the user is told where
                if on_event is not None:
                    on_event(Event("notice", note, payload={"lineage": True}))
            for step_name, sid in lineage.steps.items():
                if runtime.has_session(sid):
                    state.sessions.setdefault(step_name, sid)
        run = RunContext(
            runtime,
            workflow=self.name,
            on_event=on_event,
            channel=self.channel,
            workbench=getattr(runtime, "workbench", None),
            lineage=lineage,
            woke=woke,
        )

        failed_at: str | None = None
        total = len(self.steps)
        for index, step in enumerate(self.steps, start=1):
            if await _one_step(step, index, total, ctx, run, state, on_step):
                failed_at = step.name
                break
        return RunResult(
            ctx,
            results=state.results,
            sessions=state.sessions,
            failed_at=failed_at,
            aborted=state.aborted,
            woke=woke,
            attempts=tuple(run._ran),
        )

    async def run_step(
        self,
        runtime: StepRunner,
        name: str,
        *,
        outputs: Mapping[str, Any] | None = None,
        sessions: Mapping[str, str] | None = None,
        on_event: EventSink | None = None,
    ) -> RunResult:
        """Run only the step named ``name``, as `run` would run it after the steps before it — the seam for a
        runner that puts each step somewhere else (flower-fleet runs each step as its own durable task).

        ``outputs`` is what the earlier steps left in ctx (step name -> its output), laid over the workflow's
        ``context``; ``sessions`` is their session ids (step name -> id), which ``resume_from`` continues.
        Lineage is not read or written: the caller keeps where each step's session is. The `RunResult` holds
        this step's result and session (none when its ``when`` skipped it), its output in ctx under its name,
        and ``failed_at`` = ``name`` when it failed with ``on_fail="stop"``.

        Raises `WorkflowError` for an unknown name, or a mistake in the step as `run` would.
        """
        from ..runtime import isolation_problem

        index = next((i for i, step in enumerate(self.steps, start=1) if step.name == name), None)
        if index is None:
            raise WorkflowError(f"workflow {self.name!r} has no step {name!r}")
        step = self.steps[index - 1]
        problem = isolation_problem(step.spec, runtime.workspace)
        if problem:
            raise WorkflowError(f"step {step.name!r}: {problem}")
        ctx = self.context
        ctx.update(outputs or {})
        if self.channel is not None and on_event is not None and getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = on_event
        state = _RunState(sessions=dict(sessions or {}))
        run = RunContext(
            runtime,
            workflow=self.name,
            on_event=on_event,
            channel=self.channel,
            workbench=getattr(runtime, "workbench", None),
        )
        give_back = self._lend_workbench(runtime)
        try:
            stopped = await _one_step(step, index, len(self.steps), ctx, run, state, None)
        finally:
            give_back()
        return RunResult(
            ctx,
            results=state.results,
            sessions={k: v for k, v in state.sessions.items() if k == name},
            failed_at=name if stopped else None,
            aborted=state.aborted,
            attempts=tuple(run._ran),
        )


async def _one_step(
    step: Step,
    index: int,
    total: int,
    ctx: Ctx,
    run: RunContext,
    state: _RunState,
    on_step: Callable[[Step, StepResult], Any] | None,
) -> bool:
    """Run ``step`` and put its output in ctx; True when its failure stops the workflow (``on_fail="stop"``)."""
    outcome = await _StepRun(step, index, total, ctx, run, state).go()
    if outcome is None:  # skipped by `when`
        return False
    result, passed = outcome
    if on_step is not None:
        await _guarded(step, "on_step", on_step, step, result)
    if passed:
        if step.reduce is not None:
            ctx[step.name] = await _guarded(step, "reduce", step.reduce, result, ctx, run=run)
        else:
            ctx[step.name] = result.text
    elif step.on_fail == "stop":
        return True
    elif step.on_fail == "skip":
        ctx[step.name] = ""  # later prompts can still read ctx[name], with no KeyError
    else:
        ctx[step.name] = result.text
    return False


@dataclass
class _RunState:
    """What one run learns as it goes, before it is a `RunResult`."""

    sessions: dict[str, str] = field(default_factory=dict)  # step name -> its session (for resume_from, lineage)
    results: dict[str, StepResult] = field(default_factory=dict)  # step name -> its last attempt
    aborted: str | None = None  # the message of the last StepAbort


async def _guarded(step: Step, what: str, fn: Callable[..., Any], *args: Any, run: RunContext | None = None) -> Any:
    """Call a user function of ``step`` (with the `RunContext` when it asks for ``run``); turn its exception
    into a one-line `WorkflowError`."""
    try:
        return await _call(fn, *args, run=run)
    except (StepAbort, WorkflowError):
        raise
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        hint = ""
        if isinstance(exc, KeyError):
            moved = moved_key_hint(exc.args[0] if exc.args else None)
            hint = (
                f" ({moved})"
                if moved
                else " (a key another step did not write: skipped by its `when`, or it failed with on_fail='skip')"
            )
        raise WorkflowError(f"step {step.name!r}: its {what} raised {detail}{hint}") from exc


class _StepRun:
    """One step's attempts: launch, gate, send back or retry, until it passes or runs out."""

    def __init__(self, step: Step, index: int, total: int, ctx: Ctx, run: RunContext, state: _RunState) -> None:
        self.step, self.index, self.total, self.ctx = step, index, total, ctx
        self.run, self.state = run, state

    async def _user(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await _guarded(self.step, what, fn, *args, run=self.run)

    def _remember(self, session_id: str) -> None:
        self.state.sessions[self.step.name] = session_id
        if self.run.lineage is not None:
            self.run.lineage.remember(self.step.name, session_id)

    def _abort(self, abort: StepAbort, default: str) -> None:
        self.state.aborted = str(abort) or default

    async def go(self) -> tuple[StepResult, bool] | None:
        step, ctx, run = self.step, self.ctx, self.run
        if step.when is not None:
            try:
                if not await self._user("when", step.when, ctx):
                    return None
            except StepAbort as abort:
                self._abort(abort, f"step {step.name!r} aborted")
                return self._aborted_result(), False

        if step.resume_from is not None:
            resume = self.state.sessions.get(step.resume_from)
            if resume is None:
                raise WorkflowError(
                    f"step {step.name!r} resumes {step.resume_from!r}, which produced no session in this run"
                )
            carried = False
        else:
            resume = self.state.sessions.get(step.name)
            carried = resume is not None
        if run.on_event is not None:
            note = f"continuing the recorded session · wake {run.woke}" if carried else ""
            run.on_event(
                Event(
                    "step",
                    step.name,
                    payload={
                        "index": self.index,
                        "total": self.total,
                        "resumed": carried,
                        "woke": run.woke,
                        "note": note,
                    },
                )
            )
        first_prompt = await _guarded(step, "prompt", step.render, ctx, carried)
        first_resume, first_fork = resume, step.fork and step.resume_from is not None

        prompt, current_resume, fork = first_prompt, first_resume, first_fork
        label = step.name
        rounds, retries = 1, 0
        result: StepResult | None = None
        passed = False
        fresh_left = 1 if step.fresh_after_carried and carried else 0
        attempt = 0
        while True:
            result = await run.runtime.run(
                step.spec,
                prompt,
                step_name=label,
                resume=current_resume,
                fork=fork,
                on_event=run.on_event,
                on_session=self._remember,
            )
            run._ran.append(result)
            self.state.results[step.name] = result
            if result.session_id:
                self._remember(result.session_id)
            if result.ok:
                try:
                    passed = step.gate is None or bool(await self._user("gate", step.gate, result, ctx))
                except StepAbort as abort:
                    self._abort(abort, f"step {step.name!r} aborted by its gate")
                    break
            if passed:
                break
            if attempt == step.retries:
                if not (fresh_left and result.ok and result.session_id == first_resume):
                    break
                # The carried session ran to its end and still gave nothing the gate takes:
                # resuming it on the next wake would stop here again. One fresh session, said once.
                fresh_left, attempt, carried = 0, 0, False
                self._notice_fresh(result)
                label = f"{step.name}#fresh"
                prompt = await _guarded(step, "prompt", step.render, ctx, False)
                current_resume, fork = None, False
                continue
            attempt += 1
            if result.ok:  # the gate rejected it: a new round
                rounds += 1
                label = f"{step.name}#round{rounds}"
                feedback = ""
                if step.on_reject is not None:
                    try:
                        feedback = await self._user("on_reject", step.on_reject, result, ctx)
                    except StepAbort as abort:
                        self._abort(abort, f"step {step.name!r} aborted")
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
                prompt = await _guarded(step, "prompt", step.render, ctx, False)
                current_resume, fork = None, False
            else:
                prompt, current_resume, fork = first_prompt, first_resume, first_fork
        assert result is not None  # retries >= 0: the loop ran at least once
        return result, passed and result.ok

    def _notice_fresh(self, result: StepResult) -> None:
        step = self.step
        text = (
            f"step {step.name!r}: the session it continued ({result.session_id}) still gave no result its gate "
            "takes; starting the step once more in a fresh session"
        )
        self.run.emit(Event("notice", text, payload={"step": step.name, "fresh": True, "from": result.session_id}))

    def _aborted_result(self) -> StepResult:
        result = StepResult(step=self.step.name, ok=False, error=self.state.aborted)
        self.state.results[self.step.name] = result
        return result
