"""The layers on transcripts the real Claude Code binary wrote — and the real binary resuming through them.

One session goes through everything a long run meets: big Bash outputs, repeated ``git status``/``ls``
glances, two denied commands, a dropped connection (a synthetic "API Error" entry), a tool call interrupted
while running, and a process killed in the middle of a tool call (a ``tool_use`` with no result). Every run
after the first resumes *from the store* (the local ``~/.claude/projects`` copy is deleted first, so the SDK
must materialise the transcript from ``load()``), and the scripted server checks each request the way the
real API does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    InMemorySessionStore,
    ResultError,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    project_key_for_directory,
    query,
)

from flower_stores import (
    EphemeralPolicy,
    PrunePolicy,
    PruningSessionStore,
    SqliteSessionStore,
    TrimPolicy,
    spill_path,
    trim_report,
)
from harness import Outage, RecordedRequest, ScriptedServer, Text, bash, result_text, validate_messages
from harness.agent import agent_options, collect, final_result

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

BIG_A = "python3 -c \"print('\\n'.join('alpha %05d ' % i + 'a' * 40 for i in range(160)))\""  # ~8 KB
BIG_B = "python3 -c \"print('\\n'.join('bravo %05d ' % i + 'b' * 60 for i in range(190)))\""  # ~13 KB
BIG_C = (
    "python3 -c \"print('\\n'.join('charlie %05d ' % i + 'c' * 80 for i in range(180)))\""  # ~17 KB, the newest: kept
)
LONG_1 = "python3 -c \"import time; open('started-1', 'w').close(); time.sleep(20)\""
LONG_2 = "python3 -c \"import time; open('started-2', 'w').close(); time.sleep(20)\""


def _expected_output(command: str, workspace: Path) -> str:
    return subprocess.run(command, shell=True, cwd=workspace, capture_output=True, text=True, check=True).stdout.rstrip(
        "\n"
    )


def _git_repo(workspace: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "README.md").write_text("hello\n")
    subprocess.run([*git, "-C", str(workspace), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(workspace), "commit", "-q", "-m", "init"], check=True)
    (workspace / "notes.txt").write_text("untracked\n")  # so git status has something to say


def _forget_local_copy(home: Path) -> None:
    shutil.rmtree(home / ".claude" / "projects", ignore_errors=True)


def _results_by_id(request: RecordedRequest) -> dict[str, str]:
    return {b["tool_use_id"]: result_text(b) for b in request.tool_results()}


def _result_texts(entries: list[Any]) -> list[str]:
    return [
        result_text(b)
        for e in entries
        for b in (e.get("message") or {}).get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def _session_id(messages: list[Any]) -> str:
    for message in messages:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            return str(message.data["session_id"])
    raise AssertionError("no init message")


async def _wait_for(path: Path, timeout: float = 60.0) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


def _check_request(server: ScriptedServer, request: RecordedRequest) -> None:
    assert validate_messages(request.messages) is None, validate_messages(request.messages)
    assert server.rejected == [], [problem for _, problem in server.rejected]
    assert "API Error" not in request.text


async def test_real_binary_resumes_through_the_layers(
    claude_env: ScriptedServer, workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    server = claude_env
    _git_repo(workspace)
    db = tmp_path / "runs" / "sessions.db"
    policies: dict[str, Any] = {
        "policy": TrimPolicy(keep_recent=1),
        "ephemeral": EphemeralPolicy(keep_recent=1),
        "prune": PrunePolicy(keep_denials=1),
    }
    store = PruningSessionStore(db, workspace, **policies)
    options = {"session_store": store, "disallowed_tools": ["Bash(rm:*)"]}

    # --- run 1: big outputs, glances, two denials, then the connection drops ---------------------------
    big_a, glance_1, glance_2, big_b, denied_1, glance_3, denied_2, big_c, glance_4 = steps = [
        bash(BIG_A),
        bash("git status"),
        bash("ls -la"),
        bash(BIG_B),
        bash("rm -f README.md"),
        bash("git status"),
        bash("rm -rf notes.txt"),
        bash(BIG_C),
        bash("git status --short"),
    ]
    server.script(*steps, Outage(None))
    run_1: list[Any] = []
    with pytest.raises(ResultError):
        async for message in query(prompt="look around, then clean up", options=agent_options(workspace, **options)):
            run_1.append(message)
    session_id = _session_id(run_1)
    assert (workspace / "README.md").exists(), "the denied rm ran"
    key = {"project_key": project_key_for_directory(str(workspace)), "session_id": session_id}

    raw_store = SqliteSessionStore(db)
    stored = await raw_store.load(key)  # type: ignore[arg-type]
    assert stored is not None
    assert sum(e.get("toolDenialKind") == "permission-rule" for e in stored) == 2
    assert any(e.get("isApiErrorMessage") for e in stored), "the dropped connection left no synthetic entry"

    def tool_id(turn: Any) -> str:
        return str(turn.tool_calls[0].id)

    # --- run 2: resume from the store; a long tool call is interrupted while it runs --------------------
    # The outage cuts the connection first and stops listening just after, so the client can fail before
    # the server is down: a start() in between would be a no-op, and run 2 would find the port closed.
    with anyio.fail_after(30):
        while server.running:
            await anyio.sleep(0.02)
    server.start()
    _forget_local_copy(isolated_home)
    first_of_run_2 = len(server.message_requests)
    interrupted = bash(LONG_1)
    server.script(interrupted)
    run_2: list[Any] = []
    async with ClaudeSDKClient(
        agent_options(workspace, resume=session_id, session_store_flush="eager", **options)
    ) as client:
        await client.query("now wait for the long job")
        async for message in client.receive_messages():
            run_2.append(message)
            if isinstance(message, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in message.content):
                await _wait_for(workspace / "started-1")
                await client.interrupt()
            if isinstance(message, ResultMessage):
                break
    assert len(server.message_requests) > first_of_run_2, (
        f"run 2 never reached the model: {[m for m in run_2 if not isinstance(m, SystemMessage)]}"
    )
    _check_request(server, server.message_requests[first_of_run_2])

    # --- run 3: resume again; the process is killed in the middle of a tool call -----------------------
    _forget_local_copy(isolated_home)
    first_of_run_3 = len(server.message_requests)
    killed = bash(LONG_2)
    server.script(killed)

    async def run_until_killed() -> None:
        async for _ in query(
            prompt="try the long job once more",
            options=agent_options(workspace, resume=session_id, session_store_flush="eager", **options),
        ):
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_until_killed)
        await _wait_for(workspace / "started-2")
        with anyio.fail_after(60):
            while not any(tool_id(killed) in json.dumps(e) for e in (await raw_store.load(key) or [])):  # type: ignore[arg-type]
                await anyio.sleep(0.05)  # the tool_use entry has reached the store
        tg.cancel_scope.cancel()
    _check_request(server, server.message_requests[first_of_run_3])
    stored = await raw_store.load(key)  # type: ignore[arg-type]
    assert stored is not None
    answered = {
        b.get("tool_use_id")
        for e in stored
        for b in (e.get("message") or {}).get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    assert tool_id(killed) not in answered, "the killed call got a result after all; no orphan to heal"

    # --- run 4: the resume that matters ------------------------------------------------------------------
    # First a control: the same transcript resumed with no layers, to measure what the layers save.
    raw_copy = InMemorySessionStore()
    await raw_copy.append(key, stored)  # type: ignore[arg-type]
    _forget_local_copy(isolated_home)
    first_raw = len(server.message_requests)
    server.script(Text("raw resume"))
    await collect(
        "status?", agent_options(workspace, resume=session_id, session_store=raw_copy, disallowed_tools=["Bash(rm:*)"])
    )
    raw_request = server.message_requests[first_raw]

    _forget_local_copy(isolated_home)
    first_of_run_4 = len(server.message_requests)
    server.script(Text("resumed fine"))
    messages = await collect("status?", agent_options(workspace, resume=session_id, **options))
    result = final_result(messages)
    assert result.is_error is False and result.result == "resumed fine", result
    request = server.message_requests[first_of_run_4]
    _check_request(server, request)
    assert server.unscripted == []

    text = request.text
    results = _results_by_id(request)
    tool_uses = {b["id"] for b in request.tool_uses()}

    # Every tool_use answered, in the API's own terms (the server would have answered 400 otherwise).
    assert tool_uses <= set(results)
    # The old big outputs are pointers to spill files that hold them; the newest big output stays.
    for turn, command in ((big_a, BIG_A), (big_b, BIG_B)):
        output = _expected_output(command, workspace)
        pointer = results[tool_id(turn)]
        assert pointer.startswith("[Earlier tool result trimmed:") and f"{len(output):,} characters" in pointer, pointer
        spilled = spill_path(output, TrimPolicy(), workspace)
        assert spilled.relative_to(workspace).as_posix() in pointer
        assert spilled.read_text() == output
        assert output[:200] not in text
    assert _expected_output(BIG_C, workspace) in results[tool_id(big_c)]
    # Stale glances expired; the newest glance is fresh.
    for turn, command in ((glance_1, "git status"), (glance_2, "ls -la"), (glance_3, "git status")):
        assert results[tool_id(turn)].startswith(f"[`{command}` result expired "), results[tool_id(turn)]
        assert "rerun it if needed" in results[tool_id(turn)]
    assert "notes.txt" in results[tool_id(glance_4)]
    # The older denial is gone, call and result together; the newest one stays.
    assert tool_id(denied_1) not in tool_uses and tool_id(denied_1) not in results
    assert tool_id(denied_2) in tool_uses and "denied" in results[tool_id(denied_2)]
    # The interrupted call reads as interrupted, not as "STOP and wait for the user".
    assert results[tool_id(interrupted)] == PrunePolicy().interrupt_text
    assert "STOP what you are doing" not in text
    # The killed call is answered by our heal entry (not left to the harness's own repair).
    assert results[tool_id(killed)] == PrunePolicy().orphan_text

    report = store.last_report
    assert report.trimmed >= 2 and report.expired >= 3 and report.denials_dropped >= 1
    assert report.api_errors_dropped >= 1 and report.interrupts_neutralized >= 1 and report.orphans_healed >= 1
    assert trim_report(store).startswith("trimmed ")

    # The stored copy is untouched: the raw load still has everything the layers hid.
    after = await raw_store.load(key)  # type: ignore[arg-type]
    assert after is not None and after[: len(stored)] == stored
    assert _expected_output(BIG_A, workspace) in _result_texts(after)
    assert sum(e.get("toolDenialKind") == "permission-rule" for e in after) >= 2
    assert any(e.get("isApiErrorMessage") for e in after)

    # What the layers save on this resume (printed for the closing note; -s shows it).
    print(
        f"\nresume request bytes: layered {request.size} vs raw {raw_request.size} ({request.size / raw_request.size:.2f} of raw)"
    )
    assert request.size < raw_request.size
    raw_store.close()
    store.close()
