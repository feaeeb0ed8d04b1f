"""The roles flower is made of — coordinator, worker, clarifier, judge, oracle — each a factory returning an
`AgentSpec` (or an SDK ``AgentDefinition`` for a worker), and the rule texts they carry.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._catalogue import clarify as clarify
    from ._catalogue import coordinator as coordinator
    from ._catalogue import judge as judge
    from ._catalogue import oracle as oracle
    from ._catalogue import worker as worker
    from ._rules import BRIEF_SECTIONS as BRIEF_SECTIONS
    from ._rules import CLARIFIER_RULES as CLARIFIER_RULES
    from ._rules import COORDINATOR_RULES as COORDINATOR_RULES
    from ._rules import GOAL_SECTIONS as GOAL_SECTIONS
    from ._rules import JUDGE_RULES as JUDGE_RULES
    from ._rules import ORACLE_RULES as ORACLE_RULES
    from ._rules import UNVERIFIABLE_MARK as UNVERIFIABLE_MARK
    from ._rules import VERDICT_SECTIONS as VERDICT_SECTIONS
    from ._rules import VERDICT_STATES as VERDICT_STATES
    from ._rules import WORKER_RULES as WORKER_RULES

__all__ = lazy_surface(__name__)
