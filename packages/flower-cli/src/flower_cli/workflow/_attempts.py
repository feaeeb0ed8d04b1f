"""One step of a workflow as it runs: its ``when``, its first launch, then attempt after attempt — gate, send
back (a round) or retry — until it passes or runs out, and its output in ctx. The rules are in ``_engine``'s
docstring.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..runtime import Event, StepResult, stopped_by_budget
from ._errors import StepAbort, WorkflowError
from ._state import Ctx, RunContext, moved_key_hint
from ._step import Step

__all__ = ["RunState", "one_step"]


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


async def one_step(
    step: Step,
    index: int,
    total: int,
    ctx: Ctx,
    run: RunContext,
    state: RunState,
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
    elif step.on_fail == "stop" or stopped_by_budget(result):  # a spent budget starts no further step
        return True
    elif step.on_fail == "skip":
        ctx[step.name] = ""  # later prompts can still read ctx[name], with no KeyError
    else:
        ctx[step.name] = result.text
    return False


@dataclass
class RunState:
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


@dataclass(frozen=True)
class _Launch:
    """One attempt's launch: the name it is recorded under, its prompt, and the session it continues."""

    label: str
    prompt: str
    resume: str | None = None
    fork: bool = False


class _StepRun:
    """One step's attempts: launch, gate, send back or retry, until it passes or runs out."""

    def __init__(self, step: Step, index: int, total: int, ctx: Ctx, run: RunContext, state: RunState) -> None:
        self.step, self.index, self.total, self.ctx = step, index, total, ctx
        self.run, self.state = run, state
        self.carried = False  # the first launch continues the session lineage recorded for this step

    async def _user(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await _guarded(self.step, what, fn, *args, run=self.run)

    def _remember(self, session_id: str) -> None:
        self.state.sessions[self.step.name] = session_id
        if self.run.lineage is not None:
            self.run.lineage.remember(self.step.name, session_id)

    def _abort(self, abort: StepAbort, default: str) -> None:
        self.state.aborted = str(abort) or default

    async def go(self) -> tuple[StepResult, bool] | None:
        """The step's last result and whether it passed; None when its ``when`` skipped it."""
        step = self.step
        if step.when is not None:
            try:
                if not await self._user("when", step.when, self.ctx):
                    return None
            except StepAbort as abort:
                self._abort(abort, f"step {step.name!r} aborted")
                return self._aborted_result(), False
        first = await self._first_launch()
        result, passed = await self._attempts(first)
        return result, passed and result.ok

    async def _first_launch(self) -> _Launch:
        """The session the step starts from (``resume_from``'s, lineage's, or none), announced with a ``step``
        event, and its prompt."""
        step, run = self.step, self.run
        if step.resume_from is not None:
            resume = self.state.sessions.get(step.resume_from)
            if resume is None:
                raise WorkflowError(
                    f"step {step.name!r} resumes {step.resume_from!r}, which produced no session in this run"
                )
        else:
            resume = self.state.sessions.get(step.name)
            self.carried = resume is not None
        if run.on_event is not None:
            note = f"continuing the recorded session · wake {run.woke}" if self.carried else ""
            payload = {"index": self.index, "total": self.total, "resumed": self.carried, "woke": run.woke}
            run.on_event(Event("step", step.name, payload={**payload, "note": note}))
        prompt = await self._render(resuming=self.carried)
        return _Launch(step.name, prompt, resume, step.fork and step.resume_from is not None)

    async def _render(self, *, resuming: bool) -> str:
        return str(await _guarded(self.step, "prompt", self.step.render, self.ctx, resuming))

    async def _attempts(self, first: _Launch) -> tuple[StepResult, bool]:
        """Attempt after attempt from ``first``: a pass ends the step; a rejection is a new round, a failure a
        retry, both bounded by ``retries``; a carried session that ran out gets one fresh launch."""
        step = self.step
        launch, rounds, retries, attempt = first, 1, 0, 0
        fresh_left = 1 if step.fresh_after_carried and self.carried else 0
        while True:
            result = await self._launch(launch)
            # Neither a retry nor a new round: the spent budget would stop each the same way, and a usage limit not
            # waited out would only be met again.
            if stopped_by_budget(result) or result.limited_until is not None:
                return result, False
            if result.ok:
                try:
                    if step.gate is None or bool(await self._user("gate", step.gate, result, self.ctx)):
                        return result, True
                except StepAbort as abort:
                    self._abort(abort, f"step {step.name!r} aborted by its gate")
                    return result, False
            if attempt == step.retries:
                if not (fresh_left and result.ok and result.session_id == first.resume):
                    return result, False
                # The carried session ran to its end and still gave nothing the gate takes:
                # resuming it on the next wake would stop here again. One fresh session, said once.
                fresh_left, attempt, self.carried = 0, 0, False
                self._notice_fresh(result)
                launch = _Launch(f"{step.name}#fresh", await self._render(resuming=False))
                continue
            attempt += 1
            if result.ok:  # the gate rejected it: a new round
                rounds += 1
                label = f"{step.name}#round{rounds}"
                feedback = await self._feedback(result)
                if feedback is None:  # aborted by on_reject
                    return result, False
                if feedback.strip() and result.session_id:
                    launch = _Launch(label, feedback, result.session_id)
                    continue
            else:  # the attempt failed: a retry
                retries += 1
                label = f"{step.name}#retry{retries}"
            launch = await self._again(first, label)

    async def _launch(self, launch: _Launch) -> StepResult:
        """Run one attempt and remember it (its result, and its session for lineage and ``resume_from``)."""
        run = self.run
        result = await run.runtime.run(
            self.step.spec,
            launch.prompt,
            step_name=launch.label,
            resume=launch.resume,
            fork=launch.fork,
            on_event=run.on_event,
            on_session=self._remember,
        )
        run._ran.append(result)
        self.state.results[self.step.name] = result
        if result.session_id:
            self._remember(result.session_id)
        return result

    async def _feedback(self, result: StepResult) -> str | None:
        """What ``on_reject`` says to send back ("" without one); None when it aborted the step."""
        step = self.step
        if step.on_reject is None:
            return ""
        try:
            feedback = await self._user("on_reject", step.on_reject, result, self.ctx)
        except StepAbort as abort:
            self._abort(abort, f"step {step.name!r} aborted")
            return None
        if not isinstance(feedback, str):
            raise WorkflowError(f"step {step.name!r}: on_reject returned {type(feedback).__name__}, not a string")
        return feedback

    async def _again(self, first: _Launch, label: str) -> _Launch:
        """The first launch again — but a session carried from lineage is not resumed a second time."""
        if self.carried:
            return _Launch(label, await self._render(resuming=False))
        return replace(first, label=label)

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
