"""A fleet run's manifest rows and lineage in the shared store, beside its transcripts, so `flower analyze
--store URL --run ID`, `flower sessions` and `flower fleet status` read them from any machine.

The seam for flower-stores' run records (``put_run_rows`` / ``put_lineage``): a store without them (an older
flower-stores) keeps the transcripts only, and the rows stay in the worker's ``<root>/manifests/<run id>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

__all__ = ["record_step"]


async def record_step(store: Any, run_id: str, manifest: Path, sessions: Mapping[str, str]) -> bool:
    """Put this worker's manifest rows of ``run_id`` and the step's ``sessions`` (label -> id) into ``store``;
    False when the store keeps no run records."""
    put_rows = getattr(store, "put_run_rows", None)
    put_lineage = getattr(store, "put_lineage", None)
    if not callable(put_rows) or not callable(put_lineage):
        return False
    try:
        rows = json.loads(await anyio.Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rows = []
    if isinstance(rows, list) and rows:
        await put_rows(run_id, rows)  # upserted by run, step and start: a retried step rewrites its own rows
    for label, session_id in sessions.items():
        await put_lineage(run_id, label, session_id)
    return True
