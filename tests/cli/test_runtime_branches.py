"""The Runtime's interrupt, handoff and overflow branches, in milliseconds: the model call is the one thing
replaced (`Runtime(query_fn=...)`), by a stand-in that plays SDK messages built with their real constructors and
mirrors them to the step's store as the harness does. The store (SQLite), the resilience layer, the handoff loop,
the manifest and the lineage are the real ones. tests/e2e/test_handoff_e2e.py and test_interrupt_e2e.py run the
same branches against the real binary."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.lowlevel
import claude_agent_sdk
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    Message,
    ResultError,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    project_key_for_directory,
)

from flower_cli import AgentSpec, Event, HandoffPolicy, Lineage, Runtime, StepResult, resolve_window
from flower_cli.runtime import QueryFunction
from flower_cli.runtime._handoff import Window

WINDOW = 200_000  # hands off at 150k (automatic headroom: 50k), warns from 130k
TAKING_OVER = "You are taking over step"
WRITING = "Your context is nearly full"
WORDS = "HUMAN-WORDS: count the blue ones only"
HANDOFF_TEXT = """## Doing now
Counting the widgets in widgets.txt (HANDOFF-DOING).

## Decided, and why
Count with wc -l: the file has one widget per line.

## Dead ends
(none yet)

## Next
Report the count (HANDOFF-NEXT).

## Scene
widgets.txt in the workspace.
"""

Script = Callable[[str], list[Any]]  # session id -> what one launch yields (an exception is raised there)

# The real SDK's query fits the seam's type (checked by mypy over this file).
_REAL: QueryFunction = claude_agent_sdk.query


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


# --- SDK messages, built with the SDK's own constructors --------------------------------------------------------

_uuids = iter(range(1, 1_000_000))


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_uuids):012d}"


def init(sid: str) -> SystemMessage:
    return SystemMessage(subtype="init", data={"type": "system", "subtype": "init", "session_id": sid})


def usage(context: int) -> dict[str, int]:
    return {
        "input_tokens": context,
        "output_tokens": 10,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def said(sid: str, text: str, *, context: int = 1_000) -> AssistantMessage:
    return AssistantMessage(
        content=[TextBlock(text)], model="claude-scripted", usage=usage(context), session_id=sid, uuid=_uuid()
    )


def bash(sid: str, call: str, command: str, *, context: int) -> AssistantMessage:
    return AssistantMessage(
        content=[TextBlock("Looking."), ToolUseBlock(call, "Bash", {"command": command})],
        model="claude-scripted",
        usage=usage(context),
        session_id=sid,
        uuid=_uuid(),
    )


def answered(call: str, output: str) -> UserMessage:
    return UserMessage(content=[ToolResultBlock(call, output, False)], uuid=_uuid())


def ended(sid: str, text: str = "", *, cost: float = 0.01, ok: bool = True) -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=10,
        duration_api_ms=5,
        is_error=not ok,
        num_turns=1,
        session_id=sid,
        total_cost_usd=cost,
        result=text,
        terminal_reason="completed" if ok else "api_error",
    )


def overflow(sid: str, text: str = "Prompt is too long") -> list[Any]:
    """What the harness yields when the request no longer fits: its synthetic notice, the error result, and the
    SDK's ResultError after it."""
    notice = AssistantMessage(
        content=[TextBlock(text)], model="<synthetic>", session_id=sid, error="invalid_request", uuid=_uuid()
    )
    failed = ended(sid, text, cost=0.0, ok=False)
    return [notice, failed, ResultError(f"Claude Code returned an error result: {text}", data={}, exit_code=1)]


# --- the stand-in for Claude Code and its model ------------------------------------------------------------------


@dataclass
class WorkerTranscript:
    """In a script: the transcript of background worker ``agent_id``, mirrored under its coordinator's session."""

    agent_id: str
    entries: list[dict[str, Any]]


@dataclass
class Launch:
    prompt: str
    resume: str | None
    session_id: str
    shown: int = 0  # messages the Runtime took before it closed the launch
    closed: bool = False


