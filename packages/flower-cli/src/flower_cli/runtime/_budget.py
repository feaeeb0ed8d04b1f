"""`RunBudget`: what a whole run may spend, and what it has spent so far, role by role.

Why one object shared by every step: the run's money goes through many sessions — the clarifier, the goal-setter,
the coordinator (its workers' turns are inside its cost: the harness reports one running total per process),
the judges, the handoff-writing rounds (inside the step they hand over) and the asides (their own runtime, which
charges the same object). Each running step reports its cost so far at every turn's end (``running``), and its
final cost once (``settle``), so nothing is counted twice or missed, and a step that starts sees what the
others spent.

The budget is checked between turns and between launches (``StepRun``): at 100 % the turn in flight finishes, no
new turn or step starts, and the step is recorded as stopped by the budget (its error starts with
``BUDGET_SPENT``; its manifest row's ``budget`` says the limit and the spend). Kept in a file (a go run's
``notes/budget.json``), the spend carries over to the next wake of the same run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._shared.budget import NEAR_FRACTION, BudgetFile, dollars, read_budget, write_budget
from ._result import StepResult

__all__ = ["BUDGET_SPENT", "RunBudget", "role_of", "stopped_by_budget"]

BUDGET_SPENT = "budget spent"  # how the error of a step the budget stopped starts


def role_of(step: str) -> str:
    """The role a step's money is counted under: its name without the round, retry or judge number
    (``work#round2`` → ``work``; ``work·judge#1`` → ``judge``)."""
    base = step.split("#", 1)[0]
    return base.rsplit("·", 1)[-1] or step


def stopped_by_budget(result: StepResult) -> bool:
    """Did the run's budget stop this step (rather than the step failing on its own)?"""
    return (result.error or "").startswith(BUDGET_SPENT)


class RunBudget:
    """A run's budget: ``limit_usd``, and what each role has spent (``spent_by``, the running steps included).

    ``path``: where the budget is kept between processes (written after every step; None: not kept).
    Made in one event loop and used from it (an aside runs in the same loop as the main run).
    """

    def __init__(self, limit_usd: float, *, spent_by: Mapping[str, float] | None = None, path: Path | None = None):
        if not limit_usd > 0:
            raise ValueError(f"a budget must be a positive amount in USD, not {limit_usd!r}")
        self.limit_usd = float(limit_usd)
        self.path = path
        self._closed: dict[str, float] = dict(spent_by or {})
        self._running: dict[int, tuple[str, float]] = {}  # id(step result) -> (role, its cost so far)
        self._warned = False

    @classmethod
    def kept(cls, path: Path, limit_usd: float | None) -> RunBudget | None:
        """The budget kept at ``path`` with what it has spent; ``limit_usd`` (when given) replaces its limit —
        a wake with a higher budget goes on counting from the same spend. None: no budget given or kept."""
        found = read_budget(path)
        limit = limit_usd if limit_usd is not None else (found.limit_usd if found is not None else None)
        if limit is None:
            return None
        budget = cls(limit, spent_by=found.spent_by if found is not None else None, path=path)
        budget.save()
        return budget

    # --- what it says ------------------------------------------------------------------------------

    @property
    def spent_by(self) -> dict[str, float]:
        """Role → USD spent, the steps running now included."""
        spent = dict(self._closed)
        for role, cost in self._running.values():
            spent[role] = spent.get(role, 0.0) + cost
        return {role: round(cost, 6) for role, cost in spent.items()}

    @property
    def spent_usd(self) -> float:
        return round(sum(self.spent_by.values()), 6)

    @property
    def over(self) -> bool:
        """Spent: no new turn or step may start."""
        return self.spent_usd >= self.limit_usd

    @property
    def near(self) -> bool:
        """At 80 % or more (``NEAR_FRACTION``)."""
        return self.spent_usd >= NEAR_FRACTION * self.limit_usd

    def file(self) -> BudgetFile:
        return BudgetFile(self.limit_usd, self.spent_by)

    def on_what(self) -> str:
        """Where the money went, biggest first: ``work $0.41, judge $0.06``."""
        ranked = sorted(((c, r) for r, c in self.spent_by.items() if c > 0), reverse=True)
        return ", ".join(f"{role} {dollars(cost)}" for cost, role in ranked) or "nothing yet"

    def stop_reason(self) -> str:
        """The error of a step the budget stopped (starts with ``BUDGET_SPENT``)."""
        return f"{BUDGET_SPENT}: {dollars(self.spent_usd)} of {dollars(self.limit_usd)} ({self.on_what()})"

    def near_line(self) -> str:
        share = self.spent_usd / self.limit_usd
        return (
            f"budget: {dollars(self.spent_usd)} of {dollars(self.limit_usd)} spent ({share:.0%}); "
            "the run stops when it is all spent"
        )

    def row(self) -> dict[str, Any]:
        """A manifest row's ``budget`` field: the limit and the run's spend when the row was written."""
        return {"limit_usd": self.limit_usd, "spent_usd": self.spent_usd}

    # --- what feeds it -----------------------------------------------------------------------------

    def running(self, result: StepResult, cost_usd: float) -> None:
        """The step of ``result`` has cost ``cost_usd`` so far (it is still running)."""
        self._running[id(result)] = (role_of(result.step), max(0.0, cost_usd))

    def settle(self, result: StepResult) -> None:
        """The step of ``result`` is over: its whole cost is counted once, under its role, and the budget kept."""
        self._running.pop(id(result), None)
        self.charge(result.step, result.cost_usd)

    def charge(self, step: str, cost_usd: float) -> None:
        """``cost_usd`` spent by ``step`` outside a Runtime step of this budget (an aside's own runtime)."""
        if cost_usd > 0:
            role = role_of(step)
            self._closed[role] = self._closed.get(role, 0.0) + cost_usd
        self.save()

    def first_near(self) -> bool:
        """True the first time the run is at 80 % or more (and not yet over): the one line is said then."""
        if self._warned or not self.near:
            return False
        self._warned = True
        return not self.over

    def save(self) -> None:
        """Keep the budget at ``path`` (no-op without one). A disk that refuses keeps the run going: the
        manifest rows carry the spend too."""
        if self.path is None:
            return
        try:
            write_budget(self.path, self.file())
        except OSError:
            pass
