"""`PostgresSessionStore` against a real PostgreSQL server (the `pg_url` fixture: a throw-away cluster).

The SDK's conformance suite (plain and under both layers), uuid idempotency, the schema version, trio, a
non-blocking load, dead connections, and one-line errors for every way the URL can be wrong.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import psycopg
import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.testing.session_store_conformance import _has_optional

from flower_stores import (
    PostgresSessionStore,
    PrunePolicy,
    PruningSessionStore,
    StoreError,
    StoreUrlError,
    TrimmingSessionStore,
    TrimPolicy,
    store_from_url,
)

OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
KEY: Any = {"project_key": "-ws", "session_id": "s1"}

MakeStore = Callable[..., PostgresSessionStore]


def _factories(make: MakeStore, ws: Path) -> dict[str, Callable[[], Any]]:
    return {
        "postgres": make,
        "trimming over postgres": lambda: TrimmingSessionStore(make(), ws),
        "pruning over postgres": lambda: PruningSessionStore(make(), ws, policy=TrimPolicy(), prune=PrunePolicy()),
        "pruning over trimming over postgres": lambda: PruningSessionStore(TrimmingSessionStore(make(), ws), ws),
    }


NAMES = ["postgres", "trimming over postgres", "pruning over postgres", "pruning over trimming over postgres"]


@pytest.mark.parametrize("name", NAMES)
async def test_conformance_with_nothing_skipped(name: str, pg_store: MakeStore, tmp_path: Path) -> None:
    make = _factories(pg_store, tmp_path / "ws")[name]
    probe = make()
    missing = [m for m in OPTIONAL if not _has_optional(probe, m, frozenset())]
    assert missing == [], f"{name} would skip {missing}"
    await run_session_store_conformance(make)


async def test_a_layer_given_a_postgres_url_builds_the_store_and_closes_it(
    pg_store: MakeStore, pg_url: str, tmp_path: Path
) -> None:
    layered = PruningSessionStore(pg_url, tmp_path, policy=TrimPolicy())
    try:
        assert isinstance(layered.backend, PostgresSessionStore) and layered.backend.schema == "flower"
        key: Any = {"project_key": f"-url-{time.time_ns()}", "session_id": "s"}
        await layered.append(key, [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}])
        assert (await layered.load(key) or [])[0]["uuid"] == "u1"
        assert layered.has_session(key["project_key"], "s")
        await layered.delete(key)
    finally:
        layered.close()
    assert layered.backend._closed


def _entries(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {"type": "user", "uuid": f"{prefix}{i}", "message": {"role": "user", "content": f"{prefix} {i}"}}
        for i in range(n)
    ]


async def test_a_replayed_batch_adds_nothing_and_changes_no_mtime(pg_store: MakeStore) -> None:
    store = pg_store()
    batch = [*_entries("a", 5), {"type": "tag", "note": "no uuid"}]
    await store.append(KEY, batch)
    [listed] = await store.list_sessions("-ws")
    [summary] = await store.list_session_summaries("-ws")

    await store.append(KEY, [e for e in batch if "uuid" in e])  # the SDK retrying the batch
    await store.append(KEY, list(reversed(_entries("a", 5))))
    assert await store.load(KEY) == batch
    assert await store.list_sessions("-ws") == [listed]
    assert await store.list_session_summaries("-ws") == [summary]

    # A batch that is partly new keeps only the new entries (and a uuid-less entry is always new).
    await store.append(KEY, [*_entries("a", 5), *_entries("b", 2), {"type": "tag", "note": "again"}])
    loaded = await store.load(KEY) or []
    assert [e.get("uuid") for e in loaded] == ["a0", "a1", "a2", "a3", "a4", None, "b0", "b1", None]
    [after] = await store.list_sessions("-ws")
    assert after["mtime"] > listed["mtime"]
    # Duplicates inside one batch are stored once.
    await store.append(KEY, [*_entries("c", 1), *_entries("c", 1)])
    assert [e.get("uuid") for e in await store.load(KEY) or []].count("c0") == 1


async def test_seq_is_contiguous_and_payloads_are_stored_byte_for_byte(pg_store: MakeStore, pg_url: str) -> None:
    store = pg_store()
    entry = {"z": 1, "type": "user", "a": {"y": [1, 2], "b": "é ✓ \u0000"}, "uuid": "u"}
    await store.append(KEY, [entry])
    await store.append(KEY, [*_entries("x", 3), entry])
    loaded = await store.load(KEY) or []
    assert list(loaded[0]) == ["z", "type", "a", "uuid"], "key order kept (jsonb would reorder it)"
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f'SELECT seq, payload FROM "{store.schema}".entries ORDER BY seq').fetchall()
        assert [r[0] for r in rows] == [0, 1, 2, 3]
        assert rows[0][1] == json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        assert conn.execute(f'SELECT next_seq FROM "{store.schema}".meta').fetchone() == (4,)


# A tool output cut inside an emoji: valid JSON, a valid Python str, but a lone surrogate PostgreSQL's text
# (UTF-8) cannot hold — in a payload and, odder still, in a uuid; NUL is the other thing text refuses.
CUT_TEXT = json.loads('"build ok \\ud83d"')


async def test_a_lone_surrogate_or_nul_never_costs_the_batch_and_loads_back_exactly(pg_store: MakeStore) -> None:
    from claude_agent_sdk import InMemorySessionStore

    odd = ["\ud800odd-uuid", "nul\u0000uuid", '"quoted"', json.dumps("\ud800odd-uuid")]  # the last two: no collision
    batch = [
        {"type": "user", "uuid": "a", "message": {"role": "user", "content": CUT_TEXT}},
        *(
            {"type": "user", "uuid": uid, "message": {"role": "user", "content": f"\udfff {i}"}}
            for i, uid in enumerate(odd)
        ),
        {"type": "user", "uuid": "z", "message": {"role": "user", "content": "caf\u00e9 \U0001f600"}},
    ]
    memory = InMemorySessionStore()
    await memory.append(KEY, batch)  # the SDK's own store takes it: so must ours
    store = pg_store()
    await store.append(KEY, batch)
    assert await store.load(KEY) == batch == await memory.load(KEY)
    await store.append(KEY, batch)  # a replay, odd uuids included, adds nothing
    await store.append(KEY, list(reversed(batch)))
    assert await store.load(KEY) == batch
    assert (await store.list_session_summaries("-ws"))[0]["data"] == (await memory.list_session_summaries("-ws"))[0][
        "data"
    ]


async def test_lines_that_are_not_objects_are_stored_as_they_are(pg_store: MakeStore) -> None:
    store = pg_store()
    batch = [*_entries("a", 1), "a stray string", 42, None, [1, "two"], *_entries("b", 1)]
    await store.append(KEY, batch)
    assert await store.load(KEY) == batch
    assert store.last_context("-ws", "s1") == 0
    assert [s["session_id"] for s in await store.list_session_summaries("-ws")] == ["s1"]


async def test_read_only_reads_an_existing_store_and_writes_nothing(pg_store: MakeStore, pg_url: str) -> None:
    with pytest.raises(StoreError, match=r"no session store at postgresql://.*schema 'never_written'.*check the URL"):
        PostgresSessionStore(pg_url, schema="never_written", read_only=True)
    with psycopg.connect(pg_url) as conn:  # ... and looking did not create it
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'never_written'").fetchone() is None

    writer = pg_store()
    await writer.append(KEY, _entries("a", 3))
    reader = pg_store(schema=writer.schema, read_only=True)
    assert reader.read_only and [e["uuid"] for e in await reader.load(KEY) or []] == ["a0", "a1", "a2"]
    assert [s["session_id"] for s in await reader.list_sessions("-ws")] == ["s1"] and reader.has_session("-ws", "s1")
    with pytest.raises(StoreError, match="opened read-only"):
        await reader.append(KEY, _entries("b", 1))
    with pytest.raises(StoreError, match="opened read-only"):
        await reader.delete(KEY)
    # The server refuses too, whatever a caller runs on the store's connections.
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        reader._run(lambda conn: conn.execute(f'DELETE FROM "{writer.schema}".entries'))
    assert len(await writer.load(KEY) or []) == 3
    # The same through a URL, as `flower sessions --store …` opens it.
    with store_from_url(pg_url, schema=writer.schema, read_only=True) as by_url:
        assert isinstance(by_url, PostgresSessionStore) and by_url.has_session("-ws", "s1")


async def test_keys_are_compared_by_code_point_whatever_the_database_collation(pg_store: MakeStore) -> None:
    store = pg_store()
    for project, sid, sub in [
        ("p", "s", None),
        ("p", "s", "subagents/a"),
        ("p", "s-2", None),
        ("p", "s.x", "b"),
        ("p-2", "t", None),
        ("p0", "u", None),
    ]:
        key: Any = {"project_key": project, "session_id": sid, **({"subpath": sub} if sub else {})}
        await store.append(key, [{"type": "user"}])
    assert sorted(s["session_id"] for s in await store.list_sessions("p")) == ["s", "s-2"]
    assert await store.list_subkeys({"project_key": "p", "session_id": "s"}) == ["subagents/a"]
    assert store.projects() == ["p", "p-2", "p0"]
    await store.delete({"project_key": "p", "session_id": "s"})
    assert sorted(s["session_id"] for s in await store.list_sessions("p")) == ["s-2"]
    assert await store.load({"project_key": "p", "session_id": "s.x", "subpath": "b"}) == [{"type": "user"}]


async def test_flowers_synchronous_helpers(pg_store: MakeStore) -> None:
    store = pg_store()
    assert store.projects() == [] and not store.has_session("-ws", "s1") and store.last_context("-ws", "s1") == 0
    usage = {"input_tokens": 10, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 5, "output_tokens": 99}
    await store.append(
        KEY,
        [
            {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "usage": usage}},
            {
                "type": "assistant",
                "uuid": "a2",
                "message": {"role": "assistant", "model": "<synthetic>", "usage": {"input_tokens": 0}},
            },
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "next"}},
        ],
    )
    await store.append({**KEY, "subpath": "subagents/x"}, [{"type": "user"}])
    assert store.projects() == ["-ws"]
    assert store.has_session("-ws", "s1") and not store.has_session("-ws", "subagents")
    assert store.last_context("-ws", "s1") == 1015
    assert store.last_context("-ws", "s1", scan=2) == 0  # the latest two entries carry no usage
    assert (
        store.has_entry("-ws", "s1", "u1")
        and not store.has_entry("-ws", "s1", "u2")
        and not store.has_entry("-ws", "s2", "u1")
    )


def test_works_under_trio(pg_store: MakeStore) -> None:
    store = pg_store()

    async def main() -> list[Any] | None:
        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(store.append, {**KEY, "session_id": f"t{n}"}, _entries(f"t{n}-", 20))
        await store.append(KEY, _entries("m", 3))
        return await store.load(KEY)

    assert [e["uuid"] for e in anyio.run(main, backend="trio") or []] == ["m0", "m1", "m2"]
    assert len(anyio.run(store.list_sessions, "-ws", backend="trio")) == 5


async def test_another_task_keeps_running_while_a_10000_entry_session_loads(pg_store: MakeStore) -> None:
    store = pg_store()
    filler = "x" * 1800
    for start in range(0, 10_000, 1000):
        await store.append(
            KEY,
            [
                {"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": filler}}
                for i in range(start, start + 1000)
            ],
        )
    ticks = 0
    loading = True
    loaded: list[Any] = []

    async def load() -> None:
        nonlocal loading
        loaded.append(await store.load(KEY))
        loading = False

    async def ticker() -> None:
        nonlocal ticks
        while loading:
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(load)
        tg.start_soon(ticker)
    assert loaded[0] is not None and len(loaded[0]) == 10_000
    assert ticks >= 5, f"the event loop was blocked during the load: {ticks} ticks"


async def test_a_connection_killed_by_the_server_is_replaced_transparently(pg_store: MakeStore, pg_url: str) -> None:
    store = pg_store(max_size=1)
    await store.append(KEY, _entries("a", 2))
    with psycopg.connect(pg_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'flower-stores' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert killed and killed[0] >= 1
    await store.append(KEY, _entries("b", 2))  # the pooled connection is dead: one retry on a fresh one
    assert [e["uuid"] for e in await store.load(KEY) or []] == ["a0", "a1", "b0", "b1"]
    assert store.has_session("-ws", "s1")


# --- the schema ---------------------------------------------------------------------------------------------


def test_the_schema_is_created_once_with_a_version_row_even_by_racing_openers(pg_store: MakeStore, pg_url: str) -> None:
    schema = f"race_{time.time_ns()}"
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def open_one() -> None:
        try:
            barrier.wait(30)
            pg_store(schema=schema)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    with psycopg.connect(pg_url) as conn:
        # Version 4: version 1's tables, the session lease's (2), the run records' (3) and the run log's (4).
        assert conn.execute(f'SELECT name, value FROM "{schema}".store_info').fetchall() == [("schema_version", "4")]
    pg_store(schema=schema)  # and opening again changes nothing


def test_a_schema_from_a_newer_release_is_refused_with_the_fix(pg_store: MakeStore, pg_url: str) -> None:
    store = pg_store()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"UPDATE \"{store.schema}\".store_info SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(StoreError) as caught:
        pg_store(schema=store.schema)
    message = str(caught.value)
    assert "schema version 99" in message and "upgrade flower-stores" in message and "\n" not in message


# --- errors: one line, what is wrong and what to do ---------------------------------------------------------------


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_one_line_with_the_fix() -> None:
    url = f"postgresql://flower:secret-pw@127.0.0.1:{_refused_port()}/flower"
    with pytest.raises(StoreError) as caught:
        store_from_url(url)
    message = str(caught.value)
    assert "\n" not in message and "secret-pw" not in message
    assert "127.0.0.1" in message and "refused" in message.lower() and "check that the server is running" in message


def test_a_wrong_password_or_database_says_which(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    wrong = parts._replace(netloc=f"{parts.username}:wrong-secret@{parts.hostname}:{parts.port}").geturl()
    try:
        PostgresSessionStore(wrong).close()
    except StoreError as exc:
        message = str(exc)
        assert "password authentication failed" in message and "check the user name and password" in message
        assert "wrong-secret" not in message and "\n" not in message
    else:
        pytest.skip("this server does not check passwords (trust authentication)")
    with pytest.raises(StoreError, match='database "no_such_db" does not exist; create it'):
        PostgresSessionStore(parts._replace(path="/no_such_db").geturl())


@pytest.mark.parametrize(
    "url",
    [
        "mysql://host/db",
        "sessions.db",
        "sqlite://",
        "postgresql://host:notaport/db",
        "postgresql://host/db?bogus_option=1",
        "",
    ],
)
def test_malformed_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(StoreUrlError) as caught:
        store_from_url(url)
    message = str(caught.value)
    assert (
        "\n" not in message
        and "sqlite:///abs/path/sessions.db" in message
        and "postgresql://user:password@host" in message
    )


def test_without_the_extra_the_store_says_how_to_install_it(tmp_path: Path) -> None:
    # A fresh interpreter in which psycopg cannot be imported: flower_stores still imports, and the store says
    # what to install.
    script = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "import flower_stores\n"
        "try:\n"
        "    flower_stores.store_from_url('postgresql://u@127.0.0.1:1/db')\n"
        "except flower_stores.StoreError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("pip install 'flower-stores[postgres]'")
    assert out.stdout.count("\n") == 1