@dataclass
class Model:
    """A `QueryFunction` that plays one script per launch: a new session gets the next id (s1, s2, …), a resumed
    one keeps its own. Each message is mirrored to the step's store before it streams, as Claude Code does with
    ``session_store_flush="eager"``, so the Runtime's reads of the store (its last context, whether a message
    has landed) see what they would see with the real harness."""

    scripts: list[Script]
    launches: list[Launch] = field(default_factory=list)
    sessions: int = 0

    def __call__(self, *, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Message]:
        assert self.scripts, f"launched more often than scripted; prompt: {prompt[:80]!r}"
        if options.resume:
            sid = options.resume
        else:
            self.sessions += 1
            sid = f"s{self.sessions}"
        launch = Launch(prompt, options.resume, sid)
        self.launches.append(launch)
        return self._play(self.scripts.pop(0)(sid), launch, options)

    async def _play(self, messages: list[Any], launch: Launch, options: ClaudeAgentOptions) -> AsyncIterator[Message]:
        try:
            await self._mirror(options, launch.session_id, {"type": "user", "message": {"content": launch.prompt}})
            for message in messages:
                await anyio.lowlevel.checkpoint()
                if isinstance(message, BaseException):
                    raise message
                if isinstance(message, WorkerTranscript):  # a worker's own transcript, as the harness mirrors it
                    await self._mirror_worker(options, launch.session_id, message)
                    continue
                await self._mirror(options, launch.session_id, _entry(message))
                launch.shown += 1
                yield message
        finally:
            launch.closed = True

    @staticmethod
    async def _mirror(options: ClaudeAgentOptions, sid: str, entry: dict[str, Any] | None) -> None:
        if entry is None or options.session_store is None:
            return
        key = {"project_key": project_key_for_directory(str(options.cwd)), "session_id": sid}
        entry = {"uuid": entry.pop("uuid", None) or _uuid(), "sessionId": sid, **entry}
        await options.session_store.append(key, [entry])  # type: ignore[arg-type, list-item]

    @staticmethod
    async def _mirror_worker(options: ClaudeAgentOptions, sid: str, worker: WorkerTranscript) -> None:
        assert options.session_store is not None
        key = {
            "project_key": project_key_for_directory(str(options.cwd)),
            "session_id": sid,
            "subpath": f"subagents/agent-{worker.agent_id}",
        }
        entries = [{"uuid": _uuid(), "sessionId": sid, "isSidechain": True, **e} for e in worker.entries]
        await options.session_store.append(key, entries)  # type: ignore[arg-type]

    def prompts(self) -> list[str]:
        return [launch.prompt for launch in self.launches]


