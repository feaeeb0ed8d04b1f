"""Usage limits told apart: a window that resets (five-hour, seven-day), a spend cap that does not, an ordinary 429.

A usage limit is not a network failure: the endpoint answers at once, refuses every request until a known time,
and retrying before then only spends requests. So it is classified from what says so — the harness's
``RateLimitEvent``, the API's ``anthropic-ratelimit-unified-*`` headers, the spend-cap error text, and the
harness's own retry notice (``api_retry``): with ``CLAUDE_CODE_RETRY_WATCHDOG=1`` Claude Code waits for the
reset itself, and its first ``api_retry`` then carries ``retry_delay_ms`` ≈ the time left. (Measured on Claude
Code 2.1.332 with an API key: no ``RateLimitEvent`` came for a refused request, so the retry notice is what
names the reset; which window it was is not passed on, so such a limit is a plain ``"usage"`` one.)

Like `classify`, this module does not import the SDK: SDK objects are recognised only once the SDK is imported.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ._classify import _SPEND_LIMIT

__all__ = [
    "LIMIT_RETRY_FLOOR_S",
    "LimitKind",
    "UsageLimit",
    "limit_from_headers",
    "span_text",
    "until_text",
    "usage_limit",
]

LimitKind = Literal["five_hour", "seven_day", "usage", "spend_cap", "rate_limit"]

# A 429 the harness means to wait out for at least this long is a limit with a reset, not a burst to back off
# from: the harness's own backoff for an ordinary 429 starts at about half a second.
LIMIT_RETRY_FLOOR_S = 10.0

_NAMES: dict[str, str] = {
    "five_hour": "five-hour usage limit",
    "seven_day": "seven-day usage limit",
    "usage": "usage limit",
    "spend_cap": "spend limit",
    "rate_limit": "rate limit",
}
_HEADER = "anthropic-ratelimit-unified-"
# Claude Code's older subscriber notice: "Claude AI usage limit reached|1733500000" (the epoch of the reset).
_LIMIT_WITH_EPOCH = re.compile(r"usage limit reached\|(\d{9,11})", re.IGNORECASE)


@dataclass(frozen=True)
class UsageLimit:
    """One limit as the API or the harness reported it.

    ``kind``: which limit (``usage`` when the window is not named). ``resets_at``: the Unix time it lifts
    (None: unknown, or never for a spend cap). ``claim``: the API's ``representative-claim`` as sent
    (``five_hour``, ``seven_day_opus``…), the window that decided. ``status``: ``rejected`` (refused now) or
    ``allowed_warning`` (close to it). ``utilization``: 0.0–1.0 when known. ``source``: what said so
    (``event``, ``headers``, ``retry``, ``error``).
    """

    kind: LimitKind
    resets_at: float | None = None
    claim: str | None = None
    status: str = "rejected"
    utilization: float | None = None
    source: str = ""

    @property
    def name(self) -> str:
        return _NAMES[self.kind]

    @property
    def rejected(self) -> bool:
        return self.status == "rejected"

    @property
    def warning(self) -> bool:
        return self.status == "allowed_warning"

    @property
    def waitable(self) -> bool:
        """Refused now, with a known reset that a wait reaches (a spend cap is not waited for)."""
        return self.rejected and self.kind != "spend_cap" and self.resets_at is not None

    def seconds_left(self, now: float | None = None) -> float:
        if self.resets_at is None:
            return 0.0
        return max(0.0, self.resets_at - (time.time() if now is None else now))

    def describe(self, now: float | None = None) -> str:
        """One line: which limit, and until when (local time and how long from ``now``)."""
        if self.kind == "spend_cap":
            return "spend limit reached: the organisation's monthly spend cap refuses every request"
        if self.warning:
            used = f" ({self.utilization:.0%} used)" if self.utilization is not None else ""
            return f"close to the {self.name}{used}" + (
                f"; it resets at {until_text(self.resets_at, now)}" if self.resets_at else ""
            )
        if self.resets_at is None:
            return f"{self.name} reached (reset time unknown)"
        return f"{self.name} reached; it resets at {until_text(self.resets_at, now)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "resets_at": self.resets_at,
            "claim": self.claim,
            "status": self.status,
            "utilization": self.utilization,
            "source": self.source,
        }


def span_text(seconds: float) -> str:
    """``2 h 14 min``, ``3 min``, ``20 s``: how long, in the two largest units that matter."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


