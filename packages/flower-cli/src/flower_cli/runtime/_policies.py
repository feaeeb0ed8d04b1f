"""How every step of a Runtime runs, in one value: the Runtime's keyword arguments, resolved.

Why one value: the step, the launcher and the store read the same settings; a new run-wide concern (a budget
for the whole run, how long to wait out a usage limit) is one more field here, given as one more keyword of
``Runtime(...)``, and read by the step at its seam (see ``_step``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flower_resilience import Resilience
from flower_stores import LeaseOwner

from ._budget import RunBudget
from ._handoff import HandoffPolicy
from ._limit_wait import DEFAULT_LIMIT_WAIT

if TYPE_CHECKING:
    from ._query import QueryFunction

__all__ = ["DEFAULT_LEASE_TTL", "RunPolicy"]

# flower_stores.DEFAULT_LEASE_TTL, spelled out as the default of `Runtime(lease_ttl=...)` (a unit test checks
# that the two agree).
DEFAULT_LEASE_TTL = 60.0


@dataclass(frozen=True)
class RunPolicy:
    """The policies of a Runtime's steps (see `Runtime` for what each keyword means).

    ``resilience`` is the one the caller gave; the Runtime runs with it, or with it and a resume prompt that
    names the workbench (`resilience_for`). ``lease_owner`` is resolved (this process, under the run id).
    """

    portable: bool
    plugin_dirs: tuple[Path | str, ...]
    spill_threshold: int | None
    query_fn: QueryFunction | None
    handoff: HandoffPolicy
    resilience: Resilience
    lease: bool
    lease_ttl: float
    lease_owner: LeaseOwner
    budget: RunBudget | None = None  # what the whole run may spend (None: no limit)
    limit_wait: float = DEFAULT_LIMIT_WAIT  # the longest usage-limit reset a step waits for (s); 0: never wait

    @classmethod
    def resolve(
        cls,
        *,
        run_id: str,
        portable: bool,
        plugin_dirs: tuple[Path | str, ...],
        spill_threshold: int | None,
        query_fn: QueryFunction | None,
        handoff: bool | HandoffPolicy,
        resilience: bool | Resilience,
        lease: bool,
        lease_ttl: float,
        lease_owner: LeaseOwner | None,
        budget: float | RunBudget | None = None,
        limit_wait: float = DEFAULT_LIMIT_WAIT,
    ) -> RunPolicy:
        """True/False for a default policy on/off, or the policy itself; the lease owner defaults to this
        process under ``run_id``; a budget in USD becomes a `RunBudget` of its own (not kept in a file)."""
        return cls(
            portable=portable,
            plugin_dirs=tuple(plugin_dirs),
            spill_threshold=spill_threshold,
            query_fn=query_fn,
            handoff=handoff if isinstance(handoff, HandoffPolicy) else HandoffPolicy(enabled=bool(handoff)),
            resilience=resilience if isinstance(resilience, Resilience) else Resilience(enabled=bool(resilience)),
            lease=lease,
            lease_ttl=lease_ttl,
            lease_owner=lease_owner or LeaseOwner.this_process(run_id=run_id),
            budget=budget if isinstance(budget, RunBudget) or budget is None else RunBudget(budget),
            limit_wait=max(0.0, float(limit_wait)),
        )
