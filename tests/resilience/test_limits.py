"""Usage limits classified (flower_resilience._limits): from the unified rate-limit headers, the harness's
RateLimitEvent and api_retry notice, and the API's error text — a window with a reset told from a spend cap and
from an ordinary 429."""

from __future__ import annotations

import time
from datetime import datetime

import claude_agent_sdk as sdk
import pytest

from flower_resilience import LIMIT_RETRY_FLOOR_S, UsageLimit, limit_from_headers, span_text, until_text, usage_limit

NOW = 1_800_000_000.0
# What Claude Code 2.1.332 wrote for a refused request, as the scripted server's 429s produced it.
SPEND_CAP_TEXT = (
    "API Error: Request rejected (429) · You have reached your specified workspace API usage limits. "
    "You will regain access on 2027-01-01 at 00:00 UTC."
)
ORDINARY_429_TEXT = (
    "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."
)


def unified(status: str = "rejected", claim: str | None = "five_hour", **more: str) -> dict[str, str]:
    headers = {"anthropic-ratelimit-unified-status": status}
    if claim is not None:
        headers["anthropic-ratelimit-unified-representative-claim"] = claim
    headers.update({f"anthropic-ratelimit-unified-{k.replace('_', '-')}": v for k, v in more.items()})
    return headers


@pytest.mark.parametrize(
    ("claim", "kind"),
    [("five_hour", "five_hour"), ("seven_day", "seven_day"), ("seven_day_opus", "seven_day"), ("overage", "usage")],
)
def test_headers_name_the_window_and_its_reset(claim: str, kind: str) -> None:
    limit = limit_from_headers(unified(claim=claim, reset=str(int(NOW) + 600)))
    assert limit == UsageLimit(kind, NOW + 600, claim, "rejected", None, "headers")  # type: ignore[arg-type]
    assert limit.waitable and limit.seconds_left(NOW) == 600


def test_headers_without_a_reset_take_the_claimed_window_and_any_case() -> None:
    headers = {k.title(): v for k, v in unified(claim="seven_day", **{"7d_reset": "1800003600"}).items()}
    limit = limit_from_headers(headers)
    assert limit is not None and limit.kind == "seven_day" and limit.resets_at == 1_800_003_600


def test_allowed_says_nothing_a_warning_is_not_waited_for() -> None:
    assert limit_from_headers(unified(status="allowed")) is None
    assert limit_from_headers({"retry-after": "30"}) is None  # an ordinary 429: no unified headers
    warning = limit_from_headers(unified(status="allowed_warning", reset="1800000100", **{"5h_utilization": "0.9"}))
    assert warning is not None and warning.warning and not warning.waitable and warning.utilization == 0.9
    assert "close to the five-hour usage limit (90% used)" in warning.describe(NOW)


def test_a_rejection_out_of_credits_with_no_reset_is_a_spend_cap() -> None:
    limit = limit_from_headers(unified(claim=None, overage_disabled_reason="out_of_credits"))
    assert limit is not None and limit.kind == "spend_cap" and not limit.waitable


def test_the_harness_retry_notice_with_a_long_delay_is_a_limit_with_its_reset() -> None:
    notice = {"subtype": "api_retry", "attempt": 1, "error_status": 429, "error": "rate_limit", "retry_delay_ms": 20000}
    limit = usage_limit(notice, now=NOW)
    assert limit == UsageLimit("usage", NOW + 20, None, "rejected", None, "retry")
    short = {**notice, "retry_delay_ms": int(LIMIT_RETRY_FLOOR_S * 1000) - 1}
    assert usage_limit(short, now=NOW) is None, "an ordinary 429's backoff is the harness's to do"
    assert usage_limit({**notice, "error_status": 529}, now=NOW) is None


def test_sdk_messages_are_read() -> None:
    retry = sdk.SystemMessage(subtype="api_retry", data={"error_status": 429, "retry_delay_ms": 60_000})
    assert usage_limit(retry, now=NOW) == UsageLimit("usage", NOW + 60, None, "rejected", None, "retry")
    info = sdk.RateLimitInfo(status="rejected", resets_at=int(NOW) + 3600, rate_limit_type="seven_day")
    event = sdk.RateLimitEvent(rate_limit_info=info, uuid="u", session_id="s")
    assert usage_limit(event) == UsageLimit("seven_day", NOW + 3600, "seven_day", "rejected", None, "event")
    capped = sdk.AssistantMessage(content=[sdk.TextBlock(SPEND_CAP_TEXT)], model="<synthetic>", error="rate_limit")
    assert usage_limit(capped) is not None and usage_limit(capped).kind == "spend_cap"  # type: ignore[union-attr]
    ordinary = sdk.AssistantMessage(content=[sdk.TextBlock(ORDINARY_429_TEXT)], model="<synthetic>")
    assert usage_limit(ordinary) is None
    said = sdk.AssistantMessage(content=[sdk.TextBlock(f"The log says: {SPEND_CAP_TEXT}")], model="claude-sonnet-4-5")
    assert usage_limit(said) is None, "the model quoting a spend-cap notice is not one"


@pytest.mark.parametrize(
    "signal",
    [
        SPEND_CAP_TEXT,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "x",
                "details": {"error_code": "enforced_spend_limit_reached"},
            },
        },
        RuntimeError(SPEND_CAP_TEXT),
    ],
)
def test_a_spend_cap_is_read_from_text_bodies_and_exceptions(signal: object) -> None:
    limit = usage_limit(signal)
    assert limit is not None and limit.kind == "spend_cap" and not limit.waitable


def test_ordinary_errors_and_look_alikes_are_no_limit() -> None:
    for text in (ORDINARY_429_TEXT, "see line 429 of usage.py", "Connection refused", ""):
        assert usage_limit(text) is None, text
    assert usage_limit(None, 429, True) is None


def test_the_older_subscriber_notice_carries_its_reset() -> None:
    limit = usage_limit("Claude AI usage limit reached|1800007200")
    assert limit == UsageLimit("usage", 1_800_007_200, None, "rejected", None, "error")


def test_a_spend_cap_wins_over_a_reset_and_a_reset_over_a_warning() -> None:
    warning = limit_from_headers(unified(status="allowed_warning"))
    window = UsageLimit("five_hour", NOW + 60)
    assert usage_limit(warning, window) == window
    assert usage_limit(window, SPEND_CAP_TEXT).kind == "spend_cap"  # type: ignore[union-attr]


def test_spans_and_reset_times_read_as_people_say_them() -> None:
    assert [span_text(s) for s in (20, 180, 3600, 8040, 90000)] == ["20 s", "3 min", "1 h", "2 h 14 min", "1 d 1 h"]
    now = time.time()
    later = now + 8040
    clock = datetime.fromtimestamp(later).strftime("%H:%M")
    text = until_text(later, now)
    assert text.endswith(f"{clock} (in 2 h 14 min)")
    assert until_text(now + 20, now).endswith("(in 20 s)") and until_text(now + 20, now).count(":") == 2
    limit = UsageLimit("five_hour", later)
    assert limit.describe(now) == f"five-hour usage limit reached; it resets at {text}"
