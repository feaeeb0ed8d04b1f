"""The Runtime: runs a role's step on the SDK, durably — stored, resumable, retried, recorded.

One Runtime per process and run dir. It is a façade: it checks the credentials, makes the run dir, and wires
together what does the work — the policies (``_policies``), the store (``_store``), the workbench
(``_workbench``), one `StepRun` per running step (``_step``: the lease, the launches, the stream, the mirror
watch, handoffs and interrupts), the signals (``_signals``) and the manifest (``_record``). A step never raises
for model or transport trouble: a failure is a result with ``ok=False`` and every attempt's error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import SessionStore

import flower_env
from flower_resilience import Resilience
from flower_stores import EphemeralPolicy, LeaseOwner, TrimPolicy
from flower_workbench import Workbench

from ._budget import RunBudget
from ._events import EventSink
from ._handoff import HandoffPolicy
from ._harness_log import HarnessLog
from ._launcher import Launch, Launcher
from ._limit_wait import DEFAULT_LIMIT_WAIT, LIMITED, SPEND_CAPPED
from ._manifest import Manifest
from ._policies import DEFAULT_LEASE_TTL, RunPolicy
from ._record import INTERRUPTED, KILLED, RunRecord, new_run_id
from ._result import StepResult
from ._session_lease import TAKEN_OVER
from ._signals import Interrupt, Terminated, install_signal_rescue
from ._spec import AgentSpec
from ._step import StepRun
from ._step_state import StepState
from ._store import RunStore
from ._workbench import make_workbench, resilience_for

if TYPE_CHECKING:
    from ._query import QueryFunction

__all__ = ["CredentialsError", "Runtime", "Terminated"]


class CredentialsError(RuntimeError):
    """No usable credential: the message says what is missing and how to fix it."""


class Runtime:
    """A run dir's durable runner of steps (see the module docstring). Its keyword arguments:

    ``trim``/``ephemeral``/``resilience``: True/False for the default policy on/off, or a policy.
    ``workbench``: False for none, True for one at ``<run_dir>/workbench``, or a `Workbench`.
    ``handoff``: True for the default `HandoffPolicy`, False to let the harness compact instead, or a policy.
    ``store``: any SDK `SessionStore`, a store URL (``sqlite:///path/sessions.db``, ``postgresql://…``, see
    ``flower_stores.store_from_url``) or None (``<run_dir>/sessions.db``); each gets a `PruningSessionStore`
    over it, which ``trim``, ``ephemeral`` and ``keep_denials`` configure. A store that already is one of
    flower-stores' layers is used as it is, with its own policies: giving those three too is a ValueError,
    not a silent no-op.
    ``query_fn``: what each launch of the model calls (`QueryFunction`, ``claude_agent_sdk.query``'s keyword
    signature); None for the SDK's own, which closes its subprocess when the step stops early. Every launch
    goes through flower-resilience with it, the handoff-writing round included.
    ``lease``: one driver per session. Before a launch the step takes the store's lease of the session it
    drives (``flower_stores``' session lease; a new session's id is chosen first, so that is before the
    harness starts), keeps it renewed every ``lease_ttl / 3`` s, gives the SDK the fenced view (a process
    whose lease was taken over cannot append), and releases it when the step ends. Another process's live
    lease makes ``run`` raise `SessionBusy` before anything runs; a lease of a dead process of this
    machine is taken over at once, any other once it expires (``lease_ttl`` seconds after its holder's
    last renewal). A lease lost mid-step ends the step with ``ok=False`` and an error starting
    ``Runtime.TAKEN_OVER``. ``lease_owner`` names this process in the lease (default
    ``LeaseOwner.this_process(run_id=self.run_id)``). ``lease=False``, or a store that grants no leases
    (a bare SDK store such as ``InMemorySessionStore``), runs without one.
    ``budget``: what the whole run may spend, in USD or as a `RunBudget` (share one between runtimes — a
    side runtime, a kept ``notes/budget.json`` — to count them together). Every step's cost counts against it;
    it is checked between turns and between launches: once spent, the turn in flight finishes, no new turn or
    step starts, and the step ends with ``ok=False`` and an error starting ``BUDGET_SPENT`` (see
    `stopped_by_budget`). A ``notice`` event says once when 80 % is spent.
    ``limit_wait``: the longest usage-limit reset (seconds) a step waits for, sending no model request, before it
    resumes the same session (default 6 h; 0: never wait). A reset further away ends the step with an error
    starting ``Runtime.LIMITED`` and ``limited_until`` set; a spend cap ends it at once (``Runtime.SPEND_CAPPED``).

    Making one raises `CredentialsError` without a usable credential, ``flower_stores.StoreError`` when the named or
    default store cannot be opened (``StoreUrlError``, a subclass, for a malformed URL), and ``OSError``
    when the workspace or the run dir cannot be created.
    """

    INTERRUPTED = INTERRUPTED
    KILLED = KILLED
    TAKEN_OVER = TAKEN_OVER  # how a step's error starts when its lease was taken over mid-step
    LIMITED = LIMITED  # how a step's error starts when it stopped on a usage limit it did not wait out
    SPEND_CAPPED = SPEND_CAPPED  # how a step's error starts when a spend cap refused its requests

    def __init__(
        self,
        workspace: Path | str,
        run_dir: Path | str = "runs",
        *,
        portable: bool = True,
        trim: bool | TrimPolicy = False,
        ephemeral: bool | EphemeralPolicy = True,
        keep_denials: int = 1,
        workbench: bool | Workbench = False,
        spill_threshold: int | None = 4000,
        resilience: bool | Resilience = True,
        handoff: bool | HandoffPolicy = True,
        store: SessionStore | str | None = None,
        plugin_dirs: tuple[Path | str, ...] = (),
        query_fn: QueryFunction | None = None,
        lease: bool = True,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        lease_owner: LeaseOwner | None = None,
        budget: float | RunBudget | None = None,
        limit_wait: float = DEFAULT_LIMIT_WAIT,
    ) -> None:
        """See the class docstring for what each keyword means and what making one raises."""
        self.workspace = Path(workspace).expanduser().resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        run_path = Path(run_dir).expanduser()
        # A relative run dir lives under the workspace, not the process's CWD: one run's state never splits
        # across two trees when the workspace is somewhere else.
        self.run_dir = (run_path if run_path.is_absolute() else self.workspace / run_path).resolve()
        self.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: transcripts hold every tool output
        # Claude Code's own stderr goes here, not onto the terminal in the middle of the progress.
        self.harness_log = HarnessLog(self.run_dir / "harness.log")

        flower_env.load_dotenv()
        problem = flower_env.check_credentials()
        if problem:
            raise CredentialsError(problem)

        run_id = new_run_id()
        self.policy = RunPolicy.resolve(
            run_id=run_id,
            portable=portable,
            plugin_dirs=plugin_dirs,
            spill_threshold=spill_threshold,
            query_fn=query_fn,
            handoff=handoff,
            resilience=resilience,
            lease=lease,
            lease_ttl=lease_ttl,
            lease_owner=lease_owner,
            budget=budget,
            limit_wait=limit_wait,
        )
        self.workbench: Workbench | None = make_workbench(workbench, self.workspace, self.run_dir)
        self.resilience: Resilience = resilience_for(self.policy.resilience, self.workbench)
        self._store = RunStore(
            store,
            workspace=self.workspace,
            run_dir=self.run_dir,
            trim=trim,
            ephemeral=ephemeral,
            keep_denials=keep_denials,
            workbench=self.workbench,
            offline_limit=self.resilience.max_offline_wait,
            log=self.harness_log.write,
        )
        self.store: SessionStore = self._store.session_store
        self._record = RunRecord(self.run_dir, run_id)
        self.on_session: Callable[[str], Any] | None = None
        self._interrupt = Interrupt()
        self._step: StepRun | None = None  # the running step, from the first line of `run` to its return

    # --- what it runs with ------------------------------------------------------------------------

    def use_workbench(self, workbench: bool | Workbench) -> None:
        """Run the next steps with ``workbench`` (as ``workbench=`` at construction: False none, True one at
        ``<run_dir>/workbench``, or a `Workbench`) — how a `Workflow` that brings its own applies it.

        What depends on the workbench follows: the hooks, the index in a new session's first message, where
        handoffs are saved, the resume prompt (unless the caller chose one) and, on the store this runtime
        built with ``trim=True/False``, where load-time trimming spills.
        """
        self.workbench = make_workbench(workbench, self.workspace, self.run_dir)
        self.resilience = resilience_for(self.policy.resilience, self.workbench)
        self._store.use_workbench(self.workbench)

    @property
    def handoff(self) -> HandoffPolicy:
        return self.policy.handoff

    @property
    def lease_owner(self) -> LeaseOwner:
        return self.policy.lease_owner

    def _launcher(self) -> Launcher:
        """What the next step's launches are built from: this runtime's settings as they are now."""
        return Launcher(
            self.workspace, self.run_dir, self.policy, self.workbench, self.resilience, self._store, self.harness_log
        )

    # --- queries ----------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self._record.run_id

    @property
    def results(self) -> list[StepResult]:
        return self._record.results

    @property
    def manifest(self) -> Manifest:
        return self._record.manifest

    @property
    def manifest_path(self) -> Path:
        return self._record.manifest.path

    @property
    def manifest_error(self) -> OSError | None:
        """The last failed manifest write (a full or read-only disk), kept instead of raised."""
        return self._record.manifest_error

    @property
    def project_key(self) -> str:
        return self._store.project_key

    @property
    def store_where(self) -> str:
        """The store as a user may see it (never a password)."""
        return self._store.where

    def has_session(self, session_id: str) -> bool:
        return self._store.has_session(session_id)

    def context_of(self, session_id: str) -> int:
        return self._store.context_of(session_id)

    def total_cost(self) -> float:
        return self._record.total_cost()

    @property
    def budget(self) -> RunBudget | None:
        """The run's budget (None: no limit)."""
        return self.policy.budget

    # --- control ----------------------------------------------------------------------------------

    def record(self) -> None:
        """Write this process's manifest rows again, after a caller changed a result (a flow's reason)."""
        self._record.write()

    def interrupt(self, message: str = "") -> None:
        """Ask the running step to stop at the next message and resume the same session with ``message``.

        Safe from any thread; cooperative (the break happens at the next message boundary).
        """
        self._interrupt.ask(message)

    async def stop(self, reason: str) -> None:
        """End the running step now; ``run`` returns it, recorded with ``ok=False`` and ``error=reason``.

        The harness is interrupted (its turn ends at once, a tool call in flight included, as Esc does in Claude
        Code), so it sends the model nothing more; the step then ends as any step does: the store is checked
        for what was streamed, the lease released, the manifest row written. Nothing is resumed and no
        handoff follows. A harness that cannot be interrupted (a ``query_fn`` stand-in) or that does not end
        its turn within a few seconds is closed instead. Call it from the event loop running the step (a tool
        handler, another task); returns once the launch has ended. Nothing happens when no step runs.
        """
        if self._step is not None:
            await self._step.stop(reason)

    def rescue(self, reason: str | None = None) -> None:
        """Record the in-flight step (SIGTERM/SIGHUP/Ctrl-C path): it must not vanish from the manifest."""
        self._record.rescue(reason)

    def install_signal_rescue(self) -> Callable[[], None]:
        """On SIGTERM/SIGHUP: record the in-flight step, then raise `Terminated` to unwind.

        Unwinding (rather than dying on the spot) lets the SDK close the Claude Code subprocess; the caller
        catches `Terminated` and calls its ``die()``. Returns a function that uninstalls the handlers.
        """
        return install_signal_rescue(self.rescue)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- running ----------------------------------------------------------------------------------

    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: EventSink | None = None,
        on_session: Callable[[str], Any] | None = None,
        session_id: str | None = None,
        lease_epoch: int | None = None,
    ) -> StepResult:
        """Run one step of ``spec`` to its end and record it; never raises for model or transport trouble.

        A step is over when the harness is: the main thread's last turn has ended and no background worker
        is live (each worker's notification wakes the main thread for another turn, with its own SDK
        result). The answer is the final turn's text; cost and turns add up over every turn and attempt.
        ``on_event`` sees every event, then one ``result`` event for the whole step. ``on_session`` (and
        the ``on_session`` attribute) is called the moment a session id appears — a workflow writes its
        lineage there, so a crash right after still finds the session.

        ``session_id`` (a uuid) is the id of the new session the step starts (without it the Runtime picks one);
        with ``resume`` too, the resumed session wins only if the store has it, else the new session gets
        ``session_id`` — a retried step continues "the same id" whether or not its first attempt stored
        anything. ``lease_epoch`` is the epoch the step's lease is taken at (a fleet passes its attempt
        number; it must exceed the session's stored epoch).

        Raises `IsolationError` (before anything runs) when ``spec`` has an isolated worker and the
        workspace is not a git repository with a commit, `SessionBusy` (before anything runs) when another
        process holds the lease of the session the step would drive, and ``flower_stores.LeaseLost`` when
        ``lease_epoch`` is not above the session's stored epoch (a later attempt has it).
        """
        result = StepResult(step=step_name or spec.name, attempts=0)
        state = StepState(spec, prompt, result, on_event, (self._tell_session, on_session))
        # Made before the first await: a `stop` from now on counts.
        step = self._step = StepRun(self._launcher(), self._record, self._interrupt, state)
        try:
            return await step.run(Launch(prompt, resume, fork, resume_at, session_id), lease_epoch)
        finally:
            self._step = None

    def _tell_session(self, session_id: str) -> None:
        if self.on_session is not None:
            self.on_session(session_id)
