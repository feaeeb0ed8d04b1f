"""`Fleet`: submit runs, follow them, answer and cancel them, and run a worker — the Python API under the
``flower fleet`` commands."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import Runtime
from temporalio.service import RPCError
from temporalio.worker import Worker

from ._config import FleetConfig
from ._lifetime import forget_tracebacks
from ._logs import failure_reason, history_lines
from ._model import GoSpec, RunningStep, RunSpec, RunState
from ._transport import is_not_found
from ._workflow import FleetRun

__all__ = ["Fleet", "RunNotFoundError"]

_STATUS = {
    WorkflowExecutionStatus.RUNNING: "running",
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "terminated",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "continued",
    WorkflowExecutionStatus.TIMED_OUT: "timed out",
}


class RunNotFoundError(LookupError):
    """No run of that id on this fleet's server."""


def _running(pending: Any) -> RunningStep:
    beat = pending.last_heartbeat_time.ToDatetime().isoformat() if pending.HasField("last_heartbeat_time") else ""
    state = PendingActivityState.Name(pending.state).removeprefix("PENDING_ACTIVITY_STATE_").lower()
    return RunningStep(
        step=pending.activity_id,
        worker=pending.last_worker_identity,
        attempt=pending.attempt,
        state=state.replace("_", " "),
        last_heartbeat=beat,
    )


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class Fleet:
    """A fleet on one Temporal server. ``await Fleet.connect()`` reads the environment (`FleetConfig`)."""

    def __init__(self, client: Client, config: FleetConfig) -> None:
        self.client = client
        self.config = config

    @classmethod
    async def connect(
        cls, config: FleetConfig | None = None, *, runtime: Runtime | None = None, **overrides: Any
    ) -> Fleet:
        """Connect to the fleet's server: ``config``, else the environment with ``overrides`` (address=,
        namespace=, task_queue=, root=, …) winning; on ``runtime`` (None: the SDK's default, which lives as long
        as the process — a short-lived program passes its own, see `flower_fleet._lifetime`). Raises
        `FleetConfigError` when the server cannot be reached; a call the server then refuses raises its
        ``RPCError`` (a run that does not exist: `RunNotFoundError`)."""
        config = config or FleetConfig.from_env(**overrides)
        return cls(await config.client(runtime), config)

    def _handle(self, run_id: str) -> WorkflowHandle[Any, RunState]:
        return self.client.get_workflow_handle(run_id, result_type=RunState)

    def _missing(self, error: RPCError, run_id: str, *, running: bool = False) -> NoReturn:
        """Raise `RunNotFoundError` when the server has no such run (or, ``running``, none still running); the
        server's own error otherwise (unreachable, refused: the command says so in one line)."""
        if not is_not_found(error):
            raise error
        raise RunNotFoundError(f"no {'running ' if running else ''}run {run_id!r} on {self.config.address}") from error

    async def submit(
        self,
        workflow: str = "",
        *,
        ask: str = "",
        run_id: str | None = None,
        repo: str = "",
        branch: str = "",
        shared: bool = False,
        heartbeat_timeout: float = 30.0,
        max_attempts: int = 10,
        rounds: int = 3,
        asks: int | None = None,
        question_timeout: float | None = 1800.0,
        goal: bool = True,
        budget_usd: float | None = None,
    ) -> str:
        """Start a run: of ``workflow`` (``file.py:attr`` inside the run's workspace), or a go run of ``ask`` (the
        same clarify -> goal -> judged rounds as ``flower go``: ``rounds`` judged rounds in all, ``asks``
        questions at most, each waiting ``question_timeout`` seconds for `answer` (None: forever), ``goal``
        False for no goal and no judge; ``budget_usd``: what the whole run may spend, every step counted). Its id. Submitting an id that exists (running or ended) starts nothing
        and returns it: a retried submit is safe. Raises ValueError unless exactly one of workflow and ask is
        given."""
        if bool(workflow.strip()) == bool(ask.strip()):
            raise ValueError("give a workflow (file.py:attr) or an ask, not both and not neither")
        run_id = run_id or new_run_id()
        go = GoSpec(ask.strip(), rounds, asks, question_timeout, goal) if ask.strip() else None
        spec = RunSpec(
            run_id=run_id,
            workflow=workflow or "go",
            repo=repo,
            branch=branch,
            shared=shared,
            heartbeat_timeout=heartbeat_timeout,
            max_attempts=max_attempts,
            go=go,
            budget_usd=budget_usd,
        )
        try:
            await self.client.start_workflow(
                FleetRun.run,
                spec,
                id=run_id,
                task_queue=self.config.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
        except WorkflowAlreadyStartedError as exc:
            forget_tracebacks(exc)  # it ran already: idempotent (and the error must not pin the runtime)
        return run_id

    async def result(self, run_id: str) -> RunState:
        """Wait for the run to end; its final state (a failed or cancelled run too)."""
        handle = self._handle(run_id)
        try:
            state: RunState = await handle.result()
            return state
        except WorkflowFailureError:
            return await self.state(run_id)
        except RPCError as exc:
            self._missing(exc, run_id)

    async def state(self, run_id: str) -> RunState:
        """The run as it is now: its steps, the worker and session of each, a pending question, its status."""
        handle = self._handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as exc:
            self._missing(exc, run_id)
        status = _STATUS.get(described.status or WorkflowExecutionStatus.RUNNING, "unknown")
        state: RunState | None = None
        if described.status == WorkflowExecutionStatus.COMPLETED:
            state = await handle.result()
        else:
            try:
                state = await handle.query(FleetRun.query_state, rpc_timeout=timedelta(seconds=10))
            except (TimeoutError, RPCError, RuntimeError) as exc:
                forget_tracebacks(exc)  # the client keeps a failed call's error: see _lifetime
                state = None  # an ended run with no worker to answer: the status alone
        state = state or RunState(run_id=run_id)
        state.running = [_running(p) for p in described.raw_description.pending_activities]
        # A completed workflow's own state says how the run ended: a run whose step or go phase failed returns
        # normally ("failed", with its error), and the server's "completed" must not hide that.
        if status not in ("running", "completed") or state.status == "starting":
            state.status = status if status != "running" else state.status
        if state.status not in ("running", "completed", "starting") and not state.error:
            # Ended before its workflow could record why (its plan could not be read, it was terminated): the
            # history has the reason.
            state.error = failure_reason(await handle.fetch_history())
        return state

    async def runs(self, limit: int = 50) -> AsyncIterator[str]:
        """The ids of the fleet's runs, newest first."""
        count = 0
        async for execution in self.client.list_workflows('WorkflowType="flower-fleet-run"'):
            yield execution.id
            count += 1
            if count >= limit:
                return

    async def answer(self, run_id: str, text: str) -> None:
        """Answer the question the run waits on (a Temporal signal: it waits holding no worker slot); an empty
        text skips the question (the agent makes its own call). A run waiting on no question ignores it."""
        try:
            await self._handle(run_id).signal(FleetRun.answer, text)
        except RPCError as exc:
            self._missing(exc, run_id, running=True)

    async def cancel(self, run_id: str) -> None:
        """Cancel the run; its running step stops at its next heartbeat and is recorded."""
        try:
            await self._handle(run_id).cancel()
        except RPCError as exc:
            self._missing(exc, run_id, running=True)

    async def logs(self, run_id: str) -> list[str]:
        """The run's history as lines: each step's attempts, which worker took them, how they ended."""
        try:
            history = await self._handle(run_id).fetch_history()
        except RPCError as exc:
            self._missing(exc, run_id)
        return history_lines(history)

    def worker(
        self,
        *,
        slots: int = 1,
        store: str | None = None,
        root: Path | None = None,
        heartbeat_every: float = 5.0,
        checkpoint_every: float = 300.0,
        identity: str = "",
    ) -> Worker:
        """A worker that runs up to ``slots`` steps at once, with sessions in ``store`` (the URL every worker
        shares) and workspaces under ``root`` (default: the config's fleet root); a ``--repo`` run's workspace is
        checkpointed every ``checkpoint_every`` seconds while a step runs. Run it with ``await
        worker.run()``; ``await worker.shutdown()`` stops polling and hands its running steps back."""
        # Imported here: the activities load flower's runtime and the Agent SDK (seconds on a busy machine),
        # which the client-only commands (status, logs, submit …) never use.
        from ._activities import FleetActivities

        activities = FleetActivities(
            root=(root or self.config.root).expanduser().resolve(),
            store=store,
            heartbeat_every=heartbeat_every,
            checkpoint_every=checkpoint_every,
            identity=identity,
        )
        return Worker(
            self.client,
            task_queue=self.config.task_queue,
            workflows=[FleetRun],
            activities=activities.all(),
            max_concurrent_activities=slots,
            identity=activities.identity,
            # Handed back at once: the step's next attempt elsewhere continues its session from the store.
            graceful_shutdown_timeout=timedelta(0),
            # The SDK sends heartbeats at most every 0.8 x the heartbeat timeout by default (24 s of 30 s), and a
            # cancel reaches a step only in a heartbeat's reply: send each beat, so a cancel arrives within one.
            max_heartbeat_throttle_interval=timedelta(seconds=heartbeat_every),
            default_heartbeat_throttle_interval=timedelta(seconds=heartbeat_every),
        )

    async def run_worker(self, worker: Worker) -> None:
        """Run ``worker`` until SIGTERM or SIGINT, then stop polling and hand the running steps back."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        running = asyncio.create_task(worker.run())
        waiting = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not running.done():
                await worker.shutdown()
            waiting.cancel()
            await running
