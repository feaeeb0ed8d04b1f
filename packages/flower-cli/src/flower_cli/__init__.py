"""flower-cli: the flower Runtime, roles and workflows, and the ``flower`` command.

Names are imported on first use, so ``flower --help`` does not pay for the SDK's import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "CompactPolicy",
    "CredentialsError",
    "Event",
    "Lineage",
    "Manifest",
    "PLUGIN_DIR",
    "Runtime",
    "Step",
    "StepResult",
    "Workflow",
    "WorkflowError",
    "__version__",
    "build_options",
    "delegate_guard",
    "merge_hooks",
    "normalize",
    "whitelist_guard",
]

_HOMES = {
    "AgentSpec": "spec",
    "CompactPolicy": "spec",
    "CredentialsError": "runtime",
    "Event": "events",
    "Lineage": "lineage",
    "Manifest": "manifest",
    "PLUGIN_DIR": "options",
    "Runtime": "runtime",
    "Step": "workflow",
    "StepResult": "result",
    "Workflow": "workflow",
    "WorkflowError": "workflow",
    "build_options": "options",
    "delegate_guard": "guards",
    "merge_hooks": "guards",
    "normalize": "events",
    "whitelist_guard": "guards",
}

if TYPE_CHECKING:
    from .events import Event, normalize
    from .guards import delegate_guard, merge_hooks, whitelist_guard
    from .lineage import Lineage
    from .manifest import Manifest
    from .options import PLUGIN_DIR, build_options
    from .result import StepResult
    from .runtime import CredentialsError, Runtime
    from .spec import AgentSpec, CompactPolicy
    from .workflow import Step, Workflow, WorkflowError


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'flower_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
