"""Workers supervised by flower: a coordinator's background workers survive flower being killed.

Real `flower`, real Claude Code, the scripted server. A `flower go --no-goal` coordinator dispatches background
workers (one file each); flower is killed with SIGKILL (its whole process group: the machine went down) while
workers run, and woken with a plain `flower` until it is done. Each worker's script is the one it would have
played in one life: a turn that ran is never answered twice, so a worker resumed from its transcript goes on
with its next turn, and one dispatched again starts at its first. Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flower_cli import COORDINATOR_RULES, JUDGE_RULES, AgentSpec, Brief, HandoffPolicy, Runtime
from flower_cli.runtime import worker_ledger
from flower_workbench import Workbench
from harness import (
    ScriptedServer,
    Step,
    Text,
    Turn,
    Usage,
    bash,
    dispatch,
    keyed,
    when,
    when_main,
    when_notified,
    when_prompt,
    when_system,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and SIGKILL"),
]

SETUP_S = 240.0  # for things to happen on a loaded 2-core machine; not what is under test
LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
JUDGES = when_system(JUDGE_RULES.splitlines()[0])
BRIEF = """## Goal
Five pieces, one file each.

## Acceptance criteria
- piece-0.txt … piece-4.txt exist

## Boundaries
- nothing else

## Unknowns and assumptions
- none
"""


def _env() -> dict[str, str]:
    return {**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1"}


def _wait(condition: Callable[[], bool], what: str, within: float = SETUP_S) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.05)


def _stored(ws: Path, fragment: str) -> bool:
    """Does any stored transcript entry hold ``fragment`` (what a crash would find)?"""
    db = ws / "runs" / "sessions.db"
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return any(fragment in p for (p,) in conn.execute("select payload from entries"))
    except sqlite3.OperationalError:  # the writer holds the lock this instant
        return False


class Life:
    """One `flower` process, started in its own process group so SIGKILL takes it and all it started."""

    def __init__(self, ws: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=ws,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def kill(self) -> str:
        os.killpg(self.process.pid, signal.SIGKILL)
        _, err = self.process.communicate(timeout=60)
        return err

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=SETUP_S * 2)
        return self.process.returncode, out, err


@pytest.fixture
def lives() -> Iterator[list[Life]]:
    """Every life a test started; a failing test leaves none running."""
    started: list[Life] = []
    yield started
    for life in started:
        if life.process.poll() is None:
            os.killpg(life.process.pid, signal.SIGKILL)
            life.process.communicate(timeout=60)


def _worker(i: int) -> Any:
    """Worker ``i``: held at gate1-i, then at gate2-i before it writes its piece; then a check, then its report.

    The check writes the piece only when it is missing: what a worker told "check the files rather than redoing
    it" does after a cut mid-command. ``done-i.log`` gets a line each time the piece is written.
    """
    write = f"echo piece-{i} > piece-{i}.txt; echo once >> done-{i}.log"
    return dispatch(
        f"piece {i}",
        bash(f"touch started-{i}; until [ -e gate1-{i} ]; do sleep 0.05; done"),
        bash(f"touch resumed-{i}; until [ -e gate2-{i} ]; do sleep 0.05; done; {write}"),
        bash(f"[ -e piece-{i}.txt ] || {{ {write}; }}"),
        Text(f"WORKER-{i}-DONE"),
        prompt=f"PIECE-{i}: write piece-{i}.txt",
    )


def _script(server: ScriptedServer, workers: int) -> None:
    server.script(
        *keyed(
            LEAD & ~when_notified(),
            Turn([_worker(i) for i in range(workers)]),
            Text("Dispatched; waiting for the workers."),
            *[Text("Carrying on; waiting for the workers.") for _ in range(10)],
        ),
        *keyed(LEAD & when_notified(), *[Text(f"Noted a report ({n}).") for n in range(40)]),
    )


def _seed(ws: Path) -> None:
    """A directory already clarified: `flower` goes straight to the work step."""
    Brief.parse(BRIEF).write(ws / ".flower" / "notes" / "brief.md")


def _work_session(ws: Path) -> str:
    return str(json.loads((ws / "runs" / "lineage.json").read_text())["steps"]["work"])


def _coordinator_ledger(ws: Path) -> list[Any]:
    """flower's own ledger over what the store holds of the work session and its workers."""
    session = _work_session(ws)
    main: list[Any] = []
    workers: dict[str, list[Any]] = {}
    with sqlite3.connect(ws / "runs" / "sessions.db") as db:
        for key, payload in db.execute("select store_key, payload from entries order by rowid"):
            parts = key.split("/")
            if parts[1] != session:
                continue
            if len(parts) == 2:
                main.append(json.loads(payload))
            elif parts[2:3] == ["subagents"]:
                workers.setdefault(parts[3].removeprefix("agent-"), []).append(json.loads(payload))
    return worker_ledger(main, workers)


def _open(ws: Path, gate: str, workers: Iterator[int] | list[int] | set[int]) -> None:
    for i in workers:
        (ws / f"{gate}-{i}").touch()


