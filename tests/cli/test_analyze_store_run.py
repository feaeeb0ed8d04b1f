"""`flower analyze --store URL --run ID`: a run's report from the run records and sessions of a real PostgreSQL
store (and a SQLite one), from a process with another HOME — only that run's sessions, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_stores import PostgresSessionStore, SqliteSessionStore

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + seconds)) + "Z"


def _turn(mid: str, at: float, context: int) -> list[dict[str, Any]]:
    """A prompt and the model's answer, stamped ``at`` seconds after T0."""
    usage = {"input_tokens": context, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    return [
        {"type": "user", "uuid": f"{mid}-q", "timestamp": _stamp(at), "message": {"role": "user", "content": "go"}},
        {
            "type": "assistant",
            "uuid": f"{mid}-a",
            "timestamp": _stamp(at + 1),
            "message": {"id": mid, "model": "m", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
            | {"usage": usage | {"output_tokens": 5}},
        },
    ]


def _row(run: str, step: str, sid: str, start: float, cost: float) -> dict[str, Any]:
    return {
        "step": step,
        "session_id": sid,
        "ok": True,
        "cost_usd": cost,
        "started_at": T0 + start,
        "ended_at": T0 + start + 10,
        "duration_s": 10.0,
        "attempts": 1,
        "run": run,
    }


async def _record(store: Any, project: str, run: str, other: str) -> tuple[str, str]:
    """Run ``run``: two steps in two sessions; run ``other``: one session of its own, in the same store."""
    plan, build, foreign = (str(uuid.uuid4()) for _ in range(3))
    await store.append({"project_key": project, "session_id": plan}, _turn("p1", 1, 1000))
    await store.append({"project_key": project, "session_id": build}, _turn("b1", 21, 3000) + _turn("b2", 24, 5000))
    await store.append(
        {"project_key": project, "session_id": build, "subpath": "subagents/agent-w1"}, _turn("w1", 22, 700)
    )
    await store.append({"project_key": project, "session_id": foreign}, _turn("f1", 1, 9999))
    await store.put_run_rows(run, [_row(run, "plan", plan, 0, 0.25), _row(run, "build", build, 20, 0.5)])
    await store.put_lineage(run, "plan", plan)
    await store.put_lineage(run, "build", build)
    await store.put_run_rows(other, [_row(other, "solo", foreign, 0, 9.0)])
    return plan, build


def flower(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m flower_cli …`` as a third machine: another HOME, an empty workspace, no run dir."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "ANTHROPIC_", "CLAUDE_"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "FLOWER_NO_UPDATE": "1",
        **(env or {}),
    }
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _check_report(done: subprocess.CompletedProcess[str], run: str, plan: str, build: str) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["run_dir"].endswith(f"· run {run}")
    assert [(s["step"], s["run"], s["session_ids"], s["cost_usd"]) for s in report["steps"]] == [
        ("plan", run, [plan], 0.25),
        ("build", run, [build], 0.5),
    ]
    # Only the sessions the run names, not the other run's in the same store; with their turns and worker.
    sessions = {s["session_id"]: s for s in report["sessions"]}
    assert set(sessions) == {plan, build}
    assert sessions[build]["main"]["context_per_turn"] == [3000, 5000]
    assert len(sessions[build]["workers"]) == 1
    assert report["notes"] == []
    return report


def test_analyze_reads_a_run_from_postgres_from_another_machine(pg_url: str, tmp_path: Path) -> None:
    tag = time.time_ns()
    run, other = f"fleet-{tag}", f"other-{tag}"
    # The default schema ("flower"), as the CLI opens it; the run ids and the project key are this test's own.
    with PostgresSessionStore(pg_url) as store:
        plan, build = anyio.run(_record, store, f"-tmp-ws-{tag}", run, other)
        known = store.run_ids()
    home = tmp_path / "third"
    report = _check_report(flower("--store", pg_url, "analyze", "--run", run, "--json", home=home), run, plan, build)
    password = pg_url.split("//", 1)[1].split("@", 1)[0].partition(":")[2]
    assert report["run_dir"].startswith("postgresql://") and (not password or password not in report["run_dir"])
    table = flower("--store", pg_url, "analyze", "--run", run, home=home)
    assert table.returncode == 0 and "plan" in table.stdout and "build" in table.stdout, table.stderr
    # FLOWER_STORE_URL works as --store does.
    _check_report(
        flower("analyze", "--run", run, "--json", home=home, env={"FLOWER_STORE_URL": pg_url}), run, plan, build
    )
    with PostgresSessionStore(pg_url) as store:
        assert store.run_ids() == known  # read-only: nothing added
    assert not list(home.rglob("sessions.db")) and not list(home.rglob("manifest.json"))


def test_analyze_reads_a_run_from_a_sqlite_store(tmp_path: Path) -> None:
    db = tmp_path / "shared" / "sessions.db"
    with SqliteSessionStore(db) as store:
        plan, build = anyio.run(_record, store, "-tmp-ws", "r1", "r2")
    done = flower("--store", f"sqlite://{db}", "analyze", "--run", "r1", "--json", home=tmp_path / "third")
    _check_report(done, "r1", plan, build)


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["analyze", "--run", "nope"], 2, "pass --store URL (or set FLOWER_STORE_URL)"),
        (["--store", "sqlite:///x.db", "analyze", "somewhere", "--run", "r1"], 2, "give either a run dir"),
        (["--store", "mysql://x", "analyze", "--run", "r1"], 2, "unknown scheme 'mysql'"),
        (["--store", "postgresql://u@127.0.0.1:1/db", "analyze", "--run", "r1"], 3, "cannot use the PostgreSQL"),
    ],
)
def test_analyze_run_mistakes_are_one_line(args: list[str], code: int, words: str, tmp_path: Path) -> None:
    done = flower(*args, home=tmp_path / "h")
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


def test_an_unknown_run_names_the_runs_the_store_has(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SqliteSessionStore(db) as store:
        anyio.run(store.put_lineage, "older", "s", "sid-1")
        anyio.run(store.put_lineage, "newer", "s", "sid-2")
    done = flower("--store", f"sqlite://{db}", "analyze", "--run", "missing", home=tmp_path / "h")
    assert done.returncode == 2 and done.stdout == ""
    assert "no run 'missing' in the store" in done.stderr and "newest first: newer, older" in done.stderr
