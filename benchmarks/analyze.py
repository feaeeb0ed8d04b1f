"""flower analyze benchmark: time and peak memory against a bare SQL scan of the same rows — ratios from one run.

    hatch run python benchmarks/analyze.py [--sessions 100,1000,3000] [--kb 300] [--rounds 3] [--keep DIR]

For each size a run dir is generated: ``sessions.db`` with that many sessions of about ``--kb`` KB each (the
Claude-Code-shaped entries of ``stores.synthetic_session``, ~2 KB an entry: tool calls and results, replies,
prompts, denials, dropped connections; every third session with a worker transcript taking a quarter of it),
and ``manifest.json`` with one step row per session (its time window, cost, attempts; every tenth step retires
the previous step's session, a handoff). The schema is made by `SqliteSessionStore` itself; the rows are
written with one ``executemany`` per session (no summaries: analyze does not read them). ``--keep DIR`` keeps
the run dirs and reuses them on the next run (3,000 sessions take ~1.2 GB and a minute or two to write).

Then, in fresh subprocesses, each measured alone (``os.wait4`` gives that child's own CPU time and peak RSS):

- ``scan``: the floor — one Python loop over ``SELECT payload FROM entries ORDER BY store_key, seq`` that
  ``json.loads`` every row and keeps nothing;
- ``flower analyze RUN_DIR`` (the table), ``flower --json analyze`` and ``flower analyze --html``.

Targets: analyze's peak memory <= 250 MB at every size, its time <= 2x the scan's. Three ratios are printed:
whole processes by wall clock and by CPU time, and CPU time less each program's start-up (both run on an
empty run first: flower pays ~0.2 s of imports — its command line and flower-stores, but no SDK and no
pydantic (typer 0.29 would import it to convert options: see flower_cli/cli/_params.py) — the scan ~0.05 s). Each figure is the median of ``--rounds``
interleaved rounds. Absolute times vary from machine to machine; the ratios are the result, and CPU time is
the steadier one when other processes share the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from stores import synthetic_session

from flower_stores import SqliteSessionStore

PROJECT = "-home-dev-project"
BASE = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
SESSION_SPAN = 600.0  # seconds between two sessions' starts; entries 2 s apart stay well inside it
ENTRY_KB = 2.1  # average size of a "big" synthetic entry, measured: 150 entries ~ 312 KB

SCAN = """
import json, sqlite3, sys
from pathlib import Path
db = sqlite3.connect(Path(sys.argv[1]).absolute().as_uri() + "?mode=ro", uri=True)
loads = json.loads
n = 0
for (payload,) in db.execute("SELECT payload FROM entries ORDER BY store_key, seq"):
    loads(payload)
    n += 1
print(n)
"""


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _restamped(entries: list[dict[str, Any]], session_id: str, start: float) -> list[dict[str, Any]]:
    """The template transcript as session ``session_id``: its id and a timestamp every 2 s from ``start``."""
    for n, entry in enumerate(entries):
        if "sessionId" in entry:
            entry["sessionId"] = session_id
        if "timestamp" in entry:
            entry["timestamp"] = _stamp(start + 2 * n)
    return entries


def generate(run_dir: Path, sessions: int, kb: int, seed: int = 11) -> tuple[int, int]:
    """Write ``sessions.db`` and ``manifest.json`` into ``run_dir``; returns (rows, payload bytes)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    db_path = run_dir / "sessions.db"
    with SqliteSessionStore(db_path):  # the schema, exactly as the store makes it
        pass
    rng = random.Random(seed)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    per_session = max(int(kb / ENTRY_KB), 12)
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = OFF")  # generation only: a crash here just means generating again
    rows: list[dict[str, Any]] = []
    total_rows = total_bytes = 0
    previous: str | None = None
    for i in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        start = BASE + i * SESSION_SPAN
        threads: list[tuple[str, list[dict[str, Any]]]] = []
        worker_entries = per_session // 4 if i % 3 == 0 else 0
        main = synthetic_session(per_session - worker_entries, seed=rng.randrange(1 << 30))
        threads.append((f"{PROJECT}/{sid}", _restamped(main, sid, start)))
        if worker_entries:
            worker = synthetic_session(worker_entries, seed=rng.randrange(1 << 30))
            agent = f"agent-{rng.getrandbits(64):016x}"
            threads.append((f"{PROJECT}/{sid}/subagents/{agent}", _restamped(worker, sid, start + 1)))
        batch = []
        meta = []
        for key, entries in threads:
            for seq, entry in enumerate(entries):
                payload = dumps(entry)
                total_bytes += len(payload)
                batch.append((key, seq, entry.get("uuid"), payload))
            meta.append((key, int(start * 1000), len(entries)))
        total_rows += len(batch)
        db.execute("BEGIN")
        db.executemany("INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?)", batch)
        db.executemany("INSERT INTO meta (store_key, mtime, next_seq) VALUES (?, ?, ?)", meta)
        db.execute("COMMIT")
        end = start + 2 * len(main)
        cost = round(rng.uniform(0.05, 2.0), 4)
        retired = [previous] if previous and i % 10 == 9 else []
        rows.append(
            {
                "step": f"step-{i:05d}",
                "run": f"run-{i // 50:03d}",
                "ok": i % 37 != 5,
                "error": "the model stopped before the goal" if i % 37 == 5 else None,
                "session_id": sid,
                "retired": retired,
                "cost_usd": cost,
                "num_turns": sum(1 for e in main if e.get("type") == "assistant"),
                "attempts": 2 if i % 7 == 0 else 1,
                "attempt_log": [{"session_id": sid, "cost_usd": cost, "resumed": i % 7 == 0}],
                "interrupts": 0,
                "context": 48_524,
                "started_at": start,
                "ended_at": end,
                "duration_s": end - start,
            }
        )
        previous = sid
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    (run_dir / "manifest.json").write_text(json.dumps(rows), encoding="utf-8")
    return total_rows, total_bytes


