"""spill_pointers reads back what the spill guard wrote: the size and path of every kept-out output."""

from __future__ import annotations

from pathlib import Path

from workbench._hooks import bash_response, post, run_hook, spill_name

from flower_workbench import Workbench, spill_guard, spill_pointers


def test_reads_back_the_guards_own_pointer(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    out = "".join(f"row {i} — ünïcode\n" for i in range(800))
    reply = run_hook(spill_guard(wb), post("Bash", {"command": "seq"}, bash_response(out), wb.workspace))
    pointer = reply["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert spill_pointers(pointer) == [(len(out), f".flower/spill/{spill_name(out)}")]


def test_two_pointers_in_one_result_and_none_in_plain_text() -> None:
    both = (
        "[output of 5000 characters saved to a/1.txt — Read it for the full text, Grep it to find something]\nfirst 400 …\n"
        "[output of 7000 characters saved to a/2.txt — Read it for the full text, Grep it to find something]\nfirst 400 …"
    )
    assert spill_pointers(both) == [(5000, "a/1.txt"), (7000, "a/2.txt")]
    assert spill_pointers("output of 5000 characters, nothing saved") == []
