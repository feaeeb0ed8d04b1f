"""`FleetRuns`: the fleet's runs for the control verbs, through the fleet's own commands.

A fleet run (``FLOWER_TEMPORAL`` set) lives in a Temporal workflow, not in a process that reads an inbox: its
questions are answered and it is cancelled by the workflow's signals, which ``flower fleet status / answer /
cancel`` send. flower-cli may not import flower-fleet (flower-fleet depends on it), so these go through those
commands (the fleet's public surface, a plugin of the ``flower`` command) in a child process — which also keeps
the Temporal client's shutdown (temporalio/sdk-python#300, which the fleet's commands work around) out of this
one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from ._control import ControlError
from ._info import RunInfo

__all__ = ["FleetRuns", "fleet_configured"]

_STATES = {"starting": "running", "running": "running", "completed": "done", "failed": "done", "cancelled": "stopped"}


def fleet_configured(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is pointed at a fleet (``FLOWER_TEMPORAL``)."""
    return bool((os.environ if env is None else env).get("FLOWER_TEMPORAL", "").strip())


def _info(state: dict[str, Any]) -> RunInfo:
    status = str(state.get("status") or "running")
    question = str(state.get("question") or "")
    live = _STATES.get(status, "running") == "running"
    return RunInfo(
        run_id=str(state.get("run_id") or ""),
        state="waiting" if live and question else _STATES.get(status, status),
        step=str(state.get("step") or ""),
        cost_usd=float(state.get("cost_usd") or 0.0),
        question=question if live else "",
        command=f"fleet {state.get('workflow') or ''}".strip(),
        accepts=("answer", "stop"),
        ok=None if live else status == "completed",
        fleet=True,
    )


class FleetRuns:
    """``flower fleet status / answer / cancel`` run as child processes (``timeout_s`` each)."""

    def __init__(self, *, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s

    def _fleet(self, *args: str) -> str:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "flower_cli", "--json", "fleet", *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise ControlError(f"`flower fleet {args[0]}` gave no answer within {self.timeout_s:.0f} s") from exc
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise ControlError(said.removeprefix("flower fleet: "))
        return done.stdout

    def runs(self) -> list[RunInfo]:
        """The fleet's runs, newest first (as ``flower fleet status`` lists them)."""
        found = []
        for line in self._fleet("status").splitlines():
            try:
                state = json.loads(line)
            except ValueError:
                continue
            if isinstance(state, dict) and state.get("run_id"):
                found.append(_info(state))
        return found

    def answer(self, run_id: str, text: str) -> None:
        self._fleet("answer", run_id, text)

    def stop(self, run_id: str) -> None:
        self._fleet("cancel", run_id)
