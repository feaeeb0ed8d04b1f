"""The whole load-time rewrite in its fixed order: expire → trim → prune (→ relink → heal)."""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike

from ..entries import Entry
from ..report import LoadReport, Rewritten
from ._fused import rewrite_once
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy

__all__ = ["rewrite", "rewrite_report"]


def rewrite(
    entries: Iterable[Entry],
    workspace: str | PathLike[str] = ".",
    *,
    ephemeral: EphemeralPolicy | None = None,
    trim_policy: TrimPolicy | None = None,
    prune_policy: PrunePolicy | None = None,
    write_spill: bool = True,
) -> Rewritten:
    """Apply the layers an app chose (a ``None`` policy skips its step) to one transcript.

    This is exactly what `PruningSessionStore.load` does after the backend's load, for apps that keep their
    own store. The result equals ``prune(trim(expire(entries)))`` (skipping the steps without a policy):
    expiry runs before trimming, so a short stale glance is expired rather than spilled, and pruning runs
    last because it needs the final blocks to keep every call answered. It is computed in one scan of the
    transcript rather than one walk per step (see ``_fused``), which is what keeps a layered load cheap.

    ``entries`` is read once, in order: a list, or a generator that parses each entry as it is asked for —
    the scan then reads each one while it is fresh in the cache, as the layered load of our SQLite store does.
    """
    return rewrite_once(entries, workspace, ephemeral, trim_policy, prune_policy, write_spill)


def rewrite_report(
    entries: Iterable[Entry],
    workspace: str | PathLike[str] = ".",
    *,
    ephemeral: EphemeralPolicy | None = None,
    trim_policy: TrimPolicy | None = None,
    prune_policy: PrunePolicy | None = None,
) -> LoadReport:
    """What `rewrite` with the same arguments would report, without rewriting: ``rewrite(...).report``.

    For a report of what a resume would change (``flower analyze``'s "on resume" numbers): no transcript is
    built, no spill file is written (as ``write_spill=False``), and the scan skips the parent-link bookkeeping
    that only relinking needs, which makes it markedly cheaper than the full rewrite. The numbers, notes
    included, equal the full rewrite's (a property test holds them to it). ``entries`` is read once, in order,
    as by `rewrite`; it is not modified.
    """
    return rewrite_once(
        entries, workspace, ephemeral, trim_policy, prune_policy, write_spill=False, report_only=True
    ).report