def _assert_done(ws: Path, server: ScriptedServer, workers: int, errs: list[str], recovered: set[int]) -> None:
    """Every piece once, each recovered worker named once (the others at most once: a finished worker whose report
    was lost is delivered), every completion in the coordinator's transcript, valid histories, no goal step."""
    for i in range(workers):
        assert (ws / f"piece-{i}.txt").read_text() == f"piece-{i}\n"
        assert (ws / f"done-{i}.log").read_text() == "once\n", f"piece {i} was written more than once"
        named = sum(e.count(f"recovered worker 'piece {i}'") for e in errs)
        assert named == 1 if i in recovered else named <= 1, (i, named, errs)
    states = {r.description: r.state for r in _coordinator_ledger(ws)}
    assert states == {f"piece {i}": "reported" for i in range(workers)}, states
    assert not server.rejected, server.rejected  # every tool_use answered, no empty turn: valid histories
    assert not any(JUDGES(r) for r in server.message_requests), "a --no-goal run ran a goal step or a judge"


def test_one_worker_killed_mid_task_is_resumed_by_flower_and_no_goal_survives_the_wake(
    claude_env: ScriptedServer, workspace: Path, lives: list[Life]
) -> None:
    _seed(workspace)
    _script(claude_env, 1)
    first = Life(workspace, "--no-goal")
    lives.append(first)
    _wait(lambda: (workspace / "started-0").exists(), "the worker's first command runs")
    _wait(lambda: _stored(workspace, "until [ -e gate1-0 ]"), "the worker's turn is in the store")
    first.kill()
    assert not (workspace / "piece-0.txt").exists()
    _open(workspace, "gate1", [0])
    _open(workspace, "gate2", [0])

    woke = Life(workspace)  # a plain `flower`: the run's --no-goal is kept
    lives.append(woke)
    code, out, err = woke.finish()
    assert code == 0, err
    assert "kept from the run's start: --no-goal" in err
    assert err.count("recovered worker 'piece 0': resumed") == 1, err
    assert "didn't finish" not in err, "the harness's notice of a worker flower recovered is not shown"
    _assert_done(workspace, claude_env, 1, [err], recovered={0})
    rows = json.loads((workspace / "runs" / "manifest.json").read_text())
    (recovered,) = [row["recovered"] for row in rows if row["step"] == "work" and row["recovered"]]
    assert [(w["description"], w["how"], w["status"]) for w in recovered] == [("piece 0", "resumed", "completed")]
    analyzed = subprocess.run(
        [sys.executable, "-m", "flower_cli", "--json", "analyze"],
        cwd=workspace,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert analyzed.returncode == 0, analyzed.stderr
    assert json.loads(analyzed.stdout)["totals"]["recovered"] == 1
    worker_requests = [r for r in claude_env.message_requests if "PIECE-0" in r.first_user_text]
    assert sum("until [ -e gate1-0 ]" in json.dumps(r.json) for r in worker_requests[-1:]) == 1, (
        "the resumed worker's request carries its earlier turn"
    )


def test_a_worker_killed_in_its_worktree_is_resumed_in_that_worktree(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path, lives: list[Life]
) -> None:
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(workspace), *args], check=True)
    (workspace / "README.md").write_text("main checkout\n")
    subprocess.run(["git", "-C", str(workspace), "add", "README.md"], check=True)
    subprocess.run(["git", "-C", str(workspace), "commit", "-qm", "init"], check=True)
    Brief.parse(BRIEF).write(Workbench.beside(workspace).notes / "brief.md")
    gates = tmp_path / "gates"  # outside the worktree: the test sees them wherever the worker runs
    gates.mkdir()
    coder = dispatch(
        "piece 0",
        bash(f"pwd > {gates}/pwd-first; touch {gates}/started; until [ -e {gates}/gate ]; do sleep 0.05; done"),
        bash(f"pwd > {gates}/pwd-again; echo piece-0 > piece-0.txt && git add piece-0.txt && git commit -qm piece-0"),
        Text("WORKER-0-DONE"),
        prompt="PIECE-0: commit piece-0.txt",
        subagent_type="coder",
    )
    claude_env.script(
        *keyed(LEAD & ~when_notified(), Turn([coder]), *[Text("Waiting for the coder.") for _ in range(5)]),
        *keyed(LEAD & when_notified(), *[Text("Noted.") for _ in range(5)]),
    )
    first = Life(workspace, "--isolate", "--no-goal")
    lives.append(first)
    _wait(lambda: (gates / "started").exists(), "the coder's first command runs")
    _wait(lambda: _stored(workspace, f"until [ -e {gates}/gate ]"), "the coder's turn is in the store")
    first.kill()
    (gates / "gate").touch()

    woke = Life(workspace, "--isolate")
    lives.append(woke)
    code, _, err = woke.finish()
    assert code == 0, err
    assert err.count("recovered worker 'piece 0': resumed") == 1, err
    worktree = Path((gates / "pwd-first").read_text().strip())
    assert worktree != workspace.resolve() and worktree.is_relative_to(workspace.resolve())
    assert Path((gates / "pwd-again").read_text().strip()) == worktree, "the recovered coder works in its worktree"
    assert (worktree / "piece-0.txt").read_text() == "piece-0\n"
    assert not (workspace / "piece-0.txt").exists(), "nothing landed in the main checkout"
    assert not claude_env.rejected, claude_env.rejected


