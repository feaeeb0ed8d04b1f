"""The Temporal workflow of one fleet run: read the plan, then each step as one activity, in order.

It never imports user code (Temporal replays workflow code on any worker, in a sandbox): the plan comes from a
short activity that loads ``flows.py`` on a worker, and each step's activity does the rest. What it carries
between steps is small: the steps' outputs (ctx values) and session ids, never a transcript.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from ._model import Plan, RunSpec, RunState, StepInput, StepOutcome

__all__ = ["READ_PLAN", "RUN_STEP", "FleetRun"]

READ_PLAN = "flower-fleet.read_plan"
RUN_STEP = "flower-fleet.run_step"
# A step may run for hours; the heartbeat timeout, not this, is what notices a dead worker.
_STEP_LIMIT = timedelta(days=7)


@workflow.defn(name="flower-fleet-run")
class FleetRun:
    def __init__(self) -> None:
        self.state = RunState(run_id="")

    @workflow.run
    async def run(self, spec: RunSpec) -> RunState:
        state = self.state
        state.run_id = spec.run_id
        state.workflow = spec.workflow
        plan: Plan = await workflow.execute_activity(
            READ_PLAN,
            spec,
            result_type=Plan,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(seconds=spec.heartbeat_timeout),
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        state.workflow = plan.workflow
        state.steps = [s.name for s in plan.steps]
        state.status = "running"
        outputs: dict[str, object] = {}
        sessions: dict[str, str] = {}
        for step in plan.steps:
            state.step = step.name
            try:
                outcome: StepOutcome = await workflow.execute_activity(
                    RUN_STEP,
                    StepInput(spec, step.name, dict(outputs), dict(sessions)),
                    result_type=StepOutcome,
                    activity_id=step.name,
                    start_to_close_timeout=_STEP_LIMIT,
                    heartbeat_timeout=timedelta(seconds=spec.heartbeat_timeout),
                    retry_policy=RetryPolicy(
                        maximum_attempts=spec.max_attempts,
                        initial_interval=timedelta(seconds=1),
                        maximum_interval=timedelta(seconds=10),
                    ),
                    # A cancelled run waits until its running step has stopped and been recorded.
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                )
            except ActivityError as exc:
                if isinstance(exc.cause, CancelledError):
                    state.status = "cancelled"
                    state.done.append(StepOutcome(step=step.name, error="cancelled"))
                    raise
                state.status = "failed"
                state.error = f"step {step.name!r}: {exc.cause or exc}"
                state.done.append(StepOutcome(step=step.name, error=state.error))
                return state
            except BaseException:  # the run was cancelled while the step ran
                state.status = "cancelled"
                raise
            state.done.append(outcome)
            if outcome.skipped:
                continue
            outputs[step.name] = outcome.output
            if outcome.session_id:
                sessions[step.name] = outcome.session_id
            if outcome.stop:
                state.status = "failed"
                state.error = f"step {step.name!r} failed: {outcome.error}"
                state.step = ""
                return state
        state.step = ""
        state.status = "completed"
        return state

    @workflow.query(name="state")
    def query_state(self) -> RunState:
        return self.state

    @workflow.signal(name="answer")
    def answer(self, text: str) -> None:
        self.state.answers.append(text)
        self.state.question = ""
