"""How one agent session runs: the `Runtime` (retries, handoffs, interrupts, the manifest and lineage it
keeps), what an agent is (`AgentSpec`, `build_options`), the event stream a UI reads, the hooks that wall
roles in, the session lease (`SessionBusy`), worktree isolation, and the seams the layers above plug into
(`Channel`, `EventSink`) and the one below it (`QueryFunction`, the call to the model).

The `Runtime` is a façade (``_runtime``): it wires together the policies its keyword arguments fill
(``_policies.RunPolicy``), the assembled store and its mirror watch (``_store``), the workbench (``_workbench``),
what each launch is built from (``_launcher``), the manifest (``_record``) and the signals (``_signals``), and
makes one `StepRun` per running step (``_step``), which owns that step's lease, its launches, the stream it
follows and the wait for the store. Where the next concerns go:

- a run-wide budget (built: ``_budget``): `RunBudget`, a field of `RunPolicy` (``Runtime(budget=...)``), fed by
  every step and checked by the step before its first launch, at each turn's end and between launches; spent,
  the step ends as ``Runtime.stop`` ends it, recorded as stopped by the budget;
- a usage-limit wait (``_limit_wait``, built): a launch that ends on a usage limit waits until it lifts and
  launches the same session again (``StepRun._after_limit``), or ends the step recorded with the reset;
- worker (subagent) recovery after a crash (built: ``_recovery``, over the supervision ledger of ``_ledger``): at
  step start and resume (``StepRun._first_launch``), where the step knows the session it continues and the store
  holds the transcripts of the workers that died with it;
- publishing events for other processes: an `EventSink` (``Runtime.run(on_event=...)``); every event of a step
  passes through ``StepState.emit`` to it, so a publisher needs no change in the runtime.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._budget import BUDGET_SPENT as BUDGET_SPENT
    from ._budget import RunBudget as RunBudget
    from ._budget import stopped_by_budget as stopped_by_budget
    from ._channel import Channel as Channel
    from ._events import Event as Event
    from ._events import Workers as Workers
    from ._events import normalize as normalize
    from ._failures import describe_os_error as describe_os_error
    from ._failures import explain as explain
    from ._guards import HARNESS_SCHEDULERS as HARNESS_SCHEDULERS
    from ._guards import delegate_guard as delegate_guard
    from ._guards import isolate_guard as isolate_guard
    from ._guards import main_thread_guard as main_thread_guard
    from ._guards import merge_hooks as merge_hooks
    from ._guards import whitelist_guard as whitelist_guard
    from ._handoff import Handoff as Handoff
    from ._handoff import HandoffPolicy as HandoffPolicy
    from ._handoff import is_overflow as is_overflow
    from ._handoff import parse_token_count as parse_token_count
    from ._handoff import record_overflow as record_overflow
    from ._handoff import resolve_window as resolve_window
    from ._harness_files import UNSTORED as UNSTORED
    from ._harness_files import harness_projects_dir as harness_projects_dir
    from ._isolation import IsolatedAgentDefinition as IsolatedAgentDefinition
    from ._isolation import IsolationError as IsolationError
    from ._isolation import isolation_problem as isolation_problem
    from ._ledger import WorkerRecord as WorkerRecord
    from ._ledger import worker_ledger as worker_ledger
    from ._limit_wait import DEFAULT_LIMIT_WAIT as DEFAULT_LIMIT_WAIT
    from ._limit_wait import parse_wait as parse_wait
    from ._limits_seen import last_limit as last_limit
    from ._limits_seen import limits_path as limits_path
    from ._lineage import Lineage as Lineage
    from ._manifest import Manifest as Manifest
    from ._options import PLUGIN_DIR as PLUGIN_DIR
    from ._options import build_options as build_options
    from ._query import QueryFunction as QueryFunction
    from ._result import StepResult as StepResult
    from ._runtime import CredentialsError as CredentialsError
    from ._runtime import Runtime as Runtime
    from ._runtime import Terminated as Terminated
    from ._session_lease import SessionBusy as SessionBusy
    from ._session_lease import lease_ttl_from_env as lease_ttl_from_env
    from ._spec import AgentSpec as AgentSpec
    from ._spec import CompactPolicy as CompactPolicy

__all__ = lazy_surface(__name__)
