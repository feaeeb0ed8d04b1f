"""The fleet's activities — the only place user code (``flows.py``) and the model run: reading a run's plan,
and running one step with flower's own Runtime and workflow engine.

A step heartbeats from a task of its own, from its first second, every ``heartbeat_every`` seconds: the model
stream can be silent for minutes (a long tool call), and a silent step must not look like a dead worker. The
heartbeat is also how a cancel reaches the step (Temporal delivers it on a heartbeat's reply).

A superseded attempt — its worker stopped past the heartbeat timeout (a paused VM, a closed laptop lid) while
Temporal gave the step to another — is fenced out when it runs again: its session's lease refuses its appends,
the run's branch its checkpoints (each attempt claims the branch as it starts, `_workspace.prepare`), and the
first of those refusals, or the cancel its next heartbeat brings, halts it at once (`FleetRunner.supersede`).
Its activity then ends with one line in the worker's log, not a traceback: its result is nobody's any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from flower_cli import RunBudget, Runtime, Workflow
from flower_stores import LeaseError, LeaseOwner

from ._checkpoint import CheckpointError, CheckpointRefused
from ._loader import PlanError, load_workflow
from ._model import PhaseInput, Plan, PlanStep, RunSpec, StepInput, StepOutcome
from ._records import record_step
from ._runner import FleetRunner
from ._workflow import READ_PLAN, RUN_PHASE, RUN_STEP
from ._workspace import Prepared, checkpoint, checkpoints_while, prepare, run_dir

__all__ = ["FleetActivities", "halting_on_cancel", "heartbeating"]

T = TypeVar("T")

# How long a cancelled step may take to stop after its runner was halted (the harness is interrupted: ~1 s).
_HALT_TIMEOUT_S = 30.0


@contextlib.asynccontextmanager
async def heartbeating(every: float, details: Callable[[], Any]) -> AsyncIterator[None]:
    """Heartbeat ``details()`` now and every ``every`` seconds while the body runs, from a task of its own."""

    async def beat() -> None:
        while True:
            activity.heartbeat(details())
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def halting_on_cancel(body: Awaitable[T], runner: Callable[[], FleetRunner | None]) -> T:
    """Await ``body`` in a task of its own; when this activity is cancelled (`flower fleet cancel`, a worker
    shutting down) the step's runner is halted — the launch running now ends at once and is recorded, instead
    of its Claude Code finishing its turn while the SDK waits to close it — and the cancellation goes on once
    ``body`` has unwound.

    Why a task of its own: Temporal cancels the activity's task itself, and a cancellation that lands inside
    the SDK's machinery tears it down before the harness has been told to stop.
    """
    task = asyncio.ensure_future(body)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done():
            raise
        why = "worker shut down" if activity.is_worker_shutdown() else "cancelled"
        held = runner()
        halt = asyncio.ensure_future(held.halt(why)) if held is not None else None
        if halt is None:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=_HALT_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task})
        if halt is not None and not halt.done():
            halt.cancel()
        raise


def _json_value(value: Any) -> Any:
    """``value`` as JSON carries it (what crosses Temporal); anything else as its text."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