def until_text(resets_at: float, now: float | None = None) -> str:
    """``14:05 (in 2 h 14 min)`` in local time; the date is added when it is not today."""
    now = time.time() if now is None else now
    when, today = datetime.fromtimestamp(resets_at), datetime.fromtimestamp(now)
    clock = when.strftime("%H:%M:%S" if resets_at - now < 120 else "%H:%M")
    if when.date() != today.date():
        clock = when.strftime("%Y-%m-%d ") + clock
    return f"{clock} (in {span_text(max(0.0, resets_at - now))})"


def _kind_of_claim(claim: str | None) -> LimitKind:
    claim = (claim or "").lower()
    if claim.startswith(("five_hour", "5h")):
        return "five_hour"
    if claim.startswith(("seven_day", "7d")):
        return "seven_day"
    return "usage"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def limit_from_headers(headers: Any) -> UsageLimit | None:
    """The limit a response's ``anthropic-ratelimit-unified-*`` headers describe, or None.

    ``headers``: any mapping or object with ``get`` (httpx, requests, a dict; names in any case). ``status``
    ``rejected`` or ``allowed_warning`` makes a limit; ``allowed`` none. The reset is ``-reset``, else the
    window the claim names (``-5h-reset`` / ``-7d-reset``); a rejection whose overage is disabled for being out
    of credits, with no reset at all, is a spend cap.
    """

    def get(name: str) -> str | None:
        try:
            value = headers.get(_HEADER + name)
            if value is None and isinstance(headers, Mapping):
                value = next((v for k, v in headers.items() if str(k).lower() == _HEADER + name), None)
        except Exception:  # noqa: BLE001 - headers of an unknown client type
            return None
        return None if value is None else str(value)

    status = (get("status") or "").lower()
    if status not in ("rejected", "allowed_warning"):
        return None
    claim = get("representative-claim")
    kind = _kind_of_claim(claim)
    window = {"five_hour": "5h-reset", "seven_day": "7d-reset"}.get(kind)
    resets_at = _number(get("reset")) or (_number(get(window)) if window else None)
    if resets_at is None and status == "rejected" and get("overage-disabled-reason"):
        kind = "spend_cap"
    utilization = _number(get(f"{window[:2]}-utilization")) if window else None
    return UsageLimit(kind, resets_at, claim, status, utilization, "headers")


def _from_event(info: Any) -> UsageLimit | None:
    """A ``RateLimitEvent``'s info (the SDK's object, or its raw dict)."""

    def get(key: str) -> Any:
        return info.get(key) if isinstance(info, Mapping) else getattr(info, key, None)

    status = str(get("status") or "")
    if status not in ("rejected", "allowed_warning"):
        return None
    claim = get("rate_limit_type") or get("rateLimitType")
    resets_at = _number(get("resets_at") or get("resetsAt"))
    utilization = _number(get("utilization"))
    return UsageLimit(_kind_of_claim(claim), resets_at, claim, status, utilization, "event")


def _from_retry(data: Mapping[str, Any], now: float) -> UsageLimit | None:
    """The harness's ``api_retry`` notice: a 429 it will wait out for a long time is a limit with a reset."""
    if data.get("subtype") not in (None, "api_retry") or _number(data.get("error_status")) != 429:
        return None
    delay_ms = _number(data.get("retry_delay_ms"))
    if delay_ms is None or delay_ms / 1000 < LIMIT_RETRY_FLOOR_S:
        return None
    return UsageLimit("usage", round(now + delay_ms / 1000, 3), None, "rejected", None, "retry")


