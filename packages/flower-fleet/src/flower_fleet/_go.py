"""One phase of a go run on a worker: ``flower go``'s own flow (`flower_cli.build_go_flow`), run one phase at a
time through `GoFlow.run_phase` — clarify, goal, or one judged work round — with the fleet's runner (sessions
named after the run and the phase's label, the lease at the activity's epoch) and a channel that pauses the
phase on a question (`_questions`)."""

from __future__ import annotations

import math
from typing import Any

from flower_cli import GoFlow, GoSettings, NotesPaths, RunResult, build_go_flow, go_workbench

from ._model import GoSpec, PhaseInput, StepOutcome
from ._questions import PausingChannel, answer_note
from ._runner import FleetRunner
from ._workspace import Prepared, checkpoints_while

__all__ = ["PAUSED", "phase_label", "run_phase"]

# The error of the launch a question paused (its manifest row): the phase goes on in a new activity.
PAUSED = "paused: a question waits for the person (flower fleet answer)"


def phase_label(phase: str, round_no: int) -> str:
    """The manifest label of a phase: ``clarify``, ``goal``, ``work``, ``work#round2`` …"""
    return f"{phase}#round{round_no}" if phase == "work" and round_no > 1 else phase


def _json_value(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


async def run_phase(
    given: PhaseInput, runtime: Any, prepared: Prepared, *, epoch: int, holder: dict[str, Any], every: float
) -> StepOutcome:
    """Run the phase ``given`` names on ``runtime``; its outcome, or the question it paused on.

    ``holder["runner"]`` is set to the phase's `FleetRunner` as soon as it exists (the heartbeats read its
    sessions)."""
    spec = given.spec
    go = spec.go
    if go is None:
        raise ValueError(f"run {spec.run_id} is not a go run")
    workbench = go_workbench(prepared.path)
    settings = GoSettings(
        ask=go.ask,
        rounds=go.rounds,
        goal=go.goal,
        asks=go.asks,
        timeout=math.inf if go.question_timeout is None else go.question_timeout,
    )
    channel = _channel(given, go, settings, NotesPaths.of(workbench.notes), holder)
    note = _settle_answer(given, channel)
    runner = FleetRunner(runtime, spec.run_id, epoch=epoch, restored_note=prepared.note, answer_note=note)
    holder["runner"] = runner
    flow = build_go_flow(settings, channel=channel, workbench=workbench)
    done = None
    with runner.halting():

        async def pause() -> None:
            await runner.halt(PAUSED)

        channel.pause = pause
        async with checkpoints_while(prepared, spec, every, runner.supersede):
            done = await flow.run_phase(
                runner,
                given.phase,
                outputs=given.outputs,
                round_no=given.round_no,
                work_session=given.work_session or None,
                feedback=given.feedback,
            )
    return _outcome(given, flow, runner, channel, done)


def _channel(
    given: PhaseInput, go: GoSpec, settings: GoSettings, paths: NotesPaths, holder: dict[str, Any]
) -> PausingChannel:
    """The phase's human channel: a question from the launch the phase is running pauses it."""

    def own() -> bool:
        runner = holder.get("runner")
        flying = runner.in_flight if runner is not None else None
        return flying is not None and flying.split("#", 1)[0] == given.phase

    return PausingChannel(
        own=own,
        max_asks=None if go.asks is None else max(0, go.asks - given.asks_used),
        timeout_s=settings.timeout_s,
        log_path=paths.qa_log,
        amend_path=paths.brief,
    )


def _settle_answer(given: PhaseInput, channel: PausingChannel) -> str:
    """For a phase continued after a question: what its session is told, and the Q&A log's entry for it, as
    `flower go` keeps it (answered, declined or timed out while the phase was paused). "" when none."""
    if not given.question:
        return ""
    note = answer_note(given.question, given.answer, timed_out=given.timed_out, channel=channel)
    if given.timed_out:
        channel.log_settled(given.question, "timeout")
    elif given.answer.strip():
        channel.log_settled(given.question, "answered", given.answer)
    else:
        channel.log_settled(given.question, "declined")
    return note


def _outcome(
    given: PhaseInput, flow: GoFlow, runner: FleetRunner, channel: PausingChannel, done: RunResult | None
) -> StepOutcome:
    """What the phase ended with: the question it paused on, the halt that stopped it, or its result."""
    label = phase_label(given.phase, given.round_no)
    asks_used = given.asks_used + channel.used
    if channel.paused is not None:
        question, options = channel.paused
        session = runner.known.get(runner.in_flight or "") or runner.known.get(label) or ""
        return StepOutcome(step=label, question=question, options=options, session_id=session, asks_used=asks_used)
    if done is None:  # halted for another reason (a cancel, a worker shutting down): the activity says which
        return StepOutcome(step=label, error=runner.halted or "halted", asks_used=asks_used)
    result = done.results.get(label)
    verdict = flow.state.verdict
    state = verdict.state if verdict is not None else ""
    error = done.aborted or ((result.error or "") if result is not None and not result.ok else "")
    return StepOutcome(
        step=label,
        ok=result is None or (result.ok and done.failed_at is None),
        stop=done.failed_at is not None,
        skipped=result is None,
        output=_json_value(done.context.get(label)),
        session_id=done.sessions.get(label, "") or (result.session_id or "" if result else ""),
        error=error or "",
        cost_usd=done.cost_usd,
        asks_used=asks_used,
        verdict="accepted" if flow.state.accepted is not None else state,
        feedback=verdict.feedback() if verdict is not None and state == "not_yet" else "",
        # A usage limit stopped the phase (its work or its judge): the workflow waits for the reset, then again.
        limited_until=next((r.limited_until for r in done.results.values() if r.limited_until is not None), None),
    )
