"""Wake detection (read-only), the --new archive, and the wake banner."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_cli import Brief, Goal, Lineage, NotesPaths, archive_for_new, wake_banner, wake_state
from flower_cli.go import WakeState
from flower_cli.go._continuity import format_tokens

BRIEF = Brief(goal="a ledger CLI", acceptance="add and report work", boundaries="no GUI", unknowns="CNY only")
GOAL = Goal("The ledger works.", ("add appends a row", "report sums by category", "tests pass"))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace = tmp_path / "ws"
    notes = workspace / ".flower" / "notes"
    run_dir = workspace / "runs"
    notes.mkdir(parents=True)
    run_dir.mkdir()
    return workspace, notes, run_dir


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_fresh_directory_is_not_waking(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    state = wake_state(notes, Lineage.open(run_dir, workspace))
    assert state == WakeState(False, notes / "brief.md", notes / "goal.md", 0, 0, {}, None)
    assert state.next_wake == 1


def test_a_complete_brief_wakes_and_nothing_is_written(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    BRIEF.write(notes / "brief.md")
    GOAL.write(notes / "goal.md")
    lineage = Lineage.open(run_dir, workspace)
    lineage.remember("work", "sid-1")
    lineage.bump()
    before = _tree(workspace)
    state = wake_state(notes, Lineage.open(run_dir, workspace))
    assert _tree(workspace) == before
    assert state.waking and state.checks == 3 and state.woke == 1 and state.steps == {"work": "sid-1"}


def test_an_incomplete_brief_or_goal(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    Brief(goal="only a goal").write(notes / "brief.md")
    Goal("no checks").write(notes / "goal.md")
    state = wake_state(notes, Lineage.open(run_dir, workspace))
    assert not state.waking and state.checks == 0


def test_missing_notes_dir_is_not_created(tmp_path: Path) -> None:
    state = wake_state(tmp_path / "nowhere" / "notes", Lineage.open(tmp_path / "runs", tmp_path))
    assert not state.waking and not (tmp_path / "nowhere").exists() and not (tmp_path / "runs").exists()


def test_a_lineage_from_another_workspace_is_not_used(dirs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    workspace, notes, run_dir = dirs
    Lineage.open(run_dir, tmp_path / "elsewhere").remember("work", "sid-x")
    state = wake_state(notes, Lineage.open(run_dir, workspace))
    assert state.steps == {} and state.note and "starting fresh" in state.note


def test_the_originals_chinese_files_still_wake(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    (notes / "需求.md").write_text(
        "# 需求确认书\n\n## 目标\n记账\n\n## 验收标准\n能记\n\n## 边界\n不联网\n\n## 未知与假设\n只有人民币\n",
        encoding="utf-8",
    )
    (notes / "目标.md").write_text("# 目标\n能记账\n\n# 判定清单\n- 能记一笔\n- 测试通过\n", encoding="utf-8")
    state = wake_state(notes, Lineage.open(run_dir, workspace))
    assert state.waking and state.brief == notes / "需求.md" and state.checks == 2
    assert NotesPaths.of(notes).qa_log == notes / "qa-log.md"
    BRIEF.write(notes / "brief.md")  # once ours exists, it is the one used
    assert NotesPaths.of(notes).brief == notes / "brief.md"


def test_archive_for_new_moves_brief_goal_and_lineage(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    BRIEF.write(notes / "brief.md")
    GOAL.write(notes / "goal.md")
    (notes / "qa-log.md").write_text("# log\n", encoding="utf-8")
    (run_dir / "sessions.db").write_bytes(b"SQLite format 3\x00")
    lineage = Lineage.open(run_dir, workspace)
    lineage.remember("work", "sid-1")
    contents = {name: (notes / name).read_bytes() for name in ("brief.md", "goal.md")}
    contents["lineage.json"] = (run_dir / "lineage.json").read_bytes()

    archived = archive_for_new(notes, run_dir / "lineage.json", now=0)
    assert archived.problems == []
    assert archived.folder is not None and archived.folder.parent == notes / "archive"
    assert sorted(p.name for p in archived.moved) == ["brief.md", "goal.md", "lineage.json"]
    for name, data in contents.items():
        assert (archived.folder / name).read_bytes() == data
    assert (
        not (notes / "brief.md").exists()
        and not (notes / "goal.md").exists()
        and not (run_dir / "lineage.json").exists()
    )
    assert (run_dir / "sessions.db").read_bytes() == b"SQLite format 3\x00"  # old transcripts stay readable
    assert (notes / "qa-log.md").exists()

    fresh = Lineage.open(run_dir, workspace)
    assert fresh.steps == {} and fresh.woke == 0
    assert not wake_state(notes, fresh).waking


def test_a_second_archive_in_the_same_second_never_overwrites(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    BRIEF.write(notes / "brief.md")
    first = archive_for_new(notes, run_dir / "lineage.json", now=0)
    Brief(goal="second").write(notes / "brief.md")
    second = archive_for_new(notes, run_dir / "lineage.json", now=0)
    assert first.folder is not None and second.folder is not None and first.folder != second.folder
    assert second.folder.name == f"{first.folder.name}-2"
    assert Brief.load(first.folder / "brief.md") == BRIEF
    assert Brief.load(second.folder / "brief.md").goal == "second"


def test_archive_with_nothing_to_move(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    archived = archive_for_new(notes, run_dir / "lineage.json")
    assert archived.folder is None and archived.moved == [] and not (notes / "archive").exists()


def test_archive_moves_the_originals_files_too(dirs: tuple[Path, Path, Path]) -> None:
    workspace, notes, run_dir = dirs
    (notes / "需求.md").write_text("x", encoding="utf-8")
    (notes / "目标.md").write_text("y", encoding="utf-8")
    archived = archive_for_new(notes, run_dir / "lineage.json")
    assert sorted(p.name for p in archived.moved) == ["目标.md", "需求.md"]


def test_the_wake_banner(isolated_home: Path) -> None:
    workspace = isolated_home / "projects" / "ledger"
    state = WakeState(True, Path("b"), Path("g"), checks=5, woke=2)
    banner = wake_banner(state, workspace, context=48_213)
    assert (
        banner
        == "<- Picking up where it stopped in ~/projects/ledger · brief confirmed · goal: 5 checks · work context 48.2K · wake #3"
    )
    bare = wake_banner(WakeState(True, Path("b"), Path("g"), checks=0, woke=0), "/srv/x")
    assert bare == "<- Picking up where it stopped in /srv/x · brief confirmed · wake #1"
    assert "goal: 1 check ·" in wake_banner(WakeState(True, Path("b"), Path("g"), 1, 0), "/srv/x")


def test_format_tokens() -> None:
    assert format_tokens(0) == "0.0K" and format_tokens(12_345) == "12.3K" and format_tokens(1_500_000) == "1.5M"
