"""The scripted Messages API behaves like the parts of the real one the tests depend on."""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any

import pytest

from flower_cli.testing import (
    Drop,
    Hang,
    Outage,
    ScriptedServer,
    ScriptStep,
    Text,
    ToolUse,
    overloaded,
    rate_limited,
    unauthorized,
    validate_messages,
)


def post(
    server: ScriptedServer, body: dict[str, Any], path: str = "/v1/messages", timeout: float = 10
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


USER = {"role": "user", "content": "hi"}


def test_streams_text_and_tool_use_with_usage(scripted_api: ScriptedServer) -> None:
    scripted_api.script(ToolUse("Bash", {"command": "ls"}, text="Looking."))
    status, headers, raw = post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = sse_events(raw)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    usage = events[0]["message"]["usage"]
    assert set(usage) == {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"] and starts[1]["name"] == "Bash"
    partial = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(partial) == {"command": "ls"}
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_non_streaming_reply_and_count_tokens(scripted_api: ScriptedServer) -> None:
    scripted_api.script(Text("pong"))
    status, _, raw = post(scripted_api, {"model": "m", "max_tokens": 16, "messages": [USER]})
    message = json.loads(raw)
    assert (
        status == 200
        and message["content"] == [{"type": "text", "text": "pong"}]
        and message["stop_reason"] == "end_turn"
    )
    status, _, raw = post(scripted_api, {"model": "m", "messages": [USER]}, path="/v1/messages/count_tokens")
    assert status == 200 and json.loads(raw)["input_tokens"] > 0
    assert len(scripted_api.message_requests) == 1  # count_tokens is not a model call


@pytest.mark.parametrize(
    ("reply", "status", "error_type"),
    [
        (unauthorized(), 401, "authentication_error"),
        (rate_limited(7), 429, "rate_limit_error"),
        (overloaded(), 529, "overloaded_error"),
    ],
)
def test_scripted_error_statuses(scripted_api: ScriptedServer, reply: Any, status: int, error_type: str) -> None:
    scripted_api.script(reply)
    got, headers, raw = post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    assert got == status and json.loads(raw)["error"]["type"] == error_type
    if status == 429:
        assert headers["retry-after"] == "7"


def test_unanswered_tool_use_is_rejected_with_the_api_wording(scripted_api: ScriptedServer) -> None:
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_x1", "name": "Bash", "input": {"command": "ls"}}],
        },
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
    ]
    scripted_api.script(Text("never sent"))
    status, _, raw = post(scripted_api, {"model": "m", "stream": True, "messages": messages})
    assert status == 400
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x1. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    assert scripted_api.pending == 1, "a rejected request must not consume a step"
    assert scripted_api.rejected[0][1] == error["message"]


def test_validation_rules() -> None:
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    assert validate_messages([USER, call, answer]) is None
    # Claude Code's own system reminders between turns do not break the pairing.
    assert validate_messages([USER, call, {"role": "system", "content": "note"}, answer]) is None
    assert "without `tool_result`" in (validate_messages([USER, call]) or "")
    stray = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}
    assert "unexpected `tool_use_id`" in (validate_messages([USER, {"role": "assistant", "content": "a"}, stray]) or "")
    assert (
        validate_messages([{"role": "user", "content": [{"type": "text", "text": ""}]}])
        == "messages: text content blocks must be non-empty"
    )
    assert "non-whitespace" in (
        validate_messages([{"role": "user", "content": [{"type": "text", "text": "  "}]}]) or ""
    )


def test_drop_cuts_the_stream_before_message_stop(scripted_api: ScriptedServer) -> None:
    scripted_api.script(Drop(partial="half an ans"))
    try:
        _, _, raw = post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    except (http.client.IncompleteRead, ConnectionError) as exc:  # either is a dropped stream
        raw = getattr(exc, "partial", b"")
    assert b"message_stop" not in raw


