"""Where a run's files are on this worker: ``<fleet root>/runs/<run id>``, the same path on every machine (the SDK
keys sessions by the workspace path).

With ``--repo`` the workspace is a clone of the run's git remote, restored from the run's newest checkpoint
(``flower/<run id>``) when another machine made one, claimed by the attempt that runs a step there (a later
attempt's claim fences every push of an earlier one out of the branch), and checkpointed while a step runs and
when it ends (`_checkpoint`). With ``--shared`` the fleet root is one filesystem every worker sees: the
directory is used as it is, and nothing is committed.

Everything here blocks (git); the activities call it from a worker thread, so the heartbeats keep flowing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ._checkpoint import (
    BranchClaim,
    CheckpointRefused,
    claim_branch,
    periodic_checkpoints,
    prepare_workspace,
    pushed_checkpoint,
    restored_note,
    workspace_path,
)
from ._checkpoint import checkpoint as _commit_and_push
from ._model import RunSpec

__all__ = ["Prepared", "checkpoint", "checkpoints_while", "prepare", "run_dir"]

log = logging.getLogger("flower_fleet.checkpoint")

# How often an attempt prepares its workspace again when another attempt pushed between its fetch and its claim.
_CLAIM_TRIES = 3


@dataclass(frozen=True)
class Prepared:
    path: Path
    commit: str | None = None  # the checkpoint the workspace was restored from
    at: datetime | None = None  # when that checkpoint was made (None: nothing was restored)
    note: str = ""  # what the resume prompt says about it
    claim: BranchClaim | None = None  # this attempt's hold on the run's branch (None: not claimed, or no branch)


def run_dir(root: Path, run_id: str) -> Path:
    """This worker's manifest and logs of a run: beside the workspace, never inside it (nor in its checkpoints)."""
    return root / "manifests" / run_id


def _checkpointed(spec: RunSpec) -> bool:
    return bool(spec.repo) and not spec.shared


def prepare(root: Path, spec: RunSpec, claim: str = "") -> Prepared:
    """The run's workspace on this worker, ready for a step. With ``claim`` (who claims: "step build, attempt
    2 on host/pid") the attempt also claims the run's branch (`claim_branch`), preparing again when another
    attempt pushed meanwhile. Raises `CheckpointError` (git) or ValueError."""
    if not _checkpointed(spec):
        path = workspace_path(root, spec.run_id)
        path.mkdir(parents=True, exist_ok=True)
        return Prepared(path)
    tries = 0
    while True:
        tries += 1
        restored = prepare_workspace(root, spec.run_id, spec.repo, spec.branch or None)
        prepared = Prepared(restored.path, restored.commit, restored.at, restored_note(restored))
        if not claim:
            return prepared
        try:
            held = claim_branch(restored.path, spec.run_id, f"{claim} claims the branch")
        except CheckpointRefused as exc:
            if tries == _CLAIM_TRIES:
                raise
            log.info("run %s: %s; preparing the workspace again", spec.run_id, exc)
            continue
        return Prepared(prepared.path, prepared.commit, prepared.at, prepared.note, held)


def checkpoint(prepared: Prepared, spec: RunSpec, reason: str) -> str | None:
    """Commit and push the workspace to ``flower/<run id>`` (nothing for a shared run), onto this attempt's
    claim; the branch's commit after it — the new one, or the one this attempt already pushed when nothing
    changed since — or None. Raises `CheckpointRefused` when a later attempt claimed the branch."""
    if not _checkpointed(spec):
        return None
    pushed = _commit_and_push(prepared.path, spec.run_id, reason, prepared.claim)
    if pushed is not None:
        return pushed
    return prepared.claim.base if prepared.claim is not None else pushed_checkpoint(prepared.path, spec.run_id)


@contextlib.asynccontextmanager
async def checkpoints_while(
    prepared: Prepared, spec: RunSpec, every: float, on_refused: Callable[[str], object] | None = None
) -> AsyncIterator[None]:
    """Checkpoint every ``every`` seconds while the body runs (nothing for a shared run); ``on_refused`` hears
    why when a later attempt claimed the branch (this attempt is superseded)."""
    if not _checkpointed(spec):
        yield
        return
    async with periodic_checkpoints(prepared.path, spec.run_id, every, prepared.claim, on_refused):
        yield
