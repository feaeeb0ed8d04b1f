"""The foundation's proof: the real SDK and the real bundled binary run a scripted tool session offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

from harness import ScriptedServer, Text, bash, result_text
from harness.agent import agent_options, collect, final_result

pytestmark = pytest.mark.e2e


async def test_two_step_bash_script_lands_in_the_session_store(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        bash("echo one > a.txt"),
        bash("cat a.txt && echo two"),
        Text("All done."),
    )
    store = InMemorySessionStore()
    messages = await collect(
        "write a file, then read it", agent_options(workspace, session_store=store, session_store_flush="eager")
    )

    result = final_result(messages)
    assert result.is_error is False, result
    assert result.result == "All done."
    assert (workspace / "a.txt").read_text() == "one\n"

    calls = claude_env.message_requests
    assert len(calls) == 3, [r.path for r in calls]
    assert claude_env.unscripted == [] and claude_env.rejected == []
    assert "one\ntwo" in result_text(calls[2].tool_results()[-1])

    key = {"project_key": project_key_for_directory(str(workspace)), "session_id": result.session_id}
    entries = await store.load(key)  # type: ignore[arg-type]
    assert entries, "the store holds no transcript"
    tool_uses = [
        block["input"]["command"]
        for e in entries
        if e.get("type") == "assistant"
        for block in e["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    assert tool_uses == ["echo one > a.txt", "cat a.txt && echo two"]
    assert any(e.get("type") == "user" and "All done." not in str(e) and "one" in str(e) for e in entries)
