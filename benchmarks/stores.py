"""flower-stores benchmark: append throughput, layered vs raw load, and bytes fed back — ratios from one run.

    hatch run python benchmarks/stores.py [--entries 10000] [--rounds 5]

1. Append: a 10,000-entry session appended in batches of 100, one commit per batch, through
   ``SqliteSessionStore.append`` (worker thread, uuid dedup, meta, summary fold) against two floors on the same
   schema and pragmas, also one commit per batch:
   - *floor*: ``json.dumps`` of each entry + one bare ``executemany`` — the least any SQLite store must do
     with the dicts the SDK hands it (goal: ours >= 0.6 of its throughput);
   - *strict floor*: ``executemany`` of rows serialised in advance (shown for reference).
2. Load: the same ~20 MB session through ``SqliteSessionStore.load`` (raw) and through
   ``PruningSessionStore`` with every layer on (expire + trim + prune + relink + heal). Goal: layered <= 1.5x raw.
   The first layered load also writes the spill files ("cold"); later ones find them ("warm").
3. Context economy: bytes of the ``message`` fields (what the model is sent) after the layers, as a share of
   the raw transcript's.

Each measurement is the median of ``--rounds`` interleaved rounds. Absolute times vary from machine to machine;
the ratios are the result.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from flower_stores import EphemeralPolicy, PrunePolicy, PruningSessionStore, SqliteSessionStore, TrimPolicy

SESSION = str(uuid.UUID(int=1))
BATCH = 100
COMMON = {"userType": "external", "entrypoint": "sdk-py", "cwd": "/home/dev/project", "sessionId": SESSION, "version": "2.1.332", "gitBranch": "main", "isSidechain": False}
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 512,
    "cache_read_input_tokens": 48_000,
    "output_tokens": 180,
    "service_tier": "standard",
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 512},
}
GLANCES = ["git status", "git status --short", "git diff --stat", "ls -la", "git log --oneline -10", "ls src", "git branch -vv"]
WORDS = "the of and session store entry result tool model context trim spill glance resume prune heal".split()


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        line = " ".join(rng.choices(WORDS, k=rng.randint(4, 14))) + f" {rng.randint(0, 99999)}"
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)[:size]


def synthetic_session(n_entries: int, seed: int = 7) -> list[dict[str, Any]]:
    """A Claude-Code-shaped transcript: tool calls and results (glances, big outputs, reads), prompts, denials,
    dropped connections, interrupts and a killed call, ~2 KB per entry on average like a real long session."""
    rng = random.Random(seed)
    entries: list[dict[str, Any]] = []
    leaf: str | None = None
    counter = 0

    def add(entry: dict[str, Any], chain: bool = True) -> None:
        nonlocal leaf, counter
        counter += 1
        if chain:
            uid = str(uuid.UUID(int=counter, version=4))
            entry = {"parentUuid": leaf, **entry, "uuid": uid, "timestamp": f"2026-01-01T00:{counter // 3600 % 60:02d}:{counter // 60 % 60:02d}.000Z", **COMMON}
            leaf = uid
        entries.append(entry)

    def call(name: str, tool_input: dict[str, Any]) -> str:
        tool_id = f"toolu_{counter:08d}"
        message = {"id": f"msg_{counter:08d}", "type": "message", "role": "assistant", "model": "claude-opus-5-5", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}], "stop_reason": "tool_use", "usage": USAGE}
        add({"type": "assistant", "message": message, "requestId": f"req_{counter:08d}"})
        return tool_id

    def result(tool_id: str, content: str, **extra: Any) -> None:
        add({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": bool(extra.get("is_error"))}]}, "toolUseResult": {"stdout": content, "stderr": "", "interrupted": False}, **extra})

    add({"type": "user", "message": {"role": "user", "content": "Work through the backlog."}})
    # One round adds at most 3 entries; stop 5 short, then pad with prompts so the count is exact.
    while len(entries) < n_entries - 5:
        roll = rng.random()
        if roll < 0.42:
            result(call("Bash", {"command": rng.choice(GLANCES)}), _text(rng, rng.randint(150, 1200)))
        elif roll < 0.495:
            result(call("Bash", {"command": f"pytest -x tests/test_{rng.randint(1, 80)}.py"}), _text(rng, rng.randint(5_000, 20_000)))
        elif roll < 0.77:
            result(call("Read", {"file_path": f"/home/dev/project/src/m{rng.randint(1, 200)}.py"}), _text(rng, rng.randint(400, 1800)))
        elif roll < 0.87:
            add({"type": "assistant", "message": {"id": f"msg_{counter:08d}", "role": "assistant", "model": "claude-opus-5-5", "content": [{"type": "text", "text": _text(rng, rng.randint(100, 600))}], "usage": USAGE}})
        elif roll < 0.92:
            tool_id = call("Bash", {"command": f"rm -rf build/{rng.randint(1, 9)}"})
            result(tool_id, "Permission to use Bash has been denied.", is_error=True, toolDenialKind="permission-rule", permissionDecision={"decision": "reject", "source": "config"})
        elif roll < 0.94:
            add({"type": "assistant", "isApiErrorMessage": True, "error": "server_error", "message": {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": "API Error: Connection dropped (ECONNRESET)."}], "usage": {"input_tokens": 0, "output_tokens": 0}}})
        elif roll < 0.95:
            tool_id = call("Bash", {"command": "make long-job"})
            result(tool_id, "The user doesn't want to proceed with this tool use. STOP what you are doing and wait for the user.", is_error=True, toolDenialKind="user-rejected")
        else:
            add({"type": "user", "message": {"role": "user", "content": _text(rng, rng.randint(50, 300))}})
        if rng.random() < 0.05:
            add({"type": "last-prompt", "lastPrompt": "continue", "leafUuid": leaf, "sessionId": SESSION}, chain=False)
    while len(entries) < n_entries - 2:
        add({"type": "user", "message": {"role": "user", "content": _text(rng, rng.randint(50, 300))}})
    call("Bash", {"command": "make deploy"})  # killed mid-call: an orphan for heal_orphans
    add({"type": "user", "message": {"role": "user", "content": "resume"}})
    return entries


def fed_back_bytes(entries: list[dict[str, Any]]) -> int:
    """Bytes of what the model is sent: the ``message`` of user/assistant entries."""
    return sum(len(json.dumps(e["message"], ensure_ascii=False)) for e in entries if e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict))


def _floor_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq))")
    db.execute("CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL")
    return db


def _timed(fn: Callable[[], Any]) -> float:
    # Each measurement starts from the same collector state: otherwise the garbage of the previous one (a
    # whole 24 MB transcript) is collected, or a full collection falls due, inside whichever comes next.
    # The collector stays on while timing: what a load allocates and sets off is part of its cost.
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="flower-bench-") as tmp:  # ~400 MB of databases: never leave them
        run(Path(tmp))


def run(tmp: Path) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    session = synthetic_session(args.entries)
    raw_bytes = sum(len(json.dumps(e, ensure_ascii=False)) for e in session)
    batches = [session[i : i + BATCH] for i in range(0, len(session), BATCH)]
    print(f"session: {len(session):,} entries, {raw_bytes / 1e6:.1f} MB as JSON, {len(batches)} batches of {BATCH}")

    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    key: Any = {"project_key": "-home-dev-project", "session_id": SESSION}

    ours_t, floor_t, strict_t = [], [], []
    for r in range(args.rounds):
        store = SqliteSessionStore(tmp / f"ours-{r}.db")

        async def append_all(store: SqliteSessionStore = store) -> None:
            for batch in batches:
                await store.append(key, batch)

        ours_t.append(_timed(lambda: anyio.run(append_all)))
        store.close()

        db = _floor_db(tmp / f"floor-{r}.db")

        def floor(db: sqlite3.Connection = db) -> None:
            seq = 0
            for batch in batches:
                rows = [("k", seq + i, e.get("uuid"), dumps(e)) for i, e in enumerate(batch)]
                db.execute("BEGIN")
                db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)", rows)
                db.execute("COMMIT")
                seq += len(batch)

        floor_t.append(_timed(floor))
        db.close()

        db = _floor_db(tmp / f"strict-{r}.db")
        prepared = [[("k", b * BATCH + i, e.get("uuid"), dumps(e)) for i, e in enumerate(batch)] for b, batch in enumerate(batches)]

        def strict(db: sqlite3.Connection = db) -> None:
            for rows in prepared:
                db.execute("BEGIN")
                db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)", rows)
                db.execute("COMMIT")

        strict_t.append(_timed(strict))
        db.close()

    ours, floor_s, strict_s = (statistics.median(x) for x in (ours_t, floor_t, strict_t))
    n = len(session)
    del session, batches, prepared  # a resuming process does not hold a second copy of the transcript
    print("\nappend (batches of 100, one commit each)")
    print(f"  SqliteSessionStore.append   {n / ours:10,.0f} entries/s")
    print(f"  floor (dumps + executemany) {n / floor_s:10,.0f} entries/s   ours = {floor_s / ours:.2f} of floor (goal >= 0.6)")
    print(f"  strict floor (pre-encoded)  {n / strict_s:10,.0f} entries/s   ours = {strict_s / ours:.2f} of strict floor")

    store = SqliteSessionStore(tmp / "ours-0.db")
    workspace = tmp / "ws"
    layered = PruningSessionStore(store, workspace, policy=TrimPolicy(), ephemeral=EphemeralPolicy(), prune=PrunePolicy())

    async def load(s: Any) -> Any:
        return await s.load(key)

    raw_t, layered_t = [], []
    cold = _timed(lambda: anyio.run(load, layered))
    for _ in range(args.rounds):
        raw_t.append(_timed(lambda: anyio.run(load, store)))
        layered_t.append(_timed(lambda: anyio.run(load, layered)))
    raw_s, layered_s = statistics.median(raw_t), statistics.median(layered_t)
    raw_entries = anyio.run(load, store)
    out = anyio.run(load, layered)
    report = layered.last_report
    print(f"\nload of {n:,} entries ({raw_bytes / 1e6:.1f} MB)")
    print(f"  raw     SqliteSessionStore.load          {raw_s * 1000:8.0f} ms")
    print(f"  layered PruningSessionStore.load (warm)  {layered_s * 1000:8.0f} ms   = {layered_s / raw_s:.2f}x raw (goal <= 1.5x)")
    print(f"  layered, first load (writes spill files) {cold * 1000:8.0f} ms   = {cold / raw_s:.2f}x raw")
    print(f"  {report.summary()}")

    raw_fed, fed = fed_back_bytes(raw_entries), fed_back_bytes(out)
    print("\ncontext economy (bytes of message content sent to the model on resume)")
    print(f"  raw {raw_fed / 1e6:.2f} MB -> layered {fed / 1e6:.2f} MB = {fed / raw_fed:.1%} of raw")
    spilled = list((workspace / ".flower" / "spill").glob("*.txt"))
    print(f"  {len(spilled)} spill files, {sum(p.stat().st_size for p in spilled) / 1e6:.1f} MB, under <workspace>/.flower/spill")
    store.close()


if __name__ == "__main__":
    main()
