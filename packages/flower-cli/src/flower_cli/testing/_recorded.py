"""A request the scripted server received, with the accessors a test asserts on: the request log."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecordedRequest", "result_text"]


@dataclass
class RecordedRequest:
    """One HTTP request as the server received it, and what it answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float = field(default_factory=time.monotonic)
    status: int | None = None  # what the server answered (None: no answer, e.g. an outage or a hang)
    usage: dict[str, int] | None = None  # the usage the server reported for a completed message

    @property
    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty or not JSON)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def is_messages(self) -> bool:
        """A model call: ``POST /v1/messages`` (not ``count_tokens``)."""
        return self.method == "POST" and self.path.split("?")[0].rstrip("/") == "/v1/messages"

    @property
    def streaming(self) -> bool:
        body = self.json
        return isinstance(body, dict) and bool(body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        body = self.json
        return list(body.get("messages") or []) if isinstance(body, dict) else []

    @property
    def text(self) -> str:
        """The messages serialised, for substring assertions ("no API Error text was sent")."""
        return json.dumps(self.messages, ensure_ascii=False)

    @property
    def size(self) -> int:
        """Bytes of the ``messages`` array: what the conversation costs this turn."""
        return len(self.text.encode())

    def blocks(self, role: str | None = None) -> list[dict[str, Any]]:
        """Every content block of the messages (of ``role``'s only, when given); a string content is one text block."""
        out: list[dict[str, Any]] = []
        for message in self.messages:
            if role and message.get("role") != role:
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append({"type": "text", "text": content})
            elif isinstance(content, list):
                out.extend(b for b in content if isinstance(b, dict))
        return out

    def tool_results(self) -> list[dict[str, Any]]:
        return [b for b in self.blocks("user") if b.get("type") == "tool_result"]

    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.blocks("assistant") if b.get("type") == "tool_use"]

    def last_tool_result_text(self) -> str:
        results = self.tool_results()
        return result_text(results[-1]) if results else ""

    def user_texts(self) -> list[str]:
        return [b.get("text", "") for b in self.blocks("user") if b.get("type") == "text"]

    @property
    def system_text(self) -> str:
        """The system prompt: the ``system`` field plus any system-role message (where a role's rules land)."""
        body = self.json
        parts: list[str] = []
        if isinstance(body, dict):
            system = body.get("system")
            if isinstance(system, str):
                parts.append(system)
            elif isinstance(system, list):
                parts.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for message in self.messages:
            if message.get("role") == "system":
                content = message.get("content")
                if isinstance(content, str):
                    parts.append(content)
                elif isinstance(content, list):
                    parts.extend(b.get("text", "") for b in content if isinstance(b, dict))
        return "\n".join(parts)

    @property
    def is_subagent(self) -> bool:
        """A subagent's request (an Agent-tool worker): the harness marks its system header ``cc_is_subagent``."""
        return "cc_is_subagent=true" in self.system_text

    @property
    def last_user_text(self) -> str:
        """Every text block of the newest user message (system reminders included)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            )
        return ""

    @property
    def notifications(self) -> list[str]:
        """The ``<task-notification>`` blocks of the newest user message: a worker's report waking the main thread."""
        text = self.last_user_text
        out: list[str] = []
        start = text.find("<task-notification>")
        while start != -1:
            end = text.find("</task-notification>", start)
            end = len(text) if end == -1 else end + len("</task-notification>")
            out.append(text[start:end])
            start = text.find("<task-notification>", end)
        return out

    @property
    def first_user_text(self) -> str:
        """The text of the first user message without harness reminders: the prompt of this agent."""
        for message in self.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [
                b.get("text", "")
                for b in content or []
                if isinstance(b, dict)
                and b.get("type") == "text"
                and not b.get("text", "").startswith("<system-reminder>")
            ]
            return "\n".join(texts)
        return ""


def result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block, whether its content is a string or a list of blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""
