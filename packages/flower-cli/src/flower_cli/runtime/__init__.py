"""How one agent session runs: the `Runtime` (retries, handoffs, interrupts, the manifest and lineage it
keeps), what an agent is (`AgentSpec`, `build_options`), the event stream a UI reads, the hooks that wall
roles in, the session lease (`SessionBusy`), worktree isolation, and the seams the layers above plug into
(`Channel`, `EventSink`) and the one below it (`QueryFunction`, the call to the model).

The `Runtime` is a façade (``_runtime``): it wires together the policies its keyword arguments fill
(``_policies.RunPolicy``), the assembled store and its mirror watch (``_store``), the workbench (``_workbench``),
what each launch is built from (``_launcher``), the manifest (``_record``) and the signals (``_signals``), and
makes one `StepRun` per running step (``_step``), which owns that step's lease, its launches, the stream it
follows and the wait for the store. Where the next concerns go:

- a run-wide budget: a field of `RunPolicy` (a keyword of ``Runtime``), checked by the step between turns
  (``StepRun._turn_ended``) and between launches (``StepRun._next_launch``); over budget, the step ends as
  ``Runtime.stop`` ends it;
- a usage-limit wait: around a launch (``StepRun._launch``): a launch that ends on a usage limit waits until it
  lifts and launches the same session again;
- worker (subagent) recovery after a crash: at step start and resume (``StepRun._first_launch``), where the step
  knows the session it continues and the store holds the transcripts of the workers that died with it;
- publishing events for other processes: an `EventSink` (``Runtime.run(on_event=...)``); every event of a step
  passes through ``StepState.emit`` to it, so a publisher needs no change in the runtime.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "AgentSpec",
    "Channel",
    "CompactPolicy",
    "CredentialsError",
    "Event",
    "HARNESS_SCHEDULERS",
    "Handoff",
    "HandoffPolicy",
    "IsolatedAgentDefinition",
    "IsolationError",
    "Lineage",
    "Manifest",
    "PLUGIN_DIR",
    "QueryFunction",
    "Runtime",
    "SessionBusy",
    "StepResult",
    "Terminated",
    "UNSTORED",
    "Workers",
    "build_options",
    "delegate_guard",
    "describe_os_error",
    "explain",
    "harness_projects_dir",
    "is_overflow",
    "isolate_guard",
    "isolation_problem",
    "lease_ttl_from_env",
    "main_thread_guard",
    "merge_hooks",
    "normalize",
    "parse_token_count",
    "record_overflow",
    "resolve_window",
    "whitelist_guard",
]

_HOMES = {
    "AgentSpec": "_spec",
    "Channel": "_channel",
    "CompactPolicy": "_spec",
    "CredentialsError": "_runtime",
    "Event": "_events",
    "HARNESS_SCHEDULERS": "_guards",
    "Handoff": "_handoff",
    "HandoffPolicy": "_handoff",
    "IsolatedAgentDefinition": "_isolation",
    "IsolationError": "_isolation",
    "Lineage": "_lineage",
    "Manifest": "_manifest",
    "PLUGIN_DIR": "_options",
    "QueryFunction": "_query",
    "Runtime": "_runtime",
    "SessionBusy": "_session_lease",
    "StepResult": "_result",
    "Terminated": "_runtime",
    "UNSTORED": "_mirror",
    "Workers": "_events",
    "build_options": "_options",
    "delegate_guard": "_guards",
    "describe_os_error": "_failures",
    "explain": "_failures",
    "harness_projects_dir": "_mirror",
    "is_overflow": "_handoff",
    "isolate_guard": "_guards",
    "isolation_problem": "_isolation",
    "lease_ttl_from_env": "_session_lease",
    "main_thread_guard": "_guards",
    "merge_hooks": "_guards",
    "normalize": "_events",
    "parse_token_count": "_handoff",
    "record_overflow": "_handoff",
    "resolve_window": "_handoff",
    "whitelist_guard": "_guards",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._channel import Channel
    from ._events import Event, Workers, normalize
    from ._failures import describe_os_error, explain
    from ._guards import (
        HARNESS_SCHEDULERS,
        delegate_guard,
        isolate_guard,
        main_thread_guard,
        merge_hooks,
        whitelist_guard,
    )
    from ._handoff import Handoff, HandoffPolicy, is_overflow, parse_token_count, record_overflow, resolve_window
    from ._isolation import IsolatedAgentDefinition, IsolationError, isolation_problem
    from ._lineage import Lineage
    from ._manifest import Manifest
    from ._mirror import UNSTORED, harness_projects_dir
    from ._options import PLUGIN_DIR, build_options
    from ._query import QueryFunction
    from ._result import StepResult
    from ._runtime import CredentialsError, Runtime, Terminated
    from ._session_lease import SessionBusy, lease_ttl_from_env
    from ._spec import AgentSpec, CompactPolicy
