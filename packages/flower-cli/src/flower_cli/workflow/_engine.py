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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..runtime import Event, Lineage, StepResult, isolation_problem
from ._attempts import RunState, one_step
from ._errors import WorkflowError
from ._state import Ctx, EventSink, RunContext, RunResult, StepRunner
from ._step import Step

if TYPE_CHECKING:
    from flower_workbench import Workbench

    from ..runtime import Channel

__all__ = ["Workflow"]


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
        state = RunState()
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
            if await one_step(step, index, total, ctx, run, state, on_step):
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
        state = RunState(sessions=dict(sessions or {}))
        run = RunContext(
            runtime,
            workflow=self.name,
            on_event=on_event,
            channel=self.channel,
            workbench=getattr(runtime, "workbench", None),
        )
        give_back = self._lend_workbench(runtime)
        try:
            stopped = await one_step(step, index, len(self.steps), ctx, run, state, None)
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
