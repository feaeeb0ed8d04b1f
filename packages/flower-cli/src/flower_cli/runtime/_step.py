"""One running step: its lease, its launches one after another, each launch's stream followed to its end, the
store checked for what was streamed, and what comes next (a handoff, a human's words, the end).

A step, in order (`StepRun.run`):

1. **Start.** Check the workspace for isolated workers; take the lease of the session the first launch drives
   (`SessionBusy` when another process drives it); make room (`_first_launch`: a resumed session already past
   the handoff point is handed over first).
2. **Launch** (`_launch`): take the lease of the session this launch drives, then stream it (`_stream`, through
   flower-resilience, the only retry loop) until the harness is done, a human interrupts, the handoff loop says
   the step stops here, or the step is stopped; then wait until the store holds what was streamed.
3. **Between launches** (`_next_launch`): a handoff to a fresh session, the same session with a human's words
   after an interrupt, or the end.
4. **End** (`_finish`): close the result, record it, release the lease, emit the step's one ``result`` event.

The run's budget (`RunPolicy.budget`, see ``_budget``) is checked before the first launch, at every turn's end
(`_budget_at_turn_end`: the step's cost so far is the launches it absorbed plus the live stream's
``cost_so_far``) and between launches (`_next_launch`); once it is spent the step ends as `stop` ends it
(``stop_reason``), except that a turn which ends the harness's work ends the step as it is: its answer stands,
and the next step does not start.

Where the next concerns go (see the room's docstring):

- a usage-limit wait (built: ``_limit_wait``): a limit seen in the stream (`_follow`) ends the launch; between
  launches (`_after_limit`) the step waits until it lifts and launches the same session again, or ends recorded;
- worker recovery after a crash (built: `_recovery`): at step start and resume (`_first_launch`), where the step
  knows which session it continues; the workers that session left unreported are carried on before its launch;
- publishing events for other processes: every event of a step goes through `StepState.emit` to the caller's
  `EventSink`; a publisher is one more sink (the Runtime's ``run(on_event=...)``), never a change here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import anyio
from claude_agent_sdk import AssistantMessage, UserMessage

from flower_resilience import ResilientQuery, UsageLimit
from flower_stores import LeaseLost

from ._budget import stopped_by_budget
from ._events import Event, normalize
from ._handover import hand_over, make_room
from ._isolation import IsolationError, isolation_problem
from ._launcher import Launch, Launcher
from ._limit_wait import LimitWait, LimitWatch, held_prompt
from ._limits_seen import remember_limit
from ._paid import PaidLedger
from ._record import INTERRUPTED, RunRecord, absorb, step_payload
from ._recovery import recover
from ._result import StepResult
from ._session_lease import StepLease, taken_over
from ._signals import Interrupt
from ._step_state import StepState

__all__ = ["INTERRUPT_NOTE", "StepRun"]

INTERRUPT_NOTE = (
    "(You were interrupted by the human. A tool call that was in flight may report that it was "
    "interrupted — that is a side effect of the interruption, not a problem with the environment.)"
)
# How long `StepRun.stop` lets an interrupted harness end its turn before it closes it (measured: ~0.1 s in the
# middle of an in-process tool call, ~1 s in the middle of a Bash command).
_STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class _LiveLaunch:
    """The launch streaming now, as `StepRun.stop` reaches it: its stream, the scope around its iteration, and an
    event set once the harness is closed."""

    stream: ResilientQuery
    scope: anyio.CancelScope
    ended: anyio.Event


@dataclass(frozen=True)
class _Ended:
    """How a launch's stream ended: ``record`` is flower-resilience's record of its attempts."""

    record: Any
    interrupted: bool = False
    handoff_due: bool = False
    limit: UsageLimit | None = None  # the usage limit (or spend cap) that ended the launch


class StepRun:
    """One ``Runtime.run``, from its first line to its return (see the module docstring for its course).

    Made by the Runtime before the step's first await, so that a `stop` from then on counts; ``state`` is set
    once the lease is taken and the result exists.
    """

    def __init__(self, launcher: Launcher, record: RunRecord, interrupt: Interrupt, state: StepState) -> None:
        self.launcher = launcher
        self.record = record
        self.interrupt = interrupt
        self.state = state
        self.stop_reason = ""  # why the step was stopped ("" while it runs on)
        self._lease: StepLease | None = None
        self._live: _LiveLaunch | None = None
        self._first: Launch | None = None  # the first launch: what a limit met before anything was stored repeats
        self._deliveries = 0  # the launches that delivered answers of workers the harness dropped
        self._limit: UsageLimit | None = None  # the limit that ended the live launch
        self._limits = LimitWatch(self._limit_notice, said=record.limit_warnings)
        # The task ids of the workers flower recovered: the harness's own "didn't finish" notice of them, which it
        # sends on resume, is superseded by their delivered results and is not shown.
        self._recovered: frozenset[str] = frozenset()
        self._recovering: anyio.CancelScope | None = None  # the recovery of workers in progress, if any

    @property
    def stopped(self) -> bool:
        return bool(self.stop_reason)

    async def stop(self, reason: str) -> None:
        """End the step now (see `Runtime.stop`); returns once its live launch, if any, has ended."""
        self.stop_reason = reason or "stopped"
        if self._recovering is not None:
            self._recovering.cancel()
        live = self._live
        if live is None:  # between launches: the step ends before the next one starts
            return
        if await live.stream.stop():
            with anyio.move_on_after(_STOP_GRACE_S):
                await live.ended.wait()
        live.scope.cancel()  # a no-op once the launch has ended

    async def run(self, first: Launch, lease_epoch: int | None) -> StepResult:
        """Run the step from ``first`` (its prompt as the caller gave it) to its end; see `Runtime.run`."""
        state = self.state
        if state.spec.agents:
            problem = isolation_problem(state.spec, self.launcher.workspace)
            if problem:
                raise IsolationError(problem)
        lease, first = await self._take_lease(first, lease_epoch)  # SessionBusy
        result = state.result
        result.started_at = time.time()
        if first.resume and not first.fork and result.session_id is None:
            # A resume goes on in that very session: a step stopped before the harness has said so (Ctrl-C,
            # SIGTERM while the model thinks) still names it in its row and in the line that says how to go on.
            result.session_id = first.resume
        self.record.begin(result)
        self.interrupt.clear()
        state.handoffs = self.launcher.handoff_loop(state.spec, result.step, state.prompt, state.emit)
        try:
            try:
                await self._launches(first)
            finally:
                self._lease = None
                await lease.end()  # raises LeaseLost when the lease was taken over (the step was stopped for it)
        except LeaseLost as exc:
            result.ok = False
            result.error = taken_over(exc)
            result.errors.append(result.error)
        except Exception as exc:  # noqa: BLE001 - a step never raises for model/transport trouble
            result.ok = False
            result.error = f"{type(exc).__name__}: {exc}"
            result.errors.append(result.error)
        except BaseException:  # cancelled (Ctrl-C) or killed: record why, then let it go on
            result.ok = False
            result.error = result.error or INTERRUPTED
            raise
        finally:
            self._finish()
        state.emit(Event("result", "success" if result.ok else "error", payload=step_payload(result)))
        return result

    async def _take_lease(self, first: Launch, epoch: int | None) -> tuple[StepLease, Launch]:
        """The step's lease, holding the session its first launch drives, and that launch (its new id chosen)."""
        policy, store = self.launcher.policy, self.launcher.store
        lease = StepLease(
            store.session_store,
            store.project_key,
            policy.lease_owner,
            enabled=policy.lease,
            ttl=policy.lease_ttl,
            epoch=epoch,
        )
        resume, new_id = lease.first(first.resume, first.fork, first.session_id, store.has_session)
        driven = resume if resume and not first.fork else new_id
        if driven:
            await lease.take(driven)
        self._lease = lease
        prompt = self.launcher.first_prompt(self.state.spec, first.prompt, resume)
        return lease, replace(first, prompt=prompt, resume=resume, session_id=new_id)

    async def _launches(self, first: Launch) -> None:
        """The step's launches, one after another, until one is the last or the step is stopped."""
        launch: Launch | None = None
        if not self._budget_spent():  # a step the spent budget stops before it starts costs nothing
            launch = self._first = await self._first_launch(first)
        while launch is not None and not self.stopped:
            ended = await self._launch(launch)
            if ended is None:  # stopped while the lease was being taken
                break
            launch = await self._next_launch(ended)
        result = self.state.result
        if not self.stop_reason and not result.ok and "budget" in (result.error or "").lower():
            self._budget_cap_hit()
        if self.stop_reason:
            result.ok, result.error = False, self.stop_reason
            result.errors.append(self.stop_reason)

    async def _first_launch(self, first: Launch) -> Launch:
        """The step's first launch, once the session it continues has room (see `make_room`) and the workers it
        left unreported have been carried on (see `recover`: their notices open the prompt)."""
        store = self.launcher.store
        launch = await make_room(self.launcher, self.state, first, store.context_of, self._session_store())
        if not first.resume or first.fork:
            return launch
        return replace(launch, prompt=await self._with_recovered(first.resume, launch.prompt))

    async def _with_recovered(self, session_id: str | None, prompt: str) -> str:
        """``prompt``, opened by the completion notices of the workers of ``session_id`` that flower carried on
        (see `recover`): the session a step resumes, or the one a handoff retired with its workers."""
        if not session_id or self.stopped:
            return prompt
        state = self.state
        # `stop` cancels a recovery in progress (its workers' Claude Code processes are closed with it).
        self._recovering = anyio.CancelScope()
        recovery = None
        try:
            with self._recovering:
                recovery = await recover(self.launcher, state, session_id)
        except Exception as exc:  # noqa: BLE001 - a recovery that cannot run must not fail the step it serves
            said = f"could not recover the workers of session {session_id}: {type(exc).__name__}: {exc}"
            state.result.errors.append(said)
            state.emit(Event("notice", said, payload={"step": state.result.step}))
            return prompt
        finally:
            self._recovering = None
        if recovery is None or not recovery.recovered:  # stopped while recovering, or nothing to recover
            return prompt
        state.result.recovered.extend(recovery.recovered)
        state.result.errors.extend(
            f"recovered worker {w['description']!r} failed" for w in recovery.recovered if w["status"] != "completed"
        )
        self._recovered = self._recovered | {worker["id"] for worker in recovery.recovered}
        return f"{recovery.notice}\n\n{prompt}"

    async def _launch(self, launch: Launch) -> _Ended | None:
        """One launch: the lease of the session it drives (a new session's id and lease; a retired one's
        released), then its stream; None when the step was stopped while the lease was being taken."""
        assert self._lease is not None
        launch = await self._lease.launching(launch)
        if self.stopped:
            return None
        return await self._stream(launch)

    def _session_store(self) -> Any:
        """What the SDK writes through during this step: the lease's fenced view (None: the store)."""
        return self._lease.session_store if self._lease is not None else None

    async def _stream(self, launch: Launch) -> _Ended:
        """One launch of the SDK (flower-resilience retries inside it), streamed to the step's events until the
        harness is done, a human interrupts, or the handoff loop says the step stops here; a stop waits until the
        store holds what was streamed."""
        state, launcher = self.state, self.launcher
        handoffs, workers, result = state.handoffs, state.workers, state.result
        stop_hooks = [handoffs.stop_hook(lambda: bool(workers.live))] if handoffs is not None else []
        options = launcher.options(
            state.spec,
            resume=launch.resume,
            fork=launch.fork,
            resume_at=launch.resume_at,
            post_hooks=stop_hooks,
            session_id=launch.session_id,
            session_store=self._session_store(),
        )
        prompt = launch.prompt if launch.opens is None else held_prompt(launch.prompt, launch.opens)
        stream = launcher.query(prompt, options, on_event=state.on_resilience)
        self._limit = None
        live = self._live = _LiveLaunch(stream, anyio.CancelScope(), anyio.Event())
        paid = PaidLedger()
        try:
            interrupted, handoff_due = await self._follow(stream, live, paid)
        finally:
            self._live = None
            await stream.aclose()
            live.ended.set()
        absorb(result, stream.record)
        paid.settle(result, stream.record)  # attempts that ended without the harness's figure still paid
        unstored = await launcher.store.mirror.settle(
            lambda line: state.emit(Event("retry", line, payload={"step": result.step}))
        )
        if unstored:  # never a success the store does not fully hold
            result.ok, result.error = False, unstored
            result.errors.append(unstored)
        return _Ended(stream.record, interrupted=interrupted, handoff_due=handoff_due, limit=self._limit)

    async def _follow(self, stream: ResilientQuery, live: _LiveLaunch, paid: PaidLedger) -> tuple[bool, bool]:
        """Stream ``stream``'s messages to the step's events until the harness is done, a human interrupts, the
        handoff loop says the step stops here, or the step is stopped. Returns (interrupted, handoff due)."""
        state, mirror = self.state, self.launcher.store.mirror
        result, handoffs, workers = state.result, state.handoffs, state.workers
        last_main: str | None = None  # the uuid of the newest main-thread message streamed
        with live.scope:  # cancelled only by `stop`, for a harness that could not be interrupted
            async for message in stream:
                state.note_session(message)
                mirror.saw(message)
                paid.saw(message, len(stream.record.attempts) + 1)  # the attempt in flight: those before are concluded
                if self.interrupt.is_set():
                    if result.session_id:
                        await self.launcher.store.holds(result.session_id, last_main)
                    return True, False
                last_main = _main_thread_uuid(message) or last_main
                events = self._show(message)
                if _ends_turn(message):
                    self._budget_at_turn_end(stream)
                limit = self._limits.see(message)
                if limit is not None:  # no request more in this launch: closing it ends the harness's retry wait
                    self._limit = limit
                    remember_limit(limit)
                    if result.session_id and last_main:  # the same session resumes after the reset: with them
                        await self.launcher.store.holds(result.session_id, last_main)
                    return False, False
                if (
                    handoffs is not None
                    and handoffs.observe(events, live_workers=bool(workers.live))
                    and result.session_id
                ):
                    await self.launcher.store.holds(result.session_id, last_main)
                    return False, True
                if self.stop_reason and _ends_turn(message):
                    break  # stopped: the interrupted turn has ended (a harness that idles on is closed)
        return False, False

    def _show(self, message: Any) -> list[Event]:
        """``message`` as events, each emitted (a turn's end with the step and the live workers); the answer and
        the context follow them. Returns the events as the handoff loop reads them."""
        state = self.state
        events = [state.workers.annotate(raw) for raw in normalize(message) if not self._superseded(raw)]
        for event in events:
            if event.kind == "turn":
                event = self._turn_ended(event)
            else:
                state.collect(event)
            state.emit(event)
        return events

    def _superseded(self, event: Event) -> bool:
        """Is ``event`` the harness's notice that a worker flower recovered had stopped?"""
        payload = event.payload
        return event.kind == "task" and payload.get("status") == "stopped" and payload.get("task_id") in self._recovered

    def _turn_ended(self, event: Event) -> Event:
        """A main-thread turn has ended: its text is the answer so far; the event, as shown, names the step and
        the live workers. (The place a check between turns goes: see the module docstring.)"""
        state = self.state
        state.answer.turn_ended(event)
        payload = {**event.payload, "step": state.result.step, "live_workers": state.workers.live_list()}
        return replace(event, payload=payload)

    async def _next_launch(self, ended: _Ended) -> Launch | None:
        """What follows a launch: what the handoff loop decides, else the same session with a human's words after
        an interrupt; None when the step is over (or stopped)."""
        state = self.state
        result, handoffs = state.result, state.handoffs
        if self.stop_reason:
            return None
        if ended.limit is not None:
            return await self._after_limit(ended.limit)
        if handoffs is not None:
            failed = not result.ok and not ended.interrupted  # a stream the Runtime closed did not fail
            decision = handoffs.after(
                due=ended.handoff_due,
                overflow=(ended.record.error, *ended.record.errors) if failed else (),
                stopped=state.workers.live_names(),
            )
            if decision.action == "stop":
                result.ok, result.error = False, decision.reason
                result.errors.append(decision.reason)
                return None
            if decision.hands_off:
                if self._budget_spent():  # the handoff-writing round and the successor would both cost
                    return None
                retired = result.session_id
                successor = await hand_over(self.launcher, state, handoffs, decision, self._session_store())
                # The retired session's workers ended with its process: flower carries them on for the successor.
                successor = await self._with_recovered(retired, successor)
                return Launch(self.launcher.first_prompt(state.spec, successor, None))
        if ended.interrupted and result.session_id:
            return None if self._budget_spent() else await self._resume_after_interrupt()
        if not ended.interrupted and result.ok:
            return await self._undelivered()
        if ended.interrupted:
            result.ok, result.error = False, INTERRUPTED
        return None

    async def _undelivered(self) -> Launch | None:
        """A launch that ended well while a worker's answer never reached the main thread: the same session goes
        on with it. The harness can drop the notice of a worker that finishes between a tool result and the
        main thread's next request, and then end (seen one run in ten on a loaded machine); read from the store
        (see `recover`), and done at most twice a step so a notice the ledger cannot see never loops."""
        state = self.state
        session = state.result.session_id
        if not session or not state.workers.tasks or state.workers.live or self._deliveries >= 2:
            return None
        notice = await self._with_recovered(session, "")
        if not notice or self._budget_spent():
            return None
        self._deliveries += 1
        return Launch(notice.strip(), resume=session)

    async def _after_limit(self, limit: UsageLimit) -> Launch | None:
        """After a launch a usage limit ended: the same session once the limit lifts, or None (the step ends,
        recorded with the reset, when it is a spend cap or further away than the limit wait allows)."""
        state, launcher = self.state, self.launcher
        result = state.result
        waiting = LimitWait(state.emit, result.step, launcher.policy.limit_wait, lambda: self.stopped)
        session = result.session_id
        target = await waiting.wait(limit, session)
        if target is not None:
            result.limits_waited += 1
            result.ok, result.error = False, None  # what the closed launch left; the next launch decides
            opens = partial(waiting.opens, limit, target, session)
            if session and launcher.store.has_session(session):
                result.resumed = True
                return Launch(launcher.resilience.resume_prompt, resume=session, opens=opens)
            assert self._first is not None  # refused before anything was stored: start as the step began
            return replace(self._first, session_id=None, opens=opens)
        if self.stopped:
            return None
        error = waiting.ended(limit)
        result.ok, result.error, result.limited_until = False, error, limit.resets_at
        result.errors.append(error)
        return None

    def _limit_notice(self, phase: str, limit: UsageLimit, extra: dict[str, Any]) -> None:
        """A limit said once (close to a limit: ``allowed_warning``), as a ``limit`` event."""
        remember_limit(limit)
        payload = {"step": self.state.result.step, "phase": phase, **limit.to_json(), **extra}
        self.state.emit(Event("limit", limit.describe(), payload=payload))

    async def _resume_after_interrupt(self) -> Launch:
        """The interrupted session goes on with the human's words (the resume prompt when there were none)."""
        state = self.state
        result = state.result
        words = self.interrupt.take()
        result.interrupts += 1
        said = "interrupted; resuming with your words" if words else "interrupted; continuing"
        state.emit(Event("retry", said, payload={"step": result.step}))
        session = result.session_id or ""
        if self._first is not None and not await self.launcher.store.has_conversation(session):
            # Stopped before the harness stored anything: the model saw nothing yet, the step starts as it began.
            return replace(self._first, prompt=f"{self._first.prompt}\n\n{words}".strip(), session_id=None)
        result.resumed = True
        prompt = f"{words}\n\n{INTERRUPT_NOTE}" if words else self.launcher.resilience.resume_prompt
        return Launch(prompt, resume=session)

    def _finish(self) -> None:
        """Close the step's result (answer, turns, workers, end time) and write its manifest row."""
        state = self.state
        result, workers = state.result, state.workers
        text = state.answer.final(result.ok)
        if text:
            result.text = text
        result.turns = state.answer.turns
        result.workers = workers.summary()
        if workers.live and result.ok:
            # The harness gave up waiting (its background-wait ceiling): say so, the answer may be partial.
            names = ", ".join(repr(name) for name in workers.live_names())
            result.errors.append(f"the session ended while workers were still running: {names}")
        result.ended_at = time.time()
        budget = self.launcher.policy.budget
        if budget is not None:
            budget.settle(result)
            result.budget = {**budget.row(), "stopped": stopped_by_budget(result)}
        self.record.close(result)

    def _budget_spent(self) -> bool:
        """Is the run's budget spent? Then the step stops here (``stop_reason``), before anything more is sent."""
        budget = self.launcher.policy.budget
        if budget is None or self.stopped or not budget.over:
            return bool(self.stopped)
        self.stop_reason = budget.stop_reason()
        return True

    def _budget_cap_hit(self) -> None:
        """The harness stopped the query at its per-query cap (``max_budget_usd``, checked after every model
        request): when that spent the run's budget too, the step is recorded as stopped by the budget."""
        budget = self.launcher.policy.budget
        if budget is None:
            return
        budget.running(self.state.result, self.state.result.cost_usd)
        if budget.over:
            self.stop_reason = budget.stop_reason()

    def _budget_at_turn_end(self, stream: ResilientQuery) -> None:
        """A turn has ended: the step's cost so far goes to the run's budget; at 80 % one line says so. Once the
        budget is spent, a harness with live workers (it would wake for another turn) is stopped; without them
        the turn was its last, and the step ends as it is."""
        budget = self.launcher.policy.budget
        if budget is None:
            return
        state = self.state
        budget.running(state.result, state.result.cost_usd + stream.cost_so_far)
        if budget.first_near():
            state.emit(Event("notice", budget.near_line(), payload={"step": state.result.step, "budget": budget.row()}))
        if budget.over and state.workers.live and not self.stopped:
            self.stop_reason = budget.stop_reason()


def _ends_turn(message: Any) -> bool:
    """Is ``message`` the result that ends a turn of the harness?"""
    return type(message).__name__ == "ResultMessage"


def _main_thread_uuid(message: Any) -> str | None:
    """The transcript uuid of a main-thread user or assistant message (a worker's, or any other kind: None)."""
    if isinstance(message, (UserMessage, AssistantMessage)) and message.parent_tool_use_id is None:
        return message.uuid or None
    return None
