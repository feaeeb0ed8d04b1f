"""flower-stores benchmark: append throughput, layered vs raw load, and bytes fed back — ratios from one run.

    hatch run python benchmarks/stores.py [--entries 10000] [--rounds 7] [--shape small|big|all] [--pg-url URL]

Two session shapes, each 10,000 entries appended in batches of 100: *small* (a few hundred bytes an entry,
where per-entry overheads dominate) and *big* (~2 KB an entry, ~20 MB, like a long real session). For each
shape and each backend row of ``BACKENDS``:

- ``sqlite``: `SqliteSessionStore`; its floor is ``json.dumps`` of each entry + one bare ``executemany`` per
  batch on the same schema and pragmas, same commits — the least any SQLite store must do with the dicts the
  SDK hands it. Goal: ours >= 0.6 of the floor's append throughput.
- ``postgres`` (``stores_postgres.py``): `PostgresSessionStore`; its floor is written the way the SDK's
  reference adapter works (asyncpg, one multi-row ``INSERT … unnest`` per batch, one ordered ``SELECT``,
  nothing else), on the same server. Goal: ours >= 0.8 of the floor's append throughput *and* raw-load speed.
- ``pg-floor``: that floor as a store of its own, so its raw and layered loads are shown too.

The PostgreSQL server: ``--pg-url``, ``FLOWER_TEST_PG_URL``, or a throw-away cluster with fsync on started
for the run (``tests/pg_cluster.py``; without Debian's ``postgresql`` those rows are skipped, with the reason).

1. Append: ``store.append`` per batch (worker thread, uuid dedup, meta, summary fold, one commit per batch)
   against the row's floor. Ratio: ours/floor *throughput* (entries/s ÷ entries/s; above 1 = ours faster).
2. Load: the stored session through the backend's ``load`` (raw) and through ``PruningSessionStore`` with every
   layer on (expire + trim + prune + relink + heal). Goal: layered <= 1.5x raw. The first layered load also
   writes the spill files; the ratio shown is the later ("warm") ones, by wall clock and by CPU time (steadier
   when other processes share the machine). Where the row has a load floor: ours/floor *speed* (floor's
   time ÷ ours; above 1 = ours faster).
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
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import anyio

from flower_stores import EphemeralPolicy, PrunePolicy, PruningSessionStore, SqliteSessionStore, TrimPolicy

SESSION = str(uuid.UUID(int=1))
BATCH = 100
COMMON = {
    "userType": "external",
    "entrypoint": "sdk-py",
    "cwd": "/home/dev/project",
    "sessionId": SESSION,
    "version": "2.1.332",
    "gitBranch": "main",
    "isSidechain": False,
}
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 512,
    "cache_read_input_tokens": 48_000,
    "output_tokens": 180,
    "service_tier": "standard",
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 512},
}
GLANCES = [
    "git status",
    "git status --short",
    "git diff --stat",
    "ls -la",
    "git log --oneline -10",
    "ls src",
    "git branch -vv",
]
WORDS = "the of and session store entry result tool model context trim spill glance resume prune heal".split()


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        line = " ".join(rng.choices(WORDS, k=rng.randint(4, 14))) + f" {rng.randint(0, 99999)}"
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)[:size]


# Text sizes (min, max) per shape: "big" averages ~2 KB an entry like a real long session, "small" a few hundred
# bytes (the entry envelope — ids, cwd, usage — is most of it), where per-entry overheads dominate.
SIZES = {
    "big": {
        "glance": (150, 1200),
        "tests": (5_000, 20_000),
        "read": (400, 1800),
        "reply": (100, 600),
        "prompt": (50, 300),
    },
    "small": {"glance": (20, 120), "tests": (100, 300), "read": (40, 200), "reply": (20, 100), "prompt": (10, 60)},
}


def synthetic_session(n_entries: int, seed: int = 7, shape: str = "big") -> list[dict[str, Any]]:
    """A Claude-Code-shaped transcript: tool calls and results (glances, big outputs, reads), prompts, denials,
    dropped connections, interrupts and a killed call; entry sizes as ``SIZES[shape]`` says."""
    rng = random.Random(seed)
    size = {k: (lambda lo_hi: lambda: rng.randint(*lo_hi))(v) for k, v in SIZES[shape].items()}
    entries: list[dict[str, Any]] = []
    leaf: str | None = None
    counter = 0

    def add(entry: dict[str, Any], chain: bool = True) -> None:
        nonlocal leaf, counter
        counter += 1
        if chain:
            uid = str(uuid.UUID(int=counter, version=4))
            entry = {
                "parentUuid": leaf,
                **entry,
                "uuid": uid,
                "timestamp": f"2026-01-01T00:{counter // 3600 % 60:02d}:{counter // 60 % 60:02d}.000Z",
                **COMMON,
            }
            leaf = uid
        entries.append(entry)

    def call(name: str, tool_input: dict[str, Any]) -> str:
        tool_id = f"toolu_{counter:08d}"
        message = {
            "id": f"msg_{counter:08d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
            "stop_reason": "tool_use",
            "usage": USAGE,
        }
        add({"type": "assistant", "message": message, "requestId": f"req_{counter:08d}"})
        return tool_id

    def result(tool_id: str, content: str, **extra: Any) -> None:
        add(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tool_id,
                            "type": "tool_result",
                            "content": content,
                            "is_error": bool(extra.get("is_error")),
                        }
                    ],
                },
                "toolUseResult": {"stdout": content, "stderr": "", "interrupted": False},
                **extra,
            }
        )

    add({"type": "user", "message": {"role": "user", "content": "Work through the backlog."}})
    # One round adds at most 3 entries; stop 5 short, then pad with prompts so the count is exact.
    while len(entries) < n_entries - 5:
        roll = rng.random()
        if roll < 0.42:
            result(call("Bash", {"command": rng.choice(GLANCES)}), _text(rng, size["glance"]()))
        elif roll < 0.495:
            result(
                call("Bash", {"command": f"pytest -x tests/test_{rng.randint(1, 80)}.py"}), _text(rng, size["tests"]())
            )
        elif roll < 0.77:
            result(
                call("Read", {"file_path": f"/home/dev/project/src/m{rng.randint(1, 200)}.py"}),
                _text(rng, size["read"]()),
            )
        elif roll < 0.87:
            add(
                {
                    "type": "assistant",
                    "message": {
                        "id": f"msg_{counter:08d}",
                        "role": "assistant",
                        "model": "claude-opus-5-5",
                        "content": [{"type": "text", "text": _text(rng, size["reply"]())}],
                        "usage": USAGE,
                    },
                }
            )
        elif roll < 0.92:
            tool_id = call("Bash", {"command": f"rm -rf build/{rng.randint(1, 9)}"})
            result(
                tool_id,
                "Permission to use Bash has been denied.",
                is_error=True,
                toolDenialKind="permission-rule",
                permissionDecision={"decision": "reject", "source": "config"},
            )
        elif roll < 0.94:
            add(
                {
                    "type": "assistant",
                    "isApiErrorMessage": True,
                    "error": "server_error",
                    "message": {
                        "model": "<synthetic>",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "API Error: Connection dropped (ECONNRESET)."}],
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                }
            )
        elif roll < 0.95:
            tool_id = call("Bash", {"command": "make long-job"})
            result(
                tool_id,
                "The user doesn't want to proceed with this tool use. STOP what you are doing and wait for the user.",
                is_error=True,
                toolDenialKind="user-rejected",
            )
        else:
            add({"type": "user", "message": {"role": "user", "content": _text(rng, size["prompt"]())}})
        if rng.random() < 0.05:
            add({"type": "last-prompt", "lastPrompt": "continue", "leafUuid": leaf, "sessionId": SESSION}, chain=False)
    while len(entries) < n_entries - 2:
        add({"type": "user", "message": {"role": "user", "content": _text(rng, size["prompt"]())}})
    call("Bash", {"command": "make deploy"})  # killed mid-call: an orphan for heal_orphans
    add({"type": "user", "message": {"role": "user", "content": "resume"}})
    return entries


def fed_back_bytes(entries: list[dict[str, Any]]) -> int:
    """Bytes of what the model is sent: the ``message`` of user/assistant entries."""
    return sum(
        len(json.dumps(e["message"], ensure_ascii=False))
        for e in entries
        if e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict)
    )


def _floor_db(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq))"
    )
    db.execute("CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL")
    return db


def _timed(fn: Callable[[], Any]) -> float:
    """Wall-clock seconds of ``fn()``."""
    return _timed_both(fn)[0]


def _timed_both(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (all threads of this process) of ``fn()``.

    A load is pure CPU work (SQLite reads from the page cache, JSON parsing, the rewrite), so on a machine
    shared with other busy processes its CPU time is the steadier measure; both are shown.
    """
    # Each measurement starts from the same collector state: otherwise the garbage of the previous one (a
    # whole 24 MB transcript) is collected, or a full collection falls due, inside whichever comes next.
    # The collector stays on while timing: what a load allocates and sets off is part of its cost.
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


