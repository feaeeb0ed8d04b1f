"""``-w``: the workspace must exist before anything runs in it.

A mistyped ``-w`` used to create a new empty directory and run a paid step there; now it is a usage error and
nothing is created. The run dir (``-r``) is still created: it is flower's own folder, not the user's project.
"""

from __future__ import annotations

import errno
import os
import shlex
from pathlib import Path

from .._shared.exits import Exit, ExitCode

__all__ = ["check_workspace"]


def check_workspace(workspace: Path) -> None:
    """Return when ``workspace`` is a directory; else a one-line `Exit`.

    Missing (and nothing in the way): exit 2, with the command that creates it. A file on the way (the path
    itself, or a folder above it): exit 3, as any other workspace that cannot be used — a person must move it.
    """
    if workspace.is_dir():
        return
    blocker = _file_in_the_way(workspace)
    if blocker is not None:
        from ..runtime import describe_os_error  # why: the runtime room stays off the path of every --help

        problem = OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(workspace))
        raise Exit(ExitCode.CONFIG, describe_os_error(problem, "the workspace", elsewhere="point -w elsewhere"))
    raise Exit(
        ExitCode.USAGE,
        f"the workspace {workspace} does not exist (nothing was created): create it with "
        f"`mkdir -p {shlex.quote(str(workspace))}` or pass -w an existing directory",
    )


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing path at or above ``path`` when it is not a directory (None: only folders missing)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return None if candidate.is_dir() else candidate
    return None
