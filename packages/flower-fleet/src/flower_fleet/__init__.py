"""flower-fleet: flower workflows on many machines, on Temporal — each run a durable workflow, each step an
activity that heartbeats, a dead machine's step resumed elsewhere in the same session.

Names are imported on first use (see `flower_fleet._lazy`): ``flower --help`` imports this package (for its
``fleet`` command) and must not pay for the Temporal SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_surface
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._activities import FleetActivities as FleetActivities
    from ._client import Fleet as Fleet
    from ._client import RunNotFoundError as RunNotFoundError
    from ._config import FleetConfig as FleetConfig
    from ._config import FleetConfigError as FleetConfigError
    from ._ids import step_session_id as step_session_id
    from ._model import GoSpec as GoSpec
    from ._model import PhaseInput as PhaseInput
    from ._model import Plan as Plan
    from ._model import PlanStep as PlanStep
    from ._model import RunningStep as RunningStep
    from ._model import RunSpec as RunSpec
    from ._model import RunState as RunState
    from ._model import StepInput as StepInput
    from ._model import StepOutcome as StepOutcome
    from ._workflow import FleetRun as FleetRun

__all__ = lazy_surface(__name__)
