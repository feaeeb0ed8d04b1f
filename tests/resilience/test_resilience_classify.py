"""classify: structured signals first, text last, fatal before transient, and no false fatals."""

from __future__ import annotations

import socket

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    CLIConnectionError,
    CLIJSONDecodeError,
    CLINotFoundError,
    ProcessError,
    RateLimitEvent,
    RateLimitInfo,
    ResultError,
    TextBlock,
)
from resilience._fakes import result, result_error

from flower_resilience import classify, http_status, is_pushback, retry_hint

# Texts Claude Code 2.1.332 produced against the scripted server (CLAUDE_CODE_MAX_RETRIES=0), as they appear
# in the synthetic AssistantMessage / ResultMessage.result, with what they must classify as.
BINARY_TEXTS = [
    ("Invalid API key · Fix external API key", "fatal"),
    (
        "Failed to authenticate. API Error: 403 Your API key does not have permission to use the specified resource.",
        "fatal",
    ),
    ("Credit balance is too low", "fatal"),
    (
        "Request too large (max 32MB). Accumulated images and attachments in the conversation pushed the request over the limit.",
        "fatal",
    ),
    (
        "API Error: Request rejected (429) · You have reached your specified workspace API usage limits. You will regain access on 2027-01-01 at 00:00 UTC.",
        "fatal",
    ),
    ("No conversation found with session ID: 91ac0164-5909-485e-a7af-b66b1494bfeb", "fatal"),
    (
        "API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.",
        "transient",
    ),
    ("API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)", "transient"),
    ("API Error: Request rejected (429) · Number of request tokens has exceeded your rate limit.", "transient"),
    (
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:39757).",
        "transient",
    ),
    (
        "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.",
        "transient",
    ),
    (
        "API Error: 504 Request timed out. This is a server-side issue, usually temporary — try again in a moment.",
        "transient",
    ),
    ("API Error: 408 Request timed out", "transient"),
    ("API Error: 409 conflict", "transient"),
    ("API Error: Can't reach the API server (ENOTFOUND api.anthropic.com)", "transient"),
]

# Error texts as the Messages API, the SDK and the network stack write them, and the kind each must get.
ANCHOR_TEXTS = [
    (
        "invalid_request_error: messages.3: `tool_use` ids were found without `tool_result` blocks immediately after",
        "fatal",
    ),
    ("messages: text content blocks must be non-empty", "fatal"),
    ("authentication_error: invalid x-api-key", "fatal"),
    ("billing_error: your credit balance is too low", "fatal"),
    ("permission_error: Your API key does not have permission to use the specified resource.", "fatal"),
    ("not_found_error: model: claude-nope", "fatal"),
    ("request_too_large: Request exceeds the maximum allowed number of bytes.", "fatal"),
    ("rate_limit_error: enforced_spend_limit_reached", "fatal"),
    ("Error code: 401 - {'type': 'error', 'error': {'type': 'authentication_error'}}", "fatal"),
    ("HTTP/1.1 403 Forbidden", "fatal"),
    ("CLINotFoundError: Claude Code not found", "fatal"),
    ("Reached maximum budget ($1.00)", "fatal"),
    ("error_max_turns", "fatal"),
    ("rate_limit_error: Number of request tokens has exceeded your per-minute rate limit", "transient"),
    ("overloaded_error: Overloaded", "transient"),
    ("api_error: Internal server error", "transient"),
    ("conflict_error", "transient"),
    ("timeout_error: Request timed out", "transient"),
    ("503 Service Unavailable", "transient"),
    ("502 Bad Gateway", "transient"),
    ("status code 529", "transient"),
    ("getaddrinfo EAI_AGAIN api.anthropic.com", "transient"),
    ("socket hang up", "transient"),
    ("TypeError: fetch failed", "transient"),
    ("connect ETIMEDOUT 160.79.104.10:443", "transient"),
    ("write EPIPE", "transient"),
    ("connect EHOSTUNREACH 10.0.0.1:443", "transient"),
    ("ENETDOWN", "transient"),
    ("Network error", "transient"),
    ("too many requests", "transient"),
    ("service temporarily unavailable", "transient"),
]

