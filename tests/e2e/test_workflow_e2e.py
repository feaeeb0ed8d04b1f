"""The workflow engine with the real binary: isolated workers in git worktrees, judged rounds that continue
the same session, and a step picked up from lineage by a second process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower_cli import (
    JUDGE_RULES,
    AgentSpec,
    RunContext,
    Runtime,
    Step,
    StepResult,
    Workflow,
    coordinator,
    judge,
    worker,
)
from harness import (
    ScriptedServer,
    Text,
    Turn,
    bash,
    dispatch,
    keyed,
    when_main,
    when_notified,
    when_system,
)

pytestmark = pytest.mark.e2e


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout.strip()


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return json.loads((run_dir / "manifest.json").read_text())  # type: ignore[no-any-return]


async def test_three_isolated_workers_commit_on_their_own_worktree_branches(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    git(workspace, "init", "-q")
    git(workspace, "config", "user.email", "test@example.invalid")
    git(workspace, "config", "user.name", "flower test")
    (workspace / "README.md").write_text("main checkout\n")
    git(workspace, "add", "README.md")
    git(workspace, "commit", "-qm", "init")
    head = git(workspace, "rev-parse", "HEAD")

    def piece(n: int) -> Any:
        return dispatch(
            f"piece {n}",
            bash(
                f"echo {n} > piece{n}.txt && git add piece{n}.txt && git commit -qm piece-{n} && git rev-parse --abbrev-ref HEAD"
            ),
            Text(f"PIECE-{n}-DONE"),
            prompt=f"PIECE-{n}: commit piece{n}.txt",
            subagent_type="coder",
        )

    lead_role = when_system("# How you work: you coordinate") & when_main()
    claude_env.script(
        *keyed(
            lead_role & ~when_notified(),
            Turn(["Three pieces.", piece(1), piece(2), piece(3)]),
            Text("Dispatched three."),
        ),
        # Notifications may arrive one by one or together: answer each wake-up the same way.
        *keyed(lead_role & when_notified(), Text("Noted."), Text("Noted."), Text("All three committed.")),
    )
    lead = coordinator(
        "lead", "", {"coder": worker("commits one piece", "You commit what you are asked to.", isolate=True)}
    )
    with Runtime(workspace, tmp_path / "runs") as rt:
        ctx = await Workflow([Step("work", lead, "Commit three pieces, in parallel.")], continuous=False).run(rt)
    result: StepResult = ctx.results["work"]
    assert result.ok, result.errors
    assert len(result.workers) == 3 and {w["status"] for w in result.workers} == {"completed"}

    branches = git(workspace, "for-each-ref", "--format=%(refname:short)", "refs/heads/worktree-agent-*").split()
    assert sorted(branches) == sorted(f"worktree-agent-{w['id']}" for w in result.workers)
    committed = {}
    for branch in branches:
        assert git(workspace, "rev-parse", f"{branch}~1") == head, "each branch is one commit on top of main"
        committed[git(workspace, "log", "-1", "--format=%s", branch)] = git(
            workspace, "show", "--name-only", "--format=", branch
        )
    assert committed == {f"piece-{n}": f"piece{n}.txt" for n in (1, 2, 3)}
    # each worker's shell reported its own worktree branch
    outputs = [b for r in claude_env.message_requests if r.is_subagent for b in r.tool_results()]
    assert (
        len({json.dumps(b.get("content")) for b in outputs if "worktree-agent-" in json.dumps(b.get("content"))}) == 3
    )

    # the main checkout is untouched
    assert git(workspace, "rev-parse", "HEAD") == head and git(workspace, "rev-parse", "--abbrev-ref", "HEAD") in (
        "master",
        "main",
    )
    assert git(workspace, "status", "--porcelain", "--untracked-files=no") == ""
    assert not list(workspace.glob("piece*.txt"))


async def test_rejected_rounds_continue_the_same_session_and_judges_stay_out_of_lineage(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    work = when_system("WORK-ROLE")
    judging = when_system(JUDGE_RULES.splitlines()[0])
    claude_env.script(
        *keyed(work, Text("round one output"), Text("round two output"), Text("round three output")),
        *keyed(judging, Text("## Verdict\nnot yet"), Text("## Verdict\nnot yet"), Text("## Verdict\nachieved")),
    )
    rounds = {"n": 0}

    async def gate(result: StepResult, ctx: dict[str, Any], run: RunContext) -> bool:
        rounds["n"] += 1
        verdict = await run.runtime.run(
            judge("judge"),
            f"Judge this round:\n{result.text}",
            step_name=f"work·judge#{rounds['n']}",
            on_event=run.on_event,
        )
        return "achieved" in verdict.text

    def on_reject(result: StepResult, ctx: dict[str, Any]) -> str:
        return f"FEEDBACK {rounds['n']}: close the gaps"

    spec = AgentSpec("worker", "WORK-ROLE: you build things.", allowed_tools=["Read"])
    with Runtime(workspace) as rt:
        ctx = await Workflow([Step("work", spec, "Build it.", gate=gate, on_reject=on_reject, retries=2)]).run(rt)
    assert ctx.failed_at is None and ctx["work"] == "round three output"
    manifest = rows(workspace / "runs")
    assert [r["step"] for r in manifest] == [
        "work",
        "work·judge#1",
        "work#round2",
        "work·judge#2",
        "work#round3",
        "work·judge#3",
    ]
    work_rows = [r for r in manifest if not r["step"].startswith("work·")]
    assert len({r["session_id"] for r in work_rows}) == 1, "every round continues the same session"
    judge_sessions = {r["session_id"] for r in manifest if r["step"].startswith("work·")}
    assert len(judge_sessions) == 3 and not judge_sessions & {work_rows[0]["session_id"]}, (
        "each judge is a fresh session"
    )
    work_requests = [r for r in claude_env.message_requests if work(r)]
    assert "FEEDBACK 1" in work_requests[1].last_user_text and "round one output" in work_requests[1].text
    assert "FEEDBACK 2" in work_requests[2].last_user_text and "round two output" in work_requests[2].text
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert lineage["steps"] == {"work": work_rows[0]["session_id"]}


def flower(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_second_process_continues_the_step_from_lineage(
    claude_env: ScriptedServer, workspace: Path, isolated_home: Path
) -> None:
    (workspace / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "spec = AgentSpec('worker', 'WORK-ROLE', allowed_tools=['Read'])\n"
        "def main():\n"
        "    return Workflow([Step('work', spec, 'Start the job.', resume_prompt='Continue where you left off.')])\n"
    )
    claude_env.script(Text("first part done"))
    first = flower("run", "flows.py:main", cwd=workspace)
    assert first.returncode == 0, first.stderr
    shutil.rmtree(isolated_home / ".claude", ignore_errors=True)  # the store is the only copy of the transcript
    claude_env.script(Text("second part done"))
    second = flower("run", "flows.py:main", cwd=workspace)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "second part done"
    assert "continuing the recorded session" in second.stderr and "wake 2" in second.stderr
    manifest = rows(workspace / "runs")
    assert [r["step"] for r in manifest] == ["work", "work"] and manifest[0]["session_id"] == manifest[1]["session_id"]
    assert manifest[0]["run"] != manifest[1]["run"]
    last = claude_env.message_requests[-1]
    assert "first part done" in last.text and "Start the job." in last.text
    assert last.last_user_text.strip().endswith("Continue where you left off.")
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert lineage["woke"] == 2 and lineage["steps"]["work"] == manifest[0]["session_id"]


def test_workflow_mistakes_through_flower_run_are_one_line_usage_errors(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    (workspace / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow, coordinator, worker\n"
        "spec = AgentSpec('worker', 'WORK-ROLE', allowed_tools=['Read'])\n"
        "def bad_gate(result, ctx):\n"
        "    raise RuntimeError('gate exploded')\n"
        "def gate_raises():\n"
        "    return Workflow([Step('check', spec, 'x', gate=bad_gate)])\n"
        "def unknown_resume():\n"
        "    return Workflow([Step('b', spec, 'x', resume_from='a')])\n"
        "def isolated_no_git():\n"
        "    lead = coordinator('lead', '', {'coder': worker('codes', 'x', isolate=True)})\n"
        "    return Workflow([Step('work', lead, 'x')])\n"
    )
    claude_env.script(Text("an answer"))
    for target, fragment in (
        ("flows.py:gate_raises", "step 'check': its gate raised RuntimeError: gate exploded"),
        ("flows.py:unknown_resume", "step 'b' resumes 'a', which is not an earlier step"),
        ("flows.py:isolated_no_git", "step 'work': worker 'coder' is isolated"),
    ):
        done = flower("run", target, cwd=workspace)
        assert done.returncode == 2, (target, done.stderr)
        assert fragment in done.stderr and "Traceback" not in done.stderr
        assert len([line for line in done.stderr.splitlines() if fragment in line]) == 1
    # only the gate case reached the model, once
    assert len(claude_env.message_requests) == 1
