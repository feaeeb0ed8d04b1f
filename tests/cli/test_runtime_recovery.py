"""Worker recovery through the Runtime, in milliseconds: the model call is the one thing replaced
(`Runtime(query_fn=...)`, a stand-in that answers each launch with one result); the store (SQLite), the ledger,
the recovery sessions and the manifest are the real ones. tests/e2e/test_workers_e2e.py runs the same with the
real binary and SIGKILL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    Message,
    ResultMessage,
    SessionKey,
    SessionListSubkeysKey,
    project_key_for_directory,
)

from flower_cli import AgentSpec, Event, Runtime
from flower_cli.runtime._recovery import recovery_session_id
from flower_stores import SqliteSessionStore

LEAD = AgentSpec("lead", "You split work.", allowed_tools=["Agent", "Bash"])


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


class Answers:
    """Each launch ends at once with the answer ``answer_for(options)`` gives; every launch is kept."""

    def __init__(self) -> None:
        self.launches: list[tuple[str, ClaudeAgentOptions]] = []

    def __call__(self, *, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Message]:
        self.launches.append((prompt, options))
        return self._answer(prompt, options)

    async def _answer(self, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Message]:
        session = options.resume or options.session_id or "new"
        if options.session_store is not None:  # the prompt lands in the transcript, as the harness writes it
            key = SessionKey(project_key=self._project(options), session_id=session)
            await options.session_store.append(key, [{"type": "user", "message": {"content": prompt}}])
        text = "WORKER-1-DONE" if "Carry on with your task" in prompt else "LEAD-DONE"
        yield ResultMessage(
            subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
            session_id=session, total_cost_usd=0.01, result=text,
        )  # fmt: skip

    @staticmethod
    def _project(options: ClaudeAgentOptions) -> str:
        return project_key_for_directory(str(options.cwd))  # the key the harness derives from its cwd


def _agent_call(call: str, description: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Agent", "input": {"description": description, "prompt": "go"}}


def _launched(call: str, agent: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call, "content": "Async agent launched successfully."}
    return {"type": "user", "message": {"content": [block]}, "toolUseResult": {"isAsync": True, "agentId": agent}}


async def _seed(rt: Runtime) -> None:
    """Coordinator session ``c1`` with two background workers: one cut mid-turn, one finished but unreported."""
    key = SessionKey(project_key=rt.project_key, session_id="c1")
    await rt.store.append(
        key,
        [
            {"type": "user", "uuid": "u0", "message": {"content": "LEAD-TASK"}},
            {
                "type": "assistant",
                "uuid": "a0",
                "message": {"content": [_agent_call("t1", "one"), _agent_call("t2", "two")]},
            },
            {**_launched("t1", "w1"), "uuid": "u1"},
            {**_launched("t2", "w2"), "uuid": "u2"},
        ],
    )
    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "make"}}
    workers = {
        "w1": [
            {"type": "assistant", "uuid": "w1a", "isSidechain": True, "agentId": "w1", "message": {"content": [bash]}}
        ],
        "w2": [
            {"type": "assistant", "uuid": "w2a", "message": {"content": [{"type": "text", "text": "WORKER-2-DONE"}]}}
        ],
    }
    for agent, entries in workers.items():
        prompt = {"type": "user", "uuid": f"{agent}p", "isSidechain": True, "message": {"content": "go"}}
        await rt.store.append(SessionKey(**key, subpath=f"subagents/agent-{agent}"), [prompt, *entries])


async def test_a_resumed_step_recovers_its_unreported_workers_once(workspace: Path, tmp_path: Path) -> None:
    answers = Answers()
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=answers) as rt:
        await _seed(rt)
        result = await rt.run(LEAD, "Carry on.", resume="c1", on_event=events.append)
        again = await rt.run(LEAD, "Carry on.", resume="c1")
        copied = await rt.store.load(SessionKey(project_key=rt.project_key, session_id=recovery_session_id("c1", "t1")))

    assert result.ok and result.text == "LEAD-DONE", (result.error, result.errors)
    assert [(w["description"], w["how"], w["status"]) for w in result.recovered] == [
        ("one", "resumed", "completed"),
        ("two", "delivered", "completed"),
    ]
    (worker_prompt, worker_options), (lead_prompt, lead_options), _ = answers.launches
    assert worker_options.resume == recovery_session_id("c1", "t1"), "worker one resumed in its recovery session"
    assert "Carry on with your task" in worker_prompt
    assert lead_options.resume == "c1" and lead_prompt.endswith("Carry on.")
    assert "<result>WORKER-1-DONE</result>" in lead_prompt and "<result>WORKER-2-DONE</result>" in lead_prompt
    assert [e.text for e in events if e.kind == "notice"] == [
        "recovered worker 'one': resumed",
        "recovered worker 'two': delivered its finished answer",
    ]
    assert copied is not None and any(e.get("uuid") == "w1a" and e.get("isSidechain") is False for e in copied)
    assert again.ok and again.recovered == [], "the notices are in the transcript now: nothing is recovered twice"


class _UnlistableStore(SqliteSessionStore):
    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        raise RuntimeError("the store is having a bad day")


async def test_a_recovery_that_cannot_read_the_store_does_not_fail_the_step(workspace: Path, tmp_path: Path) -> None:
    answers = Answers()
    events: list[Event] = []
    store = _UnlistableStore(tmp_path / "other.db")
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=answers, store=store, lease=False) as rt:
        await _seed(rt)
        result = await rt.run(LEAD, "Carry on.", resume="c1", on_event=events.append)
    store.close()

    assert result.ok and result.text == "LEAD-DONE"
    assert any("could not recover the workers of session c1" in e for e in result.errors)
    assert any(e.kind == "notice" and "bad day" in e.text for e in events)
