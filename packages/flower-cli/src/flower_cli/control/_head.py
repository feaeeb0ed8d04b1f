"""`HeadFold`: a run's summary (its head) folded from the events it publishes, as pure bookkeeping.

What another process shows of a run without replaying its log: the state (running / waiting on a question /
done / stopped), the step (and its place among the steps), the session, the main thread's context now, the cost
so far, the question it waits on and the tool running now. The same rules as the terminal's status line
(`flower_cli.view.Renderer`): context from the main thread's usage, cost from finished steps plus the running
step's harness total.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HeadFold"]

_SETTLED = ("answered", "declined", "timeout", "over_budget", "invalid", "cancelled")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class HeadFold:
    """The head of one run, updated by `fold` with each event (a JSON object as ``--json`` prints it)."""

    meta: dict[str, Any] = field(default_factory=dict)  # command, workspace, host, pid, accepts …: fixed
    state: str = "running"
    ok: bool | None = None
    step: str = ""
    step_index: int = 0
    step_total: int = 0
    session: str = ""
    context: int = 0
    cost_done: float = 0.0
    cost_running: float = 0.0
    question: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    stopped_by: str = ""

    def fold(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        raw = event.get("payload")
        p: dict[str, Any] = raw if isinstance(raw, dict) else {}
        main_thread = not event.get("subagent")
        if main_thread and isinstance(p.get("context"), int) and p["context"] > 0:
            self.context = p["context"]
        if main_thread and isinstance(p.get("session_id"), str) and p["session_id"] and kind in ("system", "turn"):
            self.session = p["session_id"]
        if kind == "step":
            self.step = str(event.get("text") or "")
            self.step_index, self.step_total = int(p.get("index") or 0), int(p.get("total") or 0)
            self.tool = None
        elif kind == "turn":
            running = _number(p.get("total_cost_usd"))
            if running is not None:
                self.cost_running = max(self.cost_running, running)
        elif kind == "result":
            self._step_ended(p)
        elif kind == "tool_call" and main_thread:
            self.tool = {
                "name": str(event.get("tool") or ""),
                "text": str(event.get("text") or "")[:200],
                "since": time.time(),
            }
        elif kind == "tool_result" and main_thread:
            self.tool = None
        elif kind == "ask" and p.get("kind") == "question":
            self._question(event, p)
        elif kind == "handoff" and p.get("phase") == "done":
            self.context = 0  # the successor starts from an empty context
        elif kind == "done":
            self.state = "stopped" if self.stopped_by else "done"
            self.ok = bool(event.get("ok"))
            self.question = self.tool = None
        elif kind == "control" and p.get("action") == "stop":
            self.stopped_by = str(p.get("sender") or "someone")

    def _step_ended(self, p: dict[str, Any]) -> None:
        self.cost_done += _number(p.get("cost_usd")) or 0.0
        self.cost_running = 0.0
        self.tool = None
        if isinstance(p.get("session_id"), str) and p["session_id"]:
            self.session = p["session_id"]

    def _question(self, event: dict[str, Any], p: dict[str, Any]) -> None:
        state = p.get("state")
        if state == "asked":
            options = p.get("options")
            self.question = {
                "id": str(p.get("id") or ""),
                "text": str(p.get("question") or event.get("text") or ""),
                "options": [str(o) for o in options] if isinstance(options, list) else [],
            }
            self.state = "waiting"
        elif state in _SETTLED and self.question is not None and self.question.get("id") == p.get("id"):
            self.question = None
            if self.state == "waiting":
                self.state = "running"

    @property
    def cost(self) -> float:
        return round(self.cost_done + self.cost_running, 6)

    def head(self) -> dict[str, Any]:
        """The head as stored beside the run's events (JSON)."""
        return {
            **self.meta,
            "state": self.state,
            "ok": self.ok,
            "step": self.step,
            "step_index": self.step_index,
            "step_total": self.step_total,
            "session": self.session,
            "context": self.context,
            "cost_usd": self.cost,
            "question": self.question,
            "tool": self.tool,
            "stopped_by": self.stopped_by,
        }
