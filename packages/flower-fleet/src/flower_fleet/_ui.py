"""The fleet's runs on `flower ui`'s page: `FleetSource`, found by flower-cli through the ``flower_cli.ui_sources``
entry point (`ui_source`) when ``FLOWER_TEMPORAL`` names a server.

What the page shows of a fleet run comes from the run's state (the workflow's query, `Fleet.state`): its status,
step, cost and the question it waits on; the events are made from the changes to that state (a step starting or
ending, a question asked or settled, the run's end), read every `POLL_S`. Answer and stop are the fleet's own
verbs (`flower fleet answer` / `cancel`); a fleet run takes no mail.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from flower_cli import SourceError, SourceOptions

from ._client import Fleet, RunNotFoundError
from ._config import FleetConfig, FleetConfigError
from ._model import RunState

__all__ = ["POLL_S", "FleetSource", "ui_source"]

POLL_S = 0.5
LISTED = 50  # the newest runs the page lists
_ENDED = {
    "completed": "done",
    "failed": "failed",
    "cancelled": "stopped",
    "terminated": "stopped",
    "timed out": "failed",
}


def ui_source(options: SourceOptions) -> FleetSource | None:
    """The fleet's runs for the page, when ``FLOWER_TEMPORAL`` is set (None: no fleet to show)."""
    if not os.environ.get("FLOWER_TEMPORAL", "").strip():
        return None
    return FleetSource(FleetConfig.from_env())


def page_state(state: RunState) -> str:
    """A fleet run's status in the page's words: running / waiting (a question) / done / failed / stopped."""
    if state.status in _ENDED:
        if state.status == "completed" and state.error:
            return "failed"
        return _ENDED[state.status]
    return "waiting" if state.question else "running"


class FleetSource:
    """The page's `flower_cli.RunSource` over one fleet (a Temporal server); connects on first use."""

    name = "fleet"

    def __init__(self, config: FleetConfig) -> None:
        self.config = config
        self._fleet: Fleet | None = None
        self._connecting = asyncio.Lock()

    async def _connected(self) -> Fleet:
        async with self._connecting:
            if self._fleet is None:
                try:
                    self._fleet = await Fleet.connect(self.config)
                except FleetConfigError as exc:
                    raise SourceError(str(exc), 502) from None
            return self._fleet

    async def _state(self, run_id: str) -> RunState:
        try:
            return await (await self._connected()).state(run_id)
        except RunNotFoundError as exc:
            raise SourceError(str(exc), 404) from None

    async def list_runs(self) -> list[dict[str, Any]]:
        fleet = await self._connected()
        started = await _started_ms(fleet)
        states = await asyncio.gather(*(fleet.state(run_id) for run_id in started), return_exceptions=True)
        return [
            _row(run_id, state, started[run_id])
            for run_id, state in zip(started, states)
            if not isinstance(state, BaseException)  # gone between the listing and the query
        ]

    async def events(self, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        changes = _Changes()
        while True:
            state = await self._state(run_id)
            for seq, event in changes.of(state):
                if seq > after:
                    yield {"seq": seq, "at_ms": int(time.time() * 1000), "event": event}
            if state.status in _ENDED:
                return
            await asyncio.sleep(POLL_S)

    async def answer(self, run_id: str, text: str) -> str:
        state = await self._state(run_id)
        if not state.question:
            raise SourceError(f"fleet run {run_id} waits on no question now (it is {page_state(state)})", 409)
        await (await self._connected()).answer(run_id, text)
        return "answer sent to the fleet run"

    async def mail(self, run_id: str, text: str) -> str:
        raise SourceError("a fleet run takes no mail: answer its question, or stop it", 409)

    async def stop(self, run_id: str) -> str:
        try:
            await (await self._connected()).cancel(run_id)
        except RunNotFoundError as exc:
            raise SourceError(str(exc), 404) from None
        return "cancel sent: the running step stops at its next heartbeat and is recorded"


async def _started_ms(fleet: Fleet) -> dict[str, int]:
    """The newest `LISTED` runs' ids, newest first, with when each started (epoch ms): the page sorts every
    source's runs together by it."""
    started: dict[str, int] = {}
    async for execution in fleet.client.list_workflows('WorkflowType="flower-fleet-run"'):
        started[execution.id] = int(execution.start_time.timestamp() * 1000)
        if len(started) >= LISTED:
            break
    return started


def _row(run_id: str, state: RunState, started_ms: int) -> dict[str, Any]:
    running = state.running[0] if state.running else None
    return {
        "id": run_id,
        "title": f"{run_id} ({state.workflow})" if state.workflow else run_id,
        "state": page_state(state),
        "step": state.step or (state.done[-1].step if state.done else ""),
        "cost_usd": state.cost_usd,
        "question": state.question or None,
        "worker": running.worker if running else "",
        "error": state.error,
        "created_ms": started_ms,
        "accepts": ["answer", "stop"],
        "fleet": True,
    }


class _Changes:
    """The events a run's successive states amount to: each step's start and end, each question, the end."""

    def __init__(self) -> None:
        self.seq = 0
        self._started: set[str] = set()
        self._ended = 0
        self._question = ""
        self._asked = 0
        self._over = False

    def _event(self, event_kind: str, text: str = "", **payload: Any) -> tuple[int, dict[str, Any]]:
        """The next event, numbered."""
        self.seq += 1
        return self.seq, {"kind": event_kind, "text": text, "tool": "", "subagent": False, "payload": payload}

    def of(self, state: RunState) -> list[tuple[int, dict[str, Any]]]:
        """The numbered events since the last state seen."""
        events: list[tuple[int, dict[str, Any]]] = []
        for outcome in state.done[self._ended :]:
            if outcome.step not in self._started:
                self._started.add(outcome.step)
                events.append(self._event("step", outcome.step))
            events.append(
                self._event(
                    "result",
                    "success" if outcome.ok else "error",
                    step=outcome.step,
                    ok=outcome.ok,
                    cost_usd=outcome.cost_usd,
                    session_id=outcome.session_id,
                    error=outcome.error,
                    worker=outcome.worker,
                )
            )
        self._ended = len(state.done)
        if state.step and state.status not in _ENDED and state.step not in self._started:
            self._started.add(state.step)
            events.append(self._event("step", state.step))
        events.extend(self._questions(state))
        if state.status in _ENDED and not self._over:
            self._over = True
            ok = state.status == "completed" and not state.error
            seq, done = self._event("done", state.error)
            done.update(ok=ok, cost_usd=state.cost_usd)  # where `flower --json`'s done event has them
            events.append((seq, done))
        return events

    def _questions(self, state: RunState) -> list[tuple[int, dict[str, Any]]]:
        events = []
        if self._question and state.question != self._question:
            events.append(self._event("ask", self._question, kind="question", state="answered", id=f"f{self._asked}"))
            self._question = ""
        if state.question and not self._question:
            self._asked += 1
            self._question = state.question
            events.append(
                self._event(
                    "ask", state.question, kind="question", state="asked", id=f"f{self._asked}", question=state.question
                )
            )
        return events
