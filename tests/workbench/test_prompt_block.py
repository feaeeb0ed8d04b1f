"""The main agent's workbench block: what exists, the three rules, overflow, and external roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_workbench import Workbench


def test_empty_block_has_the_three_rules(tmp_path: Path) -> None:
    block = Workbench(tmp_path).prompt_block()
    assert block.startswith("# Workbench .flower/\n")
    assert "(empty so far)" in block
    assert "1. Scripts you will run again go in `.flower/scripts/`" in block
    assert "`# desc: one sentence`" in block
    assert "2. Output over 2000 characters" in block and "`.flower/artifacts/`" in block
    assert "3. Key decisions" in block and "`.flower/notes/`" in block
    assert "outside the repository" not in block


def test_block_lists_entries_and_skips_empty_sections(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    (wb.scripts / "fetch.py").write_text("# desc: fetch the data\n")
    block = wb.prompt_block()
    assert "Scripts:\n- `.flower/scripts/fetch.py` — fetch the data (23B)" in block
    assert "Artifacts:" not in block and "(empty so far)" not in block


def test_overflow_says_how_many_more_and_where(tmp_path: Path) -> None:
    wb = Workbench(tmp_path, max_index_entries=3).ensure()
    for i in range(5):
        (wb.artifacts / f"a{i}.txt").write_text("x")
    block = wb.prompt_block()
    assert block.count("- `.flower/artifacts/a") == 3
    assert "- …and 2 more: `ls .flower/artifacts/`" in block
    assert "## " not in block  # INDEX.md headings are not repeated in the block
    assert "(5)" not in wb.prompt_block()
    assert "## Artifacts (5)" in wb.refresh()  # the index itself has no cap


def test_external_root_uses_absolute_paths_and_overflows_without_crashing(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    wb = Workbench.beside(ws, max_index_entries=2)
    assert wb.root == tmp_path.resolve() / ".flower-repo"
    assert wb.external is True
    wb.ensure()
    for i in range(4):
        (wb.notes / f"n{i}.md").write_text(f"# note {i}\n")
    block = wb.prompt_block()  # more notes than it lists, outside the workspace: no ValueError, absolute paths
    root = str(wb.root)
    assert block.startswith(f"# Workbench {root}/\n")
    assert f"outside the repository** (`{root}`)" in block and "Use absolute paths" in block
    assert f"- `{root}/notes/n0.md` — note 0" in block
    assert f"- …and 2 more: `ls {root}/notes/`" in block
    assert f"`{root}/scripts/`" in block
    assert f"`{root}/notes/n3.md`" in wb.refresh()


def test_home_inside_the_workspace_is_internal(tmp_path: Path) -> None:
    wb = Workbench(tmp_path, home=Path("runs/workbench"))
    assert wb.root == tmp_path.resolve() / "runs" / "workbench"
    assert wb.external is False
    assert wb.show(wb.scripts / "x.py") == "runs/workbench/scripts/x.py"
    assert wb.prompt_block().startswith("# Workbench runs/workbench/\n")


def test_show(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    assert wb.show(tmp_path / "a" / "b.txt") == "a/b.txt"
    assert wb.show("rel.txt") == "rel.txt"
    assert wb.show("/etc/hosts") == "/etc/hosts"


def test_bad_entry_cap_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_index_entries"):
        Workbench(tmp_path, max_index_entries=0)