Batches = list[list[dict[str, Any]]]


class Backend(NamedTuple):
    """One row of the benchmark: how to open a store of this kind, and its floors.

    ``floor(tmp, batches)`` inserts the same batches the least way that backend allows (same commits per batch)
    and returns the seconds it took (None: the row is a floor itself). ``load_floor(batches)`` stores them the
    floor's way and returns its raw load (None: no load floor). ``append_all``/``load_raw`` replace the async
    protocol for a row that is called directly.
    """

    name: str
    open_store: Callable[[Path], Any]
    floor: Callable[[Path, Batches], float] | None
    close: Callable[[Any], None]
    floor_label: str = "dumps + executemany"
    goal: float = 0.6
    load_floor: Callable[[Batches], Callable[[], Any]] | None = None
    append_all: Callable[[Any, Batches], None] | None = None
    load_raw: Callable[[Any], Any] | None = None


def _sqlite_floor(tmp: Path, batches: list[list[dict[str, Any]]]) -> float:
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    db = _floor_db(tmp)

    def floor() -> None:
        seq = 0
        for batch in batches:
            rows = [("k", seq + i, e.get("uuid"), dumps(e)) for i, e in enumerate(batch)]
            db.execute("BEGIN")
            db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)", rows)
            db.execute("COMMIT")
            seq += len(batch)

    try:
        return _timed(floor)
    finally:
        db.close()


