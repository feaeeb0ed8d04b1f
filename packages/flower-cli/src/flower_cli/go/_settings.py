"""What ``flower go`` is asked to do: one type for the command that reads the options and the flow that runs them."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DEFAULT_ROUNDS", "DEFAULT_TIMEOUT_S", "GoSettings"]

DEFAULT_ROUNDS = 3
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class GoSettings:
    """The options of ``flower go`` (None: not given, the default applies) and what the command adds.

    The command checks the values (a usage error for one no run can use) and says which options do not apply;
    the flow reads ``ask``, ``rounds``, ``goal``, ``judge_can_run``, ``clarify_only``, ``isolate``,
    ``instructions`` and ``amended``; the runtime and the human channel take the rest.
    """

    ask: str = ""
    rounds: int | None = None  # work rounds in all, each judged (--rounds; DEFAULT_ROUNDS when not given)
    goal: bool = True  # False: --no-goal (no goal, no judge, one round)
    judge_can_run: bool = False
    clarify_only: bool = False
    isolate: bool = False
    asks: int | None = None  # the question quota (--asks; None: no limit)
    timeout: float | None = None  # seconds a question waits (--timeout; None: DEFAULT_TIMEOUT_S; inf: forever)
    window: str | None = None  # --window, as given
    handoff: bool = True  # False: --no-handoff
    trim: bool = True  # False: --no-trim
    new: bool = False  # --new: archive the brief, the goal and the lineage first
    budget: float | None = None  # what the whole run may spend in USD (--budget / FLOWER_BUDGET; None: as kept)
    instructions: str = ""  # added to the coordinator's rules
    amended: bool = False  # the ask was appended to an existing brief on wake: derive the goal again

    @property
    def round_limit(self) -> int:
        """Work rounds in all: ``rounds``, or the default when it was not given."""
        return DEFAULT_ROUNDS if self.rounds is None else self.rounds

    @property
    def timeout_s(self) -> float | None:
        """Seconds a question waits for the person (None: forever)."""
        if self.timeout is None:
            return DEFAULT_TIMEOUT_S
        return None if math.isinf(self.timeout) else self.timeout
