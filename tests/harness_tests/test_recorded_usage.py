"""The request log keeps the usage the server reported, so tests can check what a client recorded from it."""

from __future__ import annotations

import http.client
import json

from flower_cli.testing import ScriptedServer, Text, Usage, unauthorized


def _post(server: ScriptedServer, stream: bool) -> bytes:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        conn.request("POST", "/v1/messages", json.dumps(body), {"content-type": "application/json"})
        return conn.getresponse().read()
    finally:
        conn.close()


def test_usage_reported_is_recorded(scripted_api: ScriptedServer) -> None:
    scripted_api.script(
        Text(
            "a",
            usage=Usage(input_tokens=10, cache_read_input_tokens=20, cache_creation_input_tokens=5, output_tokens=3),
        ),
        Text("b"),
        unauthorized(),
    )
    raw = _post(scripted_api, stream=True)
    sent = json.loads(next(line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")))["message"][
        "usage"
    ]
    plain = json.loads(_post(scripted_api, stream=False))["usage"]
    _post(scripted_api, stream=False)
    first, second, third = scripted_api.message_requests
    assert first.usage == {
        "input_tokens": 10,
        "cache_read_input_tokens": 20,
        "cache_creation_input_tokens": 5,
        "output_tokens": 3,
    }
    assert {k: v for k, v in sent.items() if k != "output_tokens"} == {
        k: v for k, v in first.usage.items() if k != "output_tokens"
    }
    assert second.usage == plain and plain["input_tokens"] >= 1, "estimated counts are recorded as sent"
    assert third.usage is None, "an error status reports no usage"
