"""``--model`` on ``once``, ``run`` and ``go``: the model of this run, whatever the .env says.

Claude Code reads its model from ``ANTHROPIC_MODEL`` (what ``flower setup --model`` stores in the user .env),
and every session of the run starts from this process's environment: set here, before anything loads the
.env (which never overrides a variable already set), it reaches the clarifier, the coordinator (its workers
inherit it), the judges and the window a session hands off at, and nothing needs to thread it through.
"""

from __future__ import annotations

import os

from .._shared.exits import Exit, ExitCode

__all__ = ["MODEL_VARIABLE", "use_model"]

MODEL_VARIABLE = "ANTHROPIC_MODEL"


def use_model(model: str | None) -> None:
    """Make ``model`` this run's model (None: leave the environment's and the .env's choice alone)."""
    if model is None:
        return
    name = model.strip()
    if not name or any(c.isspace() for c in name):
        raise Exit(ExitCode.USAGE, f"--model takes one model name, e.g. --model claude-sonnet-4-5, not {model!r}")
    os.environ[MODEL_VARIABLE] = name