TRAPS = [
    # Fatal must win over the "connection" that auth failures often mention.
    ("401 unauthorized: connection error", "fatal"),
    ("Unauthorized. Connection error while refreshing the token", "fatal"),
    # Stray numbers are not HTTP statuses.
    ("see line 400", "unknown"),
    ("ECONNREFUSED 127.0.0.1:4000", "transient"),
    ("connect ECONNREFUSED 127.0.0.1:400", "transient"),
    ("wrote report_401.txt and then the connection was reset", "transient"),
    ("listening on port 403", "unknown"),
    ("Build finished: 404 files compiled", "unknown"),
    ("File /tmp/out-400.log is empty", "unknown"),
    ("line 401 of handler.py", "unknown"),
    # Words a text-only classifier takes for fatal: here they stop nothing.
    ("bash: ./deploy.sh: Permission denied", "unknown"),
    ("the token budget for this section is large", "unknown"),
    ("", "unknown"),
]


@pytest.mark.parametrize(("text", "kind"), BINARY_TEXTS + ANCHOR_TEXTS + TRAPS)
def test_text(text: str, kind: str) -> None:
    assert classify(text) == kind


def synthetic(code: str, text: str = "API Error: something") -> AssistantMessage:
    return AssistantMessage(content=[TextBlock(text)], model="<synthetic>", error=code)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("authentication_failed", "fatal"),
        ("billing_error", "fatal"),
        ("invalid_request", "fatal"),
        ("rate_limit", "transient"),
        ("server_error", "transient"),
        ("unknown", "unknown"),
    ],
)
def test_assistant_message_error_codes(code: str, kind: str) -> None:
    assert classify(synthetic(code, "something went wrong")) == kind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "fatal"),
        (401, "fatal"),
        (402, "fatal"),
        (403, "fatal"),
        (404, "fatal"),
        (413, "fatal"),
        (422, "fatal"),
        (408, "transient"),
        (409, "transient"),
        (429, "transient"),
        (500, "transient"),
        (502, "transient"),
        (503, "transient"),
        (504, "transient"),
        (529, "transient"),
    ],
)
def test_http_statuses(status: int, kind: str) -> None:
    assert classify(status) == kind
    assert classify(result("s", ok=False, status=status, text="x")) == kind
    assert classify({"api_error_status": status}) == kind


def test_structured_status_beats_the_text() -> None:
    # 408 comes with AssistantMessage.error == "unknown" and a text that says nothing useful.
    assert (
        classify(synthetic("unknown", "API Error: 408 Request timed out"), result("s", ok=False, status=408))
        == "transient"
    )
    # A 500 whose text happens to mention "unauthorized" is still a 500.
    assert classify(result("s", ok=False, status=500, text="upstream said unauthorized")) == "transient"


def test_spend_limit_429_is_fatal_whatever_the_status_says() -> None:
    text = "API Error: Request rejected (429) · You have reached your specified workspace API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."
    assert classify(synthetic("rate_limit", text), result("s", ok=False, status=429, text=text)) == "fatal"
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend limit reached",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    assert classify(body) == "fatal"
    assert classify({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}) == "transient"


def test_401_stops_even_when_the_text_says_connection() -> None:
    assert (
        classify(
            synthetic("authentication_failed", "connection error: invalid api key"), result("s", ok=False, status=401)
        )
        == "fatal"
    )


def test_sdk_exceptions() -> None:
    res = result("s", ok=False, status=529, text="API Error: 529 Overloaded")
    assert classify(result_error(res)) == "transient"
    assert classify(result_error(result("s", ok=False, status=401, text="Invalid API key"))) == "fatal"
    assert classify(CLINotFoundError("Claude Code not found", "/nope/claude")) == "fatal"
    assert classify(ProcessError("Command failed with exit code 143", exit_code=143)) == "unknown"
    assert classify(CLIConnectionError("ProcessTransport is not ready for writing")) == "unknown"
    max_turns = ResultError("error", data={"subtype": "error_max_turns", "is_error": True})
    assert classify(max_turns) == "fatal"
    # A line of the harness larger than the SDK's buffer: the same launch fails alike every time (not retried).
    too_big = CLIJSONDecodeError(
        "JSON message exceeded maximum buffer size of 1048576 bytes", ValueError("Buffer size 4194304 exceeds limit")
    )
    assert classify(too_big) == "fatal"
    assert classify("Failed to decode JSON: JSON message exceeded maximum buffer size of 1048576 bytes...") == "fatal"


def test_python_exceptions_and_their_causes() -> None:
    assert classify(ConnectionResetError(104, "Connection reset by peer")) == "transient"
    assert classify(TimeoutError()) == "transient"
    assert classify(socket.gaierror(-3, "Temporary failure in name resolution")) == "transient"
    assert classify(ValueError("session_store requires cwd")) == "fatal"
    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as exc:
            raise RuntimeError("the store is unavailable") from exc
    except RuntimeError as wrapped:
        assert classify(wrapped) == "transient"
    assert classify(RuntimeError("something odd")) == "unknown"


class _Response:
    status_code = 429
    headers = {"retry-after": "7"}


class _HttpError(Exception):
    response = _Response()


def test_http_client_style_errors_and_hints() -> None:
    assert classify(_HttpError("Too Many Requests")) == "transient"
    assert retry_hint(_HttpError("x")) == 7.0
    assert retry_hint({"headers": {"retry-after-ms": "1500"}}) == 1.5
    assert retry_hint("Rate limited. Retry after 12 seconds.") == 12.0
    assert retry_hint("please try again in 250ms") == 0.25
    assert retry_hint("API Error: 529 Overloaded. try again in a moment") is None
    assert retry_hint("ECONNRESET") is None


def test_rate_limit_event_reset_time_is_a_hint() -> None:
    import time

    info = RateLimitInfo(status="rejected", resets_at=int(time.time()) + 30)
    event = RateLimitEvent(rate_limit_info=info, uuid="u", session_id="s")
    assert classify(event) == "transient"
    hint = retry_hint(event)
    assert hint is not None and 25 <= hint <= 31


def test_several_pieces_together() -> None:
    notice = synthetic("server_error", "API Error: Connection dropped (ECONNRESET).")
    res = result("s", ok=False, text=notice.content[0].text)  # type: ignore[union-attr]
    assert classify(notice, res, result_error(res)) == "transient"
    assert classify(None) == "unknown" and classify() == "unknown"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ("API Error: 500 Internal server error", 500),
        ("Request rejected (429) · slow", 429),
        ("see line 400", None),
        ("ECONNREFUSED 127.0.0.1:4000", None),
        (401, 401),
    ],
)
def test_http_status(error: object, status: int | None) -> None:
    assert http_status(error) == status


# --- pushback: the server is up and asks us to slow down (an outage in between does not lift it) ----------

PUSHBACK = [
    "API Error: Request rejected (429) · Number of request tokens has exceeded your rate limit.",
    "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.",
    "Too many requests",
    429,
    529,
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
]
NOT_PUSHBACK = [
    "API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.",
    "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)",
    "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.",
    "API Error: 503 Service Unavailable",
    "ECONNREFUSED 127.0.0.1:429",  # a port, not a status
    503,
    None,
]


@pytest.mark.parametrize("error", PUSHBACK)
def test_pushback(error: object) -> None:
    assert is_pushback(error)


@pytest.mark.parametrize("error", NOT_PUSHBACK)
def test_not_pushback(error: object) -> None:
    assert not is_pushback(error)


def test_pushback_from_structured_sdk_signals() -> None:
    assert is_pushback(synthetic("rate_limit"))
    assert not is_pushback(synthetic("server_error"))
    assert is_pushback(RateLimitEvent(RateLimitInfo(status="rejected", resets_at=None), uuid="u", session_id="s"))
    assert not is_pushback(RateLimitEvent(RateLimitInfo(status="allowed_warning"), uuid="u", session_id="s"))
    assert is_pushback(result("s", ok=False, status=529, text="x"))
