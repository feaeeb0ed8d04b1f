"""The runs of every source as one list, newest first, and the changes to it as a live stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio

from ._sources import RunSource, SourceError

__all__ = ["LIST_POLL_S", "all_runs", "runs_changes"]

LIST_POLL_S = 0.5  # how often the runs list is read for the page: a change shows within a second


def _newest_first(run: dict[str, Any]) -> tuple[int, int]:
    return (-int(run.get("created_ms") or 0), -int(run.get("updated_ms") or 0))


async def all_runs(sources: Sequence[RunSource]) -> dict[str, Any]:
    """``{"runs": [...], "errors": [...]}``: each run tagged with its ``source``; a source that cannot be read
    now (a store or a Temporal server away) is an error line beside the others' runs, not a failed page."""
    runs: list[dict[str, Any]] = []
    errors: list[str] = []
    for source in sources:
        try:
            listed = await source.list_runs()
        except SourceError as exc:
            errors.append(f"{source.name}: {exc.message}")
            continue
        except Exception as exc:  # noqa: BLE001 - one source's trouble must not hide the other sources' runs
            errors.append(f"{source.name}: {type(exc).__name__}: {exc}")
            continue
        runs.extend({**run, "source": source.name} for run in listed)
    runs.sort(key=_newest_first)
    return {"runs": runs, "errors": errors}


async def runs_changes(sources: Sequence[RunSource], poll_s: float = LIST_POLL_S) -> AsyncIterator[dict[str, Any]]:
    """The runs list now, then again each time it changes (read every ``poll_s``)."""
    last = ""
    while True:
        listing = await all_runs(sources)
        text = json.dumps(listing, sort_keys=True, default=str)
        if text != last:
            last = text
            yield listing
        await anyio.sleep(poll_s)
