"""`flower analyze` reads a store one session at a time: its peak memory follows the largest session, not the
number of sessions (measured with tracemalloc on generated stores of 3 and 24 sessions of the same shape); and
the page orders a run's turns without holding a sort key for each of them."""

from __future__ import annotations

import json
import math
import random
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from flower_cli.analyze import analyze_run, render_table
from flower_stores import SqliteSessionStore

START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
OUTPUT = ("collected 212 items; tests/test_store.py ........ passed in 0.41s\n" * 100)[:6000]


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def _transcript(tag: str, start: float, turns: int = 20) -> list[dict[str, Any]]:
    """A main thread or worker of ``turns`` tool calls, each with a 6 KB result (~130 KB in all at 20)."""
    entries: list[dict[str, Any]] = [
        {"type": "user", "uuid": f"{tag}-0", "timestamp": _stamp(start), "message": {"role": "user", "content": "go"}}
    ]
    for n in range(1, turns + 1):
        usage = {"input_tokens": 50 * n, "cache_read_input_tokens": 900 * n, "output_tokens": 20}
        call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": f"pytest -x tests/test_{n}.py"}}
        entries.append(
            {
                "type": "assistant",
                "uuid": f"{tag}-a{n}",
                "timestamp": _stamp(start + 2 * n),
                "message": {"id": f"{tag}-m{n}", "role": "assistant", "model": "m", "content": [call], "usage": usage},
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": OUTPUT + str(n)}
        entries.append(
            {
                "type": "user",
                "uuid": f"{tag}-u{n}",
                "timestamp": _stamp(start + 2 * n + 1),
                "message": {"role": "user", "content": [result]},
            }
        )
    return entries


def _run(root: Path, sessions: int) -> tuple[Path, int]:
    """A run dir of ``sessions`` sessions (every other one with a worker) and one step each; and its bytes."""
    run_dir = root / f"run-{sessions}" / "runs"
    rows = []
    stored = 0

    async def write() -> None:
        nonlocal stored
        with SqliteSessionStore(run_dir / "sessions.db") as store:
            for i in range(sessions):
                sid, start = f"session-{i:04d}", START + 1000 * i
                main = _transcript(sid, start)
                await store.append({"project_key": "-ws", "session_id": sid}, main)
                stored += sum(len(json.dumps(e)) for e in main)
                if i % 2 == 0:
                    worker = _transcript(f"{sid}-w", start + 1, turns=5)
                    key: Any = {"project_key": "-ws", "session_id": sid, "subpath": "subagents/agent-w"}
                    await store.append(key, worker)
                    stored += sum(len(json.dumps(e)) for e in worker)
                rows.append(
                    {"step": f"step-{i}", "session_id": sid, "ok": True, "cost_usd": 0.1, "attempts": 1}
                    | {"started_at": start, "ended_at": start + 999}
                )

    anyio.run(write)
    (run_dir / "manifest.json").write_text(json.dumps(rows))
    return run_dir, stored


def _peak(run_dir: Path) -> tuple[int, str]:
    """The peak of Python allocations while analysing ``run_dir`` and rendering its table; and the table."""
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    table = render_table(analyze_run(run_dir))
    return tracemalloc.get_traced_memory()[1] - before, table


def test_peak_memory_follows_the_largest_session_not_the_number_of_sessions(tmp_path: Path) -> None:
    few, few_bytes = _run(tmp_path, 3)
    many, many_bytes = _run(tmp_path, 24)
    session_bytes = many_bytes / 24
    assert session_bytes > 100_000, "sessions of a realistic size"
    _peak(few)  # the first analysis imports and compiles what every later one reuses
    tracemalloc.start()
    try:
        few_peak, _ = _peak(few)
        many_peak, table = _peak(many)
    finally:
        tracemalloc.stop()
    assert "session-" in table and "24 session(s)" in table
    # 8x the sessions: the peak grows by each session's numbers (a few KB), not by its transcript. Read all at
    # once, as before, the peak was over 8x as large (the 24 sessions' entries all held as dicts).
    per_session = (many_peak - few_peak) / 21
    assert per_session < 0.05 * session_bytes, (few_peak, many_peak, session_bytes)
    assert many_peak < 1.5 * few_peak, (few_peak, many_peak)
    assert many_peak < many_bytes / 4, "far less than the run's transcripts"


def test_the_page_places_every_turn_of_the_run_in_time_order() -> None:
    """The chart's x axis: all main-thread turns sorted by time (unstamped last; ties by session, then turn),
    found by merging each session's sorted turns — the same order as one sort of all of them."""
    from flower_cli.analyze import SessionReport, ThreadStats
    from flower_cli.analyze._page import _Axis

    rng = random.Random(3)
    sessions = []
    for n in range(6):
        main = ThreadStats(name="main")
        stamp = rng.uniform(0, 100)
        for _ in range(rng.randint(0, 12)):
            # mostly in order, sometimes back in time, sometimes unstamped, sometimes the very same instant
            stamp += rng.choice([1.0, 2.5, 0.0, -7.0])
            main.turns.append(10, 0, 0, 1, 0, None if rng.random() < 0.1 else stamp)
        sessions.append(SessionReport(f"s{n}", "p", main, []))
    axis = _Axis(sessions)
    every = sorted(
        (math.inf if t.timestamp is None else t.timestamp, s, t.index)
        for s, session in enumerate(sessions)
        for t in session.main.turns
    )
    assert axis.count == len(every)
    assert [axis.positions[s][i - 1] for _, s, i in every] == list(range(1, len(every) + 1))