@pytest.mark.parametrize("seed", [7, 12])
def test_five_workers_killed_at_seeded_points_all_finish_once(
    claude_env: ScriptedServer, workspace: Path, lives: list[Life], seed: int
) -> None:
    rng = random.Random(seed)
    _seed(workspace)
    _script(claude_env, 5)
    errs: list[str] = []
    pieces = list(range(5))

    # Life 1: some workers finish (their report reaches the coordinator, or not), the others are held at gate 1.
    first = Life(workspace, "--no-goal")
    lives.append(first)
    finished = set(rng.sample(pieces, rng.randint(0, 2)))
    held = sorted(set(pieces) - finished)
    _wait(lambda: all((workspace / f"started-{i}").exists() for i in pieces), "all five workers start")
    _open(workspace, "gate1", finished)
    _open(workspace, "gate2", finished)
    for i in finished:
        _wait(lambda i=i: _stored(workspace, f"WORKER-{i}-DONE"), f"worker {i}'s report is stored")
    for i in held:
        _wait(lambda i=i: _stored(workspace, f"until [ -e gate1-{i} ]"), f"worker {i}'s first turn is stored")
    errs.append(first.kill())
    assert not any((workspace / f"piece-{i}.txt").exists() for i in held)

    # Life 2 (a plain `flower`): the held workers are resumed; some are let through, the others held at gate 2.
    _open(workspace, "gate1", held)
    through = set(rng.sample(held, rng.randint(0, len(held) - 1)))  # at least one is held: life 2 is killed
    still = sorted(set(held) - through)
    _open(workspace, "gate2", through)
    second = Life(workspace)
    lives.append(second)
    for i in still:
        _wait(lambda i=i: _stored(workspace, f"until [ -e gate2-{i} ]"), f"recovered worker {i} runs again")
    for i in through:
        _wait(lambda i=i: (workspace / f"done-{i}.log").exists(), f"recovered worker {i} writes its piece")
    errs.append(second.kill())

    # Life 3: the recoveries that were cut short carry on in their recovery sessions; nothing is held any more.
    _open(workspace, "gate2", still)
    third = Life(workspace)
    lives.append(third)
    code, out, err = third.finish()
    errs.append(err)
    assert code == 0, err
    _assert_done(workspace, claude_env, 5, errs, recovered=set(held))


WRITING = when(lambda r: "Your context is nearly full" in r.last_user_text, "handoff prompt")
TAKING_OVER = "You are taking over step"
HANDOFF_TEXT = """## Doing now
Waiting for two workers (HANDOFF-DOING).

## Decided, and why
One worker per piece.

## Dead ends
(none yet)

## Next
Report when both pieces exist.

## Scene
piece-0.txt and piece-1.txt in the workspace.
"""


async def test_a_handoff_that_stops_live_workers_hands_their_results_to_the_successor(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    # The dispatching turn ends at 180k of a 200k window, past the point where the step waits for its workers:
    # the step hands off with both workers held at gate 1. Their gates open only once the session is retired
    # (its handoff is being written), so what the successor gets is flower's recovery, not the old harness's.
    lead = when_main() & when_prompt("TWO-PIECES") & ~WRITING
    full = Usage(input_tokens=10_000, cache_read_input_tokens=170_000)
    claude_env.script(
        *keyed(lead & ~when_notified(), Turn([_worker(0), _worker(1)], usage=full), Text("Waiting.", usage=full)),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("SUCCESSOR-DONE: both pieces reported"), when_prompt(TAKING_OVER)),
    )

    def open_gates_once_retired() -> None:
        claude_env.wait_for(lambda server: any(WRITING(r) for r in server.message_requests), timeout=SETUP_S)
        _open(workspace, "gate1", [0, 1])
        _open(workspace, "gate2", [0, 1])

    opener = threading.Thread(target=open_gates_once_retired, daemon=True)
    opener.start()
    lead_spec = AgentSpec("lead", "You split work between workers.", allowed_tools=["Agent", "Bash"])
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=200_000)) as rt:
        result = await rt.run(lead_spec, "TWO-PIECES: write piece-0.txt and piece-1.txt", step_name="work")
    opener.join(5)

    assert result.ok and result.text == "SUCCESSOR-DONE: both pieces reported", (result.error, result.errors)
    assert len(result.retired) == 1
    for i in (0, 1):
        assert (workspace / f"piece-{i}.txt").read_text() == f"piece-{i}\n"
        assert (workspace / f"done-{i}.log").read_text() == "once\n"
    assert sorted((w["description"], w["status"]) for w in result.recovered) == [
        ("piece 0", "completed"),
        ("piece 1", "completed"),
    ]
    successor = next(r for r in claude_env.message_requests if TAKING_OVER in r.first_user_text)
    assert "<result>WORKER-0-DONE</result>" in successor.first_user_text
    assert "<result>WORKER-1-DONE</result>" in successor.first_user_text
    assert not claude_env.rejected, claude_env.rejected
