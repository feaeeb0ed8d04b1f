"""The roles flower is made of — coordinator, worker, clarifier, judge, oracle — each a factory returning an
`AgentSpec` (or an SDK ``AgentDefinition`` for a worker), and the rule texts they carry.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "BRIEF_SECTIONS",
    "CLARIFIER_RULES",
    "COORDINATOR_RULES",
    "GOAL_SECTIONS",
    "JUDGE_RULES",
    "ORACLE_RULES",
    "UNVERIFIABLE_MARK",
    "VERDICT_SECTIONS",
    "VERDICT_STATES",
    "WORKER_RULES",
    "clarify",
    "coordinator",
    "judge",
    "oracle",
    "worker",
]

_HOMES = {
    "BRIEF_SECTIONS": "_rules",
    "CLARIFIER_RULES": "_rules",
    "COORDINATOR_RULES": "_rules",
    "GOAL_SECTIONS": "_rules",
    "JUDGE_RULES": "_rules",
    "ORACLE_RULES": "_rules",
    "UNVERIFIABLE_MARK": "_rules",
    "VERDICT_SECTIONS": "_rules",
    "VERDICT_STATES": "_rules",
    "WORKER_RULES": "_rules",
    "clarify": "_catalogue",
    "coordinator": "_catalogue",
    "judge": "_catalogue",
    "oracle": "_catalogue",
    "worker": "_catalogue",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._catalogue import clarify, coordinator, judge, oracle, worker
    from ._rules import (
        BRIEF_SECTIONS,
        CLARIFIER_RULES,
        COORDINATOR_RULES,
        GOAL_SECTIONS,
        JUDGE_RULES,
        ORACLE_RULES,
        UNVERIFIABLE_MARK,
        VERDICT_SECTIONS,
        VERDICT_STATES,
        WORKER_RULES,
    )