@dataclass
class FleetActivities:
    """The activities of one worker: ``root`` is the fleet root, ``store`` the session store URL every worker
    shares (PostgreSQL), ``heartbeat_every`` the heartbeat period, ``checkpoint_every`` the period of the
    checkpoints while a step runs."""

    root: Path
    store: str | None
    heartbeat_every: float = 5.0
    checkpoint_every: float = 300.0
    identity: str = ""

    def __post_init__(self) -> None:
        self.identity = self.identity or f"{socket.gethostname()}/{os.getpid()}"

    def all(self) -> list[Callable[..., Any]]:
        return [self.read_plan, self.run_step, self.run_phase]

    async def _prepared(self, spec: RunSpec, claim: str = "") -> tuple[Prepared, Workflow]:
        """The run's workspace (claimed for ``claim``, see `_workspace`) and its workflow."""
        prepared = await self._workspace(spec, claim)
        try:
            return prepared, load_workflow(prepared.path, spec.workflow)
        except PlanError as exc:
            raise _mistake(str(exc), "PlanError") from None

    async def _workspace(self, spec: RunSpec, claim: str = "") -> Prepared:
        """The run's workspace (git in a worker thread: the heartbeats keep flowing); with ``claim`` (who: "step
        build, attempt 2 on host/pid") the attempt claims the run's branch, fencing out earlier attempts' pushes."""
        try:
            return await anyio.to_thread.run_sync(prepare, self.root, spec, claim)
        except CheckpointError as exc:  # a remote that cannot be reached now may be reachable on the next attempt
            raise ApplicationError(f"preparing the workspace: {exc}", type="CheckpointError") from exc

    def _runtime(self, spec: RunSpec, workspace: Path, attempt: int, spent_usd: float = 0.0) -> Runtime:
        # The run's budget, counting what its earlier steps cost (the workflow's state carries it from step to step).
        budget = RunBudget(spec.budget_usd, spent_by={"earlier steps": spent_usd}) if spec.budget_usd else None
        return Runtime(
            workspace,
            run_dir(self.root, spec.run_id),
            store=self.store,
            # The lease lapses when the heartbeats would: a worker Temporal presumes dead is also one whose
            # lease the next attempt may take, instead of waiting out a longer lease.
            lease_ttl=spec.heartbeat_timeout,
            lease_owner=LeaseOwner(socket.gethostname(), os.getpid(), f"{spec.run_id}#{attempt}"),
            budget=budget,
            # A usage limit ends the step at once: the workflow waits for the reset on a durable timer, holding
            # no worker slot, and then schedules the step again (any worker; the same session).
            limit_wait=0,
        )

    @contextlib.contextmanager
    def _as_activity_errors(self, what: str) -> Iterator[None]:
        """How a step's or a phase's ending reaches Temporal: retried, or not, and why."""
        try:
            yield
        except asyncio.CancelledError:
            if activity.is_worker_shutdown():
                # Handed back: a retryable failure, so another worker takes it (and its session) now.
                raise ApplicationError(f"worker {self.identity} shut down; the {what} resumes elsewhere") from None
            details = activity.cancellation_details()
            if details is not None and (details.timed_out or details.not_found):
                # Its heartbeat found the attempt timed out: another attempt has the step. Nobody reads this
                # attempt's result; one line says what happened (a CancelledError's traceback says nothing).
                raise _superseded(f"the {what}'s attempt timed out (this worker stalled) and was superseded") from None
            raise
        except LeaseError as exc:
            # Held by an earlier attempt not yet presumed dead (its lease lapses with its heartbeats), or taken
            # by a later one: not this attempt's to drive now; Temporal retries after a pause.
            raise _superseded(f"the {what}'s session is not this attempt's to drive: {exc}") from None
        except ValueError as exc:  # WorkflowError / IsolationError: a mistake in the workflow, no retry
            raise _mistake(str(exc), "WorkflowError") from None

    @activity.defn(name=READ_PLAN)
    async def read_plan(self, spec: RunSpec) -> Plan:
        async with heartbeating(self.heartbeat_every, lambda: {"worker": self.identity}):
            _, flow = await self._prepared(spec)
        return Plan(workflow=flow.name, steps=[PlanStep(s.name, s.on_fail) for s in flow.steps])

    @activity.defn(name=RUN_STEP)
    async def run_step(self, given: StepInput) -> StepOutcome:
        info = activity.info()
        spec = given.spec
        known: dict[str, str] = {}  # label -> session id, as this attempt's sessions appear (the heartbeats say it)
        runner: FleetRunner | None = None

        def details() -> dict[str, Any]:
            return {"sessions": runner.known if runner else known, "worker": self.identity, "attempt": info.attempt}

        # The heartbeats start first: cloning or fetching the workspace can take a while on a big repository.
        async with heartbeating(self.heartbeat_every, details):
            claim = f"step {given.step}, attempt {info.attempt} on {self.identity}"
            prepared, flow = await self._prepared(spec, claim)
            runtime = self._runtime(spec, prepared.path, info.attempt, given.spent_usd)
            runner = FleetRunner(runtime, spec.run_id, epoch=info.attempt, restored_note=prepared.note, known=known)

            async def step() -> Any:
                done = None
                with runner.halting():
                    async with checkpoints_while(prepared, spec, self.checkpoint_every, runner.supersede):
                        done = await flow.run_step(runner, given.step, outputs=given.outputs, sessions=given.sessions)
                # Recorded also when halted (a cancel): the step's row says how far it got.
                await record_step(runtime.store, spec.run_id, runtime.manifest_path, runner.known)
                return done

            try:
                with self._as_activity_errors("step"):
                    done = await halting_on_cancel(step(), lambda: runner)
            finally:
                runtime.close()
            if done is None:  # halted without a cancel: superseded (a refused push, a lost lease)
                raise _superseded(f"step {given.step}: {runner.halted or 'halted'}")
            commit = await _step_end_checkpoint(prepared, spec, f"step {given.step} ended")
        result = done.results.get(given.step)
        return StepOutcome(
            step=given.step,
            ok=result is not None and result.ok and done.failed_at is None,
            stop=done.failed_at is not None,
            skipped=result is None,
            output=_json_value(done.context.get(given.step)),
            session_id=done.sessions.get(given.step, "") or (result.session_id or "" if result else ""),
            error=(result.error or "") if result is not None else "",
            cost_usd=done.cost_usd,
            worker=self.identity,
            attempt=info.attempt,
            # Only a restore is a restore: a fresh clone's step-end commit is its checkpoint, not its origin.
            restored_from=prepared.commit or "",
            checkpoint=commit or "",
            limited_until=result.limited_until if result is not None else None,
        )

    @activity.defn(name=RUN_PHASE)
    async def run_phase(self, given: PhaseInput) -> StepOutcome:
        """One phase of a go run (clarify, goal, or one judged work round); see `_go`."""
        # Imported here: go's flow loads the SDK; `flower fleet status` & co import this module and run no phase
        from ._go import run_phase

        info = activity.info()
        known: dict[str, str] = {}
        holder: dict[str, Any] = {}

        def details() -> dict[str, Any]:
            runner = holder.get("runner")
            return {"sessions": runner.known if runner else known, "worker": self.identity, "attempt": info.attempt}

        async with heartbeating(self.heartbeat_every, details):
            claim = f"phase {given.phase}, round {given.round_no}, attempt {info.attempt} on {self.identity}"
            prepared = await self._workspace(given.spec, claim)
            # Epochs grow across the phase's activities (each pause starts a new one at attempt 1 again).
            epoch = given.resumes * given.spec.max_attempts + info.attempt
            runtime = self._runtime(given.spec, prepared.path, epoch, given.spent_usd)

            async def phase() -> StepOutcome:
                outcome = await run_phase(
                    given, runtime, prepared, epoch=epoch, holder=holder, every=self.checkpoint_every
                )
                await record_step(runtime.store, given.spec.run_id, runtime.manifest_path, holder["runner"].known)
                return outcome

            try:
                with self._as_activity_errors("phase"):
                    outcome = await halting_on_cancel(phase(), lambda: holder.get("runner"))
            finally:
                runtime.close()
            why = f"question in {outcome.step}" if outcome.question else f"{outcome.step} ended"
            commit = await _step_end_checkpoint(prepared, given.spec, why)
        outcome.worker, outcome.attempt = self.identity, info.attempt
        outcome.restored_from = prepared.commit or ""  # only a restore is a restore (see run_step)
        outcome.checkpoint = commit or ""
        return outcome


