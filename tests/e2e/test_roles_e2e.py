"""Roles, walls and background workers end to end: the real binary plays a coordinator and its workers.

The scripted server routes by role (the coordinator's rules in its system prompt), by worker (each
`dispatch` carries the worker's own script) and by notification (the main thread woken by a worker). The
workflow run is the one the package README shows, copied out of the README.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flower_cli import COORDINATOR_RULES
from harness import (
    After,
    ScriptedServer,
    Step,
    Text,
    Turn,
    bash,
    dispatch,
    keyed,
    result_text,
    seen,
    when_main,
    when_notified,
    when_prompt,
    when_system,
)

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "packages" / "flower-cli" / "README.md"
COORDINATOR = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
FINAL = "FINAL: alpha.txt and beta.txt are written."


def flower(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout


def git_workspace(ws: Path) -> None:
    git(ws, "init", "-q")
    git(ws, "config", "user.email", "test@example.invalid")
    git(ws, "config", "user.name", "flower test")
    (ws / ".gitignore").write_text("runs/\nflows.py\n.claude/\n")
    git(ws, "add", ".gitignore")
    git(ws, "commit", "-qm", "init")


def readme_workflow() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    [flows] = [b for b in blocks if "coordinator(" in b and "def main" in b]
    return flows


def script_coordinator_with_two_workers(api: ScriptedServer) -> None:
    """Coordinator: a denied rm, an allowed glance, two parallel workers, one turn per notification."""
    alpha = dispatch(
        "write alpha",
        # Held until worker B has started: both workers are live at once.
        After(seen(when_prompt("PIECE-BETA")), bash("echo alpha > alpha.txt")),
        Text("ALPHA-DONE: alpha.txt written"),
        prompt="PIECE-ALPHA: write alpha.txt containing alpha",
        subagent_type="coder",
    )
    beta = dispatch(
        "write beta",
        bash("echo beta > beta.txt"),
        # Held until the coordinator was woken by alpha's report: the notifications come one at a time.
        After(seen(when_notified("ALPHA-DONE")), Text("BETA-DONE: beta.txt written")),
        prompt="PIECE-BETA: write beta.txt containing beta",
        subagent_type="coder",
    )
    api.script(
        *keyed(
            COORDINATOR & ~when_notified(),
            bash("rm -rf x"),
            bash("git status"),
            Turn(["Two independent pieces; dispatching both.", alpha, beta]),
            Text("Dispatched both; waiting for their reports."),
        ),
        Step(Text("alpha is in; waiting for beta."), COORDINATOR & when_notified("ALPHA-DONE")),
        Step(Text(FINAL), COORDINATOR & when_notified("BETA-DONE")),
    )


def prepare(workspace: Path) -> None:
    git_workspace(workspace)
    (workspace / "x").mkdir()
    (workspace / "x" / "keep.txt").write_text("must survive\n")
    (workspace / "flows.py").write_text(readme_workflow())


def test_coordinator_walls_and_two_parallel_workers(claude_env: ScriptedServer, workspace: Path) -> None:
    prepare(workspace)
    script_coordinator_with_two_workers(claude_env)
    done = flower("run", "flows.py:main", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == FINAL + "\n"
    assert "Traceback" not in done.stderr
    assert not claude_env.unscripted and not claude_env.rejected, claude_env.rejected

    # the wall: rm -rf refused on the coordinator's thread, git status allowed as a glance
    coordinator_requests = [r for r in claude_env.message_requests if COORDINATOR(r)]
    results = [b for r in coordinator_requests for b in r.tool_results()]
    denial = next(b for b in results if "read-only glances" in result_text(b))
    assert denial.get("is_error") is True
    assert (workspace / "x" / "keep.txt").is_file()
    assert any("On branch" in result_text(b) for b in results), "git status ran on the coordinator's thread"
    # the workers did the work
    assert (workspace / "alpha.txt").read_text() == "alpha\n" and (workspace / "beta.txt").read_text() == "beta\n"
    # the harness's schedulers are not offered to the coordinator
    tools = {t["name"] for t in coordinator_requests[0].json["tools"]}
    assert "Agent" in tools and not {"Workflow", "ScheduleWakeup"} & tools

    # one step, one closing line, one row whose text is the final answer
    assert done.stderr.count("+ done") == 1 and done.stderr.count("total cost $") == 1
    assert "~ waiting for 2 workers" in done.stderr
    for heading, call in (
        ("| write alpha", "* Bash echo alpha > alpha.txt"),
        ("| write beta", "* Bash echo beta > beta.txt"),
    ):
        assert heading in done.stderr and call in done.stderr
    [row] = json.loads((workspace / "runs" / "manifest.json").read_text())
    assert row["step"] == "work" and row["ok"] is True and row["text"] == FINAL
    assert row["turns"] == 3, "dispatch turn + one turn per notification"
    assert sorted(w["description"] for w in row["workers"]) == ["write alpha", "write beta"]
    assert {w["status"] for w in row["workers"]} == {"completed"}

    # the workers' transcripts are in the store under the session's subagents/
    with sqlite3.connect(workspace / "runs" / "sessions.db") as db:
        keys = {
            k
            for (k,) in db.execute(
                "select distinct store_key from entries where store_key like ?", (f"%/{row['session_id']}/subagents/%",)
            )
        }
    assert {k.rsplit("/agent-", 1)[1] for k in keys} == {w["id"] for w in row["workers"]}

    # sessions show nests each worker's transcript under the call that started it
    shown = flower("sessions", "show", row["session_id"], cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    call_a = next(i for i, line in enumerate(lines) if "[Agent]" in line and "write alpha" in line)
    nested_a = next(i for i, line in enumerate(lines) if line.startswith("    ") and "echo alpha > alpha.txt" in line)
    assert nested_a > call_a
    assert any(line.startswith("    ") and "ALPHA-DONE" in line for line in lines)
    assert any(line.startswith("    ") and "echo beta > beta.txt" in line for line in lines)


def test_json_carries_every_event_up_to_the_final_result(claude_env: ScriptedServer, workspace: Path) -> None:
    prepare(workspace)
    script_coordinator_with_two_workers(claude_env)
    done = flower("--json", "run", "flows.py:main", cwd=workspace)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["result", "done"], kinds[-6:]
    assert kinds.count("result") == 1 and kinds.count("turn") == 3
    result = events[-2]
    assert result["text"] == "success" and result["payload"]["text"] == FINAL and result["payload"]["turns"] == 3
    assert events[-1]["text"] == FINAL and events[-1]["ok"] is True
    texts = [e["text"] for e in events if e["kind"] == "text" and not e["subagent"]]
    assert texts[-2:] == ["alpha is in; waiting for beta.", FINAL], "the notification turns were not cut off"
    # every worker event says which worker it belongs to
    worker_events = [e for e in events if e.get("subagent")]
    assert worker_events and all(e["payload"].get("worker", {}).get("id") for e in worker_events)
    described = {e["payload"]["worker"]["description"] for e in worker_events}
    assert described == {"write alpha", "write beta"}
    bash_calls = {e["payload"]["worker"]["description"]: e["text"] for e in worker_events if e["kind"] == "tool_call"}
    assert bash_calls == {"write alpha": "echo alpha > alpha.txt", "write beta": "echo beta > beta.txt"}
    notified = [e for e in events if e["kind"] == "task" and e["payload"].get("kind") == "TaskNotificationMessage"]
    assert sorted(e["payload"]["worker"]["description"] for e in notified) == ["write alpha", "write beta"]


def test_once_with_a_background_agent_has_one_closing_line_and_the_final_answer(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    main = when_main()

    def script() -> None:
        helper = dispatch("look around", Text("HELPER-DONE: nothing odd"), prompt="PIECE-LOOK: look around")
        claude_env.script(
            *keyed(main & ~when_notified(), Turn([helper]), Text("Sent a helper; waiting.")),
            Step(Text("The helper found nothing odd."), main & when_notified("HELPER-DONE")),
        )

    script()
    done = flower("once", "-t", "Agent", "check the workspace", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The helper found nothing odd.\n", "the answer is the final turn's, not every turn's"
    assert done.stderr.count("+ done") == 1 and done.stderr.count("total cost $") == 1

    script()
    done = flower("--json", "once", "-t", "Agent", "check the workspace", cwd=workspace)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    # Two turns as a rule (the dispatch, then the notification's); one when the helper finishes before the main
    # thread's second request, which then carries the notification already (a race the load of the machine decides).
    turns = kinds.count("turn")
    assert kinds[-2:] == ["result", "done"] and turns in (1, 2) and kinds.count("result") == 1
    assert events[-1]["text"] == "The helper found nothing odd."

    rows = json.loads((workspace / "runs" / "manifest.json").read_text())
    assert [r["text"] for r in rows] == ["The helper found nothing odd."] * 2
    assert all(r["turns"] in (1, 2) for r in rows) and rows[-1]["turns"] == turns
