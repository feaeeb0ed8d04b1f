"""Every resume fits the window, the runtime's side: the SDK's buffer sized for long sessions, the load budget a
window gives, a degraded handoff's salvage and the closing line that says it was degraded."""

from __future__ import annotations

import io

from flower_cli import AgentSpec, HandoffPolicy, build_options
from flower_cli.runtime import Event
from flower_cli.runtime._handoff import degraded
from flower_cli.runtime._handoff._salvage import salvage, salvaged
from flower_cli.runtime._options import MAX_BUFFER_SIZE
from flower_cli.view import Renderer


def test_the_sdk_reads_messages_far_larger_than_its_default_megabyte() -> None:
    options = build_options(AgentSpec("a", "b"), cwd="/ws", tethered=False)
    assert options.max_buffer_size == MAX_BUFFER_SIZE >= 64 * 1024 * 1024


def test_the_load_budget_is_the_warning_point_in_characters() -> None:
    assert HandoffPolicy(window=200_000).load_budget == 130_000 * 3
    assert HandoffPolicy(window=1_000_000, enabled=False).load_budget == 730_000 * 3


def _entry(kind: str, content: object, **extra: object) -> dict[str, object]:
    return {"type": kind, "message": {"role": kind, "content": content}, **extra}


def test_a_degraded_handoff_carries_the_brief_the_last_words_and_the_files_changed() -> None:
    entries = [
        _entry("user", "THE BRIEF: build the widget.\nTHE GOAL: it ships."),
        _entry("assistant", [{"type": "text", "text": "Starting."}]),
        _entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/ws/a.py"}}]),
        _entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        _entry("assistant", [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/ws/b.py"}}]),
        _entry("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]),
        _entry("assistant", [{"type": "text", "text": "Half done; b.py next."}]),
        _entry("assistant", [{"type": "text", "text": "worker words"}], isSidechain=True),
    ]
    found = salvage(entries)
    assert found.first_prompt.startswith("THE BRIEF") and found.files == ("/ws/a.py", "/ws/b.py")
    assert found.last_turns == ("Starting.", "Half done; b.py next.")
    doc = salvaged(degraded("s", "and?", "it was too big"), found)
    prompt = doc.successor_prompt("s")
    assert doc.degraded and "[degraded: no handoff was written]" in prompt
    for said in ("THE GOAL: it ships.", "Half done; b.py next.", "- /ws/b.py", "and?"):
        assert said in prompt
    assert "worker words" not in prompt
    assert salvaged(doc, salvage([])) == doc


def test_the_closing_line_says_a_handoff_was_degraded() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False, live=False)
    view(Event("handoff", "handed off (degraded: x)", payload={"phase": "done", "degraded": True, "step": "s"}))
    view.closing(0.5, "/ws/runs/manifest.json")
    assert out.getvalue().rstrip().endswith("1 handoff degraded (no handoff was written)")
