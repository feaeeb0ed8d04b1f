"""lineage.json: which session each step name continues, so the same directory picks up where it left off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._shared.files import atomic_write_text, file_lock, read_json

__all__ = ["Lineage"]


class Lineage:
    """``{"workspace": <abs path>, "woke": N, "steps": {step name: session id}}``.

    Every change re-reads the file under a lock and updates only what it changes, so parallel runs in one
    run dir add their steps instead of clobbering each other's (as rewriting the whole file would). A file
    recorded for a different workspace path means "no lineage": the SDK's project key is derived from the
    path, so those sessions cannot be found from here; ``note`` explains it (shown under ``-v``).
    """

    def __init__(self, path: Path, workspace: Path) -> None:
        self.path = Path(path)
        self.workspace = str(Path(workspace).resolve())
        self.note: str | None = None
        data = self._read()
        self.steps: dict[str, str] = dict(data["steps"])
        self.woke: int = int(data["woke"])

    @classmethod
    def open(cls, run_dir: Path, workspace: Path) -> Lineage:
        return cls(Path(run_dir) / "lineage.json", workspace)

    def _read(self) -> dict[str, Any]:
        empty: dict[str, Any] = {"workspace": self.workspace, "woke": 0, "steps": {}}
        data, problem = read_json(self.path)
        if problem:
            self.note = f"{self.path} is {problem}; starting without lineage"
            return empty
        if data is None:
            return empty
        if not isinstance(data, dict) or not isinstance(data.get("steps", {}), dict):
            self.note = f"{self.path} has an unexpected shape; starting without lineage"
            return empty
        if data.get("workspace") != self.workspace:
            self.note = (
                f"{self.path} belongs to {data.get('workspace')!r}, not {self.workspace!r}; "
                "starting fresh (sessions are keyed by the workspace path)"
            )
            return empty
        steps = {str(k): str(v) for k, v in data.get("steps", {}).items() if k and v}
        woke = data.get("woke", 0)
        return {"workspace": self.workspace, "woke": woke if isinstance(woke, int) else 0, "steps": steps}

    def _update(self, change: Any) -> None:
        with file_lock(self.path):
            current = self._read()
            change(current)
            self.steps, self.woke = dict(current["steps"]), int(current["woke"])
            atomic_write_text(self.path, json.dumps(current, ensure_ascii=False, indent=2) + "\n")

    def remember(self, step: str, session_id: str | None) -> None:
        if not step or not session_id or self.steps.get(step) == session_id:
            return
        self._update(lambda data: data["steps"].__setitem__(step, session_id))

    def bump(self) -> int:
        def inc(data: dict[str, Any]) -> None:
            data["woke"] = int(data["woke"]) + 1

        self._update(inc)
        return self.woke

    def get(self, step: str) -> str | None:
        return self.steps.get(step)