BACKENDS = [
    Backend("sqlite", lambda tmp: SqliteSessionStore(tmp / "sessions.db"), _sqlite_floor, lambda store: store.close())
]
KEY: Any = {"project_key": "-home-dev-project", "session_id": SESSION}


def _append_all(backend: Backend, store: Any, batches: Batches) -> None:
    if backend.append_all is not None:
        backend.append_all(store, batches)
        return

    async def append_all() -> None:
        for batch in batches:
            await store.append(KEY, batch)

    anyio.run(append_all)


def bench_append(backend: Backend, batches: Batches, tmp: Path, rounds: int) -> tuple[float, float | None]:
    """Median seconds of our append and of the backend's floor (if any), interleaved round by round."""
    ours_t, floor_t = [], []
    for r in range(rounds):
        store = backend.open_store(tmp / f"{backend.name}-ours-{r}")
        ours_t.append(_timed(lambda store=store: _append_all(backend, store, batches)))
        backend.close(store)
        if backend.floor is not None:
            floor_t.append(backend.floor(tmp / f"{backend.name}-floor-{r}", batches))
    return statistics.median(ours_t), statistics.median(floor_t) if floor_t else None


def bench_load(backend: Backend, batches: Batches, tmp: Path, rounds: int) -> dict[str, Any]:
    """Raw and layered load of the same stored session (medians), the first layered load, what it saved, and the
    floor's raw load of the same session if the row has one."""
    store = backend.open_store(tmp / f"{backend.name}-load")
    _append_all(backend, store, batches)
    workspace = tmp / f"{backend.name}-ws"
    layered = PruningSessionStore(
        store, workspace, policy=TrimPolicy(), ephemeral=EphemeralPolicy(), prune=PrunePolicy()
    )

    async def load(s: Any) -> Any:
        return await s.load(KEY)

    def load_raw() -> Any:
        return backend.load_raw(store) if backend.load_raw is not None else anyio.run(load, store)

    floor_load = backend.load_floor(batches) if backend.load_floor is not None else None
    raw_entries = load_raw()
    assert floor_load is None or floor_load() == raw_entries, "ours and the floor must load the same transcript"
    cold = _timed(lambda: anyio.run(load, layered))
    raw_t, layered_t, raw_cpu, layered_cpu, floor_t = [], [], [], [], []
    for _ in range(rounds):
        wall, cpu = _timed_both(load_raw)
        raw_t.append(wall)
        raw_cpu.append(cpu)
        wall, cpu = _timed_both(lambda: anyio.run(load, layered))
        layered_t.append(wall)
        layered_cpu.append(cpu)
        if floor_load is not None:
            floor_t.append(_timed(floor_load))
    out = anyio.run(load, layered)
    result = {
        "floor": statistics.median(floor_t) if floor_t else None,
        "raw": statistics.median(raw_t),
        "layered": statistics.median(layered_t),
        "cpu": statistics.median(layered_cpu) / statistics.median(raw_cpu),
        "cold": cold,
        "report": layered.last_report.summary(),
        "fed": (fed_back_bytes(raw_entries), fed_back_bytes(out)),
    }
    backend.close(store)
    return result


