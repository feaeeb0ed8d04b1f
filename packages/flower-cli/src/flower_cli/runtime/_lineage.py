"""lineage.json: which session each step name continues, so the same directory picks up where it left off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._shared.files import atomic_write_text, file_lock, move_aside, read_json

__all__ = ["Lineage"]


class Lineage:
    """``{"workspace": <abs path>, "woke": N, "steps": {step name: session id}, "settings": {...}}``.

    ``settings`` are the options a run was started with that a plain wake must keep (``go``'s ``--no-goal``: a
    wake of a run without a goal must not run a goal step it never had); `keep` records them.

    Every change re-reads the file under a lock and updates only what it changes, so parallel runs in one
    run dir add their steps instead of clobbering each other's (an original bug). A file recorded for a
    different workspace path means "no lineage": the SDK's project key is derived from the path, so those
    sessions cannot be found from here; ``note`` explains it (shown under ``-v``). A file that cannot be read
    as lineage is moved aside (``lineage.json.corrupt-<time>``) by the first write, never overwritten, and
    ``notes`` says where it went (shown to the user, as the manifest's are).
    """

    def __init__(self, path: Path, workspace: Path) -> None:
        self.path = Path(path)
        self.workspace = str(Path(workspace).resolve())
        self.note: str | None = None
        self.notes: list[str] = []
        data = self._read()
        self.steps: dict[str, str] = dict(data["steps"])
        self.woke: int = int(data["woke"])
        self.settings: dict[str, Any] = dict(data["settings"])

    @classmethod
    def open(cls, run_dir: Path, workspace: Path) -> Lineage:
        return cls(Path(run_dir) / "lineage.json", workspace)

    def _read(self, *, keep_corrupt: bool = False) -> dict[str, Any]:
        """The lineage on disk; with ``keep_corrupt`` (a write is about to follow, under the lock) a file that is
        not lineage is first moved aside so the write cannot destroy what it held."""
        empty: dict[str, Any] = {"workspace": self.workspace, "woke": 0, "steps": {}, "settings": {}}
        data, problem = read_json(self.path)
        if problem is None and data is not None:
            if not isinstance(data, dict) or not isinstance(data.get("steps", {}), dict):
                problem = "not lineage (an unexpected shape)"
        if problem:
            self.note = f"{self.path} is {problem}; starting without lineage"
            if keep_corrupt and self.path.exists():
                moved = move_aside(self.path)
                self.notes.append(
                    f"{self.path} was {problem}; kept it as {moved.name} and started a new lineage "
                    "(each step starts a new session)"
                )
            return empty
        if data is None:
            return empty
        if data.get("workspace") != self.workspace:
            self.note = (
                f"{self.path} belongs to {data.get('workspace')!r}, not {self.workspace!r}; "
                "starting fresh (sessions are keyed by the workspace path)"
            )
            return empty
        steps = {str(k): str(v) for k, v in data.get("steps", {}).items() if k and v}
        woke = data.get("woke", 0)
        settings = data.get("settings")
        return {
            "workspace": self.workspace,
            "woke": woke if isinstance(woke, int) else 0,
            "steps": steps,
            "settings": dict(settings) if isinstance(settings, dict) else {},
        }

    def _update(self, change: Any) -> None:
        with file_lock(self.path):
            current = self._read(keep_corrupt=True)
            change(current)
            self.steps, self.woke = dict(current["steps"]), int(current["woke"])
            self.settings = dict(current["settings"])
            atomic_write_text(self.path, json.dumps(current, ensure_ascii=False, indent=2) + "\n")

    def remember(self, step: str, session_id: str | None) -> None:
        if not step or not session_id or self.steps.get(step) == session_id:
            return
        self._update(lambda data: data["steps"].__setitem__(step, session_id))

    def keep(self, **settings: Any) -> None:
        """Record options a plain wake keeps (JSON values); unchanged ones are not written again."""
        if all(self.settings.get(k) == v for k, v in settings.items()):
            return
        self._update(lambda data: data["settings"].update(settings))

    def bump(self) -> int:
        def inc(data: dict[str, Any]) -> None:
            data["woke"] = int(data["woke"]) + 1

        self._update(inc)
        return self.woke

    def get(self, step: str) -> str | None:
        return self.steps.get(step)
