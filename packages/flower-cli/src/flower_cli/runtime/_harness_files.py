"""What commands that only read need of the transcript mirror, without the SDK (slow to import: about 0.9 s of
CPU, most of it its MCP types): where the harness writes transcripts, and how a step's error starts when the
store could not take one. `_mirror` (the watch itself) builds on these."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["UNSTORED", "harness_projects_dir"]

UNSTORED = "transcript not stored"  # how a step's error starts when the store could not take its transcript


def harness_projects_dir() -> Path:
    """Where Claude Code writes a new session's transcript: ``$CLAUDE_CONFIG_DIR/projects``, else
    ``~/.claude/projects`` (the SDK's own rule; flower sets neither). A session resumed from the store is
    materialised into a temporary config dir instead, which the SDK removes when the launch ends."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config) if config else Path.home() / ".claude") / "projects"