def _entry(message: Any) -> dict[str, Any] | None:
    """The transcript line the harness writes for a main-thread message (None: nothing is written)."""
    if isinstance(message, AssistantMessage):
        content = [
            {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
            if isinstance(b, ToolUseBlock)
            else {"type": "text", "text": getattr(b, "text", "")}
            for b in message.content
        ]
        body = {"role": "assistant", "model": message.model, "content": content, "usage": message.usage or {}}
        return {"type": "assistant", "uuid": message.uuid, "message": body}
    if isinstance(message, UserMessage) and isinstance(message.content, str):  # a notification turn's prompt
        return {"type": "user", "uuid": message.uuid, "message": {"role": "user", "content": message.content}}
    if isinstance(message, UserMessage) and isinstance(message.content, list):
        content = [
            {"type": "tool_result", "tool_use_id": b.tool_use_id, "content": b.content}
            for b in message.content
            if isinstance(b, ToolResultBlock)
        ]
        return {"type": "user", "uuid": message.uuid, "message": {"role": "user", "content": content}}
    return None


def counter() -> AgentSpec:
    return AgentSpec("counter", "You count things.", allowed_tools=["Bash", "Read"])


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return json.loads((run_dir / "manifest.json").read_text())  # type: ignore[no-any-return]


def phases(events: list[Event]) -> list[Any]:
    return [e.payload.get("phase") for e in events if e.kind == "handoff"]


# --- interrupts ---------------------------------------------------------------------------------------------


async def test_an_interrupt_mid_turn_resumes_the_same_session_with_the_words(workspace: Path, tmp_path: Path) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                bash(sid, "t1", "echo TOOL-SAID-42", context=5_000),
                answered("t1", "TOOL-SAID-42"),
                said(sid, "NEVER-SHOWN: the step stopped before this"),
                ended(sid, "first turn"),
            ],
            lambda sid: [init(sid), said(sid, "RESUMED-DONE"), ended(sid, "RESUMED-DONE", cost=0.02)],
        ]
    )
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=model) as rt:

        def on_event(event: Event) -> None:
            events.append(event)
            if event.kind == "tool_result" and not event.subagent:
                rt.interrupt(WORDS)  # the human speaks the moment the command's result streams

        result = await rt.run(counter(), "SORT-TASK: sort", step_name="sort", on_event=on_event)

    assert result.ok and result.text == "RESUMED-DONE", (result.error, result.errors)
    assert result.interrupts == 1 and result.resumed and result.session_id == "s1"
    first, resumed = model.launches
    assert first.closed and first.shown == 4, "the step stopped at the message after the tool result"
    assert resumed.resume == "s1", "the same session went on"
    assert resumed.prompt.startswith(WORDS) and "You were interrupted by the human" in resumed.prompt
    assert not any("NEVER-SHOWN" in e.text for e in events)
    assert any(e.kind == "retry" and e.text == "interrupted; resuming with your words" for e in events)
    [row] = rows(tmp_path / "runs")
    assert row["interrupts"] == 1 and row["session_id"] == "s1" and row["ok"] is True
    assert row["attempts"] == 1, "the attempt the interrupt closed is not a failure and is not counted"


