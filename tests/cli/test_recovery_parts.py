"""The parts of worker recovery that need no model: the notice the coordinator gets (which the ledger then reads
as a report), the worker's transcript as a session of its own, the stable recovery session id, and where a
recovered worker works (a real git repository for the worktree it is given)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

from claude_agent_sdk import project_key_for_directory

from flower_cli import AgentSpec, worker
from flower_cli.runtime import WorkerRecord, worker_ledger
from flower_cli.runtime._recovery import as_session, completion_notice, recovery_session_id, worker_spec
from flower_cli.runtime._recovery_place import ensure_worktree, project_of, worker_place


def _record(**extra: Any) -> WorkerRecord:
    fields: dict[str, Any] = {
        "call_id": "toolu_1", "agent_id": "agent1", "description": "piece 1", "prompt": "do it",
        "agent_type": None, "isolation": None, "state": "unfinished",
    }  # fmt: skip
    fields.update(extra)
    return WorkerRecord(**fields)


def test_the_completion_notice_is_read_back_by_the_ledger_as_a_report() -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Agent", "input": {"description": "piece 1", "prompt": "x"}}
    main: list[dict[str, Any]] = [{"type": "assistant", "message": {"content": [call]}}]
    (before,) = worker_ledger(main, {})
    assert before.state == "unstarted"
    for ok in (True, False):
        notice = completion_notice(before, "PIECE-1-DONE", "redispatched", ok=ok)
        assert "recovered by flower" in notice and "<result>PIECE-1-DONE</result>" in notice
        prompt = {"type": "user", "message": {"content": f"intro\n\n{notice}\n\nCarry on."}}
        (after,) = worker_ledger([*main, prompt], {})
        assert after.state == "reported"


def test_a_worker_s_transcript_as_a_session_of_its_own_leaves_the_input_alone() -> None:
    entries = [
        {"type": "agent_metadata", "toolUseId": "toolu_1"},
        {"type": "user", "uuid": "u1", "isSidechain": True, "agentId": "agent1", "sessionId": "parent"},
        {"type": "assistant", "uuid": "a1", "isSidechain": True, "agentId": "agent1", "sessionId": "parent"},
    ]
    before = copy.deepcopy(entries)
    session = as_session(entries, "rec")
    assert entries == before
    assert session == [
        {"type": "user", "uuid": "u1", "isSidechain": False, "sessionId": "rec"},
        {"type": "assistant", "uuid": "a1", "isSidechain": False, "sessionId": "rec"},
    ]


def test_the_recovery_session_id_is_stable_per_session_and_call() -> None:
    one = recovery_session_id("s1", "toolu_1")
    assert one == recovery_session_id("s1", "toolu_1")
    assert len({one, recovery_session_id("s1", "toolu_2"), recovery_session_id("s2", "toolu_1")}) == 3


def test_a_recovered_worker_runs_as_its_type_or_with_the_tools_the_coordinator_approved() -> None:
    lead = AgentSpec(
        "lead", "", allowed_tools=["Agent", "SendMessage", "Read", "Bash", "mcp__flower__ask"],
        agents={"coder": worker("codes", "You code.", tools=["Read", "Write"])}, permission_mode="acceptEdits",
    )  # fmt: skip
    coder = worker_spec(lead, _record(agent_type="coder"))
    assert coder.allowed_tools == ["Read", "Write"] and "You code." in coder.instructions and not coder.delegate_only
    general = worker_spec(lead, _record())
    assert general.allowed_tools == ["Read", "Bash"] and general.permission_mode == "acceptEdits"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_an_isolated_worker_with_nothing_stored_gets_a_worktree_of_its_own_the_same_on_every_wake(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "a.txt")
    _git(repo, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "init")
    lead = AgentSpec("lead", "", agents={"coder": worker("codes", "You code.", isolate=True)})
    rid = recovery_session_id("s1", "toolu_1")

    assert worker_place(repo, lead, _record(), rid) is None, "not isolated: the workspace"
    place = worker_place(repo, lead, _record(agent_type="coder"), rid)
    assert place is not None and place == worker_place(repo, lead, _record(isolation="worktree"), rid)
    assert ensure_worktree(repo, place) is None
    assert (place / "a.txt").read_text() == "a\n" and _git(place, "rev-parse", "--abbrev-ref", "HEAD") == place.name
    assert ensure_worktree(repo, place) is None, "an existing worktree is used as it is"
    assert project_of("ws-key", place) == project_key_for_directory(str(place))
    assert project_of("ws-key", None) == "ws-key"
    kept = _record(cwd=str(place))
    assert worker_place(repo, lead, kept, recovery_session_id("s9", "toolu_9")) == place, "the worktree it had"
