"""`RunInfo`: what another process knows of a run — its head as the run published it, and whether a process
still drives it (its session lease, or a head written moments ago between two steps)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["HEARTBEAT_S", "RunInfo", "STALE_S"]

# The publisher writes the head at least this often while the run lives (between steps too, when no lease is
# held); a head older than STALE_S whose run holds no lease belongs to a process that is gone.
HEARTBEAT_S = 5.0
STALE_S = 20.0

_FINAL = ("done", "stopped")


@dataclass(frozen=True)
class RunInfo:
    """One run as ``flower status`` shows it.

    ``state``: ``running``, ``waiting`` (a question waits for an answer), ``done``, ``stopped`` (by ``flower stop``),
    or ``dead`` (it was running, but no process drives it any more: killed, or its machine went away — ``flower``
    in its workspace wakes it). ``question`` / ``question_id``: the question it waits on. ``context``: the main
    thread's context now (tokens); ``cost_usd`` so far. ``accepts``: which messages it takes (answer, mail, stop).
    """

    run_id: str
    state: str
    step: str = ""
    step_index: int = 0
    step_total: int = 0
    session: str = ""
    context: int = 0
    cost_usd: float = 0.0
    question: str = ""
    question_id: str = ""
    options: tuple[str, ...] = ()
    tool: str = ""
    command: str = ""
    workspace: str = ""
    host: str = ""
    pid: int = 0
    accepts: tuple[str, ...] = ()
    ok: bool | None = None
    stopped_by: str = ""
    started_ms: int = 0
    updated_ms: int = 0
    last_seq: int = 0
    fleet: bool = False

    @property
    def live(self) -> bool:
        return self.state in ("running", "waiting")

    @classmethod
    def of(
        cls, run_id: str, head: dict[str, Any], *, created_ms: int, updated_ms: int, last_seq: int, leased: bool
    ) -> RunInfo:
        state = str(head.get("state") or "running")
        if state not in _FINAL and not leased and time.time() * 1000 - updated_ms > STALE_S * 1000:
            state = "dead"
        raw_question = head.get("question")
        question: dict[str, Any] = raw_question if isinstance(raw_question, dict) else {}
        raw_tool = head.get("tool")
        tool: dict[str, Any] = raw_tool if isinstance(raw_tool, dict) else {}
        return cls(
            run_id=run_id,
            state=state,
            step=str(head.get("step") or ""),
            step_index=_int(head.get("step_index")),
            step_total=_int(head.get("step_total")),
            session=str(head.get("session") or ""),
            context=_int(head.get("context")),
            cost_usd=float(head.get("cost_usd") or 0.0),
            question=str(question.get("text") or "") if state == "waiting" else "",
            question_id=str(question.get("id") or "") if state == "waiting" else "",
            options=tuple(str(o) for o in question.get("options") or ()) if state == "waiting" else (),
            tool=str(tool.get("name") or ""),
            command=str(head.get("command") or ""),
            workspace=str(head.get("workspace") or ""),
            host=str(head.get("host") or ""),
            pid=_int(head.get("pid")),
            accepts=tuple(str(a) for a in head.get("accepts") or ()),
            ok=head.get("ok") if isinstance(head.get("ok"), bool) else None,
            stopped_by=str(head.get("stopped_by") or ""),
            started_ms=created_ms,
            updated_ms=updated_ms,
            last_seq=last_seq,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["options"], data["accepts"] = list(self.options), list(self.accepts)
        return data


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
