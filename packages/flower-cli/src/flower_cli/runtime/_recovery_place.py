"""Where a recovered worker works: the worktree it had, a worktree of its own when it was isolated and the harness
never made it one, or the workspace.

Why apart from `_recovery`: the place decides two things that must agree on every wake — the directory the
recovered worker runs in, and the project key its recovery session is stored under (the harness keys a session
by its cwd) — and creating a git worktree is a side effect of its own.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from claude_agent_sdk import project_key_for_directory

from ._isolation import is_isolated
from ._ledger import WorkerRecord
from ._spec import AgentSpec

__all__ = ["ensure_worktree", "project_of", "worker_place"]

_WORKTREES = Path(".claude") / "worktrees"  # where the harness keeps its agents' worktrees, under the workspace


def worker_place(workspace: Path, spec: AgentSpec, record: WorkerRecord, recovery_id: str) -> Path | None:
    """The directory ``record``'s recovery runs in (None: the workspace).

    The worktree it last worked in, while it is still there; else, for a worker that was to be isolated (its call
    asked for a worktree, or its type is isolated) but of which nothing is stored, a worktree flower makes for its
    recovery session (`ensure_worktree`), named after that session so every wake finds the same one (its branch
    bears the same name).
    """
    if record.cwd:
        where = Path(record.cwd)
        if where.is_dir() and where.resolve() != workspace.resolve():
            return where
    definition = (spec.agents or {}).get(record.agent_type or "")
    if record.isolation == "worktree" or is_isolated(definition):
        return workspace / _WORKTREES / f"flower-recovery-{recovery_id[:8]}"
    return None


def project_of(workspace_key: str, place: Path | None) -> str:
    """The project key a recovery session running in ``place`` is stored under."""
    return project_key_for_directory(str(place)) if place is not None else workspace_key


def ensure_worktree(workspace: Path, place: Path) -> str | None:
    """Make ``place`` a git worktree of ``workspace`` on a branch of its own (named after it, from HEAD) unless it
    exists; an existing branch of that name (a worktree removed by hand) is checked out there again. The problem,
    or None."""
    if place.is_dir():
        return None
    branch = place.name
    problem = _git(workspace, "worktree", "add", "-b", branch, str(place), "HEAD")
    if problem is not None:
        problem = _git(workspace, "worktree", "add", str(place), branch) and problem
    return problem


def _git(workspace: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git {args[0]} failed: {exc}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return f"git {' '.join(args[:2])} failed: {last[0] if last else done.returncode}"
    return None
