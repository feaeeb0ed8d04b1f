"""The Runtime over a store the user brings: the SDK's own `InMemorySessionStore` gets flower's layers, so
``trim`` and ``keep_denials`` apply to it and a recorded session is found again (what ``continuous`` needs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore

import flower_stores
from flower_cli import Runtime
from harness import ScriptedServer, Text


def _entries(big: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "go"}},
    ]
    parent = "u0"
    for i in range(25):
        call = f"t{i}"
        rows.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "parentUuid": parent,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "x"}}],
                    "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000 + i, "output_tokens": 5},
                },
            }
        )
        rows.append(
            {
                "type": "user",
                "uuid": f"r{i}",
                "parentUuid": f"a{i}",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": big}]},
            }
        )
        parent = f"r{i}"
    return rows


async def test_a_bare_sdk_store_gets_the_layers_and_answers_what_flower_asks(
    claude_env: ScriptedServer, tmp_path: Path
) -> None:
    bare = InMemorySessionStore()
    runtime = Runtime(tmp_path, store=bare, trim=True, keep_denials=3)
    try:
        assert isinstance(runtime.store, flower_stores.PruningSessionStore)
        key = {"project_key": runtime.project_key, "session_id": "s-1"}
        await runtime.store.append(key, _entries("X" * 5000))  # type: ignore[arg-type]
        assert runtime.has_session("s-1") and not runtime.has_session("s-2")
        assert runtime.context_of("s-1") == 10 + 1000 + 24
        loaded = await runtime.store.load(key)  # type: ignore[arg-type]
        assert loaded is not None
        texts = [
            b["content"]
            for e in loaded
            if e.get("type") == "user" and isinstance(e["message"]["content"], list)
            for b in e["message"]["content"]
            if b.get("type") == "tool_result"
        ]
        assert sum(1 for t in texts if t == "X" * 5000) == 10, "the newest 10 stay whole"
        assert sum(1 for t in texts if isinstance(t, str) and "spill" in t) == 15, "older big results are trimmed"
        stored = await bare.load(key)  # type: ignore[arg-type]
        assert stored is not None and len(stored) == 51, "the stored copy is never rewritten"
    finally:
        runtime.close()


def test_a_layered_store_with_policies_given_again_is_refused(claude_env: ScriptedServer, tmp_path: Path) -> None:
    layered = flower_stores.PruningSessionStore(InMemorySessionStore(), tmp_path)
    with pytest.raises(ValueError, match="already a layered store"):
        Runtime(tmp_path, store=layered, trim=True)
    Runtime(tmp_path, store=layered).close()  # its own policies, nothing given twice: fine


@pytest.mark.e2e
async def test_a_continuous_workflow_resumes_its_step_from_a_bare_sdk_store(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    """Real Claude Code against the scripted server; the only copy of the transcript is the SDK's in-memory store."""
    from flower_cli import AgentSpec, Step, Workflow

    bare = InMemorySessionStore()
    spec = AgentSpec("worker", "WORK-ROLE", allowed_tools=["Read"])

    def flow() -> Workflow:
        return Workflow([Step("work", spec, "Start the job.", resume_prompt="Continue where you left off.")])

    claude_env.script(Text("first part done"))
    first = Runtime(workspace, store=bare, trim=True)
    done = await flow().run(first)
    first.close()
    assert done.ok and done.answer is not None and done.answer.text == "first part done"

    claude_env.script(Text("second part done"))
    second = Runtime(workspace, store=bare, trim=True)
    again = await flow().run(second)
    second.close()
    assert again.ok and again.answer is not None and again.answer.text == "second part done"
    assert again.answer.session_id == done.answer.session_id, "the step's recorded session was resumed"
    last = claude_env.message_requests[-1]
    assert "first part done" in last.text and last.last_user_text.strip().endswith("Continue where you left off.")
