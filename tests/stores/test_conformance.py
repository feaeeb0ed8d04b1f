"""The SDK's own conformance suite, with nothing skipped, for the backend and for both layers on two backends."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore, SessionStore
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.testing.session_store_conformance import _has_optional

from flower_stores import PrunePolicy, PruningSessionStore, SqliteSessionStore, TrimmingSessionStore, TrimPolicy

OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


def _factories(tmp_path: Path) -> dict[str, Callable[[], Any]]:
    counter = itertools.count()

    def db() -> Path:
        return tmp_path / f"store-{next(counter)}.db"

    ws = tmp_path / "ws"
    return {
        "sqlite": lambda: SqliteSessionStore(db()),
        "trimming over sqlite (path)": lambda: TrimmingSessionStore(db(), ws),
        "trimming over sqlite (store)": lambda: TrimmingSessionStore(SqliteSessionStore(db()), ws),
        "pruning over sqlite (path)": lambda: PruningSessionStore(db(), ws, policy=TrimPolicy(), prune=PrunePolicy()),
        "pruning over sqlite (store)": lambda: PruningSessionStore(SqliteSessionStore(db()), ws, policy=TrimPolicy()),
        "trimming over in-memory": lambda: TrimmingSessionStore(InMemorySessionStore(), ws),
        "pruning over in-memory": lambda: PruningSessionStore(InMemorySessionStore(), ws, policy=TrimPolicy()),
        "pruning over trimming over in-memory": lambda: PruningSessionStore(
            TrimmingSessionStore(InMemorySessionStore(), ws), ws
        ),
    }


NAMES = list(_factories(Path("/nonexistent")))


@pytest.mark.parametrize("name", NAMES)
async def test_conformance_with_nothing_skipped(name: str, tmp_path: Path) -> None:
    make = _factories(tmp_path)[name]
    probe = make()
    # run_session_store_conformance silently skips what a store lacks: prove every contract runs.
    missing = [m for m in OPTIONAL if not _has_optional(probe, m, frozenset())]
    assert missing == [], f"{name} would skip {missing}"
    await run_session_store_conformance(make)


class _Minimal:
    """A store with only the two required methods, like a WORM bucket adapter."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()

    async def append(self, key: Any, entries: Any) -> None:
        await self.inner.append(key, entries)

    async def load(self, key: Any) -> Any:
        return await self.inner.load(key)


class _InheritsDefaults(_Minimal, SessionStore):
    """A SessionStore subclass that overrides only the required methods (the rest raise NotImplementedError)."""


class _ListsOnly(_Minimal):
    async def list_sessions(self, project_key: str) -> Any:
        return await self.inner.list_sessions(project_key)


@pytest.mark.parametrize("layer", [TrimmingSessionStore, PruningSessionStore])
@pytest.mark.parametrize("backend", [_Minimal, _InheritsDefaults, _ListsOnly])
async def test_layers_expose_exactly_the_optional_methods_of_their_backend(
    layer: type, backend: type, tmp_path: Path
) -> None:
    from claude_agent_sdk._internal.session_store_validation import _store_implements  # the SDK's own probe

    inner = backend()
    wrapped = layer(inner, tmp_path)
    for method in OPTIONAL:
        assert _store_implements(wrapped, method) == _store_implements(inner, method), method
        assert hasattr(wrapped, method) == _store_implements(inner, method), method
    await run_session_store_conformance(lambda: layer(backend(), tmp_path))
