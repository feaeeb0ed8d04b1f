"""What the run log and the inbox hand out: `RunEvent` (one published event), `RunHead` (a run's latest summary,
written with its events), `InboxMessage` (an answer, a mail or a stop sent to a run)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["INBOX_KINDS", "InboxKind", "InboxMessage", "RunEvent", "RunHead"]

InboxKind = Literal["answer", "mail", "stop"]
INBOX_KINDS: tuple[str, ...] = ("answer", "mail", "stop")


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a run: ``seq`` counts from 1 per run (read on from the last one seen), ``at_ms`` is when it
    was stored (epoch ms, the storage clock), ``event`` the JSON object as ``flower --json`` printed it (bounded)."""

    run_id: str
    seq: int
    at_ms: int
    event: dict[str, Any]

    @classmethod
    def decode(cls, run_id: str, seq: int, at_ms: int, text: str) -> RunEvent:
        try:
            event = json.loads(text)
        except ValueError:
            event = {"kind": "unknown", "text": text[:200]}
        return cls(run_id, int(seq), int(at_ms), event if isinstance(event, dict) else {"kind": "unknown"})


@dataclass(frozen=True, slots=True)
class RunHead:
    """A run's summary as its publisher last wrote it (``head``: state, step, session, context, cost, question…),
    with when the run was first and last heard of and its last event's ``seq``."""

    run_id: str
    created_ms: int
    updated_ms: int
    last_seq: int
    head: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def decode(cls, run_id: str, created: int, updated: int, last_seq: int, text: str | None) -> RunHead:
        try:
            head = json.loads(text) if text else {}
        except ValueError:
            head = {}
        return cls(run_id, int(created), int(updated), int(last_seq), head if isinstance(head, dict) else {})


@dataclass(frozen=True, slots=True)
class InboxMessage:
    """A message to a run, taken by the run once: ``kind`` answer / mail / stop, its ``text`` (for an answer,
    ``question`` names the question it answers, "" for the one waiting), and who sent it (``sender``)."""

    id: int
    run_id: str
    kind: str
    text: str
    sender: str = ""
    question: str = ""
    at_ms: int = 0
