"""Worktree isolation: a worker whose every dispatch gets its own git worktree, and what it needs of the workspace.

The type marks the worker (`IsolatedAgentDefinition`); the Runtime enforces it with `isolate_guard` and checks
the workspace with `isolation_problem` before anything runs, so the engine and the commands need this module,
not the role catalogue.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The SDK is needed at import for the base class; this module is never on `flower --help`'s path.
from claude_agent_sdk import AgentDefinition

if TYPE_CHECKING:
    from ._spec import AgentSpec

__all__ = ["IsolatedAgentDefinition", "IsolationError", "is_isolated", "isolated_workers", "isolation_problem"]


class IsolationError(ValueError):
    """An isolated worker needs a git workspace (each gets its own worktree); this one is not one."""


@dataclass
class IsolatedAgentDefinition(AgentDefinition):
    """An ``AgentDefinition`` whose every dispatch gets its own git worktree (see `worker`'s ``isolate``).

    Isolation is the type, not a hidden attribute: ``dataclasses.replace`` keeps the class (it would drop an
    attribute set beside the fields), and the SDK sends only the base fields to the harness.
    """


def is_isolated(definition: object) -> bool:
    """Does this worker get its own git worktree on every dispatch?"""
    return isinstance(definition, IsolatedAgentDefinition)


def isolated_workers(agents: Mapping[str, Any] | None) -> list[str]:
    """The names of the isolated workers among ``agents``."""
    return [name for name, definition in (agents or {}).items() if is_isolated(definition)]


def isolation_problem(spec: AgentSpec, workspace: Path | str) -> str | None:
    """Why ``spec``'s isolated workers cannot run in ``workspace`` (not a git repository, no commit yet), or None."""
    names = isolated_workers(spec.agents)
    if not names:
        return None
    ws = Path(workspace)
    who = ", ".join(repr(n) for n in names)

    def git(*args: str) -> bool:
        try:
            return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    if not git("rev-parse", "--is-inside-work-tree"):
        return (
            f"worker {who} is isolated (each dispatch gets its own git worktree) but {ws} is not a git "
            "repository; run `git init` and commit once there, or drop isolate=True"
        )
    if not git("rev-parse", "--verify", "--quiet", "HEAD"):
        return f"worker {who} is isolated (each dispatch gets its own git worktree) but {ws} has no commit yet; commit once first"
    return None
