"""flower-cli: the flower Runtime, roles and workflows, and the ``flower`` command.

Names are imported on first use, so ``flower --help`` does not pay for the SDK's import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "AsideAnswer",
    "BRIEF_SECTIONS",
    "Brief",
    "CLARIFIER_RULES",
    "COORDINATOR_RULES",
    "Channel",
    "CompactPolicy",
    "CredentialsError",
    "Event",
    "GOAL_SECTIONS",
    "Goal",
    "HARNESS_SCHEDULERS",
    "Handoff",
    "HandoffPolicy",
    "HumanChannel",
    "IsolatedAgentDefinition",
    "IsolationError",
    "JUDGE_RULES",
    "Lineage",
    "Manifest",
    "NotesPaths",
    "ORACLE_RULES",
    "PLUGIN_DIR",
    "Runtime",
    "Step",
    "StepAbort",
    "StepResult",
    "StepRunner",
    "UNVERIFIABLE_MARK",
    "VERDICT_SECTIONS",
    "VERDICT_STATES",
    "Verdict",
    "WORKER_RULES",
    "WakeState",
    "Workers",
    "Workflow",
    "WorkflowError",
    "__version__",
    "answer_aside",
    "archive_for_new",
    "aside_context",
    "build_options",
    "clarify",
    "coordinator",
    "delegate_guard",
    "is_overflow",
    "isolate_guard",
    "judge",
    "main_thread_guard",
    "merge_hooks",
    "normalize",
    "oracle",
    "progress_line",
    "record_overflow",
    "resolve_window",
    "route_eof",
    "route_json",
    "route_line",
    "wake_banner",
    "wake_state",
    "whitelist_guard",
    "worker",
]

_HOMES = {
    "AgentSpec": "runtime._spec",
    "AsideAnswer": "go._aside",
    "BRIEF_SECTIONS": "roles._rules",
    "Brief": "go._brief",
    "CLARIFIER_RULES": "roles._rules",
    "COORDINATOR_RULES": "roles._rules",
    "Channel": "runtime._channel",
    "CompactPolicy": "runtime._spec",
    "CredentialsError": "runtime._runtime",
    "Event": "runtime._events",
    "GOAL_SECTIONS": "roles._rules",
    "Goal": "go._goal",
    "HARNESS_SCHEDULERS": "runtime._guards",
    "Handoff": "runtime._handoff",
    "HandoffPolicy": "runtime._handoff",
    "HumanChannel": "go._human",
    "IsolatedAgentDefinition": "runtime._isolation",
    "IsolationError": "runtime._isolation",
    "JUDGE_RULES": "roles._rules",
    "Lineage": "runtime._lineage",
    "Manifest": "runtime._manifest",
    "NotesPaths": "go._continuity",
    "ORACLE_RULES": "roles._rules",
    "PLUGIN_DIR": "runtime._options",
    "Runtime": "runtime._runtime",
    "Step": "workflow._engine",
    "StepAbort": "workflow._engine",
    "StepResult": "runtime._result",
    "StepRunner": "workflow._engine",
    "UNVERIFIABLE_MARK": "roles._rules",
    "VERDICT_SECTIONS": "roles._rules",
    "VERDICT_STATES": "roles._rules",
    "Verdict": "go._verdict",
    "WORKER_RULES": "roles._rules",
    "WakeState": "go._continuity",
    "Workers": "runtime._events",
    "Workflow": "workflow._engine",
    "WorkflowError": "workflow._engine",
    "answer_aside": "go._aside",
    "archive_for_new": "go._continuity",
    "aside_context": "go._aside",
    "build_options": "runtime._options",
    "clarify": "roles._catalogue",
    "coordinator": "roles._catalogue",
    "delegate_guard": "runtime._guards",
    "is_overflow": "runtime._handoff",
    "isolate_guard": "runtime._guards",
    "judge": "roles._catalogue",
    "main_thread_guard": "runtime._guards",
    "merge_hooks": "runtime._guards",
    "normalize": "runtime._events",
    "oracle": "roles._catalogue",
    "progress_line": "go._aside",
    "record_overflow": "runtime._handoff",
    "resolve_window": "runtime._handoff",
    "route_eof": "go._routing",
    "route_json": "go._routing",
    "route_line": "go._routing",
    "wake_banner": "go._continuity",
    "wake_state": "go._continuity",
    "whitelist_guard": "runtime._guards",
    "worker": "roles._catalogue",
}

if TYPE_CHECKING:
    from .go._aside import AsideAnswer, answer_aside, aside_context, progress_line
    from .go._brief import Brief
    from .go._continuity import NotesPaths, WakeState, archive_for_new, wake_banner, wake_state
    from .go._goal import Goal
    from .go._human import HumanChannel
    from .go._routing import route_eof, route_json, route_line
    from .go._verdict import Verdict
    from .roles._catalogue import clarify, coordinator, judge, oracle, worker
    from .roles._rules import (
        BRIEF_SECTIONS,
        CLARIFIER_RULES,
        COORDINATOR_RULES,
        GOAL_SECTIONS,
        JUDGE_RULES,
        ORACLE_RULES,
        UNVERIFIABLE_MARK,
        VERDICT_SECTIONS,
        VERDICT_STATES,
        WORKER_RULES,
    )
    from .runtime._channel import Channel
    from .runtime._events import Event, Workers, normalize
    from .runtime._guards import (
        HARNESS_SCHEDULERS,
        delegate_guard,
        isolate_guard,
        main_thread_guard,
        merge_hooks,
        whitelist_guard,
    )
    from .runtime._handoff import Handoff, HandoffPolicy, is_overflow, record_overflow, resolve_window
    from .runtime._isolation import IsolatedAgentDefinition, IsolationError
    from .runtime._lineage import Lineage
    from .runtime._manifest import Manifest
    from .runtime._options import PLUGIN_DIR, build_options
    from .runtime._result import StepResult
    from .runtime._runtime import CredentialsError, Runtime
    from .runtime._spec import AgentSpec, CompactPolicy
    from .workflow._engine import Step, StepAbort, StepRunner, Workflow, WorkflowError


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'flower_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
