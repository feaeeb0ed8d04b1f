"""flower-cli: the flower Runtime, roles and workflows, and the ``flower`` command.

Names are imported on first use, so ``flower --help`` does not pay for the SDK's import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "BRIEF_SECTIONS",
    "CLARIFIER_RULES",
    "COORDINATOR_RULES",
    "Channel",
    "CompactPolicy",
    "CredentialsError",
    "Event",
    "GOAL_SECTIONS",
    "HARNESS_SCHEDULERS",
    "IsolatedAgentDefinition",
    "IsolationError",
    "JUDGE_RULES",
    "Lineage",
    "Manifest",
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
    "WORKER_RULES",
    "Workers",
    "Workflow",
    "WorkflowError",
    "__version__",
    "build_options",
    "clarify",
    "coordinator",
    "delegate_guard",
    "isolate_guard",
    "judge",
    "main_thread_guard",
    "merge_hooks",
    "normalize",
    "oracle",
    "whitelist_guard",
    "worker",
]

_HOMES = {
    "AgentSpec": "spec",
    "BRIEF_SECTIONS": "rules",
    "CLARIFIER_RULES": "rules",
    "COORDINATOR_RULES": "rules",
    "Channel": "channel",
    "CompactPolicy": "spec",
    "CredentialsError": "runtime",
    "Event": "events",
    "GOAL_SECTIONS": "rules",
    "HARNESS_SCHEDULERS": "guards",
    "IsolatedAgentDefinition": "roles",
    "IsolationError": "roles",
    "JUDGE_RULES": "rules",
    "Lineage": "lineage",
    "Manifest": "manifest",
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
    "WORKER_RULES": "rules",
    "Workers": "events",
    "Workflow": "workflow",
    "WorkflowError": "workflow",
    "build_options": "options",
    "clarify": "roles",
    "coordinator": "roles",
    "delegate_guard": "guards",
    "isolate_guard": "guards",
    "judge": "roles",
    "main_thread_guard": "guards",
    "merge_hooks": "guards",
    "normalize": "events",
    "oracle": "roles",
    "whitelist_guard": "guards",
    "worker": "roles",
}

if TYPE_CHECKING:
    from .channel import Channel
    from .events import Event, Workers, normalize
    from .guards import HARNESS_SCHEDULERS, delegate_guard, isolate_guard, main_thread_guard, merge_hooks, whitelist_guard
    from .lineage import Lineage
    from .manifest import Manifest
    from .options import PLUGIN_DIR, build_options
    from .result import StepResult
    from .roles import IsolatedAgentDefinition, IsolationError, clarify, coordinator, judge, oracle, worker
    from .rules import BRIEF_SECTIONS, CLARIFIER_RULES, COORDINATOR_RULES, GOAL_SECTIONS, JUDGE_RULES, ORACLE_RULES, UNVERIFIABLE_MARK, VERDICT_SECTIONS, VERDICT_STATES, WORKER_RULES
    from .runtime import CredentialsError, Runtime
    from .spec import AgentSpec, CompactPolicy
    from .workflow import Step, StepAbort, StepRunner, Workflow, WorkflowError


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'flower_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
