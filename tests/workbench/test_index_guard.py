"""index_guard keeps INDEX.md current after writes under the workbench, and only then."""

from __future__ import annotations

from pathlib import Path

from workbench._hooks import post, run_hook

from flower_workbench import Workbench, index_guard


def index(wb: Workbench) -> str:
    return wb.index_path.read_text(encoding="utf-8") if wb.index_path.exists() else ""


def test_write_into_scripts_refreshes_the_index(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    guard = index_guard(wb)
    script = wb.scripts / "fetch.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n# desc: fetch the data\ncurl -O x\n")
    assert (
        run_hook(guard, post("Write", {"file_path": str(script), "content": "…"}, {"type": "create"}, tmp_path)) == {}
    )
    assert "- `.flower/scripts/fetch.sh` — fetch the data" in index(wb)


def test_relative_paths_and_notebooks_count(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    (wb.notes / "why.md").write_text("# Why SQLite\n")
    run_hook(index_guard(wb), post("Edit", {"file_path": ".flower/notes/why.md"}, {}, tmp_path))
    assert "Why SQLite" in index(wb)
    (wb.artifacts / "nb.ipynb").write_text("{}")
    run_hook(index_guard(wb), post("NotebookEdit", {"notebook_path": str(wb.artifacts / "nb.ipynb")}, {}, tmp_path))
    assert "nb.ipynb" in index(wb)


def test_writes_elsewhere_do_not_touch_the_index(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    (tmp_path / "src.py").write_text("x = 1\n")
    run_hook(index_guard(wb), post("Write", {"file_path": str(tmp_path / "src.py")}, {}, tmp_path))
    assert not wb.index_path.exists()


def test_bash_that_creates_a_workbench_file_refreshes_it(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    wb.refresh()
    guard = index_guard(wb)
    run_hook(guard, post("Bash", {"command": "true"}, {"stdout": ""}, tmp_path))
    assert "(none)" in index(wb)
    (wb.artifacts / "log.txt").write_text("# build log\n")  # what `make > .flower/artifacts/log.txt` does
    run_hook(guard, post("Bash", {"command": "make > .flower/artifacts/log.txt"}, {"stdout": ""}, tmp_path))
    assert "- `.flower/artifacts/log.txt` — build log" in index(wb)


def test_an_unwritable_index_never_fails_the_tool_call(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    wb.index_path.mkdir()  # INDEX.md is a directory: refresh cannot replace it
    assert run_hook(index_guard(wb), post("Write", {"file_path": str(wb.notes / "n.md")}, {}, tmp_path)) == {}


def test_matcher(tmp_path: Path) -> None:
    assert index_guard(Workbench(tmp_path)).matcher == "Write|Edit|MultiEdit|NotebookEdit|Bash"
