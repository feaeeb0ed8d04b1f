"""Picking up where a run stopped: is this directory waking, what does it carry, and starting over (``--new``).

A directory *wakes* when its workbench holds a complete brief (``notes/brief.md``). `wake_state` reads that,
the goal and the lineage without writing anything; `archive_for_new` moves the brief, the goal and
``lineage.json`` aside into ``notes/archive/<YYYYmmdd-HHMMSS>/`` (moved, never deleted; an existing archive
is never overwritten; ``sessions.db`` is left alone so every old transcript stays readable).

A workbench the original flower left behind still wakes: its ``需求.md`` / ``目标.md`` are used when the
English names are absent (see docs/compatibility.md).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._shared.budget import BUDGET_FILE
from .._shared.files import file_lock
from ..runtime import Lineage
from ._brief import Brief
from ._goal import Goal

__all__ = [
    "ARCHIVE_DIR",
    "BRIEF_NAME",
    "GOAL_NAME",
    "QA_LOG_NAME",
    "Archived",
    "NotesPaths",
    "WakeState",
    "archive_for_new",
    "format_tokens",
    "wake_banner",
    "wake_state",
]

BRIEF_NAME = "brief.md"
GOAL_NAME = "goal.md"
QA_LOG_NAME = "qa-log.md"
ARCHIVE_DIR = "archive"
_LEGACY = {BRIEF_NAME: "需求.md", GOAL_NAME: "目标.md", QA_LOG_NAME: "问答记录.md"}


def _pick(notes: Path, name: str) -> Path:
    ours, theirs = notes / name, notes / _LEGACY[name]
    return theirs if not ours.exists() and theirs.exists() else ours


@dataclass(frozen=True)
class NotesPaths:
    """The files of a run under the workbench's ``notes/`` (the Chinese names of ``_LEGACY`` when only they exist)."""

    notes: Path
    brief: Path
    goal: Path
    qa_log: Path

    @classmethod
    def of(cls, notes_dir: Path | str) -> NotesPaths:
        notes = Path(notes_dir)
        return cls(notes, _pick(notes, BRIEF_NAME), _pick(notes, GOAL_NAME), _pick(notes, QA_LOG_NAME))


@dataclass(frozen=True)
class WakeState:
    """What a start in this directory would pick up. ``woke`` is the count so far (the banner shows woke+1)."""

    waking: bool
    brief: Path
    goal: Path
    checks: int
    woke: int
    steps: dict[str, str] = field(default_factory=dict)
    note: str | None = None  # why the lineage was not used (another workspace, unreadable file), if so

    @property
    def next_wake(self) -> int:
        return self.woke + 1


def wake_state(notes_dir: Path | str, lineage: Lineage) -> WakeState:
    """Read-only: whether this is a wake (the brief is complete), and what the goal and lineage hold."""
    paths = NotesPaths.of(notes_dir)
    brief = Brief.load(paths.brief)
    goal = Goal.load(paths.goal)
    return WakeState(
        waking=brief.complete,
        brief=paths.brief,
        goal=paths.goal,
        checks=len(goal.checks) if goal.complete else 0,
        woke=lineage.woke,
        steps=dict(lineage.steps),
        note=lineage.note,
    )


@dataclass
class Archived:
    """What `archive_for_new` did: the folder (None when there was nothing to move), what moved, what failed."""

    folder: Path | None = None
    moved: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _free_folder(base: Path, stamp: str) -> Path:
    """``base/stamp``, or ``base/stamp-2``… when a folder of that name already exists (never reuse one)."""
    n = 1
    while True:
        folder = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            n += 1


def archive_for_new(notes_dir: Path | str, lineage_path: Path | str, *, now: float | None = None) -> Archived:
    """Move the brief, the goal (under either name, see ``_LEGACY``), the budget and ``lineage.json`` into
    ``<notes>/archive/<YYYYmmdd-HHMMSS>/``. Missing files are skipped; a file that cannot be moved stays
    where it is and is reported in ``problems``. Callers re-open their `Lineage` afterwards."""
    notes = Path(notes_dir)
    lineage_file = Path(lineage_path)
    sources = [notes / n for n in (BRIEF_NAME, _LEGACY[BRIEF_NAME], GOAL_NAME, _LEGACY[GOAL_NAME], BUDGET_FILE)]
    sources = [p for p in sources if p.is_file()]
    result = Archived()
    with file_lock(lineage_file):  # a parallel run must not write lineage.json while it moves
        if lineage_file.is_file():
            sources.append(lineage_file)
        if not sources:
            return result
        result.folder = _free_folder(notes / ARCHIVE_DIR, time.strftime("%Y%m%d-%H%M%S", time.localtime(now)))
        for source in sources:
            target = result.folder / source.name
            try:
                if target.exists():  # two sources of one name cannot happen today; never overwrite anyway
                    raise FileExistsError(f"{target} exists")
                if source.parent.stat().st_dev == result.folder.stat().st_dev:
                    os.rename(source, target)
                else:
                    shutil.move(str(source), str(target))  # copy then delete: lineage may live on another disk
                result.moved.append(target)
            except OSError as exc:
                result.problems.append(f"could not move {source} to {target}: {exc}")
    return result


def format_tokens(tokens: int) -> str:
    """12345 → "12.3K", 1500000 → "1.5M"."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    return f"{tokens / 1000:.1f}K"


def _home_relative(path: Path) -> str:
    try:
        inside = path.resolve().relative_to(Path.home().resolve()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
    return "~" if inside == "." else f"~/{inside}"


def wake_banner(state: WakeState, workspace: Path | str, *, context: int = 0) -> str:
    """One line saying what a wake picks up: where, the goal's checks, the work session's context, which wake.

    ``context`` is the last context size of the work step's session (0 = unknown, left out).
    """
    parts = [f"<- Picking up where it stopped in {_home_relative(Path(workspace))}", "brief confirmed"]
    if state.checks > 0:
        parts.append(f"goal: {state.checks} check{'s' if state.checks != 1 else ''}")
    if context > 0:
        parts.append(f"work context {format_tokens(context)}")
    parts.append(f"wake #{state.next_wake}")
    return " · ".join(parts)
