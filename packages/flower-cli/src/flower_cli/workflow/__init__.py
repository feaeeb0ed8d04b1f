"""The workflow engine: `Step`s run in order by a `Workflow`, each a fresh session, a resume or a fork, with
conditions, gates, retries and judged rounds. A run's state is typed: the `RunContext` a step's callables may
ask for (``run``) and the `RunResult` `Workflow.run` returns.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._engine import Workflow as Workflow
    from ._errors import StepAbort as StepAbort
    from ._errors import WorkflowError as WorkflowError
    from ._state import Ctx as Ctx
    from ._state import RunContext as RunContext
    from ._state import RunResult as RunResult
    from ._state import StepRunner as StepRunner
    from ._step import Step as Step

__all__ = lazy_surface(__name__)
