"""A run's budget as it is kept on disk (``notes/budget.json``) and said in one line.

Why here, in the lowest room: the runtime writes the file (`flower_cli.runtime.RunBudget`), and the commands that
only look at a run — ``flower status``, ``flower analyze`` — read it without loading the runtime or the SDK.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import atomic_write_text

__all__ = [
    "BUDGET_FILE",
    "NEAR_FRACTION",
    "BudgetFile",
    "budget_status",
    "dollars",
    "higher_budget",
    "read_budget",
    "write_budget",
]

BUDGET_FILE = "budget.json"  # under a go run's notes directory
NEAR_FRACTION = 0.8  # the one line that says the run is close to its budget


def dollars(amount: float) -> str:
    """``$0.0312`` below a dollar (where cents hide what a turn cost), ``$12.40`` above."""
    return f"${amount:.4f}" if abs(amount) < 1 else f"${amount:.2f}"


@dataclass
class BudgetFile:
    """What ``budget.json`` holds: the limit in USD and what each role has spent against it so far."""

    limit_usd: float
    spent_by: dict[str, float] = field(default_factory=dict)

    @property
    def spent_usd(self) -> float:
        return round(sum(self.spent_by.values()), 6)

    def to_json(self) -> dict[str, Any]:
        return {
            "limit_usd": self.limit_usd,
            "spent_usd": self.spent_usd,
            "spent_by": {role: round(cost, 6) for role, cost in sorted(self.spent_by.items())},
        }


def read_budget(path: Path) -> BudgetFile | None:
    """The budget kept at ``path``; None when there is none, or the file is not one (a run without a budget)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    limit = data.get("limit_usd")
    spent = data.get("spent_by")
    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or not limit > 0:
        return None
    spent_by = {
        str(role): float(cost)
        for role, cost in (spent.items() if isinstance(spent, dict) else ())
        if isinstance(cost, (int, float)) and not isinstance(cost, bool)
    }
    return BudgetFile(float(limit), spent_by)


def write_budget(path: Path, budget: BudgetFile) -> None:
    """Keep ``budget`` at ``path`` (atomically: ``flower status`` may read it while the run writes it)."""
    atomic_write_text(path, json.dumps(budget.to_json(), indent=2) + "\n")


def budget_status(budget: BudgetFile | Path | None) -> str | None:
    """``budget $3.20 of $10.00 (32 %)`` for a status line; None when the run has no budget.

    Accepts the budget itself or the path of its ``budget.json``.
    """
    if isinstance(budget, Path):
        budget = read_budget(budget)
    if budget is None:
        return None
    share = budget.spent_usd / budget.limit_usd
    said = f"budget {dollars(budget.spent_usd)} of {dollars(budget.limit_usd)} ({share:.0%})"
    return said + (" · spent" if share >= 1 else "")


def higher_budget(limit_usd: float, spent_usd: float) -> float:
    """The budget a closing line proposes to continue with: double the old one (and above what is spent),
    rounded up to a figure a person types (whole dollars from $2 on, else cents)."""
    wanted = max(limit_usd * 2, spent_usd * 1.5)
    step = 1.0 if wanted >= 2 else 0.01
    return round(math.ceil(wanted / step - 1e-9) * step, 2)
