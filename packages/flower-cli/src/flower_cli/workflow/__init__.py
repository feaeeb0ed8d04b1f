"""The workflow engine: `Step`s run in order by a `Workflow`, each a fresh session, a resume or a fork, with
conditions, gates, retries and judged rounds. A run's state is typed: the `RunContext` a step's callables may
ask for (``run``) and the `RunResult` `Workflow.run` returns.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "Ctx",
    "RunContext",
    "RunResult",
    "Step",
    "StepAbort",
    "StepRunner",
    "Workflow",
    "WorkflowError",
]

_HOMES = {
    "Ctx": "_state",
    "RunContext": "_state",
    "RunResult": "_state",
    "Step": "_step",
    "StepAbort": "_errors",
    "StepRunner": "_state",
    "Workflow": "_engine",
    "WorkflowError": "_errors",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._engine import Workflow
    from ._errors import StepAbort, WorkflowError
    from ._state import Ctx, RunContext, RunResult, StepRunner
    from ._step import Step
