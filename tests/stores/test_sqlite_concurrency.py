"""Several real processes on one sessions.db, and loads that never block the event loop."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio

from flower_stores import SqliteSessionStore

WORKERS = 4
BATCHES = 40
PER_BATCH = 25

# Each worker appends to its own session and to one session they all share, replays some of its batches
# (the SDK retries failed batches), and mixes in uuid-less entries. They start together on a "go" file.
WORKER = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from flower_stores import SqliteSessionStore

    db, go, worker = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    BATCHES, PER_BATCH = int(sys.argv[4]), int(sys.argv[5])
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        time.sleep(0.005)

    async def main() -> None:
        store = SqliteSessionStore(db)
        own = {"project_key": "-ws", "session_id": f"own-{worker}"}
        shared = {"project_key": "-ws", "session_id": "shared"}
        for b in range(BATCHES):
            batch = [{"type": "user", "uuid": f"w{worker}-b{b}-e{i}", "w": worker, "b": b, "i": i} for i in range(PER_BATCH)]
            batch.append({"type": "tag", "w": worker, "b": b})  # no uuid: never deduplicated
            await store.append(own, batch)
            await store.append(shared, batch)
            if b % 5 == 4:
                await store.append(shared, [e for e in batch if "uuid" in e])  # a replay adds nothing
        store.close()

    anyio.run(main)
    """
)


def test_four_processes_append_to_one_db_without_loss_or_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    SqliteSessionStore(db).close()  # the schema exists before the race starts
    go = tmp_path / "go"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(db), str(go), str(w), str(BATCHES), str(PER_BATCH)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]

    with sqlite3.connect(db) as conn:
        for key, expected_workers in [(f"-ws/own-{w}", [w]) for w in range(WORKERS)] + [
            ("-ws/shared", list(range(WORKERS)))
        ]:
            rows = conn.execute(
                "SELECT seq, uid, payload FROM entries WHERE store_key = ? ORDER BY seq", (key,)
            ).fetchall()
            seqs = [r[0] for r in rows]
            assert seqs == list(range(len(rows))), f"{key}: seq not contiguous"
            uids = [r[1] for r in rows if r[1] is not None]
            assert len(uids) == len(set(uids)), f"{key}: duplicated uuids"
            expected = {f"w{w}-b{b}-e{i}" for w in expected_workers for b in range(BATCHES) for i in range(PER_BATCH)}
            assert set(uids) == expected, f"{key}: lost {len(expected - set(uids))} entries"
            tags = [json.loads(r[2]) for r in rows if r[1] is None]
            assert len(tags) == len(expected_workers) * BATCHES
            # Within one process, entries keep their append order.
            for w in expected_workers:
                mine = [(p["b"], p.get("i", PER_BATCH)) for p in map(json.loads, (r[2] for r in rows)) if p["w"] == w]
                assert mine == sorted(mine)
            assert conn.execute("SELECT next_seq FROM meta WHERE store_key = ?", (key,)).fetchone() == (len(rows),)


async def test_another_task_keeps_running_while_a_10000_entry_session_loads(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    key: Any = {"project_key": "-ws", "session_id": "big"}
    filler = "x" * 1800
    for start in range(0, 10_000, 1000):
        await store.append(
            key,
            [
                {"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": filler}}
                for i in range(start, start + 1000)
            ],
        )

    ticks_during_load = 0
    loading = True
    loaded: list[Any] = []

    async def load() -> None:
        nonlocal loading
        loaded.append(await store.load(key))
        loading = False

    async def ticker() -> None:
        nonlocal ticks_during_load
        while loading:
            ticks_during_load += 1
            await anyio.sleep(0.001)

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(load)
        tg.start_soon(ticker)
    elapsed = time.monotonic() - started
    assert loaded[0] is not None and len(loaded[0]) == 10_000
    # Had the load run on the event loop, the ticker could not have run at all until it finished.
    assert ticks_during_load >= 5, f"the event loop was blocked: {ticks_during_load} ticks in {elapsed:.3f}s"
    store.close()


async def test_concurrent_loads_in_one_process(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    keys: list[Any] = [{"project_key": "-ws", "session_id": f"s{n}"} for n in range(4)]
    for key in keys:
        await store.append(key, [{"type": "user", "uuid": f"u{i}"} for i in range(200)])
    results: dict[str, Any] = {}

    async def load(key: Any) -> None:
        results[key["session_id"]] = await store.load(key)

    async with anyio.create_task_group() as tg:
        for key in keys:
            tg.start_soon(load, key)
    assert all(len(results[k["session_id"]]) == 200 for k in keys)
    store.close()
