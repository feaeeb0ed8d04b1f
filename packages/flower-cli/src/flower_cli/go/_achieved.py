"""Has this directory's goal been achieved already? Then a wake with nothing new to do costs nothing.

The evidence is the run's own record: the work session ``lineage.json`` continues, its last round in
``manifest.json``, and the judge row that followed that round in the same process (``work·judge#N``), whose
answer is the verdict. Only an "achieved" verdict on the newest round counts, and only while the brief and the
goal are as they were then: a brief or goal edited since (or moved away by ``--new``) means there is work to
judge again. Reading only; nothing is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime import Lineage, Manifest
from ._brief import Brief
from ._continuity import NotesPaths
from ._flow import WORK, judge_label
from ._goal import Goal
from ._verdict import Verdict

__all__ = ["Achieved", "achieved"]


@dataclass(frozen=True)
class Achieved:
    """When the goal was judged achieved, by which judge row of which manifest, and what it checked."""

    at: float
    judge: str  # the manifest step name, e.g. "work·judge#2"
    session_id: str | None
    reason: str
    checks: int
    goal: Path
    manifest: Path

    def says(self) -> str:
        """The line a wake prints instead of a paid round."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.at))
        checks = f"{self.checks} check{'s' if self.checks != 1 else ''}"
        session = f", session {self.session_id}" if self.session_id else ""
        return (
            f"= the goal was achieved on {when}: the judge passed its {checks} ({self.goal}); the verdict is "
            f"row {self.judge!r} of {self.manifest}{session}. Nothing was run. To go on, say what to add: "
            'flower go "…" (it amends the brief); to start over: flower go --new "…"'
        )

    def event(self) -> dict[str, Any]:
        """The same, as the ``done`` event's fields for ``--json``."""
        return {
            "achieved_at": self.at,
            "verdict": {
                "step": self.judge,
                "session_id": self.session_id,
                "reason": self.reason,
                "manifest": str(self.manifest),
            },
            "goal": str(self.goal),
            "checks": self.checks,
        }


def _is_work_round(step: str) -> bool:
    return step == WORK or step.startswith((f"{WORK}#round", f"{WORK}#retry"))


def _ended(row: dict[str, Any]) -> float:
    value = row.get("ended_at") or row.get("started_at") or 0.0
    return float(value) if isinstance(value, (int, float)) else 0.0


def achieved(notes_dir: Path | str, run_dir: Path, workspace: Path) -> Achieved | None:
    """The achievement this directory's current run ended on, or None (not achieved, or changed since)."""
    paths = NotesPaths.of(notes_dir)
    brief, goal = Brief.load(paths.brief), Goal.load(paths.goal)
    if not brief.complete or not goal.complete:
        return None
    work = Lineage.open(run_dir, workspace).get(WORK)
    if not work:
        return None
    manifest = Path(run_dir) / "manifest.json"
    rows = sorted(Manifest(manifest).rows(), key=_ended)
    rounds = [r for r in rows if _is_work_round(str(r.get("step", ""))) and r.get("session_id") == work]
    if not rounds:
        return None
    last_round = rounds[-1]
    judge_prefix = judge_label(WORK, 0)[:-1]  # "work·judge#"
    judges = [
        r
        for r in rows
        if str(r.get("step", "")).startswith(judge_prefix)
        and r.get("run") == last_round.get("run")
        and _ended(r) >= _ended(last_round)
    ]
    if not judges:
        return None
    verdict_row = judges[-1]
    if verdict_row.get("ok") is not True:
        return None
    verdict = Verdict.parse(str(verdict_row.get("text") or ""))
    if not verdict.achieved:
        return None
    at = _ended(verdict_row)
    try:
        changed = max(paths.brief.stat().st_mtime, paths.goal.stat().st_mtime)
    except OSError:
        return None
    if changed > at:  # the brief or the goal was edited after the verdict: judge again
        return None
    return Achieved(
        at=at,
        judge=str(verdict_row.get("step")),
        session_id=verdict_row.get("session_id") if isinstance(verdict_row.get("session_id"), str) else None,
        reason=verdict.reason,
        checks=len(goal.checks),
        goal=paths.goal,
        manifest=manifest,
    )