async def test_an_interrupt_without_words_resumes_with_the_resume_prompt(workspace: Path, tmp_path: Path) -> None:
    model = Model(
        [
            lambda sid: [init(sid), said(sid, "Working."), said(sid, "still working"), ended(sid)],
            lambda sid: [init(sid), ended(sid, "CONTINUED")],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=model) as rt:

        def on_event(event: Event) -> None:
            if event.kind == "text" and event.text == "Working.":
                rt.interrupt()

        result = await rt.run(counter(), "TASK", on_event=on_event)
        resume_prompt = rt.resilience.resume_prompt

    assert result.ok and result.text == "CONTINUED" and result.interrupts == 1
    assert model.launches[1].resume == "s1" and model.launches[1].prompt == resume_prompt


async def test_an_interrupt_before_any_session_ends_the_step_as_interrupted(workspace: Path, tmp_path: Path) -> None:
    status = SystemMessage(subtype="status", data={})  # carries no session id
    model = Model([lambda sid: [status, status, init(sid), ended(sid)]])
    with Runtime(workspace, tmp_path / "runs", handoff=False, query_fn=model) as rt:
        result = await rt.run(counter(), "TASK", on_event=lambda e: rt.interrupt("too late"))

    assert not result.ok and result.error == Runtime.INTERRUPTED and result.interrupts == 0
    assert len(model.launches) == 1


# --- handoffs -----------------------------------------------------------------------------------------------


async def test_crossing_the_threshold_writes_the_handoff_and_a_fresh_session_takes_over(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                bash(sid, "t1", "echo one", context=140_000),  # past the warning
                answered("t1", "one"),
                bash(sid, "t2", "echo two", context=160_000),  # past the handoff point
                answered("t2", "two"),  # a clean boundary: the step stops here
                said(sid, "NEVER-SHOWN"),
                ended(sid),
            ],
            lambda sid: [init(sid), said(sid, HANDOFF_TEXT, context=161_000), ended(sid, HANDOFF_TEXT, cost=0.002)],
            lambda sid: [init(sid), said(sid, "SUCCESSOR-DONE: 2 widgets"), ended(sid, "SUCCESSOR-DONE", cost=0.03)],
        ]
    )
    events: list[Event] = []
    run_dir = tmp_path / "runs"
    lineage = Lineage.open(run_dir, workspace)
    with Runtime(workspace, run_dir, handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(
            counter(),
            "COUNT-TASK: count the widgets",
            step_name="count",
            on_event=events.append,
            on_session=lambda sid: lineage.remember("count", sid),
        )

    assert result.ok and result.text == "SUCCESSOR-DONE", (result.error, result.errors)
    assert result.retired == ["s1"] and result.session_id == "s2"
    old, writing, successor = model.launches
    assert old.closed and old.shown == 5, "the old session stopped at the tool result past the handoff point"
    assert writing.resume == "s1" and writing.prompt.startswith(WRITING), "the same session wrote the handoff"
    assert "160,000 of a 200,000-token window" in writing.prompt
    assert successor.resume is None and successor.prompt.startswith(TAKING_OVER), "a fresh session took over"
    assert "HANDOFF-DOING" in successor.prompt and "HANDOFF-NEXT" in successor.prompt
    assert "COUNT-TASK" not in successor.prompt

    saved = run_dir / "handoffs" / "handoff-count.md"  # no workbench: the document is kept in the run dir
    assert saved.is_file() and "HANDOFF-DOING" in saved.read_text() and str(saved) in successor.prompt
    assert phases(events) == ["near", "writing", "done"]
    done = next(e for e in events if e.kind == "handoff" and e.payload["phase"] == "done")
    assert done.payload["degraded"] is False and done.payload["retired"] == "s1" and done.payload["path"] == str(saved)
    assert result.cost_usd == 0.032, "the writing round and the successor add up (the closed launch reported none)"

    assert json.loads((run_dir / "lineage.json").read_text())["steps"] == {"count": "s2"}, "lineage follows"
    [row] = rows(run_dir)
    assert row["retired"] == ["s1"] and row["session_id"] == "s2" and row["ok"] is True


async def test_a_session_resumed_past_the_threshold_hands_off_before_the_new_words(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [init(sid), said(sid, "Round one done.", context=160_000), ended(sid, "Round one done.")],
            lambda sid: [init(sid), said(sid, HANDOFF_TEXT), ended(sid, HANDOFF_TEXT)],
            lambda sid: [init(sid), said(sid, "ROUND-2-DONE"), ended(sid, "ROUND-2-DONE")],
        ]
    )
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        one = await rt.run(counter(), "ROUND-1: start", step_name="work")
        assert one.ok and not one.retired and one.context == 160_000, "a turn that ends its step is not handed off"
        two = await rt.run(
            counter(), "ROUND-2: the judge's gaps", step_name="work#round2", resume="s1", on_event=events.append
        )

    assert two.ok and two.text == "ROUND-2-DONE", (two.error, two.errors)
    assert two.retired == ["s1"] and two.session_id == "s2"
    _, writing, successor = model.launches
    assert writing.resume == "s1" and writing.prompt.startswith(WRITING) and "ROUND-2" not in writing.prompt
    assert successor.resume is None and successor.prompt.startswith(TAKING_OVER)
    assert "HANDOFF-NEXT" in successor.prompt and successor.prompt.endswith("---\n\nROUND-2: the judge's gaps")
    assert phases(events) == ["writing", "done"]


