"""A worker's answer the harness never delivered to the main thread: the step does not end on the turn that
went without it. Claude Code can drop the notice of a background worker that finishes between a tool result
and the main thread's next request, then end the run (seen about one run in ten on a loaded machine, with
the real binary: tests/e2e/test_roles_e2e.py's background-agent test). Flower reads the store's transcripts
(the coordinator's, the worker's) and goes on in the same session with the answer, as it does on a wake.

The model call is the one thing replaced (see test_runtime_branches.py); store, ledger and recovery are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from cli.test_runtime_branches import Model, WorkerTranscript, _uuid, credential, ended, init, rows, said, usage

from flower_cli import AgentSpec, Event, Runtime

__all__ = ["credential"]  # the fixture that sets a test credential, used here as in test_runtime_branches.py

HELPER = "helper0001"
ANSWER = "HELPER-DONE: nothing odd"


def coordinator() -> AgentSpec:
    return AgentSpec("lead", "You lead.", allowed_tools=["Agent"])


def dispatched(sid: str) -> list[Any]:
    """A background dispatch, its launch result, the worker's start, its transcript and its end."""
    call = AssistantMessage(
        content=[
            TextBlock("Sending a helper."),
            ToolUseBlock("a1", "Agent", {"description": "look around", "prompt": "PIECE-LOOK"}),
        ],
        model="claude-scripted",
        usage=usage(2_000),
        session_id=sid,
        uuid=_uuid(),
    )
    launched = UserMessage(
        content=[ToolResultBlock("a1", f"Async agent launched successfully.\nagentId: {HELPER} (internal ID)", False)],
        uuid=_uuid(),
    )
    data = {"type": "system", "session_id": sid}
    started = TaskStartedMessage(
        "task_started",
        data,
        task_id=HELPER,
        description="look around",
        uuid=_uuid(),
        session_id=sid,
        tool_use_id="a1",
        task_type="local_agent",
    )
    worker = WorkerTranscript(
        HELPER,
        [
            {"type": "user", "message": {"role": "user", "content": "PIECE-LOOK"}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}},
        ],
    )
    finished = TaskNotificationMessage(
        "task_notification",
        data,
        task_id=HELPER,
        status="completed",
        output_file="",
        summary="done",
        uuid=_uuid(),
        session_id=sid,
        tool_use_id="a1",
    )
    return [call, launched, started, worker, finished]


def notice(sid: str) -> UserMessage:
    text = (
        f"<task-notification>\n<task-id>{HELPER}</task-id>\n<tool-use-id>a1</tool-use-id>\n<status>completed</status>\n"
        f'<summary>Agent "look around" completed</summary>\n<result>{ANSWER}</result>\n</task-notification>'
    )
    return UserMessage(content=text, uuid=_uuid())


async def test_a_dropped_notice_is_delivered_in_the_same_session_and_the_answer_is_the_last_turn(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                *dispatched(sid),
                said(sid, "Sent a helper; waiting."),
                ended(sid, "Sent a helper; waiting."),
            ],
            lambda sid: [
                init(sid),
                said(sid, "The helper found nothing odd."),
                ended(sid, "The helper found nothing odd."),
            ],
        ]
    )
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=model) as rt:
        result = await rt.run(coordinator(), "check the workspace", step_name="look", on_event=events.append)

    assert result.ok and result.text == "The helper found nothing odd.", (result.error, result.errors)
    first, delivered = model.launches
    assert delivered.resume == first.session_id == "s1", "the same session went on"
    assert "<task-notification>" in delivered.prompt and ANSWER in delivered.prompt
    assert any(e.kind == "notice" and "delivered its finished answer" in e.text for e in events)
    [row] = rows(tmp_path / "runs")
    assert row["ok"] is True and row["session_id"] == "s1"


async def test_a_delivered_notice_ends_the_step_with_no_launch_more(workspace: Path, tmp_path: Path) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                *dispatched(sid),
                said(sid, "Sent a helper; waiting."),
                ended(sid, "Sent a helper; waiting."),
                notice(sid),
                said(sid, "The helper found nothing odd."),
                ended(sid, "The helper found nothing odd."),
            ],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=model) as rt:
        result = await rt.run(coordinator(), "check the workspace", step_name="look")

    assert result.ok and result.text == "The helper found nothing odd.", (result.error, result.errors)
    assert len(model.launches) == 1
