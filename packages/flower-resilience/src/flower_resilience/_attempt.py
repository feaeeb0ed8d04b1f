"""What one attempt of `resilient_query` has shown so far (`_Live`), and how its messages are read: a
synthetic API-error notice told from the model's words, a message's session id, an error cut to one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._classify import ErrorKind, classify

if TYPE_CHECKING:
    from claude_agent_sdk import AssistantMessage, RateLimitEvent, ResultMessage

__all__ = ["SYNTHETIC_MODEL", "is_synthetic"]

SYNTHETIC_MODEL = "<synthetic>"


def is_synthetic(message: object) -> bool:
    """Is this an assistant message the harness made up (an API-error notice), not the model's words?

    Matches ``model == "<synthetic>"``, and an ``AssistantMessage`` whose ``error`` is set and whose content
    is only text (no tool call, no thinking): the notice, not real content.
    """
    import claude_agent_sdk as sdk  # why: the SDK is imported when a run reads messages, not when flower_resilience is

    if not isinstance(message, sdk.AssistantMessage):
        return False
    if message.model == SYNTHETIC_MODEL:
        return True
    return message.error is not None and all(isinstance(b, sdk.TextBlock) for b in message.content)


def _text_of(message: AssistantMessage) -> str:
    import claude_agent_sdk as sdk  # why: the SDK is imported when a run reads messages, not when flower_resilience is

    return "\n".join(b.text for b in message.content if isinstance(b, sdk.TextBlock)).strip()


def _session_of(message: object) -> str | None:
    sid = getattr(message, "session_id", None)
    if not sid:
        data = getattr(message, "data", None)
        if isinstance(data, dict):
            sid = data.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def _short(text: str | None, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class _Live:
    """What one attempt has shown so far."""

    number: int
    resumed: bool
    started: float
    resumed_from: str | None  # the session this attempt was launched to continue (options.resume)
    session_id: str | None = None
    results: list[ResultMessage] = field(default_factory=list)
    notices: list[AssistantMessage] = field(default_factory=list)  # synthetic API-error messages
    flagged: list[AssistantMessage] = field(default_factory=list)  # real messages that carry an error code
    rate_limits: list[RateLimitEvent] = field(default_factory=list)
    exception: Exception | None = None
    held: ResultMessage | None = None  # an error result, yielded only if it turns out to be the final one

    @property
    def last_result(self) -> ResultMessage | None:
        return self.results[-1] if self.results else None

    @property
    def succeeded(self) -> bool:
        last = self.last_result
        return self.exception is None and last is not None and not last.is_error

    @property
    def api_errors(self) -> tuple[str, ...]:
        return tuple(t for t in (_text_of(m) for m in self.notices) if t)

    def signals(self) -> list[object]:
        last = self.last_result
        return [*self.notices, *self.flagged, *([last] if last is not None and last.is_error else []), self.exception]

    def describe(self) -> str:
        """The attempt's error in one string: the harness's notice, else the result, else the exception."""
        if self.api_errors:
            return self.api_errors[-1]
        last = self.last_result
        if last is not None and last.is_error:
            text = last.result or "; ".join(last.errors or []) or f"error result ({last.subtype})"
            return text
        exc = self.exception
        if exc is not None:
            detail = getattr(exc, "result", None) or str(exc)
            return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        return "the run ended without a result"


def _kind(live: _Live) -> ErrorKind:
    return classify(*live.signals())
