"""The options every ``flower`` command shares, in a module of their own.

The commands import this, never ``app`` (which imports the commands): no import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["GlobalOptions"]


@dataclass
class GlobalOptions:
    workspace: Path
    run_dir: Path
    verbose: bool
    workbench: bool
    trim: bool
    json: bool
    store: str | None = None  # --store URL / FLOWER_STORE_URL; None: <run dir>/sessions.db
