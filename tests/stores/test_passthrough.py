"""The wrappers' passthrough: each group of methods a layer or a fenced view passes on is exactly its protocol's.

A wrapper presents a group (the lease, run records, the index questions) only when its backend has every method
of it, and forwards each one by name; a method added to a protocol but not to its passthrough would be missing
from every layer. These tests hold each passthrough to its protocol, and check that a forwarded method is the
backend's own.
"""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from pathlib import Path

from claude_agent_sdk import InMemorySessionStore

from flower_stores import (
    Lease,
    LeaseOwner,
    PruningSessionStore,
    RunRecords,
    SessionIndex,
    SessionLeases,
    SqliteSessionStore,
)
from flower_stores._shared.passthrough import OPTIONAL_METHODS, SdkMethodsThrough, forwarded
from flower_stores.index import IndexThrough
from flower_stores.lease import LeasesThrough
from flower_stores.runs import RunRecordsThrough


def _members(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol) if not name.startswith("_")}


def test_each_passthrough_forwards_exactly_its_protocol() -> None:
    assert set(forwarded(LeasesThrough)) == _members(SessionLeases)
    assert set(forwarded(RunRecordsThrough)) == _members(RunRecords)
    assert set(forwarded(IndexThrough)) == _members(SessionIndex)
    sdk = {name for mixin in SdkMethodsThrough.__mro__ for name in forwarded(mixin)}
    assert sdk == {*OPTIONAL_METHODS, "projects"}


def test_a_forwarded_method_is_the_backends_own(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "sessions.db") as backend:
        layer = PruningSessionStore(backend, tmp_path)
        assert layer.acquire_lease == backend.acquire_lease
        assert layer.run_ids == backend.run_ids
        assert layer.fenced(_lease()).where == backend.where
    bare = PruningSessionStore(InMemorySessionStore(), tmp_path)
    assert not isinstance(bare, SessionLeases) and not hasattr(bare, "fenced")


def _lease() -> Lease:
    now = datetime.now(UTC)
    return Lease("-ws", "s", LeaseOwner("h", 1), 1, now, now, now)
