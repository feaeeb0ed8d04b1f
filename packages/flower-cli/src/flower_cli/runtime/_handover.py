"""A step's session handed over to a fresh one, as the handoff loop decides: before the first launch (the session
it continues is already past the handoff point) or between launches; the old session writes its handoff in one
quiet round, or the document is built mechanically.

Why apart from the step (``_step``): the step's loop reads as launch, follow, decide; what a handover does to the
session, the result and the workers is here, in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from claude_agent_sdk import SessionStore

from flower_stores import LoadReport

from ._events import normalize
from ._handoff import Decision, HandoffLoop, QuietRound
from ._handoff._salvage import Salvage, salvage, salvaged
from ._launcher import Launch, Launcher
from ._record import absorb
from ._result import StepResult
from ._spec import AgentSpec
from ._step_state import Answer, StepState

__all__ = ["hand_over", "make_room"]


async def make_room(
    launcher: Launcher,
    state: StepState,
    launch: Launch,
    context_of: Callable[[str], int],
    session_store: SessionStore,
) -> Launch:
    """The first launch, unless the session it continues is already past the handoff point (``context_of`` its
    context) or its history cannot fit the load budget even trimmed: then that session is handed off first, so
    the new words reach a session with room for them (a turn that ends its step never hands off: there was
    nothing left to hand over then).

    Every load of the step fits the budget the window gives (`HandoffPolicy.load_budget`); a resumed or forked
    session's load is run here first, and what it trimmed is recorded in the step's result (``loads``)."""
    handoffs, resume = state.handoffs, launch.resume
    budget = launcher.load_budget(state.spec)
    launcher.store.use_budget(budget)
    report = await _resume_load(launcher, state, resume) if resume else None
    if handoffs is None or not resume or launch.fork or launch.resume_at:
        return launch
    stopped = state.workers.live_names()
    if report is not None and report.over_budget:  # not even a round to write a handoff could be sent
        decision = handoffs.too_big(report.sent_chars, report.budget, stopped=stopped)
    else:
        decision = handoffs.before(context_of(resume), stopped=stopped)
    if not decision.hands_off:
        return launch
    state.result.session_id = resume
    successor = await hand_over(launcher, state, handoffs, decision, session_store)
    return Launch(launcher.first_prompt(state.spec, f"{successor}\n\n---\n\n{state.prompt}", None))


async def _resume_load(launcher: Launcher, state: StepState, session_id: str) -> LoadReport | None:
    """The layers' load of the session a launch resumes, run first: its report joins the step's ``loads``."""
    try:
        report = await launcher.store.resume_report(session_id)
    except Exception:  # noqa: BLE001 - a store that cannot load here fails the launch itself, with its own words
        return None
    if report is not None:
        state.result.loads.append({"session_id": session_id, **report.as_dict(), "summary": report.summary()})
    return report


async def hand_over(
    launcher: Launcher, state: StepState, handoffs: HandoffLoop, decision: Decision, session_store: SessionStore
) -> str:
    """Retire the step's session for a fresh one, as ``decision`` says: its handoff written by itself in one
    quiet round, or built mechanically. Returns the successor's first message."""
    result = state.result
    old = result.session_id
    written = None
    if decision.action == "write" and old:
        written = await _quiet_round(launcher, state.spec, decision.prompt, old, result, session_store)
    doc, why = handoffs.document(decision, written)
    if doc.degraded and old:
        doc = salvaged(doc, await _salvage(launcher, old))
    if why:
        result.errors.append(f"handoff degraded ({why})")
    successor = handoffs.take_over(doc, old, why=why, stopped=decision.stopped)
    result.retired = list(handoffs.retired)
    result.session_id = None  # the successor's id arrives with its first message
    state.workers.retire()  # the old session's process, and its background workers, ended with it
    return successor  # (a kill from here on is recorded by rescue(), retired sessions included)


async def _salvage(launcher: Launcher, session_id: str) -> Salvage:
    """What a degraded handoff can carry of the old session without a model (see `salvage`)."""
    try:
        entries = await launcher.store.session_store.load(
            {"project_key": launcher.store.project_key, "session_id": session_id}
        )
    except Exception:  # noqa: BLE001 - the handoff goes ahead with what it has
        return Salvage()
    return salvage(entries or [])


async def _quiet_round(
    launcher: Launcher, spec: AgentSpec, prompt: str, session_id: str, result: StepResult, session_store: SessionStore
) -> QuietRound:
    """One round on ``session_id`` that is not streamed to the UI (the handoff-writing round): its cost and
    turns count for the step; no budget cap, so the session that knows the work can always write it down.
    A round that raises returns its error: any failure of the writing round degrades the handoff."""
    try:
        options = launcher.options(
            replace(spec, max_budget_usd=None),
            resume=session_id,
            fork=False,
            resume_at=None,
            session_store=session_store,
        )
        answer = Answer()
        stream = launcher.query(prompt, options)
        try:
            async for message in stream:
                for event in normalize(message):
                    if event.kind == "turn":
                        answer.turn_ended(event)
                    elif event.kind == "text" and not event.subagent:
                        answer.add(event.text)
        finally:
            await stream.aclose()
        record = stream.record
        absorb(result, record)
        return QuietRound(answer.final(record.ok), None if record.ok else (record.error or "the round did not finish"))
    except Exception as exc:  # noqa: BLE001 - any failure of the writing round degrades the handoff
        return QuietRound.failed(exc)