def _mistake(why: str, kind: str) -> ApplicationError:
    """The error a mistake in the run's flows.py or workflow ends its activity with: not retried, its reason in
    the run's history (`flower fleet status` and `logs` show it), and one line in the worker's log — Temporal
    logs a failure with its traceback (the worker's own frames, twice over a chained error), but benign ones at
    debug level only."""
    activity.logger.warning("run %s: %s", activity.info().workflow_id, why)
    return ApplicationError(why, type=kind, non_retryable=True, category=ApplicationErrorCategory.BENIGN)


def _superseded(why: str) -> ApplicationError:
    """The error a superseded (or not yet entitled) attempt ends with: logged by the worker in one line, as
    Temporal logs a benign failure at debug level only."""
    activity.logger.warning("%s", why)
    return ApplicationError(why, type="Superseded", category=ApplicationErrorCategory.BENIGN)


async def _step_end_checkpoint(prepared: Prepared, spec: RunSpec, reason: str) -> str | None:
    """The step's (or phase's) last checkpoint; None when it could not be pushed (logged)."""
    try:
        return await anyio.to_thread.run_sync(checkpoint, prepared, spec, reason)
    except CheckpointRefused:  # a later attempt claimed the branch; said once already, by the refusal itself
        return None
    except CheckpointError as exc:  # the step is done; its files reach the remote with the next push
        activity.logger.warning("run %s: step-end checkpoint failed: %s", spec.run_id, exc)
        return None