def run_shape(shape: str, n_entries: int, tmp: Path, rounds: int) -> None:
    session = synthetic_session(n_entries, shape=shape)
    raw_bytes = sum(len(json.dumps(e, ensure_ascii=False)) for e in session)
    batches = [session[i : i + BATCH] for i in range(0, len(session), BATCH)]
    print(
        f"\n== {shape} entries: {len(session):,} entries, {raw_bytes / 1e6:.1f} MB as JSON ({raw_bytes / len(session):,.0f} B/entry), {len(batches)} batches of {BATCH}"
    )
    for backend in BACKENDS:
        n = len(session)
        ours, floor = bench_append(backend, batches, tmp / shape, rounds)
        line = f"  {backend.name:8} append  {n / ours:9,.0f} entries/s"
        if floor is not None:
            line += f"   floor {n / floor:9,.0f} entries/s   throughput ours/floor = {floor / ours:.2f} (goal >= {backend.goal})   [floor: {backend.floor_label}]"
        print(line)
        loads = bench_load(backend, batches, tmp / shape, rounds)
        ratio = loads["layered"] / loads["raw"]
        print(
            f"  {backend.name:8} load    raw {loads['raw'] * 1000:6.0f} ms   layered {loads['layered'] * 1000:6.0f} ms = {ratio:.2f}x raw (goal <= 1.5x);"
            f" in CPU time {loads['cpu']:.2f}x;   first layered (writes spill files) {loads['cold'] / loads['raw']:.2f}x"
        )
        if loads["floor"] is not None:
            print(
                f"  {backend.name:8} raw load vs floor: ours {loads['raw'] * 1000:6.0f} ms, floor {loads['floor'] * 1000:6.0f} ms;"
                f" speed ours/floor = {loads['floor'] / loads['raw']:.2f} (goal >= {backend.goal})"
            )
        raw_fed, fed = loads["fed"]
        print(
            f"  {backend.name:8} resume  {loads['report']}; the model is sent {fed / raw_fed:.1%} of the raw transcript's message bytes"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--shape", choices=[*SIZES, "all"], default="all")
    parser.add_argument(
        "--pg-url",
        help="PostgreSQL server for the PostgreSQL rows [default: $FLOWER_TEST_PG_URL or a throw-away cluster]",
    )
    args = parser.parse_args()
    sys.path.insert(
        0, str(Path(__file__).resolve().parent)
    )  # imported here, not at the top: tests load this file by path
    from stores_postgres import PostgresRows

    pg = PostgresRows.start(args.pg_url)
    if isinstance(pg, PostgresRows):
        BACKENDS.extend(pg.backends(Backend, KEY, _timed))
        print(f"PostgreSQL rows on {pg.where()}")
    else:
        print(f"PostgreSQL rows skipped: {pg}")
    try:
        with tempfile.TemporaryDirectory(
            prefix="flower-bench-"
        ) as tmp:  # hundreds of MB of databases: never leave them
            for shape in SIZES if args.shape == "all" else [args.shape]:
                (Path(tmp) / shape).mkdir()
                run_shape(shape, args.entries, Path(tmp) / shape, args.rounds)
    finally:
        if isinstance(pg, PostgresRows):
            pg.close()


if __name__ == "__main__":
    main()
