"""The runtime a fleet step runs its workflow step on: a flower `Runtime` whose sessions are named after the run
and the step's label, so any later attempt of the same step (another worker, after a crash) continues the same
session from the store instead of starting over."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from flower_cli import AgentSpec, Runtime, StepResult

from ._ids import step_session_id

__all__ = ["ANSWER_NOTE", "CONTINUE_NOTE", "FleetRunner"]

CONTINUE_NOTE = (
    "(This step was interrupted: the machine running it stopped, and it continues here, in the same session.{where} "
    "Check the state of the workspace against what you did so far before going on, then finish the task.)"
)

ANSWER_NOTE = (
    "(This step was paused while your question waited for the person, and continues here, in the same session."
    "{where})\n\nYou asked: {question}\n\n{reply}"
)


class FleetRunner:
    """A ``flower_cli.StepRunner`` over ``runtime`` for one attempt (``epoch``) of one step of ``run_id``.

    ``restored_note`` is said in the resume prompt when the workspace came from a checkpoint. ``known`` collects
    label -> session id as the sessions appear (the heartbeats carry it). ``on_session`` hears every session id.

    Fencing: the launch that drives the label's own session (a first launch, or the continuation of an earlier
    attempt's) takes the session's lease at ``epoch`` — the activity's attempt number — so an earlier attempt
    that is still alive (its heartbeats stalled) can never append to it again. A launch the workflow engine
    aims at another session (``resume_from``, a gate's next round) takes the lease at the next epoch as any
    step would: that session's own step ended, and released it.

    Superseded: an attempt that learns a later one took its step over — a launch that ends "taken over" (its
    lease renewal or a fenced append was refused), a checkpoint push refused (`supersede`, from the periodic
    checkpoints), a cancel (the activity's heartbeat found the attempt timed out) — halts at once: its Claude
    Code is interrupted before it sends the model another request, and no launch follows.
    """

    def __init__(
        self,
        runtime: Runtime,
        run_id: str,
        *,
        epoch: int,
        restored_note: str = "",
        known: dict[str, str] | None = None,
        on_session: Callable[[str], Any] | None = None,
        answer_note: str = "",
    ) -> None:
        self.runtime = runtime
        self.run_dir: Path = runtime.run_dir
        self.workspace: Path = runtime.workspace
        self.run_id = run_id
        self.epoch = epoch
        self.restored_note = restored_note
        self.known = dict(known or {})
        self.on_session = on_session
        self.resumed: list[str] = []  # the sessions this attempt continued from an earlier attempt
        # Said once, by the first launch, instead of its prompt: the answer to the question the phase paused on
        # (the session it continues already holds the question and everything before it).
        self.answer_note = answer_note
        self.in_flight: str | None = None  # the label of the launch running now (None: none, e.g. in a gate)
        self.halted = ""  # why this attempt was halted (`halt`); "" while it runs on
        self._scope: anyio.CancelScope | None = None
        self._halting: asyncio.Future[None] | None = None  # the halt `supersede` started (kept: not collected)

    def halting(self) -> anyio.CancelScope:
        """The scope a halted attempt unwinds to: run the step (or phase) inside it (``with runner.halting():``)."""
        self._scope = anyio.CancelScope()
        return self._scope

    async def halt(self, reason: str) -> None:
        """Stop this attempt here, for ``reason`` (a question that waits for the person, a cancel, a worker that
        shuts down): the launch running now ends at once and is recorded (`Runtime.stop`: the harness is
        interrupted, so it asks the model nothing more), the lease of its session is released, and then what
        runs under `halting` is cancelled — the workflow engine does not go on to a retry or the next launch."""
        if self.halted:
            return
        self.halted = reason
        if self.in_flight is not None:
            await self.runtime.stop(reason)  # `run` cancels the scope once the runtime has recorded the launch
        elif self._scope is not None:
            self._scope.cancel()  # between launches (a gate deciding): nothing to end first

    def supersede(self, reason: str) -> None:
        """Halt this attempt, for ``reason`` (a later attempt took the step over), without waiting: callable from
        any task of the event loop running the step, also one that the halt itself cancels (the periodic
        checkpoints run inside `halting`). The halt runs in a task of its own, as a cancel's does."""
        if self.halted or self._halting is not None:
            return
        self._halting = asyncio.ensure_future(self.halt(f"superseded: {reason}"))

    @property
    def workbench(self) -> Any:
        return self.runtime.workbench

    def use_workbench(self, workbench: Any) -> None:
        self.runtime.use_workbench(workbench)

    def has_session(self, session_id: str) -> bool:
        return self.runtime.has_session(session_id)

    def session_for(self, label: str) -> str:
        """The session id of ``label`` in this run, the same on every attempt and every machine."""
        return step_session_id(self.run_id, label)

    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: Callable[[Any], Any] | None = None,
        on_session: Callable[[str], Any] | None = None,
    ) -> StepResult:
        label = step_name or spec.name
        own = self.session_for(label)
        epoch: int | None = None
        if resume is None:
            epoch = self.epoch
        where = f" {self.restored_note}" if self.restored_note else ""
        if resume is None and self.runtime.has_session(own):
            # An earlier attempt of this very launch got this far: continue it, do not start over.
            resume, fork, resume_at = own, False, None
            prompt = CONTINUE_NOTE.format(where=where)
            self.resumed.append(own)
        if self.answer_note and resume is not None:
            prompt, self.answer_note = self.answer_note.replace("{where}", where), ""

        def heard(session_id: str) -> None:
            self.known[label] = session_id
            for callback in (on_session, self.on_session):
                if callback is not None:
                    callback(session_id)

        if self.halted:
            await self._unwind()
        self.in_flight = label
        try:
            result = await self.runtime.run(
                spec,
                prompt,
                step_name=label,
                resume=resume,
                fork=fork,
                resume_at=resume_at,
                on_event=on_event,
                on_session=heard,
                session_id=own,
                lease_epoch=epoch,
            )
        finally:
            self.in_flight = None
        if not self.halted and (result.error or "").startswith(Runtime.TAKEN_OVER):
            # The lease says a later attempt drives the session now: this attempt goes no further (no retry of
            # the launch, no next launch), as if halted.
            self.halted = f"superseded: {result.error}"
        if self.halted:
            await self._unwind()
        return result

    async def _unwind(self) -> None:
        """A halted attempt goes no further: to the end of `halting`."""
        if self._scope is not None:
            self._scope.cancel()
        await anyio.lowlevel.checkpoint()  # raises the cancellation here
        raise RuntimeError(f"halted ({self.halted}) outside runner.halting()")
