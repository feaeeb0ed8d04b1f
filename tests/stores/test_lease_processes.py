"""Real processes contending for one session's lease: each takes it when it can, writes through a fenced view,
and sometimes stalls past its lease while another takes over — on one SQLite file, and on a PostgreSQL server.

Afterwards the store must hold exactly the appends that were accepted, none of the refused ones, and in store
order the writers' epochs never go back; no epoch was ever granted to two processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

from flower_stores import store_from_url

WORKERS = 4
ROUNDS = 12

WORKER = textwrap.dedent(
    """
    import json, random, sys, time, anyio
    from pathlib import Path
    from flower_stores import LeaseHeld, LeaseLost, LeaseOwner, store_from_url

    url, schema, go, log, worker, rounds = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    options = {} if schema == "-" else {"schema": schema}
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        time.sleep(0.005)
    TTL = 0.1
    rng = random.Random(worker)
    main = {"project_key": "-race", "session_id": "contended"}
    sub = {**main, "subpath": "subagents/agent-w"}

    async def run() -> None:
        store = store_from_url(url, **options)
        owner = LeaseOwner.this_process(f"w{worker}")
        out = log.open("w")
        n = 0
        for _ in range(rounds):
            try:
                lease = await store.acquire_lease("-race", "contended", owner, ttl=TTL)
            except LeaseHeld:
                await anyio.sleep(rng.uniform(0.005, 0.03))
                continue
            out.write(json.dumps({"granted": lease.epoch}) + "\\n")
            view = store.fenced(lease)
            for step in range(rng.randint(1, 4)):
                if rng.random() < 0.3:
                    await anyio.sleep(TTL * 3)  # stalls past its lease: another may take over meanwhile
                n += 1
                uid = f"w{worker}-{n}"
                key = sub if rng.random() < 0.3 else main
                try:
                    await view.append(key, [{"type": "user", "uuid": uid, "epoch": lease.epoch, "w": worker}])
                    ok = True
                except LeaseLost:
                    ok = False
                out.write(json.dumps({"uuid": uid, "epoch": lease.epoch, "accepted": ok}) + "\\n")
                if not ok:
                    break
            if rng.random() < 0.5:
                await store.release_lease(lease)
            await anyio.sleep(rng.uniform(0.0, 0.02))
        out.close()
        store.close()

    anyio.run(run)
    """
)


def _race(tmp_path: Path, url: str, schema: str) -> list[dict[str, Any]]:
    go = tmp_path / "go"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    logs = [tmp_path / f"w{w}.jsonl" for w in range(WORKERS)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), url, schema, str(go), str(logs[w]), str(w), str(ROUNDS)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    time.sleep(0.2)
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
    return [{**json.loads(line), "w": w} for w, log in enumerate(logs) for line in log.read_text().splitlines()]


async def _check(store: Any, events: list[dict[str, Any]]) -> None:
    granted = {(e["granted"], e["w"]) for e in events if "granted" in e}
    by_epoch = Counter(epoch for epoch, _ in granted)
    assert all(count == 1 for count in by_epoch.values()), f"an epoch granted to two processes: {by_epoch}"
    assert len({w for _, w in granted}) >= 2, "the lease never changed hands: the race tested nothing"

    appends = [e for e in events if "uuid" in e]
    accepted = {e["uuid"] for e in appends if e["accepted"]}
    refused = {e["uuid"] for e in appends if not e["accepted"]}
    stored: list[dict[str, Any]] = []
    for key in (
        {"project_key": "-race", "session_id": "contended"},
        {"project_key": "-race", "session_id": "contended", "subpath": "subagents/agent-w"},
    ):
        entries = await store.load(key) or []
        epochs = [e["epoch"] for e in entries]
        assert epochs == sorted(epochs), f"an older epoch wrote after a newer one: {epochs}"
        stored += entries
    uids = [e["uuid"] for e in stored]
    assert len(uids) == len(set(uids)), "an entry stored twice"
    assert set(uids) == accepted, f"lost {accepted - set(uids)}, stale ones stored {set(uids) & refused}"
    assert refused, "no stale append was ever refused: the race tested nothing"


async def test_processes_racing_for_a_sqlite_sessions_lease(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    store_from_url(f"sqlite://{db}").close()  # the schema exists before the race starts
    events = _race(tmp_path, f"sqlite://{db}", "-")
    with store_from_url(f"sqlite://{db}", read_only=True) as store:
        await _check(store, events)


async def test_processes_racing_for_a_postgres_sessions_lease(tmp_path: Path, pg_store: Any) -> None:
    store = pg_store()
    events = _race(tmp_path, store.url, store.schema)
    await _check(store, events)
