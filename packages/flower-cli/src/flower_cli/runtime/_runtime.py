"""The Runtime: runs a role's step on the SDK, durably — stored, resumable, retried, recorded.

One Runtime per process and run dir. Each ``run()`` is a step: it builds the options, streams the SDK
through flower-resilience's ``resilient_query`` (the only retry loop), flattens messages into `Event`s,
and records a `StepResult` row in ``manifest.json``. It never raises for model or transport trouble: a
failure is a result with ``ok=False`` and every attempt's error.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio

from ._events import Event, Workers, normalize
from ._guards import delegate_guard, isolate_guard, merge_hooks, whitelist_guard
from ._handoff import Decision, HandoffLoop, HandoffPolicy, QuietRound
from ._harness_log import HarnessLog
from ._manifest import Manifest
from ._mirror import MirrorWatch, quiet_sdk_mirror_log
from ._options import build_options
from ._result import StepResult
from ._spec import AgentSpec, CompactPolicy

if TYPE_CHECKING:
    # Types only: the siblings and the SDK are imported on first use, so `flower --help` stays fast.
    from claude_agent_sdk import SessionStore

    from flower_resilience import Resilience
    from flower_stores import EphemeralPolicy, LeaseOwner, TrimPolicy
    from flower_workbench import Workbench

    from ._query import QueryFunction
    from ._session_lease import StepLease

__all__ = ["CredentialsError", "Runtime", "Terminated"]

EventSink = Callable[[Event], Any]

INTERRUPT_NOTE = (
    "(You were interrupted by the human. A tool call that was in flight may report that it was "
    "interrupted — that is a side effect of the interruption, not a problem with the environment.)"
)


class CredentialsError(RuntimeError):
    """No usable credential: the message says what is missing and how to fix it."""


class Terminated(BaseException):
    """SIGTERM/SIGHUP arrived: unwind (so the harness subprocess is closed too), then die of ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum

    def die(self) -> None:
        """End the process the way the signal would have (exit status 128+signum to the shell)."""
        signal.signal(self.signum, signal.SIG_DFL)
        os.kill(os.getpid(), self.signum)


