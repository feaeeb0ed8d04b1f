"""The Temporal workflow of one fleet run: read the plan, then each step as one activity, in order.

It never imports user code (Temporal replays workflow code on any worker, in a sandbox): the plan comes from a
short activity that loads ``flows.py`` on a worker, and each step's activity does the rest. What it carries
between steps is small: the steps' outputs (ctx values) and session ids, never a transcript.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from ._model import PhaseInput, Plan, RunSpec, RunState, StepInput, StepOutcome

__all__ = ["READ_PLAN", "RUN_PHASE", "RUN_STEP", "FleetRun"]

READ_PLAN = "flower-fleet.read_plan"
RUN_STEP = "flower-fleet.run_step"
RUN_PHASE = "flower-fleet.run_phase"
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
        if spec.go is not None:
            return await self._go(spec)
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
            waits = 0
            try:
                while True:
                    outcome: StepOutcome = await workflow.execute_activity(
                        RUN_STEP,
                        StepInput(spec, step.name, dict(outputs), dict(sessions), spent_usd=state.cost_usd),
                        result_type=StepOutcome,
                        **_step_activity(spec, step.name if waits == 0 else f"{step.name}/limit{waits}"),
                    )
                    if outcome.limited_until is None:
                        break
                    waits += 1
                    state.paused_cost_usd = round(state.paused_cost_usd + outcome.cost_usd, 4)
                    await self._wait_out_limit(outcome.limited_until)
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

    async def _go(self, spec: RunSpec) -> RunState:
        """A go run: clarify, goal, then judged work rounds, each one activity (`_go.run_phase` on a worker)."""
        state = self.state
        go = spec.go
        assert go is not None
        state.workflow = "go"
        state.steps = ["clarify", "goal", "work"] if go.goal else ["clarify", "work"]
        state.status = "running"
        outputs: dict[str, object] = {}
        asks_used = 0
        for phase in state.steps[:-1]:
            given = PhaseInput(spec, phase, outputs=dict(outputs), asks_used=asks_used, spent_usd=state.cost_usd)
            outcome = await self._phase(spec, given)
            if outcome is None:
                return state
            asks_used = outcome.asks_used
            if not outcome.ok:
                return self._failed(f"{phase}: {outcome.error or 'no result'}")
            outputs[phase] = outcome.output
        work_session, feedback = "", ""
        last: StepOutcome | None = None
        for round_no in range(1, max(1, go.rounds) + 1):
            given = PhaseInput(
                spec,
                "work",
                round_no=round_no,
                outputs=dict(outputs),
                work_session=work_session,
                feedback=feedback,
                asks_used=asks_used,
                spent_usd=state.cost_usd,
            )
            last = await self._phase(spec, given)
            if last is None:
                return state
            asks_used = last.asks_used
            work_session = work_session or last.session_id
            if last.ok:
                state.step = ""
                state.status = "completed"
                return state
            if last.verdict != "not_yet" or last.error or not last.feedback:
                return self._failed(f"{last.step}: {last.error or 'the round failed'}")
            feedback = last.feedback
            if round_no < go.rounds:
                state.steps.append(f"work#round{round_no + 1}")
        return self._failed(f"the goal was not reached in {go.rounds} judged round(s): {last.feedback if last else ''}")

    async def _wait_out_limit(self, resets_at: float) -> None:
        """A usage limit stopped the step: wait for its reset (plus a little jitter, so the runs a limit stopped
        together do not all come back at once) on a durable timer. No activity runs meanwhile: no worker slot is
        held, and a worker that restarts meanwhile changes nothing."""
        self.state.limited_until = resets_at
        wait = max(0.0, resets_at - workflow.now().timestamp()) + workflow.random().uniform(0.1, 0.6)
        await workflow.sleep(timedelta(seconds=wait))
        self.state.limited_until = None

    def _failed(self, error: str) -> RunState:
        self.state.status, self.state.error, self.state.step = "failed", error, ""
        return self.state

    async def _phase(self, spec: RunSpec, given: PhaseInput) -> StepOutcome | None:
        """Run one phase; while it pauses on a question, record it, wait for `answer` (or the question timeout)
        holding no worker slot, and continue the phase in a new activity — as after a usage limit, waited out on a
        timer. None: the phase failed (recorded)."""
        state = self.state
        label = given.phase if given.round_no == 1 else f"{given.phase}#round{given.round_no}"
        state.step = label
        while True:
            activity_id = label if given.resumes == 0 else f"{label}/{given.resumes + 1}"
            try:
                outcome: StepOutcome = await workflow.execute_activity(
                    RUN_PHASE, given, result_type=StepOutcome, **_step_activity(spec, activity_id)
                )
            except ActivityError as exc:
                if isinstance(exc.cause, CancelledError):
                    state.status = "cancelled"
                    state.done.append(StepOutcome(step=label, error="cancelled"))
                    raise
                self._failed(f"{label}: {exc.cause or exc}")
                state.done.append(StepOutcome(step=label, error=state.error))
                return None
            except BaseException:
                state.status = "cancelled"
                raise
            if outcome.limited_until is not None:  # the phase goes on in a new activity after the reset
                state.paused_cost_usd = round(state.paused_cost_usd + outcome.cost_usd, 4)
                await self._wait_out_limit(outcome.limited_until)
                given = replace(given, question="", answer="", resumes=given.resumes + 1, asks_used=outcome.asks_used)
                continue
            if not outcome.question:
                state.done.append(outcome)
                return outcome
            # Paused on a question: no activity runs (no worker slot is held) until it is answered.
            state.question = outcome.question
            state.paused_cost_usd = round(state.paused_cost_usd + outcome.cost_usd, 4)
            seen = len(state.answers)
            timeout = spec.go.question_timeout if spec.go is not None else None
            try:
                await workflow.wait_condition(
                    lambda seen=seen: len(state.answers) > seen,  # type: ignore[misc]
                    timeout=timedelta(seconds=timeout) if timeout is not None else None,
                )
                answer, timed_out = state.answers[seen], False
            except TimeoutError:
                answer, timed_out = "", True
            state.question = ""
            given = replace(
                given,
                question=outcome.question,
                answer=answer,
                timed_out=timed_out,
                resumes=given.resumes + 1,
                asks_used=outcome.asks_used,
            )

    @workflow.query(name="state")
    def query_state(self) -> RunState:
        return self.state

    @workflow.signal(name="answer")
    def answer(self, text: str) -> None:
        # An answer reaches the question waiting now; with none waiting there is nothing to answer.
        if self.state.question:
            self.state.answers.append(text)
            self.state.question = ""


def _step_activity(spec: RunSpec, activity_id: str) -> dict[str, Any]:
    """How a step's (or a go phase's) activity is scheduled: heartbeats within the run's timeout, the run's attempts,
    and a cancelled run waits until its running step has stopped and been recorded."""
    return {
        "activity_id": activity_id,
        "start_to_close_timeout": _STEP_LIMIT,
        "heartbeat_timeout": timedelta(seconds=spec.heartbeat_timeout),
        "retry_policy": RetryPolicy(
            maximum_attempts=spec.max_attempts,
            initial_interval=timedelta(seconds=1),
            maximum_interval=timedelta(seconds=10),
        ),
        "cancellation_type": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }
