"""Is a failure worth retrying? Structured signals first (HTTP status, the SDK's error codes), text last.

Text alone misleads: if any ``400``/``401``/``403``/``404``, ``permission denied`` or ``budget`` anywhere in a
message were fatal, a port, a file name or "see line 400" would stop a run that should wait (see
docs/compatibility.md). So a number counts as an HTTP status only where an HTTP status is written ("API Error: 500", "status 401",
"(429)", "503 Service Unavailable"), and the words are the API's own error vocabulary.

Fatal is still tested before transient within each layer: an auth failure's text often also says
"connection", and the reverse order would wait forever on a bad key.
"""

from __future__ import annotations

import email.utils
import re
import socket
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ErrorKind", "classify", "http_status", "is_pushback", "retry_hint"]

ErrorKind = Literal["fatal", "transient", "unknown"]

# --- structured vocabularies -------------------------------------------------------------------------

# claude_agent_sdk.types.AssistantMessageError ("unknown" says nothing, so it is not listed).
_ASSISTANT_ERRORS: dict[str, ErrorKind] = {
    "authentication_failed": "fatal",
    "billing_error": "fatal",
    "invalid_request": "fatal",
    "rate_limit": "transient",
    "server_error": "transient",
}

# The Messages API's ``error.type`` values (platform docs, "Errors").
_API_ERROR_TYPES: dict[str, ErrorKind] = {
    "invalid_request_error": "fatal",
    "authentication_error": "fatal",
    "billing_error": "fatal",
    "permission_error": "fatal",
    "not_found_error": "fatal",
    "request_too_large": "fatal",
    "rate_limit_error": "transient",
    "api_error": "transient",
    "timeout_error": "transient",
    "overloaded_error": "transient",
    "conflict_error": "transient",
}

# The server is up and asks us to slow down: waiting out a network outage does not cure these. (A 503 or a
# 500 is not here: after an outage it was most likely the endpoint going away.)
_PUSHBACK_STATUSES = {429, 529}
_PUSHBACK_CODES = {"rate_limit", "rate_limit_error", "overloaded_error"}
_PUSHBACK_TEXT = re.compile(r"\boverloaded(?:_error)?\b|rate[ _-]?limit|too many requests", re.IGNORECASE)

# ResultMessage.subtype / terminal_reason values that a retry would only repeat.
_FATAL_RESULT_REASONS = {"error_max_turns", "error_max_budget_usd", "error_max_structured_output_retries", "max_turns"}

# Python exceptions that mean the program, not the network, is wrong: retrying repeats them.
_PROGRAMMING_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, NotImplementedError, ImportError)
_NETWORK_ERRORS = (ConnectionError, TimeoutError, socket.gaierror, socket.herror)


def _status_kind(status: int) -> ErrorKind | None:
    # The official SDK's rule: 408, 409, 429 and every 5xx are retried; the other 4xx are the request's fault.
    if status in (408, 409, 429) or 500 <= status <= 599:
        return "transient"
    if 400 <= status <= 499:
        return "fatal"
    return None


# --- text rules ----------------------------------------------------------------------------------------

_REASON_PHRASES: dict[int, str] = {
    400: r"bad request",
    401: r"unauthori[sz]ed",
    402: r"payment required",
    403: r"forbidden",
    404: r"not found",
    405: r"method not allowed",
    408: r"request time-?out",
    409: r"conflict",
    413: r"(?:request entity|payload|request) too large",
    422: r"unprocessable",
    429: r"too many requests",
    500: r"internal server error",
    502: r"bad gateway",
    503: r"service unavailable",
    504: r"gateway time-?out",
    529: r"overloaded",
}

# Where a three-digit number is an HTTP status: after the words that introduce one, or alone in parentheses
# ("Request rejected (429)"). Never after ":" (a port), "line", "_" or inside a longer number.
_STATUS_AFTER_WORD = re.compile(
    r"(?:api error|http(?:/\d(?:\.\d)?)?|status(?:[ _-]?code)?|error[ _-]?code|response code|returned|responded with)"
    r"\s*[:=#]?\s*\(?\s*([1-5]\d\d)(?!\d|[.:]\d)",
    re.IGNORECASE,
)
_STATUS_IN_PARENS = re.compile(r"\(\s*([45]\d\d)\s*\)")
_STATUS_WITH_PHRASE = re.compile(r"(?<![\w.:/-])([45]\d\d)\s*[-:]?\s+(?P<phrase>[a-z][a-z -]{2,40})", re.IGNORECASE)

# A 429 (or a 400) can mean the org/workspace spend limit: not transient, the pause lasts until next month.
_SPEND_LIMIT = re.compile(
    r"spend(?:ing)?[ _]limit|enforced_spend_limit_reached|(?:workspace|organization|org) api usage limits?|"
    r"usage limits?.{0,80}regain access|credit balance|insufficient[ _]quota|quota exceeded",
    re.IGNORECASE,
)

_FATAL_TEXT = re.compile(
    "|".join(
        [
            r"invalid[ _-]?(?:x-)?api[ _-]?key",
            r"authentication[ _](?:error|failed)",
            r"failed to authenticate",
            r"\bunauthori[sz]ed\b",
            r"invalid bearer token",
            r"oauth token (?:has )?(?:expired|been revoked)",
            r"permission_error",
            r"does not have permission to use",
            r"billing[ _]error",
            r"not_found_error",
            r"invalid_request(?:_error)?",
            r"request_too_large|request too large",
            r"prompt is too long",
            r"tool_use. ids were found without .?tool_result",
            r"text content blocks must be non-empty",
            r"error_max_turns|\bmax_turns\b|maximum number of turns",
            r"reached maximum budget|error_max_budget|max_budget_usd",
            r"CLINotFound|Claude Code not found",
            r"no conversation found with session id",
            r"resume rejected by --resume-drops-turn",
            r"organization has been disabled",
            # The SDK's reader refused one line of the harness's output as too large (a fork or resume of a big
            # session mirrors it in one line): the same launch fails the same way every time, after paid requests.
            r"exceeded maximum buffer size",
        ]
    ),
    re.IGNORECASE,
)

_TRANSIENT_TEXT = re.compile(
    "|".join(
        [
            r"\b(?:ENOTFOUND|EAI_AGAIN|ECONNRESET|ECONNREFUSED|ECONNABORTED|ETIMEDOUT|EPIPE|EHOSTUNREACH|EHOSTDOWN|"
            r"ENETDOWN|ENETUNREACH|ENETRESET)\b",
            r"\bUND_ERR_\w+",
            r"socket hang ?up",
            r"fetch failed",
            r"network (?:error|is unreachable)",
            r"connection (?:was |has been |got )?(?:error|refused|reset|dropped|closed|aborted|timed out|lost)",
            r"can(?:'|no)t reach the api server|unable to connect",
            r"temporary failure in name resolution|name or service not known|no route to host",
            r"\boverloaded(?:_error)?\b",
            r"rate[ _-]?limit",
            r"too many requests",
            r"\btime[ -]?out\b|\btimed out\b|timeout_error",
            r"temporarily unavailable|service unavailable|internal server error|bad gateway|gateway time-?out",
            r"server-side issue",
            r"\bapi_error\b|\bconflict_error\b",
        ]
    ),
    re.IGNORECASE,
)


def _statuses_in_text(text: str) -> list[int]:
    found = [int(m.group(1)) for m in _STATUS_AFTER_WORD.finditer(text)]
    found += [int(m.group(1)) for m in _STATUS_IN_PARENS.finditer(text)]
    for m in _STATUS_WITH_PHRASE.finditer(text):
        status = int(m.group(1))
        phrase = _REASON_PHRASES.get(status)
        if phrase and re.match(phrase, m.group("phrase"), re.IGNORECASE):
            found.append(status)
    return found


def _text_kind(text: str) -> ErrorKind | None:
    if not text.strip():
        return None
    if _SPEND_LIMIT.search(text):
        return "fatal"
    kinds = [_status_kind(s) for s in _statuses_in_text(text)]
    if "fatal" in kinds or _FATAL_TEXT.search(text):
        return "fatal"
    if "transient" in kinds or _TRANSIENT_TEXT.search(text):
        return "transient"
    return None


# --- gathering signals from whatever the caller has ----------------------------------------------------


@dataclass
class _Signals:
    statuses: list[int] = field(default_factory=list)
    structured: list[ErrorKind] = field(default_factory=list)  # from SDK error codes, API error types, reasons
    exception_kinds: list[ErrorKind] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    hints: list[float] = field(default_factory=list)
    pushback: bool = False  # a structured "slow down": a rate limit or an overload


def _sdk() -> Any:
    # An SDK object can only exist once the SDK is imported; checking sys.modules keeps this module's import
    # free of the SDK's (slow) import for callers that classify plain strings, like a CLI's doctor.
    return sys.modules.get("claude_agent_sdk")


