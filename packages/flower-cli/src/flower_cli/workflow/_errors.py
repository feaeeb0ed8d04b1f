"""The two exceptions of the workflow engine: a mistake in a workflow, and a step's callable stopping its step."""

from __future__ import annotations

__all__ = ["StepAbort", "WorkflowError"]


class WorkflowError(ValueError):
    """A mistake in a workflow (unknown ``resume_from``, a gate that raised…): one line naming the step."""


class StepAbort(Exception):  # noqa: N818 - the name says what raising it does
    """Raise from ``when``, ``gate`` or ``on_reject`` to end the step now, as failed (no more rounds).

    The message becomes the run's `RunResult.aborted`; ``on_fail`` decides whether the workflow goes on.
    """