def _from_text(text: str) -> UsageLimit | None:
    if _SPEND_LIMIT.search(text):
        return UsageLimit("spend_cap", None, None, "rejected", None, "error")
    match = _LIMIT_WITH_EPOCH.search(text)
    if match:
        return UsageLimit("usage", float(match.group(1)), None, "rejected", None, "error")
    return None


def _from_mapping(obj: Mapping[str, Any], now: float) -> UsageLimit | None:
    if obj.get("subtype") == "api_retry" or "retry_delay_ms" in obj:
        return _from_retry(obj, now)
    info = obj.get("rate_limit_info")
    if isinstance(info, Mapping):
        return _from_event(info)
    headers = obj.get("headers")
    if headers is not None:
        found = limit_from_headers(headers)
        if found is not None:
            return found
    error = obj.get("error")
    details = error.get("details") if isinstance(error, Mapping) else obj.get("details")
    if isinstance(details, Mapping) and details.get("error_code") == "enforced_spend_limit_reached":
        return UsageLimit("spend_cap", None, None, "rejected", None, "error")
    texts = [obj.get(k) for k in ("message", "result", "text")]
    if isinstance(error, Mapping):
        texts.append(error.get("message"))
    return _first(_from_text(t) for t in texts if isinstance(t, str))


def _first(found: Any) -> UsageLimit | None:
    return next((limit for limit in found if limit is not None), None)


def _from_sdk(sdk: Any, obj: Any, now: float) -> UsageLimit | None | bool:
    """An SDK message's limit; False when ``obj`` is no SDK message this reads."""
    if isinstance(obj, sdk.RateLimitEvent):
        return _from_event(obj.rate_limit_info)
    if isinstance(obj, sdk.SystemMessage):
        return _from_retry(obj.data, now) if obj.subtype == "api_retry" and isinstance(obj.data, Mapping) else None
    if isinstance(obj, sdk.AssistantMessage):
        if obj.model != "<synthetic>" and obj.error is None:
            return None  # the model's own words are not the API's: a reply that mentions a spend limit is no cap
        return _first(_from_text(b.text) for b in obj.content if isinstance(b, sdk.TextBlock))
    if isinstance(obj, sdk.ResultMessage):
        texts = [obj.result or "", *(e for e in obj.errors or [] if isinstance(e, str))] if obj.is_error else []
        return _first(_from_text(t) for t in texts)
    return False


def _one(obj: Any, now: float) -> UsageLimit | None:
    if obj is None or isinstance(obj, bool):
        return None
    if isinstance(obj, UsageLimit):
        return obj
    if isinstance(obj, str):
        return _from_text(obj)
    if isinstance(obj, Mapping):
        return _from_mapping(obj, now)
    if isinstance(obj, BaseException):
        data = getattr(obj, "data", None)
        found = _from_mapping(data, now) if isinstance(data, Mapping) else None
        return found or _from_text(str(obj))
    sdk = sys.modules.get("claude_agent_sdk")
    if sdk is not None:
        read = _from_sdk(sdk, obj, now)
        if read is not False:
            return read if isinstance(read, UsageLimit) else None
    return None


def usage_limit(*signals: object, now: float | None = None) -> UsageLimit | None:
    """The usage limit the pieces of one failure (or one notice) describe, or None when none of them is one.

    Reads what `classify` reads — an error string, an API error body or a mapping with ``headers``, an
    exception, the SDK's ``RateLimitEvent``, ``AssistantMessage``, ``ResultMessage`` and the ``api_retry``
    ``SystemMessage`` (or their raw dicts). A spend cap wins over everything (it is final); then a refusal with
    a reset; then a warning. ``now`` (Unix time) dates a reset given as a delay.
    """
    moment = time.time() if now is None else now
    found = [limit for limit in (_one(s, moment) for s in signals) if limit is not None]
    ranked = sorted(found, key=_rank)  # stable: among equals, the first signal given wins
    return ranked[0] if ranked else None


def _rank(limit: UsageLimit) -> int:
    """A spend cap first (it is final), then a refusal with a reset, a refusal, a warning."""
    if limit.kind == "spend_cap":
        return 0
    if limit.rejected:
        return 1 if limit.resets_at is not None else 2
    return 3
