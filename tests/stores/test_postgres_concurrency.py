"""Many writers on one PostgreSQL store: real processes (as on many machines), and deletes racing appends."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg

from flower_stores import PostgresSessionStore

WORKERS = 8
BATCHES = 30
PER_BATCH = 20

# Each worker appends to its own session and to one session they all share, replays some of its batches (the
# SDK retries failed batches), and mixes in uuid-less entries. They start together on a "go" file.
WORKER = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from flower_stores import PostgresSessionStore

    url, schema, go, worker = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    BATCHES, PER_BATCH = int(sys.argv[5]), int(sys.argv[6])
    store = PostgresSessionStore(url, schema=schema)  # connected before the race starts
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        time.sleep(0.005)

    async def main() -> None:
        own = {"project_key": "-ws", "session_id": f"own-{worker}"}
        shared = {"project_key": "-ws", "session_id": "shared"}
        for b in range(BATCHES):
            batch = [{"type": "user", "uuid": f"w{worker}-b{b}-e{i}", "w": worker, "b": b, "i": i} for i in range(PER_BATCH)]
            batch.append({"type": "tag", "w": worker, "b": b})  # no uuid: never deduplicated
            await store.append(own, batch)
            await store.append(shared, batch)
            if b % 5 == 4:
                await store.append(shared, [e for e in batch if "uuid" in e])  # a replay adds nothing

    anyio.run(main)
    store.close()
    """
)


def test_eight_processes_append_to_one_key_without_loss_or_duplicates(
    pg_store: Callable[..., PostgresSessionStore], pg_url: str, tmp_path: Path
) -> None:
    schema = pg_store().schema  # the schema exists before the race starts; pg_store drops it afterwards
    go = tmp_path / "go"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), pg_url, schema, str(go), str(w), str(BATCHES), str(PER_BATCH)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=280)
        assert proc.returncode == 0, err[-3000:]

    with psycopg.connect(pg_url) as conn:
        for key, workers in [(f"-ws/own-{w}", [w]) for w in range(WORKERS)] + [("-ws/shared", list(range(WORKERS)))]:
            rows = conn.execute(
                f'SELECT seq, uid, payload FROM "{schema}".entries WHERE store_key = %s ORDER BY seq', (key,)
            ).fetchall()
            assert [r[0] for r in rows] == list(range(len(rows))), f"{key}: seq not contiguous"
            uids = [r[1] for r in rows if r[1] is not None]
            assert len(uids) == len(set(uids)), f"{key}: duplicated uuids"
            expected = {f"w{w}-b{b}-e{i}" for w in workers for b in range(BATCHES) for i in range(PER_BATCH)}
            assert set(uids) == expected, f"{key}: lost {len(expected - set(uids))} entries"
            assert sum(1 for r in rows if r[1] is None) == len(workers) * BATCHES
            for w in workers:  # within one process, entries keep their append order
                mine = [(p["b"], p.get("i", PER_BATCH)) for p in (json.loads(r[2]) for r in rows) if p["w"] == w]
                assert mine == sorted(mine)
            assert conn.execute(f'SELECT next_seq FROM "{schema}".meta WHERE store_key = %s', (key,)).fetchone() == (
                len(rows),
            )
        # The shared session's summary was folded once per effective batch, by whichever process held the lock.
        summary = conn.execute(
            f'SELECT mtime, data FROM "{schema}".summaries WHERE session_id = %s', ("shared",)
        ).fetchone()
        meta_mtime = conn.execute(f'SELECT mtime FROM "{schema}".meta WHERE store_key = %s', ("-ws/shared",)).fetchone()
        assert summary is not None and meta_mtime is not None and summary[0] == meta_mtime[0]


def test_deleting_a_session_while_its_subagents_append_leaves_no_half_state(
    pg_store: Callable[..., PostgresSessionStore], pg_url: str
) -> None:
    """Cascade delete and appends to the session's subkeys interleave only whole: every key in ``meta`` has
    exactly the entries ``0..next_seq-1``, and no entry outlives its key's ``meta`` row."""
    store = pg_store()
    main: Any = {"project_key": "-ws", "session_id": "s"}
    stop = threading.Event()
    failures: list[BaseException] = []

    def appender(n: int) -> None:
        key: Any = {**main, "subpath": f"subagents/agent-{n}"}
        i = 0
        try:
            while not stop.is_set():
                anyio.run(store.append, key, [{"type": "user", "uuid": f"a{n}-{i}-{j}"} for j in range(5)])
                anyio.run(store.append, main, [{"type": "user", "uuid": f"m{n}-{i}"}])
                i += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(25):
            anyio.run(store.delete, main)
    finally:
        stop.set()
        for t in threads:
            t.join(120)
    assert failures == []

    s = store.schema
    with psycopg.connect(pg_url) as conn:
        metas = dict(conn.execute(f'SELECT store_key, next_seq FROM "{s}".meta').fetchall())
        for key, next_seq in metas.items():
            seqs = [
                r[0] for r in conn.execute(f'SELECT seq FROM "{s}".entries WHERE store_key = %s ORDER BY seq', (key,))
            ]
            assert seqs == list(range(next_seq)), key
        orphans = conn.execute(
            f'SELECT DISTINCT store_key FROM "{s}".entries e WHERE NOT EXISTS (SELECT 1 FROM "{s}".meta m WHERE m.store_key = e.store_key)'
        ).fetchall()
        assert orphans == []


def test_concurrent_appends_hold_under_a_stricter_default_isolation(
    pg_store: Callable[..., PostgresSessionStore], pg_url: str
) -> None:
    """A server or role whose default is SERIALIZABLE must not turn lock waits into serialization failures:
    the store pins READ COMMITTED, on which its append's correctness rests."""
    sep = "&" if "?" in pg_url else "?"
    strict = pg_store(url=f"{pg_url}{sep}options=-c%20default_transaction_isolation%3Dserializable")
    key: Any = {"project_key": "-ws", "session_id": "strict"}
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for b in range(15):
                anyio.run(strict.append, key, [{"type": "user", "uuid": f"w{n}-{b}-{i}"} for i in range(10)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    loaded = anyio.run(strict.load, key) or []
    assert len(loaded) == 4 * 15 * 10 == len({e["uuid"] for e in loaded})
