"""`MirrorWatch`: a failed append is kept and settled before the step is recorded — waited for while the store
is unreachable (said once), else one line naming the store, why, the local copy and the import command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore

from flower_cli.runtime import UNSTORED
from flower_cli.runtime._mirror import MirrorWatch


class Flaky(InMemorySessionStore):
    """A real in-memory store that fails (like a stopped server, or a full disk) while ``down`` is set."""

    def __init__(self, why: str) -> None:
        super().__init__()
        self.why = why
        self.down = True
        self.calls = 0

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.calls += 1
        if self.down:
            raise OSError(self.why)
        await super().append(key, entries)

    async def load(self, key: Any) -> Any:
        if self.down:
            raise OSError(self.why)
        return await super().load(key)


KEY = {"project_key": "p", "session_id": "s"}


def _watch(store: Any, tmp_path: Path, limit: float = 30.0) -> MirrorWatch:
    return MirrorWatch(
        store, where="the-store", store_url="sqlite:///x.db", spool=tmp_path / "unstored", offline_limit=limit
    )


@pytest.fixture(autouse=True)
def _no_local_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))


async def test_an_unreachable_store_is_waited_for_said_once_then_filled(tmp_path: Path) -> None:
    store = Flaky("connection refused: is the server up?")
    watch = _watch(store, tmp_path)
    sdk = watch.wrapped()
    with pytest.raises(OSError):
        await sdk.append(KEY, [{"uuid": "a"}])
    with pytest.raises(RuntimeError):
        await sdk.append(KEY, [{"uuid": "b"}])  # not sent: the store failed a moment ago
    assert store.calls == 1
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 1:
            store.down = False  # the server comes back while the step waits

    assert await watch.settle(say) is None
    assert [e["uuid"] for e in await store.load(KEY) or []] == ["a", "b"]
    assert len(said) == 2 and "is unreachable" in said[0] and "is back" in said[1]
    assert await watch.settle(say) is None and len(said) == 2  # nothing left to settle


async def test_a_full_disk_is_not_waited_for_and_the_line_says_how_to_import(tmp_path: Path) -> None:
    store = Flaky("database or disk is full")
    watch = _watch(store, tmp_path)
    with pytest.raises(OSError):
        await watch.wrapped().append(KEY, [{"uuid": "a"}, {"uuid": "b"}])
    line = await watch.settle(lambda _: pytest.fail("a full disk is not waited for"))
    assert line is not None and line.startswith(UNSTORED) and "\n" not in line
    spooled = tmp_path / "unstored" / "p" / "s.jsonl"
    assert "the-store" in line and "database or disk is full" in line and "2 entries" in line
    assert f"`flower sessions import s --store sqlite:///x.db --from {spooled}`" in line
    assert len(spooled.read_text().splitlines()) == 2


async def test_the_sdk_sees_the_optional_methods_the_store_has() -> None:
    watch = MirrorWatch(InMemorySessionStore(), where="m", store_url=None, spool=Path("/nonexistent"), offline_limit=0)
    from claude_agent_sdk import SessionStore

    sdk = watch.wrapped()
    for name in ("list_sessions", "list_subkeys", "delete"):
        assert getattr(type(sdk), name) is not getattr(SessionStore, name, None), name


async def test_an_append_the_lease_refuses_is_not_kept_and_nothing_is_imported_for_it(tmp_path: Path) -> None:
    from flower_stores import LeaseOwner, PruningSessionStore, SqliteSessionStore

    store = PruningSessionStore(SqliteSessionStore(tmp_path / "sessions.db"), tmp_path)
    try:
        first = await store.acquire_lease("p", "s", LeaseOwner("h", 1, "run-1"), ttl=60)
        watch = _watch(store, tmp_path)
        sdk = watch.wrapped(store.fenced(first))
        await sdk.append(KEY, [{"type": "user", "uuid": "a"}])
        await store.release_lease(first)
        await store.acquire_lease("p", "s", LeaseOwner("h", 2, "run-2"), ttl=60)  # another driver took over
        from flower_stores import LeaseLost

        with pytest.raises(LeaseLost):
            await sdk.append(KEY, [{"type": "user", "uuid": "b"}])
        assert not watch.troubled, "a superseded driver's entries are not the session's: nothing to settle"
        assert await watch.settle(lambda line: None) is None
        assert [e["uuid"] for e in await store.backend.load(KEY) or []] == ["a"]
    finally:
        store.close()
