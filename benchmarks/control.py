"""What the control surface costs, in one run: `flower status` on a store with 1,000 runs, and what publishing
every event costs a 40-turn `flower once`.

Part 1 fills a store (SQLite in a temporary workspace; PostgreSQL too when ``--pg-url`` or
``$FLOWER_TEST_PG_URL`` names a server) with 1,000 runs of 40 events each and their heads, then times
``flower --json status`` as a user runs it (a new process: the interpreter's start-up included) and
``Control.runs()`` in-process. Target: <= 1 s.

Part 2 runs the real `flower once` (the real Claude Code binary against the scripted server, offline, a temporary
HOME) on a 40-turn session (39 Bash calls, then the answer), alternately with publishing on (as shipped) and off
(the same command with its store treated as one without a run log), and prints the median wall times and their
ratio (target <= 1.02x), and how many events one run published. The scripted model answers at once, so flower's
own costs weigh far more here than beside a real model.

Run: hatch run python benchmarks/control.py [--runs 1000] [--pairs 4] [--turns 40] [--pg-url URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from flower_cli import Control
from flower_cli.testing import offline_environment
from flower_stores import PostgresSessionStore, SqliteSessionStore
from harness import ScriptedServer, Text, bash

_WITHOUT_PUBLISHING = (
    "import sys\n"
    "import flower_cli.cli.actions.publish as publish\n"
    "publish.keeps_a_run_log = lambda store: False\n"
    "from flower_cli.cli import main\n"
    "sys.exit(main())\n"
)


def _fill(store: Any, runs: int, events: int) -> None:
    for n in range(runs):
        batch = [
            {"kind": "text", "text": f"turn {i} of run {n}", "payload": {"context": 1000 + i}} for i in range(events)
        ]
        head = {"state": "done", "step": "work", "context": 12_345, "cost_usd": 0.12, "command": "go", "ok": True}
        store.append_events(f"run-{n:05d}", batch, head=head)


def _time_status(args: list[str], cwd: Path, env: dict[str, str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "flower_cli", "--json", *args, "status"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


def _time_help(env: dict[str, str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "flower_cli", "--help"], env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _time_runs(store: Any, runs: int) -> float:
    control = Control(store)
    started = time.perf_counter()
    listed = control.runs()
    took = time.perf_counter() - started
    assert len(listed) == runs, len(listed)
    return took


def status_part(runs: int, pg_url: str | None) -> None:
    print(f"flower status on a store with {runs:,} runs (40 events each); target <= 1 s")
    print("  (PostgreSQL: in-process only; the command's --store URL names no schema, and this one is the benchmark's)")
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "runs").mkdir(parents=True)
        with SqliteSessionStore(ws / "runs" / "sessions.db") as store:
            _fill(store, runs, 40)
            inproc = _time_runs(store, runs)
        command = _time_status(["-w", str(ws)], Path(tmp), env)
        startup = _time_help(env)
        print(
            f"  sqlite    : `flower --json status` {command:.3f} s (new process)   Control.runs() {inproc * 1000:.1f} ms"
        )
        print(f"  baseline  : `flower --help` {startup:.3f} s (the interpreter's and the command's start, same load)")
    if pg_url:
        schema = f"bench_control_{os.getpid()}"
        pg = PostgresSessionStore(pg_url, schema=schema)
        try:
            _fill(pg, runs, 40)
            inproc = _time_runs(pg, runs)
            print(f"  postgres  : Control.runs() {inproc * 1000:.1f} ms")
        finally:
            with pg._pool.connection() as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            pg.close()


def _publisher_work(events: list[dict[str, Any]], repeat: int = 20) -> tuple[float, float, float]:
    """Medians over ``repeat`` on a fresh SQLite store: (seconds on the run's event loop to `publish` all of
    ``events``, seconds for the publisher's thread to write one batch of one event with the head, seconds for one
    look at an empty inbox)."""
    from flower_cli import RunPublisher

    on_loop: list[float] = []
    write_one: list[float] = []
    look: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, SqliteSessionStore(Path(tmp) / "s.db") as store:
        for n in range(repeat):
            publisher = RunPublisher(store, f"bench-{n}", meta={"command": "once"})
            started = time.perf_counter()
            for event in events:
                publisher.publish(event)
            on_loop.append(time.perf_counter() - started)
            publisher._write()
            publisher.publish(events[-1])
            started = time.perf_counter()
            publisher._write()
            write_one.append(time.perf_counter() - started)
            started = time.perf_counter()
            publisher._take_inbox()
            look.append(time.perf_counter() - started)
    return statistics.median(on_loop), statistics.median(write_one), statistics.median(look)


def _published_events(ws: Path) -> list[dict[str, Any]]:
    with SqliteSessionStore(ws / "runs" / "sessions.db", read_only=True) as store:
        return [e.event for h in store.run_heads() for e in store.read_events(h.run_id)]


def _once(server: ScriptedServer, turns: int, home: Path, publish: bool) -> tuple[float, int]:
    server.script(*[bash(f"echo step {i}") for i in range(turns - 1)], Text("FORTY-DONE"))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        env = offline_environment(server.url, home)
        head = ["-m", "flower_cli"] if publish else ["-c", _WITHOUT_PUBLISHING]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, *head, "-w", str(ws), "once", "-t", "Bash", "count to forty"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        took = time.perf_counter() - started
        assert done.returncode == 0 and "FORTY-DONE" in done.stdout, done.stderr[-2000:]
        events = _published_events(ws)
        if events:
            _LAST_EVENTS[:] = events
    return took, len(events)


_LAST_EVENTS: list[dict[str, Any]] = []


def publish_part(pairs: int, turns: int) -> None:
    print(f"publishing's cost on a {turns}-turn `flower once` ({pairs} runs each way, alternating); target <= 1.02x")
    on: list[float] = []
    off: list[float] = []
    events = 0
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as home_dir:
        home = Path(home_dir)
        _once(server, turns, home, publish=True)  # warm-up: caches, the binary's first start
        for _ in range(pairs):
            took, events = _once(server, turns, home, publish=True)
            on.append(took)
            took, none = _once(server, turns, home, publish=False)
            assert none == 0, "publishing was not off"
            off.append(took)
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"  with publishing   : median {m_on:.2f} s  ({', '.join(f'{t:.2f}' for t in on)})")
    print(f"  without           : median {m_off:.2f} s  ({', '.join(f'{t:.2f}' for t in off)})")
    print(f"  ratio             : {m_on / m_off:.3f}x   ({events} events published per run)")
    loop_s, write_s, look_s = _publisher_work(_LAST_EVENTS)
    # The worst case: every event its own transaction, an inbox look every half second for the whole run, and a
    # heartbeat write every 5 s — as if none of it overlapped the model's time.
    thread_s = len(_LAST_EVENTS) * write_s + (m_off / 0.5) * look_s + (m_off / 5.0) * write_s
    print(
        f"  the publisher's own work: {loop_s * 1000:.2f} ms on the event loop for {len(_LAST_EVENTS)} events; "
        f"a write {write_s * 1000:.2f} ms, an inbox look {look_s * 1000:.3f} ms -> at worst {thread_s * 1000:.0f} ms "
        f"in its thread per run: {(m_off + loop_s + thread_s) / m_off:.4f}x of the median run without it"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--pg-url", default=os.environ.get("FLOWER_TEST_PG_URL"))
    parser.add_argument("--skip-once", action="store_true", help="only the status part")
    args = parser.parse_args()
    status_part(args.runs, args.pg_url)
    if not args.skip_once:
        publish_part(args.pairs, args.turns)


if __name__ == "__main__":
    main()
