"""`unreachable_reason`: why an endpoint cannot be reached, in words a person can act on (nothing is sent)."""

from __future__ import annotations

import socket

from flower_resilience import reachable_sync, unreachable_reason


def test_up_refused_and_unknown_host() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert unreachable_reason("127.0.0.1", port, 2.0) is None and reachable_sync("127.0.0.1", port, 2.0)
    assert unreachable_reason("127.0.0.1", port, 2.0) == "connection refused"
    why = unreachable_reason("no-such-host.invalid", 443, 2.0)
    assert why is not None and why.startswith("no such host no-such-host.invalid (DNS: ")
