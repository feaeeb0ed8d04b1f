"""The run budget on the command line: ``--budget USD`` (else ``FLOWER_BUDGET``) read and checked, and how a run
the budget stopped ends (exit 6, what was spent on what, the command that continues with a higher one)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..._shared.budget import dollars, higher_budget
from ..._shared.exits import Exit, ExitCode
from ...runtime import stopped_by_budget

if TYPE_CHECKING:
    from ...runtime import Runtime

__all__ = ["BUDGET_ENV", "budget_exit", "budget_from"]

BUDGET_ENV = "FLOWER_BUDGET"


def budget_from(given: float | None, environ: Mapping[str, str] = os.environ) -> float | None:
    """The run's budget in USD: ``--budget``, else ``FLOWER_BUDGET``; None for no limit. A value no run can use
    is a usage error (exit 2) saying what to give."""
    source = "--budget"
    if given is None:
        raw = environ.get(BUDGET_ENV, "").strip()
        if not raw:
            return None
        source = BUDGET_ENV
        try:
            given = float(raw.removeprefix("$"))
        except ValueError:
            raise Exit(ExitCode.USAGE, f"{BUDGET_ENV}={raw!r} is not an amount in USD; give e.g. 5 or 12.50") from None
    if math.isnan(given) or math.isinf(given) or given <= 0:
        raise Exit(ExitCode.USAGE, f"{source} must be a positive amount in USD (e.g. 5 or 12.50), not {given}")
    return given


def budget_exit(runtime: Runtime, again: str) -> Exit | None:
    """The exit of a run whose budget stopped a step (None: the budget stopped nothing): exit 6, with what was
    spent, on what, and ``again`` — the command that continues, where ``{budget}`` is a higher budget."""
    budget = getattr(runtime, "budget", None)  # a runtime stand-in (a test's) may have none
    if budget is None or not any(stopped_by_budget(result) for result in runtime.results):
        return None
    higher = f"{higher_budget(budget.limit_usd, budget.spent_usd):g}"
    return Exit(
        ExitCode.BUDGET,
        f"the run's budget is spent: {dollars(budget.spent_usd)} of {dollars(budget.limit_usd)} "
        f"({budget.on_what()}); to go on in the same sessions: {again.format(budget=higher)}",
    )