# The parent has generated the data and holds tens of MB; Linux carries a process's peak RSS across fork and
# exec, so a child forked from it would report at least that. A small launcher forks the measured command
# instead and reports that child's own wall time, CPU time and peak RSS (os.wait4).
LAUNCH = """
import os, sys, time
start = time.perf_counter()
null = os.open(os.devnull, os.O_RDWR)
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=[
    (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


class Figures(NamedTuple):
    wall: float  # seconds
    cpu: float  # seconds, user + system: steadier than wall when other processes share the machine
    peak: float  # MB of resident memory


def measured(args: list[str], cwd: Path) -> Figures:
    """One child process, its output discarded."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        check=False,
    )
    wall, cpu, rss_kb, code = done.stdout.split()
    if done.returncode != 0 or int(code) != 0:
        raise SystemExit(f"{' '.join(args)} failed ({code}): {done.stderr}")
    return Figures(float(wall), float(cpu), int(rss_kb) / 1024)  # Linux reports kilobytes


def commands(run_dir: Path) -> dict[str, list[str]]:
    flower = [sys.executable, "-m", "flower_cli"]
    return {
        "scan": [sys.executable, "-c", SCAN, str(run_dir / "sessions.db")],
        "table": [*flower, "analyze", str(run_dir)],
        "json": [*flower, "--json", "analyze", str(run_dir)],
        "html": [*flower, "analyze", str(run_dir), "--html", str(run_dir.parent / "page.html")],
    }


def bench(run_dir: Path, rounds: int) -> dict[str, Figures]:
    """The median of ``rounds`` interleaved rounds of each command on ``run_dir``."""
    todo = commands(run_dir)
    measured(todo["scan"], run_dir)  # warm the page cache: every row was just written, but read it once
    samples: dict[str, list[Figures]] = {name: [] for name in todo}
    for _ in range(rounds):
        for name, args in todo.items():
            samples[name].append(measured(args, run_dir))
    return {
        name: Figures(*(statistics.median(column) for column in zip(*got, strict=True)))
        for name, got in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="100,1000,3000", help="comma-separated run sizes (sessions)")
    parser.add_argument("--kb", type=int, default=300, help="size of a session's transcripts, in KB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate into (and reuse) this directory instead of a temp one")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sessions.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="flower-analyze-bench-") as tmp:
        root = args.keep or Path(tmp)
        # The fixed cost: both programs on an empty run (flower imports its command line and flower-stores).
        empty = root / "run-0" / "runs"
        if not (empty / "sessions.db").is_file():
            generate(empty, 0, args.kb)
        fixed = bench(empty, args.rounds)
        print(
            f"flower analyze against a bare scan of the same rows ({args.kb} KB a session; median of {args.rounds}"
            " rounds; targets: peak <= 250 MB, time <= 2x scan)"
        )
        print(
            f"start-up (an empty run): scan {fixed['scan'].wall:.2f} s wall / {fixed['scan'].cpu:.2f} s CPU,"
            f" analyze {fixed['table'].wall:.2f} s / {fixed['table'].cpu:.2f} s, {fixed['table'].peak:.0f} MB"
        )
        print("x scan: analyze's time over the scan's, whole processes (wall, CPU), and CPU less each one's start-up")
        print(
            f"{'sessions':>8}  {'db MB':>6}  {'scan s':>6}  {'cpu s':>5}  {'MB':>4}  {'mode':<5}  {'wall s':>6}"
            f"  {'cpu s':>6}  {'x scan':>6}  {'x cpu':>5}  {'x net':>5}  {'peak MB':>7}"
        )
        for size in sizes:
            run_dir = root / f"run-{size}" / "runs"
            if not (run_dir / "sessions.db").is_file():
                started = time.perf_counter()
                rows, size_bytes = generate(run_dir, size, args.kb)
                print(
                    f"(generated {size} sessions: {rows} rows, {size_bytes / 1e6:.0f} MB of JSON in {time.perf_counter() - started:.0f} s)"
                )
            db_mb = (run_dir / "sessions.db").stat().st_size / 1e6
            figures = bench(run_dir, args.rounds)
            scan = figures.pop("scan")
            net_scan = scan.cpu - fixed["scan"].cpu
            for n, (mode, got) in enumerate(figures.items()):
                lead = (
                    f"{size:>8}  {db_mb:>6.0f}  {scan.wall:>6.2f}  {scan.cpu:>5.2f}  {scan.peak:>4.0f}"
                    if n == 0
                    else " " * 37
                )
                net = (got.cpu - fixed[mode].cpu) / net_scan
                print(
                    f"{lead}  {mode:<5}  {got.wall:>6.2f}  {got.cpu:>6.2f}  {got.wall / scan.wall:>6.2f}"
                    f"  {got.cpu / scan.cpu:>5.2f}  {net:>5.2f}  {got.peak:>7.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
