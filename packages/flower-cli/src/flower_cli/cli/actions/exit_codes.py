"""The exit code a step's result stands for (``once``, and the step that stopped a ``go`` or ``run``)."""

from __future__ import annotations

import re

import flower_resilience

from ..._shared.exits import ExitCode
from ...runtime import UNSTORED, Runtime, StepResult, stopped_by_budget

__all__ = ["exit_code_for", "failure_reason"]


def exit_code_for(result: StepResult) -> ExitCode:
    """0 done; 6 the run's budget spent; 130 interrupted; 4 network not back in time; 5 a usage limit not waited
    out or a spend cap; 3 credentials/configuration or the session taken over by another process; else 1."""
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
    if (result.error or "").startswith((Runtime.LIMITED, Runtime.SPEND_CAPPED)):
        return ExitCode.LIMITED

    if result.error and flower_resilience.classify(result.error) == "fatal" and _looks_like_credentials(result.error):
        return ExitCode.CONFIG
    if result.error and _unknown_model(result.error) is not None:
        return ExitCode.CONFIG  # a setting to change (--model, ANTHROPIC_MODEL), not a run to try again
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


# Claude Code's words when the API answers 404 for the model (it does not exist, or the credential may not use
# it), and the API's own error body when that reaches the result instead.
_UNKNOWN_MODEL = re.compile(
    r"issue with the selected model \((?P<named>[^)]*)\)|not_found_error\W+(?:\w+\W+)?model:\s*(?P<api>\S+)",
    re.IGNORECASE,
)


def _unknown_model(error: str) -> str | None:
    """The model name of an "unknown model" failure ("" when unnamed), or None for any other failure."""
    found = _UNKNOWN_MODEL.search(error)
    if found is None:
        return None
    return (found.group("named") or found.group("api") or "").strip().strip("'\"")


def failure_reason(result: StepResult) -> str:
    """The closing line's words for a failed step: its error, or what to do when a setting is the cause."""
    error = result.error or "no result"
    model = _unknown_model(error)
    if model is not None:
        named = f"the model {model}" if model else "the selected model"
        return (
            f"{named} does not exist or this credential cannot use it: "
            "pick another with --model, or change ANTHROPIC_MODEL (`flower doctor` says where it is set)"
        )
    return error
