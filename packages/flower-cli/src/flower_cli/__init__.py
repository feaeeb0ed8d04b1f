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
    "AgentSpec": "spec",
    "AsideAnswer": "aside",
    "BRIEF_SECTIONS": "rules",
    "Brief": "brief",
    "CLARIFIER_RULES": "rules",
    "COORDINATOR_RULES": "rules",
    "Channel": "channel",
    "CompactPolicy": "spec",
    "CredentialsError": "runtime",
    "Event": "events",
    "GOAL_SECTIONS": "rules",
    "Goal": "goal",
    "HARNESS_SCHEDULERS": "guards",
    "Handoff": "handoff",
    "HandoffPolicy": "handoff",
    "HumanChannel": "human",
    "IsolatedAgentDefinition": "isolation",
    "IsolationError": "isolation",
    "JUDGE_RULES": "rules",
    "Lineage": "lineage",
    "Manifest": "manifest",
    "NotesPaths": "continuity",
    "ORACLE_RULES": "rules",
    "PLUGIN_DIR": "options",
    "Runtime": "runtime",
    "Step": "workflow",
    "StepAbort": "workflow",
    "StepResult": "result",
    "StepRunner": "workflow",
    "UNVERIFIABLE_MARK": "rules",
    "VERDICT_SECTIONS": "rules",
    "VERDICT_STATES": "rules",
    "Verdict": "verdict",
    "WORKER_RULES": "rules",
    "WakeState": "continuity",
    "Workers": "events",
    "Workflow": "workflow",
    "WorkflowError": "workflow",
    "answer_aside": "aside",
    "archive_for_new": "continuity",
    "aside_context": "aside",
    "build_options": "options",
    "clarify": "roles",
    "coordinator": "roles",
    "delegate_guard": "guards",
    "is_overflow": "handoff",
    "isolate_guard": "guards",
    "judge": "roles",
    "main_thread_guard": "guards",
    "merge_hooks": "guards",
    "normalize": "events",
    "oracle": "roles",
    "progress_line": "aside",
    "record_overflow": "handoff",
    "resolve_window": "handoff",
    "route_eof": "routing",
    "route_json": "routing",
    "route_line": "routing",
    "wake_banner": "continuity",
    "wake_state": "continuity",
    "whitelist_guard": "guards",
    "worker": "roles",
}

if TYPE_CHECKING:
    from .aside import AsideAnswer, answer_aside, aside_context, progress_line
    from .brief import Brief
    from .channel import Channel
    from .continuity import NotesPaths, WakeState, archive_for_new, wake_banner, wake_state
    from .events import Event, Workers, normalize
    from .goal import Goal
    from .guards import (
        HARNESS_SCHEDULERS,
        delegate_guard,
        isolate_guard,
        main_thread_guard,
        merge_hooks,
        whitelist_guard,
    )
    from .handoff import Handoff, HandoffPolicy, is_overflow, record_overflow, resolve_window
    from .human import HumanChannel
    from .isolation import IsolatedAgentDefinition, IsolationError
    from .lineage import Lineage
    from .manifest import Manifest
    from .options import PLUGIN_DIR, build_options
    from .result import StepResult
    from .roles import clarify, coordinator, judge, oracle, worker
    from .routing import route_eof, route_json, route_line
    from .rules import (
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
    from .runtime import CredentialsError, Runtime
    from .spec import AgentSpec, CompactPolicy
    from .verdict import Verdict
    from .workflow import Step, StepAbort, StepRunner, Workflow, WorkflowError


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'flower_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