def test_outage_goes_away_and_comes_back_on_the_same_port(scripted_api: ScriptedServer) -> None:
    port = scripted_api.port
    scripted_api.script(Outage(seconds=None), Text("back"))
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, OSError)):
        post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    scripted_api.wait_for(lambda s: not s.running, timeout=10)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    scripted_api.start()
    assert scripted_api.port == port
    status, _, _ = post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    assert status == 200


def test_timed_outage_restarts_by_itself(scripted_api: ScriptedServer) -> None:
    scripted_api.script(Outage(seconds=0.5), Text("back"))
    with pytest.raises(OSError):
        post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
    deadline = time.monotonic() + 10
    while True:
        try:
            status, _, _ = post(scripted_api, {"model": "m", "stream": True, "messages": [USER]})
            break
        except OSError:
            assert time.monotonic() < deadline, "server did not come back"
            time.sleep(0.05)
    assert status == 200


def test_hang_accepts_and_never_answers(scripted_api: ScriptedServer) -> None:
    scripted_api.script(Hang())
    started = time.monotonic()
    with pytest.raises((TimeoutError, socket.timeout)):
        post(scripted_api, {"model": "m", "stream": True, "messages": [USER]}, timeout=0.5)
    assert time.monotonic() - started < 5
    assert scripted_api.message_requests[0].status is None


def test_steps_with_conditions_wait_for_their_request(scripted_api: ScriptedServer) -> None:
    scripted_api.script(
        ScriptStep(Text("for the worker"), when=lambda r: "worker" in r.first_user_text), Text("for anyone")
    )
    _, _, raw = post(scripted_api, {"model": "m", "messages": [USER]})
    assert json.loads(raw)["content"][0]["text"] == "for anyone"
    _, _, raw = post(scripted_api, {"model": "m", "messages": [{"role": "user", "content": "you are the worker"}]})
    assert json.loads(raw)["content"][0]["text"] == "for the worker"
    _, _, raw = post(scripted_api, {"model": "m", "messages": [USER]})
    assert scripted_api.unscripted and "no step left" in json.loads(raw)["content"][0]["text"]


# --- routing several agents: roles, workers, notifications ----------------------------------------------

from flower_cli.testing import (  # noqa: E402 - this section's names, introduced where they are used
    After,
    RecordedRequest,
    Turn,
    dispatch,
    keyed,
    seen,
    when_main,
    when_notified,
    when_prompt,
    when_subagent,
    when_system,
)

NOTIFICATION = (
    "<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n<task-id>a1</task-id>\n"
    "<status>completed</status>\n<result>ALPHA-DONE</result>\n</task-notification>\n</system-reminder>"
)


def request(system: str = "", messages: list[dict[str, Any]] | None = None) -> RecordedRequest:
    body = {"model": "m", "system": [{"type": "text", "text": system}], "messages": messages or [USER]}
    return RecordedRequest("POST", "/v1/messages", {}, json.dumps(body).encode())


