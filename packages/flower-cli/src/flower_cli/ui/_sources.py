"""Where the page's runs come from: `RunSource`, what the page asks of a kind of run (this workspace's runs, the
fleet's), and `installed_sources`, which finds the kinds other distributions add.

Why a protocol and not `Control` itself: the fleet's runs live in Temporal, read by flower-fleet, which imports
flower-cli and not the reverse. flower-fleet (or any distribution) adds its runs to the page through the
``flower_cli.ui_sources`` entry point: a callable taking the same `SourceOptions` and returning a `RunSource`, or
None when it has nothing to show (the fleet: ``FLOWER_TEMPORAL`` unset).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["UI_SOURCES_GROUP", "RunSource", "SourceError", "SourceOptions", "installed_sources"]

UI_SOURCES_GROUP = "flower_cli.ui_sources"


class SourceError(Exception):
    """What a source says when it cannot do what was asked: ``message`` (one line, says what to do) goes to the
    page; ``status`` is the HTTP status (404 unknown run, 409 nothing to answer, 400 bad input, 502 unreachable)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class SourceOptions:
    """What ``flower ui`` was told: the workspace, its run dir and the ``--store`` (None: the run dir's)."""

    workspace: Path
    run_dir: Path
    store: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class RunSource(Protocol):
    """One kind of run the page shows. All methods are async; blocking work belongs in a worker thread.

    ``list_runs``: every run, newest first, as JSON objects with at least ``id``, ``state`` (running / waiting /
    done / stopped / failed …), ``step``, ``cost_usd``, ``question`` (the question text it waits on, or None);
    optionally ``budget_usd``, ``context``, ``session_id``, ``updated_ms``, ``title``.
    ``events``: the run's events after ``after`` as ``{"seq", "at_ms", "event"}``, oldest first, then the new ones
    as they come, for as long as the caller reads. ``answer`` / ``mail`` / ``stop`` do what ``flower answer`` /
    ``mail`` / ``stop`` do and return one line saying what was done; they raise `SourceError` when they cannot.
    """

    name: str

    async def list_runs(self) -> list[dict[str, Any]]: ...

    def events(self, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]: ...

    async def answer(self, run_id: str, text: str) -> str: ...

    async def mail(self, run_id: str, text: str) -> str: ...

    async def stop(self, run_id: str) -> str: ...


SourceFactory = Callable[[SourceOptions], RunSource | None]


def installed_sources(options: SourceOptions) -> list[RunSource]:
    """The sources other installed distributions add (entry point group `UI_SOURCES_GROUP`), those that have runs
    to show. A broken one is said on stderr and left out: it must not take the page down."""
    found: list[RunSource] = []
    for ep in sorted(metadata.entry_points(group=UI_SOURCES_GROUP), key=lambda e: e.name):
        try:
            factory: SourceFactory = ep.load()
            source = factory(options)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the page
            sys.stderr.write(f"flower ui: the `{ep.name}` runs of {ep.value} are left out ({exc})\n")
            continue
        if source is not None:
            found.append(source)
    return found
