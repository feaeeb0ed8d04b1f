"""Reading a spill file is never spilled again, whatever path form the model uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from workbench._hooks import bash_response, post, run_hook, spill_name

from flower_workbench import Workbench, reads_spill, spill_guard


@pytest.fixture
def spilled(tmp_path: Path) -> tuple[Workbench, str, Path]:
    wb = Workbench(tmp_path)
    out = "".join(f"row {i}\n" for i in range(2000))
    run_hook(spill_guard(wb), post("Bash", {"command": "gen"}, bash_response(out), wb.workspace))
    path = wb.spill / spill_name(out)
    assert path.exists()
    return wb, out, path


def forms(wb: Workbench, path: Path) -> list[tuple[str, dict[str, Any], Path]]:
    ws = wb.workspace
    rel = path.relative_to(ws)
    return [
        ("Read", {"file_path": str(path)}, ws),
        ("Read", {"file_path": str(rel)}, ws),
        ("Read", {"file_path": f"./{rel}"}, ws),
        ("Read", {"file_path": str(ws / ".flower" / "scripts" / ".." / "spill" / path.name)}, ws),
        ("Bash", {"command": f"cat {path}"}, ws),
        ("Bash", {"command": f"cat {rel}"}, ws),
        ("Bash", {"command": f"cat '{rel}' | head -n 900"}, ws),
        ("Bash", {"command": f"head -c 9000 {rel}"}, ws),
        ("Bash", {"command": f"cd .flower/spill && cat {path.name}"}, ws),
        ("Bash", {"command": f"cat {path.name}"}, wb.spill),
        ("Bash", {"command": f"python3 -c \"print(open('{rel}').read())\""}, ws),
        ("Bash", {"command": "cat .flower/spill/*.txt"}, ws),
        ("Bash", {"command": "cat ../spill/*"}, wb.scripts),
        ("Grep", {"pattern": "row", "path": ".flower/spill", "output_mode": "content"}, ws),
        (
            "Bash",
            {"command": f"cat ~/{path.relative_to(Path.home())}"}
            if path.is_relative_to(Path.home())
            else {"command": f"cat {path}"},
            ws,
        ),
    ]


def test_every_path_form_is_recognised(spilled: tuple[Workbench, str, Path]) -> None:
    wb, _, path = spilled
    for tool, tool_input, cwd in forms(wb, path):
        assert reads_spill(tool_input, cwd, wb.spill), (tool, tool_input, cwd)


def test_the_guard_passes_spill_reads_through_whole(spilled: tuple[Workbench, str, Path]) -> None:
    wb, out, path = spilled
    guard = spill_guard(wb)
    for tool, tool_input, cwd in forms(wb, path):
        response: Any = (
            bash_response(out) if tool == "Bash" else {"type": "text", "file": {"filePath": str(path), "content": out}}
        )
        assert run_hook(guard, post(tool, tool_input, response, cwd)) == {}, (tool, tool_input)
    assert [p.name for p in wb.spill.iterdir()] == [path.name]


def test_unrelated_reads_are_still_spilled(spilled: tuple[Workbench, str, Path]) -> None:
    wb, out, _ = spilled
    ws = wb.workspace
    (ws / "spill_notes.txt").write_text("x")
    for tool_input in (
        {"command": "cat big.log"},
        {"command": "cat spill_notes.txt"},
        {"command": "ls spill"},  # a directory named spill in the workspace is not the workbench's
        {"command": "echo 0123456789abcdef.txt"},  # spill-shaped name, but no such spill file
        {"file_path": str(ws / "data.txt")},
        {"command": f"cat {ws / '.flower' / 'artifacts' / 'x.txt'}"},
    ):
        assert not reads_spill(tool_input, ws, wb.spill), tool_input
        other = out + str(tool_input)
        assert run_hook(spill_guard(wb), post("Bash", tool_input, bash_response(other), ws)) != {}


def test_nothing_is_a_spill_read_before_anything_was_spilled(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    assert not reads_spill({"command": "cat .flower/spill/0123456789abcdef.txt"}, tmp_path, wb.spill)
