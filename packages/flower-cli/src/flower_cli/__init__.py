"""flower-cli: the flower Runtime, roles and workflows, and the ``flower`` command.

Names are imported on first use, so ``flower --help`` does not pay for the SDK's import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "Brief",
    "CompactPolicy",
    "CredentialsError",
    "Event",
    "Goal",
    "Handoff",
    "HandoffPolicy",
    "HumanChannel",
    "Lineage",
    "Manifest",
    "NotesPaths",
    "PLUGIN_DIR",
    "Runtime",
    "Step",
    "StepResult",
    "Verdict",
    "WakeState",
    "Workflow",
    "WorkflowError",
    "__version__",
    "archive_for_new",
    "build_options",
    "delegate_guard",
    "is_overflow",
    "merge_hooks",
    "normalize",
    "record_overflow",
    "resolve_window",
    "route_eof",
    "route_json",
    "route_line",
    "wake_banner",
    "wake_state",
    "whitelist_guard",
]

_HOMES = {
    "AgentSpec": "spec",
    "Brief": "brief",
    "CompactPolicy": "spec",
    "CredentialsError": "runtime",
    "Event": "events",
    "Goal": "goal",
    "Handoff": "handoff",
    "HandoffPolicy": "handoff",
    "HumanChannel": "human",
    "Lineage": "lineage",
    "Manifest": "manifest",
    "NotesPaths": "continuity",
    "PLUGIN_DIR": "options",
    "Runtime": "runtime",
    "Step": "workflow",
    "StepResult": "result",
    "Verdict": "verdict",
    "WakeState": "continuity",
    "Workflow": "workflow",
    "WorkflowError": "workflow",
    "archive_for_new": "continuity",
    "build_options": "options",
    "delegate_guard": "guards",
    "is_overflow": "handoff",
    "merge_hooks": "guards",
    "normalize": "events",
    "record_overflow": "handoff",
    "resolve_window": "handoff",
    "route_eof": "routing",
    "route_json": "routing",
    "route_line": "routing",
    "wake_banner": "continuity",
    "wake_state": "continuity",
    "whitelist_guard": "guards",
}

if TYPE_CHECKING:
    from .brief import Brief
    from .continuity import NotesPaths, WakeState, archive_for_new, wake_banner, wake_state
    from .events import Event, normalize
    from .goal import Goal
    from .guards import delegate_guard, merge_hooks, whitelist_guard
    from .handoff import Handoff, HandoffPolicy, is_overflow, record_overflow, resolve_window
    from .human import HumanChannel
    from .lineage import Lineage
    from .manifest import Manifest
    from .options import PLUGIN_DIR, build_options
    from .result import StepResult
    from .routing import route_eof, route_json, route_line
    from .runtime import CredentialsError, Runtime
    from .spec import AgentSpec, CompactPolicy
    from .verdict import Verdict
    from .workflow import Step, Workflow, WorkflowError


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'flower_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