# flower_stores.DEFAULT_LEASE_TTL, spelled out so that importing the Runtime does not load the siblings (a
# unit test checks that the two agree).
_DEFAULT_LEASE_TTL = 60.0
# How long `Runtime.stop` lets an interrupted harness end its turn before it closes it (measured: ~0.1 s in the
# middle of an in-process tool call, ~1 s in the middle of a Bash command).
_STOP_GRACE_S = 5.0


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class Runtime:
    INTERRUPTED = "interrupted-by-human"
    KILLED = "killed-by-signal"
    TAKEN_OVER = "session taken over"  # how a step's error starts when its lease was taken over mid-step

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
        lease_ttl: float = _DEFAULT_LEASE_TTL,
        lease_owner: LeaseOwner | None = None,
    ) -> None:
        """``trim``/``ephemeral``/``resilience``: True/False for the default policy on/off, or a policy.
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

        Raises `CredentialsError` without a usable credential, ``flower_stores.StoreError`` when the named or
        default store cannot be opened (``StoreUrlError``, a subclass, for a malformed URL), and ``OSError``
        when the workspace or the run dir cannot be created.
        """
        import flower_env
        import flower_resilience
        import flower_stores

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

        self.portable = portable
        self.keep_denials = keep_denials
        self.plugin_dirs = tuple(plugin_dirs)
        self.spill_threshold = spill_threshold
        self.query_fn = query_fn
        self.handoff: HandoffPolicy = (
            handoff if isinstance(handoff, HandoffPolicy) else HandoffPolicy(enabled=bool(handoff))
        )
        self._given_resilience: Resilience = (
            resilience
            if isinstance(resilience, flower_resilience.Resilience)
            else flower_resilience.Resilience(enabled=bool(resilience))
        )
        self.workbench: Workbench | None = self._make_workbench(workbench)
        self.resilience: Resilience = self._resilience_for(self.workbench)
        # Set when this runtime built the store's layers with its own trim policy, whose spill directory
        # follows the workbench (see use_workbench); None when the caller gave a TrimPolicy or a store object.
        self._trimming: tuple[flower_stores.PruningSessionStore, bool] | None = None
        given = store  # what the caller named, for the line that says how to import a transcript later
        layered = isinstance(store, (flower_stores.PruningSessionStore, flower_stores.TrimmingSessionStore))
        if layered and (trim is not False or ephemeral is not True or keep_denials != 1):
            raise ValueError(
                "store= is already a layered store (PruningSessionStore/TrimmingSessionStore) with its own "
                "policies: give trim, ephemeral and keep_denials to it, not to the Runtime"
            )
        if not layered:  # a bare SDK store, a store URL (sqlite://…, postgresql://…) or the default file
            trim_policy = trim if isinstance(trim, flower_stores.TrimPolicy) else self._trim_policy(bool(trim))
            ephemeral_policy = (
                ephemeral
                if isinstance(ephemeral, flower_stores.EphemeralPolicy)
                else flower_stores.EphemeralPolicy(enabled=bool(ephemeral))
            )
            layers = flower_stores.PruningSessionStore(
                store or self.run_dir / "sessions.db",
                self.workspace,
                policy=trim_policy,
                prune=flower_stores.PrunePolicy(keep_denials=keep_denials),
                ephemeral=ephemeral_policy,
            )
            if not isinstance(trim, flower_stores.TrimPolicy):
                self._trimming = (layers, bool(trim))
            store = layers
        assert store is not None and not isinstance(store, str)  # a layer was built over a URL or the default
        self.store: SessionStore = store
        # What flower asks of a store beyond the SDK's protocol (has this session, this entry, how full is it):
        # the layers answer it over any backend, computing from ``load`` what a bare store cannot say.
        self._index: flower_stores.SessionIndex = flower_stores.session_index(store)
        # The SDK writes through this watch: no step is recorded while the store lacks what the harness wrote.
        self._mirror = _watch(store, given, self.run_dir, self.resilience.max_offline_wait)
        quiet_sdk_mirror_log(self.harness_log.write)

        self.run_id = _new_run_id()
        self.lease = lease
        self.lease_ttl = lease_ttl
        self.lease_owner: LeaseOwner = lease_owner or flower_stores.LeaseOwner.this_process(run_id=self.run_id)
        self._lease: StepLease | None = None  # the running step's (see run)
        self.results: list[StepResult] = []
        self.manifest = Manifest(self.run_dir / "manifest.json")
        # The last failed manifest write (a full or read-only disk), kept instead of raised: see _write_manifest.
        self.manifest_error: OSError | None = None
        self.on_session: Callable[[str], Any] | None = None
        self._current: StepResult | None = None
        self._interrupt = threading.Event()
        self._interrupt_words = ""
        # `stop`: why the running step was stopped ("" while it runs on), and its live launch's stream.
        self._stop_reason = ""
        self._running = False  # from the first line of `run` to its return
        self._live: _LiveLaunch | None = None

    # --- construction helpers ---------------------------------------------------------------------

    def _make_workbench(self, workbench: bool | Workbench) -> Workbench | None:
        if not workbench:
            return None
        import flower_workbench

        wb = (
            workbench
            if isinstance(workbench, flower_workbench.Workbench)
            else flower_workbench.Workbench(self.workspace, home=self.run_dir / "workbench")
        )
        wb.refresh()
        return wb

    def _resilience_for(self, workbench: Workbench | None) -> Resilience:
        import flower_resilience

        given = self._given_resilience
        if workbench is not None and given.resume_prompt == flower_resilience.RESUME_PROMPT:
            # The library's default names nothing a run may lack; with a workbench, say where to look. A prompt
            # the caller chose is theirs and stays.
            return dataclasses.replace(given, resume_prompt=_workbench_resume_prompt(workbench))
        return given

    def use_workbench(self, workbench: bool | Workbench) -> None:
        """Run the next steps with ``workbench`` (as ``workbench=`` at construction: False none, True one at
        ``<run_dir>/workbench``, or a `Workbench`) — how a `Workflow` that brings its own applies it.

        What depends on the workbench follows: the hooks, the index in a new session's first message, where
        handoffs are saved, the resume prompt (unless the caller chose one) and, on the store this runtime
        built with ``trim=True/False``, where load-time trimming spills.
        """
        self.workbench = self._make_workbench(workbench)
        self.resilience = self._resilience_for(self.workbench)
        if self._trimming is not None:
            layers, enabled = self._trimming
            layers.policy = self._trim_policy(enabled)

    def _trim_policy(self, enabled: bool) -> TrimPolicy:
        import flower_stores

        if self.workbench is None:
            return flower_stores.TrimPolicy(enabled=enabled)
        # One spill directory, not two: load-time trimming writes where the spill guard does, so a moved
        # workbench (-W, isolation) does not leave half the spilled outputs behind in <workspace>/.flower.
        return flower_stores.TrimPolicy(enabled=enabled, spill_dirname=self.workbench.show(self.workbench.spill))

    # --- queries ----------------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.manifest.path

    @property
    def project_key(self) -> str:
        from claude_agent_sdk import project_key_for_directory

        return project_key_for_directory(str(self.workspace))

    @property
    def store_where(self) -> str:
        """The store as a user may see it (never a password)."""
        return self._mirror.where

    def has_session(self, session_id: str) -> bool:
        return self._index.has_session(self.project_key, session_id)

    def context_of(self, session_id: str) -> int:
        return self._index.last_context(self.project_key, session_id)

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)

    # --- control ----------------------------------------------------------------------------------

    def record(self) -> None:
        """Write this process's manifest rows again, after a caller changed a result (a flow's reason)."""
        self._write_manifest()

    def interrupt(self, message: str = "") -> None:
        """Ask the running step to stop at the next message and resume the same session with ``message``.

        Safe from any thread; cooperative (the break happens at the next message boundary).
        """
        self._interrupt_words = message
        self._interrupt.set()

    async def stop(self, reason: str) -> None:
        """End the running step now; ``run`` returns it, recorded with ``ok=False`` and ``error=reason``.

        The harness is interrupted (its turn ends at once, a tool call in flight included, as Esc does in Claude
        Code), so it sends the model nothing more; the step then ends as any step does: the store is checked
        for what was streamed, the lease released, the manifest row written. Nothing is resumed and no
        handoff follows. A harness that cannot be interrupted (a ``query_fn`` stand-in) or that does not end
        its turn within a few seconds is closed instead. Call it from the event loop running the step (a tool
        handler, another task); returns once the launch has ended. Nothing happens when no step runs.
        """
        if not self._running:
            return
        self._stop_reason = reason or "stopped"
        live = self._live
        if live is None:  # between launches: the step ends before the next one starts
            return
        if await live.stream.stop():
            with anyio.move_on_after(_STOP_GRACE_S):
                await live.ended.wait()
        live.scope.cancel()  # a no-op once the launch has ended

    def _stopped(self) -> bool:
        return bool(self._stop_reason)

    def rescue(self, reason: str | None = None) -> None:
        """Record the in-flight step (SIGTERM/SIGHUP/Ctrl-C path): it must not vanish from the manifest."""
        current = self._current
        if current is None or current.ended_at:
            return
        current.ended_at = time.time()
        current.ok = False
        current.error = reason or current.error or self.KILLED
        if current not in self.results:
            self.results.append(current)
        try:
            self._write_manifest(lock_timeout=2.0)
        except OSError:
            pass  # a dying process cannot do better; the stores already hold the transcript

    def install_signal_rescue(self) -> Callable[[], None]:
        """On SIGTERM/SIGHUP: record the in-flight step, then raise `Terminated` to unwind.

        Unwinding (rather than dying on the spot) lets the SDK close the Claude Code subprocess; the caller
        catches `Terminated` and calls its ``die()``. Returns a function that uninstalls the handlers.
        """
        previous: dict[int, Any] = {}

        def handler(signum: int, frame: FrameType | None) -> None:
            self.rescue()
            signal.signal(signum, signal.SIG_IGN)  # a second signal must not interrupt the unwinding
            raise Terminated(signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                previous[sig] = signal.signal(sig, handler)
            except (ValueError, OSError):  # not the main thread
                pass

        def restore() -> None:
            for sig, old in previous.items():
                signal.signal(sig, old)

        return restore

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- running ----------------------------------------------------------------------------------

    def _hooks_for(self, spec: AgentSpec, post_extra: list[Any] | None = None) -> dict[str, list[Any]]:
        pre: list[Any] = []
        post: list[Any] = []
        if spec.delegate_only:
            artifacts = (
                f"{self.workbench.show(self.workbench.root / 'artifacts')}/" if self.workbench else ".flower/artifacts/"
            )
            pre.append(delegate_guard(allow_glance=spec.glance, artifacts=artifacts))
        else:
            wall = whitelist_guard(spec.allowed_tools, role=spec.name)
            if wall is not None:
                pre.append(wall)
        if spec.agents:
            from ._isolation import isolated_workers

            isolation = isolate_guard(isolated_workers(spec.agents))
            if isolation is not None:
                pre.append(isolation)
        if self.workbench is not None:
            import flower_workbench

            post.append(flower_workbench.index_guard(self.workbench))
            if self.spill_threshold:
                post.append(flower_workbench.spill_guard(self.workbench, threshold=self.spill_threshold))
        return merge_hooks(spec.hooks, {"PreToolUse": pre, "PostToolUse": [*post, *(post_extra or [])]})

    def _options(
        self,
        spec: AgentSpec,
        *,
        resume: str | None,
        fork: bool,
        resume_at: str | None,
        post_hooks: list[Any] | None = None,
        session_id: str | None = None,
    ) -> Any:
        add_dirs = [self.workbench.root] if self.workbench is not None and self.workbench.external else []
        if self.handoff.enabled and spec.compact is None:
            # Handoff replaces the harness's compaction: left on, it would summarise the thread away (at about
            # window - 33k) before or instead of a handoff. A spec's own CompactPolicy is respected.
            spec = replace(spec, compact=CompactPolicy(mode="no_summary"))
        return build_options(
            spec,
            cwd=self.workspace,
            # The SDK writes through the mirror watch, and the watch through the lease's fence: a failed append
            # is seen and kept, a superseded driver's is refused.
            session_store=self._mirror.wrapped(self._lease.session_store if self._lease is not None else self.store),
            resume=resume,
            fork=fork,
            resume_at=resume_at,
            session_id=session_id,
            portable=self.portable,
            plugin_dirs=self.plugin_dirs,
            add_dirs=add_dirs,
            hooks=self._hooks_for(spec, post_hooks),
            stderr=self.harness_log.write,
        )

    def _first_prompt(self, spec: AgentSpec, prompt: str, resume: str | None) -> str:
        # The index goes into the first message of a NEW session, not the system prompt: a system prompt
        # that changes whenever the index does would invalidate the prompt cache on every turn.
        if self.workbench is None or not spec.workbench or resume:
            return prompt
        self.workbench.refresh()
        return f"{self.workbench.prompt_block()}\n\n---\n\n{prompt}"

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
        self._stop_reason, self._running = "", True  # before the first await: a `stop` from now on counts
        try:
            return await self._run(
                spec, prompt, step_name, resume, fork, resume_at, on_event, on_session, session_id, lease_epoch
            )
        finally:
            self._running = False

    async def _run(
        self,
        spec: AgentSpec,
        prompt: str,
        step_name: str | None,
        resume: str | None,
        fork: bool,
        resume_at: str | None,
        on_event: EventSink | None,
        on_session: Callable[[str], Any] | None,
        session_id: str | None,
        lease_epoch: int | None,
    ) -> StepResult:
        if spec.agents:
            from ._isolation import IsolationError, isolation_problem

            problem = isolation_problem(spec, self.workspace)
            if problem:
                raise IsolationError(problem)

        import flower_stores

        lease, (resume, new_id) = await self._take_lease(resume, fork, session_id, lease_epoch)  # SessionBusy
        result = StepResult(step=step_name or spec.name, started_at=time.time(), attempts=0)
        step = _Step(spec, prompt, result, on_event, on_session)
        self._current = result
        self._interrupt.clear()
        step.handoffs = self._handoff_loop(spec, result.step, prompt, step.emit)
        first = _Launch(self._first_prompt(spec, prompt, resume), resume, fork, resume_at, new_id)
        try:
            try:
                launch: _Launch | None = await self._make_room(step, first)
                while launch is not None and not self._stopped():
                    launch = await lease.launching(launch)  # a new session's id and lease; a retired one's released
                    if self._stopped():  # while the lease was being taken
                        break
                    ended = await self._stream(step, launch)
                    launch = await self._next_launch(step, ended)
                if self._stop_reason:
                    result.ok, result.error = False, self._stop_reason
                    result.errors.append(self._stop_reason)
            finally:
                self._lease = None
                await lease.end()  # raises LeaseLost when the lease was taken over (the step was stopped for it)
        except flower_stores.LeaseLost as exc:
            result.ok = False
            result.error = f"{self.TAKEN_OVER}: {exc}"
            result.errors.append(result.error)
        except Exception as exc:  # noqa: BLE001 - a step never raises for model/transport trouble
            result.ok = False
            result.error = f"{type(exc).__name__}: {exc}"
            result.errors.append(result.error)
        except BaseException:  # cancelled (Ctrl-C) or killed: record why, then let it go on
            result.ok = False
            result.error = result.error or self.INTERRUPTED
            raise
        finally:
            self._finish(step)
        step.emit(Event("result", "success" if result.ok else "error", payload=_step_payload(result)))
        return result

    # --- the steps of a run -----------------------------------------------------------------------

    async def _take_lease(
        self, resume: str | None, fork: bool, session_id: str | None, epoch: int | None
    ) -> tuple[StepLease, tuple[str | None, str | None]]:
        """The step's lease, holding the session its first launch drives, and that launch's (resume, new id)."""
        from ._session_lease import StepLease

        lease = StepLease(
            self.store, self.project_key, self.lease_owner, enabled=self.lease, ttl=self.lease_ttl, epoch=epoch
        )
        resume, new_id = lease.first(resume, fork, session_id, self.has_session)
        driven = resume if resume and not fork else new_id
        if driven:
            await lease.take(driven)
        self._lease = lease
        return lease, (resume, new_id)

    async def _make_room(self, step: _Step, launch: _Launch) -> _Launch:
        """The first launch, unless the session it continues is already past the handoff point: then that session
        is handed off first, so the new words reach a session with room for them (a turn that ends its step never
        hands off: there was nothing left to hand over then)."""
        handoffs, resume = step.handoffs, launch.resume
        if handoffs is None or not resume or launch.fork or launch.resume_at:
            return launch
        decision = handoffs.before(self.context_of(resume), stopped=step.workers.live_names())
        if not decision.hands_off:
            return launch
        step.result.session_id = resume
        successor = await self._hand_over(step, handoffs, decision)
        return _Launch(self._first_prompt(step.spec, f"{successor}\n\n---\n\n{step.prompt}", None))

    async def _stream(self, step: _Step, launch: _Launch) -> _Ended:
        """One launch of the SDK (flower-resilience retries inside it), streamed to the step's events until the
        harness is done, a human interrupts, or the handoff loop says the step stops here; a stop waits until the
        store holds what was streamed."""
        import flower_resilience

        result, handoffs, workers = step.result, step.handoffs, step.workers
        stop_hooks = [handoffs.stop_hook(lambda: bool(workers.live))] if handoffs is not None else []
        options = self._options(
            step.spec,
            resume=launch.resume,
            fork=launch.fork,
            resume_at=launch.resume_at,
            post_hooks=stop_hooks,
            session_id=launch.session_id,
        )
        stream = flower_resilience.resilient_query(
            prompt=launch.prompt,
            options=options,
            policy=self.resilience,
            on_event=step.on_resilience,
            query_fn=self.query_fn,
        )
        live = self._live = _LiveLaunch(stream, anyio.CancelScope(), anyio.Event())
        try:
            interrupted, handoff_due = await self._follow(step, stream, live)
        finally:
            self._live = None
            await stream.aclose()
            live.ended.set()
        self._absorb(result, stream.record)
        unstored = await self._mirror.settle(
            lambda line: step.emit(Event("retry", line, payload={"step": result.step}))
        )
        if unstored:  # never a success the store does not fully hold
            result.ok, result.error = False, unstored
            result.errors.append(unstored)
        return _Ended(stream.record, interrupted=interrupted, handoff_due=handoff_due)

    async def _follow(self, step: _Step, stream: Any, live: _LiveLaunch) -> tuple[bool, bool]:
        """Stream ``stream``'s messages to the step's events until the harness is done, a human interrupts, the
        handoff loop says the step stops here, or the step is stopped. Returns (interrupted, handoff due)."""
        result, handoffs, workers = step.result, step.handoffs, step.workers
        last_main: str | None = None  # the uuid of the newest main-thread message streamed
        with live.scope:  # cancelled only by `stop`, for a harness that could not be interrupted
            async for message in stream:
                self._note_session(step, message)
                self._mirror.saw(message)
                if self._interrupt.is_set():
                    if result.session_id:
                        await self._mirrored(result.session_id, last_main)
                    return True, False
                last_main = _main_thread_uuid(message) or last_main
                events = self._show(step, message)
                if (
                    handoffs is not None
                    and handoffs.observe(events, live_workers=bool(workers.live))
                    and result.session_id
                ):
                    await self._mirrored(result.session_id, last_main)
                    return False, True
                if self._stop_reason and _ends_turn(message):
                    break  # stopped: the interrupted turn has ended (a harness that idles on is closed)
        return False, False

    def _note_session(self, step: _Step, message: Any) -> None:
        """A new session id in ``message``: the step's now, and the callbacks are told at once."""
        sid = getattr(message, "session_id", None)
        if not isinstance(sid, str) or not sid or sid == step.result.session_id:
            return
        step.result.session_id = sid
        for callback in (self.on_session, step.on_session):
            if callback is not None:
                try:
                    callback(sid)
                except Exception:  # noqa: BLE001 - a UI or lineage callback must not break the step
                    pass

    def _show(self, step: _Step, message: Any) -> list[Event]:
        """``message`` as events, each emitted (a turn's end with the step and the live workers); the answer and
        the context follow them. Returns the events as the handoff loop reads them."""
        events = [step.workers.annotate(raw) for raw in normalize(message)]
        for event in events:
            if event.kind == "turn":
                step.answer.turn_ended(event)
                event = replace(
                    event,
                    payload={**event.payload, "step": step.result.step, "live_workers": step.workers.live_list()},
                )
            else:
                self._collect(step.result, event, step.answer)
            step.emit(event)
        return events

    async def _next_launch(self, step: _Step, ended: _Ended) -> _Launch | None:
        """What follows a launch: what the handoff loop decides, else the same session with a human's words after
        an interrupt; None when the step is over (or stopped)."""
        result, handoffs = step.result, step.handoffs
        if self._stop_reason:
            return None
        if handoffs is not None:
            failed = not result.ok and not ended.interrupted  # a stream the Runtime closed did not fail
            decision = handoffs.after(
                due=ended.handoff_due,
                overflow=(ended.record.error, *ended.record.errors) if failed else (),
                stopped=step.workers.live_names(),
            )
            if decision.action == "stop":
                result.ok, result.error = False, decision.reason
                result.errors.append(decision.reason)
                return None
            if decision.hands_off:
                successor = await self._hand_over(step, handoffs, decision)
                return _Launch(self._first_prompt(step.spec, successor, None))
        if ended.interrupted and result.session_id:
            return self._resume_after_interrupt(step)
        if ended.interrupted:
            result.ok, result.error = False, self.INTERRUPTED
        return None

    def _resume_after_interrupt(self, step: _Step) -> _Launch:
        """The interrupted session goes on with the human's words (the resume prompt when there were none)."""
        result = step.result
        self._interrupt.clear()
        words, self._interrupt_words = self._interrupt_words.strip(), ""
        result.interrupts += 1
        result.resumed = True
        step.emit(
            Event(
                "retry",
                "interrupted; resuming with your words" if words else "interrupted; continuing",
                payload={"step": result.step},
            )
        )
        prompt = f"{words}\n\n{INTERRUPT_NOTE}" if words else self.resilience.resume_prompt
        return _Launch(prompt, resume=result.session_id)

    def _finish(self, step: _Step) -> None:
        """Close the step's result (answer, turns, workers, end time) and write its manifest row."""
        result, workers = step.result, step.workers
        text = step.answer.final(result.ok)
        if text:
            result.text = text
        result.turns = step.answer.turns
        result.workers = workers.summary()
        if workers.live and result.ok:
            # The harness gave up waiting (its background-wait ceiling): say so, the answer may be partial.
            names = ", ".join(repr(name) for name in workers.live_names())
            result.errors.append(f"the session ended while workers were still running: {names}")
        result.ended_at = time.time()
        self._current = None
        if result not in self.results:  # rescue() may have recorded it already
            self.results.append(result)
        self._write_manifest()

    async def _mirrored(self, session_id: str, message_uuid: str | None, *, within: float = 5.0) -> None:
        """Wait (up to ``within`` seconds) until the store holds the main-thread message ``message_uuid``.

        The harness mirrors a message to the store a moment after it streams it. A session stopped in between —
        mid-turn, for a handoff or a Ctrl-C — would be resumed without the messages still in flight: the
        writing round or the human's words would follow a transcript that lost the turn's end. After ``within``
        the stop goes ahead regardless.
        """
        check = self._index.has_entry
        if not message_uuid:
            return
        deadline = time.monotonic() + within
        while True:
            try:
                if check(self.project_key, session_id, message_uuid):
                    return
            except Exception:  # noqa: BLE001 - a store that cannot answer must not stop the step
                return
            if time.monotonic() >= deadline:
                return
            await anyio.sleep(0.05)

    def _handoff_loop(self, spec: AgentSpec, step: str, prompt: str, emit: EventSink) -> HandoffLoop | None:
        if not self.handoff.enabled:
            return None
        # Without a workbench the document still lands on disk, in the run dir, where a person can read and edit
        # it (not only in the successor's prompt).
        save_dir = self.workbench.notes if self.workbench is not None else self.run_dir / "handoffs"
        model = spec.model if spec.model not in (None, "inherit") else None
        return HandoffLoop(self.handoff, step=step, original_prompt=prompt, save_dir=save_dir, emit=emit, model=model)

    async def _hand_over(self, step: _Step, handoffs: HandoffLoop, decision: Decision) -> str:
        """Retire the step's session for a fresh one, as ``decision`` says: its handoff written by itself in one
        quiet round, or built mechanically. Returns the successor's first message."""
        result = step.result
        old = result.session_id
        written = None
        if decision.action == "write" and old:
            written = await self._quiet_round(step.spec, decision.prompt, old, result)
        doc, why = handoffs.document(decision, written)
        if why:
            result.errors.append(f"handoff degraded ({why})")
        successor = handoffs.take_over(doc, old, why=why, stopped=decision.stopped)
        result.retired = list(handoffs.retired)
        result.session_id = None  # the successor's id arrives with its first message
        step.workers.retire()  # the old session's process, and its background workers, ended with it
        return successor  # (a kill from here on is recorded by rescue(), retired sessions included)

    async def _quiet_round(self, spec: AgentSpec, prompt: str, session_id: str, result: StepResult) -> QuietRound:
        """One round on ``session_id`` that is not streamed to the UI (the handoff-writing round): its cost and
        turns count for the step; no budget cap, so the session that knows the work can always write it down.
        A round that raises returns its error: any failure of the writing round degrades the handoff."""
        import flower_resilience

        try:
            options = self._options(replace(spec, max_budget_usd=None), resume=session_id, fork=False, resume_at=None)
            answer = _Answer()
            stream = flower_resilience.resilient_query(
                prompt=prompt, options=options, policy=self.resilience, query_fn=self.query_fn
            )
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
            self._absorb(result, record)
            return QuietRound(
                answer.final(record.ok), None if record.ok else (record.error or "the round did not finish")
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the writing round degrades the handoff
            return QuietRound.failed(exc)

    @staticmethod
    def _collect(result: StepResult, event: Event, answer: _Answer) -> None:
        if event.subagent:
            return
        context = event.payload.get("context")
        if isinstance(context, int) and context > result.context:
            result.context = context
        if event.kind == "text":
            answer.add(event.text)

    @staticmethod
    def _absorb(result: StepResult, record: Any) -> None:
        """Fold one resilient_query's attempt record into the step's result (costs and turns add up).

        An attempt the Runtime itself closed (a human interrupt) is not a failure and is not counted.
        """
        counted = [a for a in record.attempts if not a.closed]
        result.attempts += len(counted)
        result.cost_usd = round(result.cost_usd + float(record.cost_usd or 0.0), 6)
        result.num_turns += int(record.num_turns or 0)
        result.resumed = result.resumed or bool(record.resumed)
        result.ok = bool(record.ok)
        result.error = record.error
        result.errors.extend(record.errors)
        result.attempt_log.extend(dataclasses.asdict(a) for a in record.attempts)
        if record.session_id:
            result.session_id = record.session_id

    def _write_manifest(self, *, lock_timeout: float | None = None) -> None:
        rows = [r.row(self.run_id) for r in self.results]
        try:
            self.manifest.write(self.run_id, rows, lock_timeout=lock_timeout)
        except OSError as exc:
            # A step that ran must still return its result (the answer may be hours of work) when only its
            # record cannot be written; the previous manifest stays intact (atomic replace) and the next
            # write retries every row of this run. Callers check `manifest_error`; the CLI exits 3 on it.
            self.manifest_error = exc
        else:
            self.manifest_error = None


def _watch(store: SessionStore, given: object, run_dir: Path, offline_limit: float) -> MirrorWatch:
    """The store's watch, named as a user may see it and reach it again with ``--store``."""
    import flower_stores

    if isinstance(given, str):
        where, url = flower_stores.describe_store_url(given), given
        if url.lower().startswith(("postgresql:", "postgres:")):
            url = "'" + where + "'" if where != given else given  # never the password: the user fills it in
    else:
        backend = getattr(store, "backend", store)
        path = getattr(backend, "path", None)
        where = str(path) if path is not None else type(backend).__name__
        url = f"sqlite://{Path(path).resolve()}" if path is not None else ""
    return MirrorWatch(
        store, where=where, store_url=url or None, spool=run_dir / "unstored", offline_limit=offline_limit
    )


def _workbench_resume_prompt(workbench: Workbench) -> str:
    return (
        "The previous round was interrupted before it finished. Check what is already done, in the working "
        f"directory and in the workbench `{workbench.show(workbench.root)}/`, continue from where it stopped, "
        "and do not start over."
    )


class _Answer:
    """The step's answer: the text of the final turn's result, not every turn's prose joined together.

    A coordinator's first turn ("dispatched two workers") is not its answer; the turn after the last
    worker's notification is. When the final result carries no text, the main thread's prose of that turn
    stands in; a failed attempt never wipes text that came before it.
    """

    def __init__(self) -> None:
        self.turns = 0
        self._last: str | None = None  # text of the latest finished turn
        self._pending: list[str] = []  # main-thread prose since then

    def add(self, text: str) -> None:
        if text.strip():
            self._pending.append(text.strip())

    def turn_ended(self, event: Event) -> None:
        self.turns += 1
        prose = "\n".join(self._pending).strip()
        self._pending = []
        if event.payload.get("is_error"):
            self._last = prose or self._last
            return
        stated = str(event.payload.get("text") or "").strip()
        self._last = stated or prose or self._last

    def final(self, ok: bool) -> str:
        unfinished = "\n".join(self._pending).strip()
        if ok:
            return self._last or unfinished
        return unfinished or self._last or ""


@dataclass
class _Step:
    """One ``run``'s state, which its named steps share: what it runs, what it has seen so far, whom it tells."""

    spec: AgentSpec
    prompt: str  # as the caller gave it: a degraded handoff's scene and a resumed session's successor quote it
    result: StepResult
    on_event: EventSink | None
    on_session: Callable[[str], Any] | None
    handoffs: HandoffLoop | None = None
    workers: Workers = field(default_factory=Workers)
    answer: _Answer = field(default_factory=_Answer)

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def on_resilience(self, ev: Any) -> None:
        self.emit(Event("retry", ev.message, payload={"step": self.result.step, **_resilience_payload(ev)}))


@dataclass(frozen=True)
class _Launch:
    """One launch of the SDK: its prompt and the session it continues. A fork or a roll-back point applies to the
    step's first launch only; what follows continues the session that launch produced (the original re-sent
    resume_at on every attempt)."""

    prompt: str
    resume: str | None = None
    fork: bool = False
    resume_at: str | None = None
    session_id: str | None = None  # the id of the new session it starts (its lease is taken first)


@dataclass(frozen=True)
class _LiveLaunch:
    """The launch streaming now, as `Runtime.stop` reaches it: its stream, the scope around its iteration, and an
    event set once the harness is closed."""

    stream: Any  # flower_resilience.ResilientQuery
    scope: anyio.CancelScope
    ended: anyio.Event


@dataclass(frozen=True)
class _Ended:
    """How a launch's stream ended: ``record`` is flower-resilience's record of its attempts."""

    record: Any
    interrupted: bool = False
    handoff_due: bool = False


def _ends_turn(message: Any) -> bool:
    """Is ``message`` the result that ends a turn of the harness?"""
    return type(message).__name__ == "ResultMessage"


def _main_thread_uuid(message: Any) -> str | None:
    """The transcript uuid of a main-thread user or assistant message (a worker's, or any other kind: None)."""
    from claude_agent_sdk import AssistantMessage, UserMessage

    if isinstance(message, (UserMessage, AssistantMessage)) and message.parent_tool_use_id is None:
        return message.uuid or None
    return None


def _step_payload(result: StepResult) -> dict[str, Any]:
    return {
        "step": result.step,
        "session_id": result.session_id,
        "ok": result.ok,
        "is_error": not result.ok,
        "cost_usd": result.cost_usd,
        "num_turns": result.num_turns,
        "turns": result.turns,
        "text": result.text,
        "error": result.error,
        "workers": result.workers,
        "retired": result.retired,
        "duration_s": result.duration_s,
    }


def _resilience_payload(ev: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(ev) and not isinstance(ev, type):
        return {k: v for k, v in dataclasses.asdict(ev).items() if k != "message"}
    return {}
