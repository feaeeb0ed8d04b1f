"""Where a run's files are on this worker: ``<fleet root>/runs/<run id>``, the same path on every machine (the SDK
keys sessions by the workspace path).

With ``--repo`` the workspace is a clone of the run's git remote, restored from the run's newest checkpoint
(``flower/<run id>``) when another machine made one, and checkpointed while a step runs and when it ends
(`_checkpoint`). With ``--shared`` the fleet root is one filesystem every worker sees: the directory is used as
it is, and nothing is committed.

Everything here blocks (git); the activities call it from a worker thread, so the heartbeats keep flowing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ._checkpoint import checkpoint as _commit_and_push
from ._checkpoint import periodic_checkpoints, prepare_workspace, pushed_checkpoint, restored_note, workspace_path
from ._model import RunSpec

__all__ = ["Prepared", "checkpoint", "checkpoints_while", "prepare", "run_dir"]


@dataclass(frozen=True)
class Prepared:
    path: Path
    commit: str | None = None  # the checkpoint the workspace was restored from
    at: datetime | None = None  # when that checkpoint was made (None: nothing was restored)
    note: str = ""  # what the resume prompt says about it


def run_dir(root: Path, run_id: str) -> Path:
    """This worker's manifest and logs of a run: beside the workspace, never inside it (nor in its checkpoints)."""
    return root / "manifests" / run_id


def _checkpointed(spec: RunSpec) -> bool:
    return bool(spec.repo) and not spec.shared


def prepare(root: Path, spec: RunSpec) -> Prepared:
    """The run's workspace on this worker, ready for a step. Raises `CheckpointError` (git) or ValueError."""
    if not _checkpointed(spec):
        path = workspace_path(root, spec.run_id)
        path.mkdir(parents=True, exist_ok=True)
        return Prepared(path)
    restored = prepare_workspace(root, spec.run_id, spec.repo, spec.branch or None)
    return Prepared(restored.path, restored.commit, restored.at, restored_note(restored))


def checkpoint(prepared: Prepared, spec: RunSpec, reason: str) -> str | None:
    """Commit and push the workspace to ``flower/<run id>`` (nothing for a shared run); the branch's commit after
    it — the new one, or the one a periodic checkpoint already pushed when nothing changed since — or None."""
    if not _checkpointed(spec):
        return None
    return _commit_and_push(prepared.path, spec.run_id, reason) or pushed_checkpoint(prepared.path, spec.run_id)


@contextlib.asynccontextmanager
async def checkpoints_while(prepared: Prepared, spec: RunSpec, every: float) -> AsyncIterator[None]:
    """Checkpoint every ``every`` seconds while the body runs (nothing for a shared run)."""
    if not _checkpointed(spec):
        yield
        return
    async with periodic_checkpoints(prepared.path, spec.run_id, every):
        yield
