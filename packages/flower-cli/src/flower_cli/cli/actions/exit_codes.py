"""The exit code a step's result stands for (``once``, and the step that stopped a ``go`` or ``run``)."""

from __future__ import annotations

import flower_resilience

from ..._shared.exits import ExitCode
from ...runtime import UNSTORED, Runtime, StepResult, stopped_by_budget

__all__ = ["exit_code_for"]


def exit_code_for(result: StepResult) -> ExitCode:
    """0 done; 6 the run's budget spent; 130 interrupted; 4 network not back in time; 3 credentials/configuration or the session taken
    over by another process; else 1."""
    if result.ok:
        return ExitCode.DONE
    if stopped_by_budget(result):
        return ExitCode.BUDGET  # a wake with a higher --budget goes on
    if (result.error or "").startswith(Runtime.TAKEN_OVER):
        return ExitCode.CONFIG  # another process drives the session now: a person decides which one goes on

    if result.error in (Runtime.INTERRUPTED, Runtime.KILLED):
        return ExitCode.INTERRUPTED
    if (result.error or "").startswith(UNSTORED):
        return ExitCode.CONFIG  # the store must take the transcript (or be imported into) before a resume is whole
    if (result.error or "").startswith("network not back"):
        return ExitCode.OFFLINE

    if result.error and flower_resilience.classify(result.error) == "fatal" and _looks_like_credentials(result.error):
        return ExitCode.CONFIG
    if any(_looks_like_full_disk(error) for error in (result.error or "", *result.errors)):
        return ExitCode.CONFIG  # a person must free space before a rerun can work
    return ExitCode.NOT_DONE


def _looks_like_full_disk(error: str) -> bool:
    lowered = error.lower()
    return any(w in lowered for w in ("no space left on device", "database or disk is full", "disk quota exceeded"))


def _looks_like_credentials(error: str) -> bool:
    lowered = error.lower()
    return any(
        w in lowered
        for w in ("authentication", "api key", "unauthorized", "401", "403", "permission_error", "x-api-key")
    )