async def test_a_handoff_the_session_cannot_write_is_built_from_the_original_prompt(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [init(sid), bash(sid, "t1", "echo one", context=160_000), answered("t1", "one"), ended(sid)],
            lambda sid: [init(sid), said(sid, "## Doing now\nCounting.\n"), ended(sid, "## Doing now\nCounting.\n")],
            lambda sid: [init(sid), ended(sid, "DONE")],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(counter(), "COUNT-TASK", step_name="count")

    assert result.ok and result.text == "DONE" and result.retired == ["s1"]
    assert "handoff degraded (it had no 'Next' section)" in result.errors
    successor = model.launches[2].prompt
    assert "[degraded: no handoff was written]" in successor and "COUNT-TASK" in successor


async def test_a_writing_round_that_raises_degrades_the_handoff(workspace: Path, tmp_path: Path) -> None:
    def broken(sid: str) -> list[Any]:
        raise RuntimeError("the SDK broke")  # at the call itself, before any message

    model = Model(
        [
            lambda sid: [init(sid), bash(sid, "t1", "echo one", context=160_000), answered("t1", "one"), ended(sid)],
            broken,
            lambda sid: [init(sid), ended(sid, "DONE")],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(counter(), "COUNT-TASK", step_name="count")

    assert result.ok and result.text == "DONE" and result.retired == ["s1"]
    assert "handoff degraded (the writing round failed: RuntimeError: the SDK broke)" in result.errors


# --- overflows ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "window"),
    [
        # The harness passes on only "Prompt is too long": the context last seen before it is what overflowed.
        ("Prompt is too long", 120_000),
        # An API that names its limit is believed.
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
    ],
)
async def test_a_prompt_too_long_error_leads_to_a_degraded_handoff_and_a_recorded_window(
    workspace: Path, tmp_path: Path, error: str, window: int
) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                bash(sid, "t1", "echo logs", context=120_000),  # below the warning: the window is smaller
                answered("t1", "logs"),
                *overflow(sid, error),
            ],
            lambda sid: [init(sid), said(sid, "RECOVERED"), ended(sid, "RECOVERED")],
        ]
    )
    events: list[Event] = []
    run_dir = tmp_path / "runs"
    with Runtime(workspace, run_dir, handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(counter(), "BIG-TASK: summarise every log", step_name="logs/sum", on_event=events.append)

    assert result.ok and result.text == "RECOVERED", (result.error, result.errors)
    assert result.retired == ["s1"] and result.session_id == "s2"
    assert error in result.errors and f"handoff degraded ({_overflow_why()})" in result.errors
    assert len(model.launches) == 2 and not any(p.startswith(WRITING) for p in model.prompts()), (
        "an overflowed session cannot write a handoff"
    )
    successor = model.launches[1]
    assert successor.resume is None and "[degraded: no handoff was written]" in successor.prompt
    assert "BIG-TASK: summarise every log" in successor.prompt, "the scene carries the step's original prompt"
    saved = run_dir / "handoffs" / "handoff-logssum.md"
    assert saved.is_file() and "[degraded" in saved.read_text()
    assert resolve_window() == Window(window, "calibrated"), "later runs plan against the window that overflowed"
    assert phases(events) == ["done"]
    [row] = rows(run_dir)
    assert row["ok"] is True and row["retired"] == ["s1"]


async def test_an_overflow_while_writing_the_handoff_degrades_it_and_records_the_window(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [init(sid), bash(sid, "t1", "echo one", context=160_000), answered("t1", "one"), ended(sid)],
            lambda sid: [init(sid), *overflow(sid)],
            lambda sid: [init(sid), ended(sid, "DONE")],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(counter(), "COUNT-TASK", step_name="count")

    assert result.ok and result.text == "DONE" and result.retired == ["s1"]
    assert f"handoff degraded ({_overflow_why()})" in result.errors
    assert model.launches[1].prompt.startswith(WRITING) and "[degraded" in model.launches[2].prompt
    assert resolve_window() == Window(160_000, "calibrated")


async def test_the_generation_brake_stops_a_step_that_overflows_at_every_start(workspace: Path, tmp_path: Path) -> None:
    model = Model([overflow] * 3)
    events: list[Event] = []
    run_dir = tmp_path / "runs"
    policy = HandoffPolicy(window=WINDOW, max_generations=2)
    with Runtime(workspace, run_dir, handoff=policy, query_fn=model) as rt:
        result: StepResult = await rt.run(counter(), "HUGE-TASK", step_name="huge", on_event=events.append)

    assert not result.ok and result.retired == ["s1", "s2"] and len(model.launches) == 3
    assert result.error and "handed off 2 times" in result.error and "--no-handoff" in result.error
    assert result.errors[-1] == result.error
    assert phases(events) == ["done", "done", "stopped"]
    [row] = rows(run_dir)
    assert row["ok"] is False and row["retired"] == ["s1", "s2"] and row["error"] == result.error


def _overflow_why() -> str:
    from flower_cli.runtime._handoff import OVERFLOW_WHY

    return OVERFLOW_WHY
