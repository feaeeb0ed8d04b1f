"""`flower sessions delete / prune / compact` end to end: real `flower` processes, the real Claude Code binary, the
scripted server, and the store on SQLite (the run dir's sessions.db) and on a real PostgreSQL server.

The store holds finished runs (two `flower once`, a one-step `flower run` whose lineage names its session) and a
live one (a `flower once` whose tool waits, holding its session's lease). Each command removes only what it says:
never the live session, the lineage's only with --force (and then the next `flower run` starts afresh and
succeeds), nothing at all on a dry run; `compact` refuses while the run is live and shrinks the store after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e._runs import store_place

from flower_stores import store_from_url
from harness import ScriptedServer, Text, bash

pytestmark = [pytest.mark.e2e]

SETUP_S = 120.0  # for things to start on a loaded machine; not what is under test
SLOW_TOOL = "touch started; until [ -e go ]; do sleep 0.05; done; echo released"
FLOWS = (
    "from flower_cli import AgentSpec, Step, Workflow\n"
    "writer = AgentSpec('writer', 'Write tersely.')\n"
    "def main():\n"
    "    return Workflow([Step('draft', writer, 'write a draft')])\n"
)


class Place:
    """A workspace, the ``flower`` options that name its store, and the store's URL."""

    def __init__(self, workspace: Path, options: list[str], url: str) -> None:
        self.workspace, self.options, self.url = workspace, options, url

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "flower_cli", *self.options, *args]

    def flower(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
        return subprocess.run(
            self.argv(*args),
            cwd=self.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )

    def json(self, *args: str, code: int = 0) -> dict[str, Any]:
        done = self.flower("--json", *args)
        assert done.returncode == code, (done.stdout, done.stderr)
        document: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
        return document

    def sessions(self) -> set[str]:
        from claude_agent_sdk import project_key_for_directory

        async def listed() -> set[str]:
            store = store_from_url(self.url)
            try:
                return {
                    s["session_id"] for s in await store.list_sessions(project_key_for_directory(str(self.workspace)))
                }
            finally:
                store.close()

        return anyio.run(listed)


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return Place(*store_place(request, tmp_path))


@pytest.fixture
def live(place: Place) -> Iterator[list[subprocess.Popen[str]]]:
    """The live run(s) a test starts; released and ended at the end whatever happened."""
    started: list[subprocess.Popen[str]] = []
    yield started
    (place.workspace / "go").touch()
    for proc in started:
        try:
            proc.communicate(timeout=SETUP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=30)


def _wait_until(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.05)


def _ids(document: dict[str, Any], part: str) -> set[str]:
    return {row["session_id"] for row in document[part]}


def _finished_and_live(place: Place, server: ScriptedServer, live: list[subprocess.Popen[str]]) -> dict[str, str]:
    """Two finished `once` sessions, a finished `run` whose lineage names its session, and a live `once`."""
    server.script(Text("ONE"), Text("TWO"), Text("DRAFTED"))
    names: dict[str, str] = {}
    for name in ("one", "two"):
        before = place.sessions()
        assert place.flower("once", f"task {name}").returncode == 0
        [names[name]] = place.sessions() - before
    (place.workspace / "flows.py").write_text(FLOWS)
    done = place.flower("run", "flows.py:main")
    assert done.returncode == 0, done.stderr
    names["lineage"] = json.loads((place.workspace / "runs" / "lineage.json").read_text())["steps"]["draft"]
    server.script(bash(SLOW_TOOL), Text("LIVE-DONE"))
    before = place.sessions()
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    live.append(
        subprocess.Popen(
            place.argv("once", "-t", "Bash", "run the slow step"),
            cwd=place.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    _wait_until(lambda: (place.workspace / "started").exists(), SETUP_S, "the live run's tool starts")
    _wait_until(lambda: bool(place.sessions() - before), SETUP_S, "the live session reaches the store")
    [names["live"]] = place.sessions() - before
    return names


def test_prune_and_delete_remove_only_what_they_say(
    claude_env: ScriptedServer, place: Place, live: list[subprocess.Popen[str]]
) -> None:
    s = _finished_and_live(place, claude_env, live)
    everything = set(s.values())
    assert place.sessions() == everything

    young = place.json("sessions", "prune", "--older-than", "30d")
    assert not young["deleted"] and not young["kept"], "nothing is 30 days old"
    dry = place.json("sessions", "prune", "--older-than", "0s", "--dry-run")
    assert dry["dry_run"] and _ids(dry, "deleted") == {s["one"], s["two"]}
    assert {(k["session_id"], k["forceable"]) for k in dry["kept"]} == {(s["lineage"], True), (s["live"], False)}
    assert place.sessions() == everything, "a dry run deletes nothing"

    # One session by a prefix of its id: that one goes, and only it.
    one = place.json("sessions", "delete", s["one"][:13])
    assert _ids(one, "deleted") == {s["one"]} and place.sessions() == everything - {s["one"]}

    # The live session stays, with --force too: exit 1, one line that says why and what to do.
    for extra in ([], ["--force"]):
        refused = place.flower("sessions", "delete", s["live"], *extra)
        assert refused.returncode == 1, refused.stderr
        assert "driven now by" in refused.stdout and "live run" in refused.stderr.strip().splitlines()[-1]
        assert "Traceback" not in refused.stderr
    kept_lineage = place.flower("sessions", "delete", s["lineage"])
    assert kept_lineage.returncode == 1 and "--force" in kept_lineage.stderr
    assert place.sessions() == everything - {s["one"]}

    pruned = place.json("sessions", "prune", "--older-than", "0s")
    assert _ids(pruned, "deleted") == {s["two"]} and _ids(pruned, "kept") == {s["lineage"], s["live"]}
    assert place.sessions() == {s["lineage"], s["live"]}

    # Compaction waits for live runs (or --force); once the run ended, it gives the deleted sessions' space back.
    # (--full: PostgreSQL's plain VACUUM only makes the space reusable, and may add its free-space maps.)
    busy = place.flower("sessions", "compact")
    assert busy.returncode == 1 and s["live"] in busy.stderr and "--force" in busy.stderr
    (place.workspace / "go").touch()
    out, err = live[0].communicate(timeout=SETUP_S)
    assert live[0].returncode == 0, err
    compacted = place.json("sessions", "compact", "--full")
    assert compacted["after"]["bytes"] <= compacted["before"]["bytes"] and not compacted["live_sessions"]
    doctor = place.json("doctor", "--no-probe")
    # (SQLite: at most the size after compaction, which counted the -shm file of the connection it used.)
    assert 0 < doctor["store"]["size_bytes"] <= compacted["after"]["bytes"], "doctor shows the store's size"

    # Forced: the lineage's session goes (and is named), the finished live one with it; the run wakes afresh.
    forced = place.json("sessions", "prune", "--older-than", "0s", "--force")
    assert _ids(forced, "deleted") == {s["lineage"], s["live"]} and _ids(forced, "forced") == {s["lineage"]}
    assert place.sessions() == set()
    claude_env.script(Text("DRAFTED-AGAIN"))
    again = place.flower("run", "flows.py:main")
    assert again.returncode == 0 and again.stdout.strip() == "DRAFTED-AGAIN", again.stderr


def test_bad_input_is_one_line(claude_env: ScriptedServer, place: Place) -> None:
    nothing = place.flower("sessions", "prune", "--older-than", "30d")
    if place.options:  # PostgreSQL: a store that holds nothing for this workspace prunes nothing
        assert nothing.returncode == 0, nothing.stderr
    else:
        assert nothing.returncode == 2 and "nothing has run" in nothing.stderr
    claude_env.script(Text("ONE"))
    assert place.flower("once", "task").returncode == 0
    for args, words in (
        (["prune", "--older-than", "30 days"], "give an age like 30d"),
        (["delete", "ffffffff"], "no session ffffffff"),
        (["prune"], "--older-than"),
    ):
        done = place.flower("sessions", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, done.stderr