def _as_status(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
        return int(value)
    return None


def _gather(obj: Any, into: _Signals, depth: int = 0) -> None:
    if obj is None or depth > 6:
        return
    if isinstance(obj, str):
        into.texts.append(obj)
        return
    if isinstance(obj, bool):
        return
    if isinstance(obj, int):
        status = _as_status(obj)
        if status is not None:
            into.statuses.append(status)
        return
    if isinstance(obj, BaseException):
        _gather_exception(obj, into, depth)
        return
    if isinstance(obj, Mapping):
        _gather_mapping(obj, into, depth)
        return
    if isinstance(obj, (list, tuple)):
        for item in obj:
            _gather(item, into, depth + 1)
        return
    sdk = _sdk()
    if sdk is not None and _gather_sdk_message(sdk, obj, into):
        return
    into.texts.append(str(obj))


def _gather_sdk_message(sdk: Any, obj: Any, into: _Signals) -> bool:
    if isinstance(obj, sdk.AssistantMessage):
        code = obj.error
        if code in _ASSISTANT_ERRORS:
            into.structured.append(_ASSISTANT_ERRORS[code])
        into.pushback = into.pushback or code in _PUSHBACK_CODES
        into.texts.extend(b.text for b in obj.content if isinstance(b, sdk.TextBlock))
        return True
    if isinstance(obj, sdk.ResultMessage):
        status = _as_status(obj.api_error_status)
        if status is not None:
            into.statuses.append(status)
        for reason in (obj.subtype, obj.terminal_reason):
            if reason in _FATAL_RESULT_REASONS:
                into.structured.append("fatal")
        if obj.is_error:
            if obj.result:
                into.texts.append(obj.result)
            into.texts.extend(e for e in obj.errors or [] if isinstance(e, str))
        return True
    if isinstance(obj, sdk.RateLimitEvent):
        info = obj.rate_limit_info
        if info.status == "rejected":
            into.structured.append("transient")
            into.pushback = True
            if info.resets_at:
                into.hints.append(max(0.0, float(info.resets_at) - time.time()))
        return True
    return False


def _gather_mapping(obj: Mapping[str, Any], into: _Signals, depth: int) -> None:
    for key in ("api_error_status", "status", "status_code"):
        status = _as_status(obj.get(key))
        if status is not None:
            into.statuses.append(status)
    for key in ("subtype", "terminal_reason"):
        if obj.get(key) in _FATAL_RESULT_REASONS:
            into.structured.append("fatal")
    error = obj.get("error")
    if any(isinstance(code, str) and code in _PUSHBACK_CODES for code in (error, obj.get("type"))):
        into.pushback = True
    if isinstance(error, str):
        if error in _ASSISTANT_ERRORS:
            into.structured.append(_ASSISTANT_ERRORS[error])
        elif error in _API_ERROR_TYPES:
            into.structured.append(_API_ERROR_TYPES[error])
        else:
            into.texts.append(error)
    elif isinstance(error, Mapping):  # the API's {"type": "error", "error": {"type", "message"}} body
        _gather_mapping(error, into, depth + 1)
    kind = obj.get("type")
    if isinstance(kind, str) and kind in _API_ERROR_TYPES:
        into.structured.append(_API_ERROR_TYPES[kind])
    details = obj.get("details")
    if isinstance(details, Mapping) and details.get("error_code") == "enforced_spend_limit_reached":
        into.structured.append("fatal")
    for key in ("message", "result"):
        if isinstance(obj.get(key), str):
            into.texts.append(obj[key])
    errors = obj.get("errors")
    if isinstance(errors, list):
        into.texts.extend(e for e in errors if isinstance(e, str))
    headers = obj.get("headers")
    if isinstance(headers, Mapping):
        hint = _hint_from_headers(headers)
        if hint is not None:
            into.hints.append(hint)
    for key in ("retry_after", "retry-after"):
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            into.hints.append(float(value))


def _gather_exception(exc: BaseException, into: _Signals, depth: int) -> None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        sdk = _sdk()
        if sdk is not None and isinstance(current, sdk.CLINotFoundError):
            into.exception_kinds.append("fatal")
        elif sdk is not None and isinstance(current, sdk.ResultError):
            _gather_mapping(current.data, into, depth + 1)
        elif isinstance(current, _NETWORK_ERRORS):
            into.exception_kinds.append("transient")
        elif isinstance(current, _PROGRAMMING_ERRORS):
            into.exception_kinds.append("fatal")
        for attr in ("api_error_status", "status_code", "status"):
            status = _as_status(getattr(current, attr, None))
            if status is not None:
                into.statuses.append(status)
        response = getattr(current, "response", None)
        if response is not None:
            status = _as_status(getattr(response, "status_code", None))
            if status is not None:
                into.statuses.append(status)
            headers = getattr(response, "headers", None)
            if isinstance(headers, Mapping) or hasattr(headers, "get"):
                hint = _hint_from_headers(headers)
                if hint is not None:
                    into.hints.append(hint)
        retry_after = getattr(current, "retry_after", None)
        if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
            into.hints.append(float(retry_after))
        body = getattr(current, "body", None)
        if isinstance(body, Mapping):
            _gather_mapping(body, into, depth + 1)
        text = str(current)
        into.texts.append(f"{type(current).__name__}: {text}" if text else type(current).__name__)
        current = current.__cause__ or current.__context__


def _signals(errors: Iterable[Any]) -> _Signals:
    gathered = _Signals()
    for error in errors:
        _gather(error, gathered)
    return gathered


def classify(*errors: object) -> ErrorKind:
    """``"fatal"``, ``"transient"`` or ``"unknown"`` for one failure, described by any of its pieces.

    Pass whatever you have — an error string, an HTTP status, an exception (its ``__cause__`` chain is
    walked), the SDK's ``AssistantMessage`` / ``ResultMessage`` / ``RateLimitEvent``, a ``ResultError``, an
    API error body — alone or several together: ``classify(assistant_message, result_message, exc)``.

    Order: a spend-limit notice (fatal, whatever its status) → HTTP status → the SDK's and the API's error
    codes → the exception's type → the text. Nothing recognisable → ``"unknown"``.
    """
    signals = _signals(errors)
    text = "\n".join(t for t in signals.texts if t)
    if _SPEND_LIMIT.search(text):
        return "fatal"
    for layer in ([_status_kind(s) for s in signals.statuses], signals.structured, signals.exception_kinds):
        kinds = [k for k in layer if k is not None]
        if "fatal" in kinds:
            return "fatal"
        if "transient" in kinds:
            return "transient"
    return _text_kind(text) or "unknown"


def http_status(*errors: object) -> int | None:
    """The HTTP status of a failure, when one is known (structured first, then written in the text)."""
    signals = _signals(errors)
    if signals.statuses:
        return signals.statuses[0]
    for text in signals.texts:
        found = _statuses_in_text(text)
        if found:
            return found[0]
    return None


_HINT_TEXT = re.compile(
    r"(?:retry[- ]after|try again in|retry in|wait)\s*[:=]?\s*(\d+(?:\.\d+)?)\s*"
    r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b",
    re.IGNORECASE,
)


def _seconds(value: str, unit: str | None) -> float:
    amount = float(value)
    unit = (unit or "s").lower()
    if unit.startswith(("ms", "milli")):
        return amount / 1000
    if unit.startswith("m"):
        return amount * 60
    return amount


def _hint_from_headers(headers: Any) -> float | None:
    def get(name: str) -> Any:
        try:
            return headers.get(name) or headers.get(name.title())
        except Exception:  # noqa: BLE001 - headers of an unknown client type
            return None

    raw_ms = get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:  # an HTTP-date
        when = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_hint(*errors: object) -> float | None:
    """Seconds the server asked us to wait (``retry-after`` header or text, a rate limit's reset), or None."""
    signals = _signals(errors)
    if signals.hints:
        return signals.hints[0]
    for text in signals.texts:
        match = _HINT_TEXT.search(text)
        if match:
            return _seconds(match.group(1), match.group(2))
    return None


def is_pushback(*errors: object) -> bool:
    """Did the server refuse for load — a rate limit (429) or an overload (529) — rather than go away?

    Such a failure needs its backoff even when the endpoint was unreachable for a while in between: the
    limit is the server's, and a network outage does not lift it. Same inputs as `classify`.
    """
    signals = _signals(errors)
    if signals.pushback or any(s in _PUSHBACK_STATUSES for s in signals.statuses):
        return True
    for text in signals.texts:
        if any(s in _PUSHBACK_STATUSES for s in _statuses_in_text(text)) or _PUSHBACK_TEXT.search(text):
            return True
    return False
