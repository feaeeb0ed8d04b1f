"""The spill guard: what it replaces, the shape it keeps, the file it writes, and what it leaves alone."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from workbench._hooks import bash_response, post, run_hook, spill_name

from flower_workbench import Workbench, spill_guard


@pytest.fixture
def wb(tmp_path: Path) -> Workbench:
    return Workbench(tmp_path)


def test_big_bash_stdout_becomes_pointer_and_head_in_the_same_shape(wb: Workbench) -> None:
    out = "".join(f"line {i}\n" for i in range(1000))
    reply = run_hook(spill_guard(wb), post("Bash", {"command": "seq"}, bash_response(out), wb.workspace))
    updated = reply["hookSpecificOutput"]["updatedToolOutput"]
    assert reply["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert set(updated) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    assert updated["stderr"] == "" and updated["interrupted"] is False
    pointer = updated["stdout"]
    path = wb.spill / spill_name(out)
    assert pointer.startswith(f"[output of {len(out)} characters saved to .flower/spill/{path.name} — Read it")
    head_line = pointer.split("\n", 1)[1]
    assert head_line == "first 400 characters: " + out[:400].replace("\n", " ")
    assert path.read_bytes() == out.encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(pointer) < 600


def test_threshold_is_inclusive_and_small_outputs_pass(wb: Workbench) -> None:
    guard = spill_guard(wb, threshold=100)
    assert run_hook(guard, post("Bash", {"command": "x"}, bash_response("y" * 99), wb.workspace)) == {}
    assert (
        "updatedToolOutput"
        in run_hook(guard, post("Bash", {"command": "x"}, bash_response("y" * 100), wb.workspace))["hookSpecificOutput"]
    )
    assert not (wb.spill / spill_name("y" * 99)).exists()


def test_read_output_keeps_its_nested_shape(wb: Workbench, tmp_path: Path) -> None:
    content = "a" * 5000
    response = {
        "type": "text",
        "file": {
            "filePath": str(tmp_path / "big.txt"),
            "content": content,
            "numLines": 1,
            "startLine": 1,
            "totalLines": 1,
        },
    }
    reply = run_hook(spill_guard(wb), post("Read", {"file_path": str(tmp_path / "big.txt")}, response, tmp_path))
    updated = reply["hookSpecificOutput"]["updatedToolOutput"]
    assert updated["type"] == "text"
    assert {k: v for k, v in updated["file"].items() if k != "content"} == {
        k: v for k, v in response["file"].items() if k != "content"
    }
    assert updated["file"]["content"].startswith("[output of 5000 characters")


def test_plain_string_outputs_and_lists(wb: Workbench) -> None:
    guard = spill_guard(wb)
    reply = run_hook(guard, post("WebFetch", {"url": "http://x"}, "w" * 4000, wb.workspace))
    assert reply["hookSpecificOutput"]["updatedToolOutput"].startswith("[output of 4000 characters")
    images = [{"type": "image", "source": {"data": "i" * 10000}}]
    assert run_hook(guard, post("Read", {"file_path": "p.png"}, images, wb.workspace)) == {}
    listing = {"filenames": ["f" * 5000], "numFiles": 1}
    assert run_hook(guard, post("Glob", {"pattern": "*"}, listing, wb.workspace)) == {}


def test_repeated_output_reuses_one_file(wb: Workbench) -> None:
    guard = spill_guard(wb)
    out = "r" * 8000
    first = run_hook(guard, post("Bash", {"command": "a"}, bash_response(out), wb.workspace))
    mtime = (wb.spill / spill_name(out)).stat().st_mtime_ns
    second = run_hook(guard, post("Bash", {"command": "a"}, bash_response(out), wb.workspace))
    assert first == second
    assert [p.name for p in wb.spill.iterdir()] == [spill_name(out)]
    assert (wb.spill / spill_name(out)).stat().st_mtime_ns == mtime


def test_output_the_harness_already_truncated_is_spilled_whole(wb: Workbench, tmp_path: Path) -> None:
    # Above ~30 KB Claude Code cuts stdout and keeps the full text in its own tool-results file.
    full = "".join(f"{i:06d}\n" for i in range(8000))
    persisted = tmp_path / "home" / "tool-results" / "abc.txt"
    persisted.parent.mkdir(parents=True)
    persisted.write_text(full)
    response = bash_response(full[:30000], persistedOutputPath=str(persisted), persistedOutputSize=len(full))
    updated = run_hook(spill_guard(wb), post("Bash", {"command": "seq"}, response, wb.workspace))["hookSpecificOutput"][
        "updatedToolOutput"
    ]
    assert (wb.spill / spill_name(full)).read_text() == full
    assert updated["stdout"].startswith(f"[output of {len(full)} characters")
    assert "persistedOutputPath" not in updated and "persistedOutputSize" not in updated


def test_main_only_leaves_subagents_alone(wb: Workbench) -> None:
    data = post(
        "Bash", {"command": "a"}, bash_response("s" * 5000), wb.workspace, agent_id="agent-1", agent_type="worker"
    )
    assert run_hook(spill_guard(wb, main_only=True), data) == {}
    assert run_hook(spill_guard(wb), data) != {}


def test_external_workbench_pointer_is_absolute(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    wb = Workbench.beside(ws)
    out = "e" * 5000
    pointer = run_hook(spill_guard(wb), post("Bash", {"command": "a"}, bash_response(out), ws))["hookSpecificOutput"][
        "updatedToolOutput"
    ]["stdout"]
    assert f"saved to {wb.spill / spill_name(out)} —" in pointer


def test_bad_threshold(wb: Workbench) -> None:
    with pytest.raises(ValueError, match="threshold"):
        spill_guard(wb, threshold=0)


def test_matcher_covers_the_bulky_tools(wb: Workbench) -> None:
    assert spill_guard(wb).matcher == "Bash|Read|Grep|Glob|WebFetch|WebSearch"
    assert spill_guard(wb, tools="Bash").matcher == "Bash"