def answer(server: ScriptedServer, system: str = "", messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    _, _, raw = post(
        server, {"model": "m", "system": [{"type": "text", "text": system}], "messages": messages or [USER]}
    )
    return json.loads(raw)  # type: ignore[no-any-return]


def test_matches_compose_and_read_role_worker_and_notification() -> None:
    coordinator = request("x-anthropic-billing-header: cc_version=2; # How you coordinate")
    worker = request(
        "x-anthropic-billing-header: cc_version=2; cc_is_subagent=true; You code.",
        [{"role": "user", "content": "PIECE-A"}],
    )
    woken = request(
        "# How you coordinate",
        [
            USER,
            {"role": "assistant", "content": "waiting"},
            {"role": "user", "content": [{"type": "text", "text": NOTIFICATION}]},
        ],
    )
    role = when_system("How you coordinate")
    assert role(coordinator) and not role(worker) and when_subagent()(worker) and when_main()(coordinator)
    assert (role & ~when_notified())(coordinator) and not (role & ~when_notified())(woken)
    assert when_notified("ALPHA-DONE")(woken) and not when_notified("BETA")(woken) and not when_notified()(coordinator)
    assert (when_prompt("PIECE-A") | role)(worker) and (when_prompt("PIECE-A") | role)(coordinator)
    assert woken.notifications == [
        NOTIFICATION[NOTIFICATION.index("<task-notification>") : NOTIFICATION.index("\n</system-reminder>")]
    ]
    assert "How you coordinate" in repr(role & ~when_notified())


def test_a_dispatch_queues_the_workers_own_script(scripted_api: ScriptedServer) -> None:
    call = dispatch(
        "write alpha", Text("worker step 1"), Text("worker step 2"), prompt="PIECE-A", subagent_type="coder"
    )
    assert call.input["subagent_type"] == "coder" and call.input["prompt"].startswith("PIECE-A")
    scripted_api.script(*keyed(when_main(), Turn(["dispatching", call]), Text("main again")))
    assert scripted_api.pending == 4
    worker_messages = [{"role": "user", "content": call.input["prompt"]}]
    assert answer(scripted_api, "cc_is_subagent=true", worker_messages)["content"][0]["text"] == "worker step 1"
    main_turn = answer(scripted_api)
    assert [b["type"] for b in main_turn["content"]] == ["text", "tool_use"]
    assert answer(scripted_api, "cc_is_subagent=true", worker_messages)["content"][0]["text"] == "worker step 2"
    assert answer(scripted_api)["content"][0]["text"] == "main again"
    assert scripted_api.pending == 0


def test_after_holds_a_reply_until_its_condition_holds(scripted_api: ScriptedServer) -> None:
    import threading

    scripted_api.script(
        ScriptStep(After(seen(when_prompt("second")), Text("held")), when_prompt("first")),
        ScriptStep(Text("released"), when_prompt("second")),
    )
    got: list[str] = []
    first = threading.Thread(
        target=lambda: got.append(
            answer(scripted_api, messages=[{"role": "user", "content": "first"}])["content"][0]["text"]
        )
    )
    first.start()
    scripted_api.wait_for(lambda s: len(s.message_requests) == 1)
    time.sleep(0.3)
    assert got == [], "the held reply waits for its condition"
    assert answer(scripted_api, messages=[{"role": "user", "content": "second"}])["content"][0]["text"] == "released"
    first.join(10)
    assert got == ["held"]
    scripted_api.script(After(lambda s: False, Text("never"), timeout=0.5))
    status, _, _ = post(scripted_api, {"model": "m", "messages": [USER]})
    assert status == 500 and "After" in scripted_api.rejected[-1][1]


def test_a_usage_limit_window_refuses_with_the_unified_headers_then_the_script_goes_on(
    scripted_api: ScriptedServer,
) -> None:
    from flower_cli.testing import spend_capped, usage_limited, when_prompt

    body = {"model": "m", "stream": True, "messages": [USER]}
    hi = when_prompt("hi")
    scripted_api.script(ScriptStep(usage_limited(600, claim="seven_day"), hi), ScriptStep(Text("after"), hi))
    before = time.time()
    for _ in range(2):  # the request that opens the window, and one inside it: neither takes a step
        status, headers, _ = post(scripted_api, body)
        assert status == 429 and headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert headers["anthropic-ratelimit-unified-representative-claim"] == "seven_day"
    assert scripted_api.limit_ends is not None and scripted_api.limit_ends - before == pytest.approx(600, abs=1.5)
    assert headers["anthropic-ratelimit-unified-7d-reset"] == headers["anthropic-ratelimit-unified-reset"]
    other = {**body, "messages": [{"role": "user", "content": "another agent"}]}
    scripted_api.script(ScriptStep(Text("served"), when_prompt("another agent")))
    assert post(scripted_api, other)[0] == 200, "a keyed window limits only its own agent's requests"
    assert len(scripted_api.limited) == 2 and scripted_api.pending == 1
    scripted_api.lift_limits()
    assert post(scripted_api, body)[0] == 200 and scripted_api.pending == 0
    scripted_api.script(spend_capped())
    status, headers, raw = post(scripted_api, body)
    assert status == 429 and "usage limits" in json.loads(raw)["error"]["message"]
    assert headers["anthropic-ratelimit-unified-overage-disabled-reason"] == "out_of_credits"
