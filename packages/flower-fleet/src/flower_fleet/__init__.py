"""flower-fleet: flower workflows on many machines, on Temporal — each run a durable workflow, each step an
activity that heartbeats, a dead machine's step resumed elsewhere in the same session.

Names are imported on first use: ``flower --help`` imports this package (for its ``fleet`` command) and must
not pay for the Temporal SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

__all__ = [
    "Fleet",
    "FleetActivities",
    "FleetConfig",
    "FleetConfigError",
    "FleetRun",
    "GoSpec",
    "PhaseInput",
    "Plan",
    "PlanStep",
    "RunNotFoundError",
    "RunSpec",
    "RunState",
    "RunningStep",
    "StepInput",
    "StepOutcome",
    "__version__",
    "step_session_id",
]

_HOMES = {
    "Fleet": "_client",
    "FleetActivities": "_activities",
    "FleetConfig": "_config",
    "FleetConfigError": "_config",
    "FleetRun": "_workflow",
    "GoSpec": "_model",
    "PhaseInput": "_model",
    "Plan": "_model",
    "PlanStep": "_model",
    "RunNotFoundError": "_client",
    "RunSpec": "_model",
    "RunState": "_model",
    "RunningStep": "_model",
    "StepInput": "_model",
    "StepOutcome": "_model",
    "step_session_id": "_ids",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from ._activities import FleetActivities
    from ._client import Fleet, RunNotFoundError
    from ._config import FleetConfig, FleetConfigError
    from ._ids import step_session_id
    from ._model import GoSpec, PhaseInput, Plan, PlanStep, RunningStep, RunSpec, RunState, StepInput, StepOutcome
    from ._workflow import FleetRun
