"""Where a run's files are on this worker: ``<fleet root>/<run id>``, the same path on every machine (the SDK
keys sessions by the workspace path).

The seam for the checkpoints (``_checkpoint``, issue 23 item 4): with ``--repo``, the workspace is filled from the
run's git remote, or from its last checkpoint branch ``flower/<run id>``, and checkpoints are pushed while a step
runs and when it ends. Until that module is in this package, a run is ``--shared`` (the fleet root is one
filesystem every worker sees) and ``--repo`` says so.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ._model import RunSpec

__all__ = ["Prepared", "checkpoint", "checkpoints_while", "prepare", "run_dir"]


@dataclass(frozen=True)
class Prepared:
    path: Path
    commit: str | None = None  # the checkpoint the workspace was restored from
    at: datetime | None = None  # when that checkpoint was made (None: nothing was restored)
    note: str = ""  # what the resume prompt says about it


def _checkpoints() -> Any:
    try:
        return importlib.import_module(f"{__package__}._checkpoint")
    except ModuleNotFoundError:
        return None


def run_dir(root: Path, run_id: str) -> Path:
    """This worker's manifest and logs of a run: beside the workspace, never inside it (nor in its checkpoints)."""
    return root / ".runs" / run_id


def prepare(root: Path, spec: RunSpec) -> Prepared:
    """The run's workspace on this worker, ready for a step; raises ValueError when it cannot be."""
    cp = _checkpoints()
    if spec.shared or not spec.repo:
        path = root / spec.run_id
        path.mkdir(parents=True, exist_ok=True)
        return Prepared(path)
    if cp is None:
        raise ValueError("--repo needs the fleet's checkpoints, which this flower-fleet lacks; use --shared")
    restored = cp.prepare_workspace(root, spec.run_id, spec.repo, spec.branch or None)
    note = cp.restored_note(restored) if restored.at is not None else ""
    return Prepared(Path(restored.path), restored.commit, restored.at, note)


def checkpoint(prepared: Prepared, spec: RunSpec, reason: str) -> str | None:
    """Commit and push the workspace to ``flower/<run id>`` (nothing for a shared run); the commit, or None."""
    cp = _checkpoints()
    if spec.shared or not spec.repo or cp is None:
        return None
    result: str | None = cp.checkpoint(prepared.path, spec.run_id, reason)
    return result


@contextlib.asynccontextmanager
async def checkpoints_while(prepared: Prepared, spec: RunSpec, every: float) -> AsyncIterator[None]:
    """Checkpoint every ``every`` seconds while the body runs (nothing for a shared run)."""
    cp = _checkpoints()
    if spec.shared or not spec.repo or cp is None:
        yield
        return
    async with cp.periodic_checkpoints(prepared.path, spec.run_id, every):
        yield
