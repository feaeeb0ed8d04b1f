"""The whole load-time rewrite in its fixed order: expire → trim → prune (→ relink → heal)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

from ._entries import Entry
from ._expire import expire
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy
from ._prune import prune
from ._report import LoadReport
from ._rewritten import Rewritten
from ._trim import trim

__all__ = ["rewrite"]


def rewrite(
    entries: Sequence[Entry],
    workspace: str | PathLike[str] = ".",
    *,
    ephemeral: EphemeralPolicy | None = None,
    trim_policy: TrimPolicy | None = None,
    prune_policy: PrunePolicy | None = None,
    write_spill: bool = True,
) -> Rewritten:
    """Apply the layers an app chose (a ``None`` policy skips its step) to one transcript.

    This is exactly what `PruningSessionStore.load` does after the backend's load, for apps that keep their
    own store. Expiry runs before trimming, so a short stale glance is expired rather than spilled; pruning
    runs last because it needs the final blocks to keep every call answered.
    """
    report = LoadReport()
    current: list = list(entries)
    if ephemeral is not None and ephemeral.enabled:
        current, step = expire(current, ephemeral)
        report += step
    if trim_policy is not None and trim_policy.enabled:
        current, step = trim(current, trim_policy, workspace, write_spill=write_spill)
        report += step
    if prune_policy is not None:
        current, step = prune(current, prune_policy)
        report += step
    return Rewritten(current, report)
