"""Probes on loopback: DNS + TCP only, bounded by probe_timeout, and never an HTTP request."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from resilience._fakes import FakeTime, closed_port, listening

from flower_resilience import endpoint, reachable, reachable_sync, wait_online
from harness import ScriptedServer


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        (None, ("api.anthropic.com", 443)),
        ("https://api.anthropic.com", ("api.anthropic.com", 443)),
        ("http://127.0.0.1:8080", ("127.0.0.1", 8080)),
        ("http://gateway.internal/anthropic/v1", ("gateway.internal", 80)),
        ("https://gateway.internal:8443/some/path?x=1", ("gateway.internal", 8443)),
        ("gateway.internal", ("gateway.internal", 443)),
        ("gateway.internal:9000", ("gateway.internal", 9000)),
        ("http://[::1]:7000", ("::1", 7000)),
        ("  https://padded.example  ", ("padded.example", 443)),
    ],
)
def test_endpoint(base_url: str | None, expected: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert endpoint(base_url) == expected


def test_endpoint_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4567/v1")
    assert endpoint() == ("127.0.0.1", 4567)
    assert endpoint("https://other.example") == ("other.example", 443)  # an explicit URL wins


def test_endpoint_rejects_a_bad_port_clearly() -> None:
    with pytest.raises(ValueError, match="invalid port"):
        endpoint("http://host:99999")


async def test_open_port_is_reachable() -> None:
    with listening() as (host, port):
        assert await reachable(host, port, 2.0)
        assert reachable_sync(host, port, 2.0)


async def test_closed_port_is_not_reachable() -> None:
    host, port = closed_port()
    assert not await reachable(host, port, 2.0)
    assert not reachable_sync(host, port, 2.0)


async def test_unresolvable_host_is_not_reachable() -> None:
    assert not await reachable("no-such-host.invalid", 443, 2.0)
    assert not reachable_sync("no-such-host.invalid", 443, 2.0)


def _black_hole() -> Iterator[tuple[str, int]]:
    """A loopback address that never answers a SYN: a listener with a full accept queue (backlog 0, one
    connection parked in it). Linux then drops new SYNs, exactly like a black-holed route."""
    with ExitStack() as stack:
        server = stack.enter_context(socket.socket())
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        address = server.getsockname()
        filler = stack.enter_context(socket.socket())
        filler.connect(address)
        probe = stack.enter_context(socket.socket())
        probe.settimeout(0.3)
        try:
            probe.connect(address)
        except (TimeoutError, OSError):
            pass
        else:  # pragma: no cover - a kernel that accepts past the backlog cannot make a black hole
            pytest.skip("this kernel accepts connections past a full backlog")
        yield address


@pytest.fixture
def black_hole() -> Iterator[tuple[str, int]]:
    yield from _black_hole()


async def test_black_holed_address_returns_within_the_timeout(black_hole: tuple[str, int]) -> None:
    host, port = black_hole
    started = time.monotonic()
    assert not await reachable(host, port, 0.5)
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 2.5, elapsed  # it waited for the timeout, and not much longer

    started = time.monotonic()
    assert not reachable_sync(host, port, 0.5)
    assert time.monotonic() - started < 2.5


async def test_probing_sends_no_http_request(scripted_api: ScriptedServer) -> None:
    host, port = scripted_api.host, scripted_api.port
    for _ in range(3):
        assert await reachable(host, port, 2.0)
        assert reachable_sync(host, port, 2.0)
    # A real request afterwards: once the server has recorded it, the probes' connections are long done.
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{scripted_api.url}/after-the-probes", timeout=5)
    scripted_api.wait_for(lambda s: len(s.requests) >= 1, timeout=10)
    assert [r.path for r in scripted_api.requests] == ["/after-the-probes"]


async def test_wait_online_when_already_online_says_nothing() -> None:
    clock, lines = FakeTime(), []
    with listening() as target:
        assert await wait_online(clock.policy(), lines.append, target=target)
    assert lines == [] and clock.sleeps == []


async def test_wait_online_notifies_once_down_and_once_back() -> None:
    clock, lines = FakeTime(), []
    host, port = closed_port()
    opened: list[socket.socket] = []
    # The port starts listening after the third sleep: three failed probes, then success.
    clock.on_sleep = [None, None, lambda: opened.append(socket.create_server((host, port)))]
    try:
        online = await wait_online(
            clock.policy(probe_interval=15.0, max_offline_wait=3600.0), lines.append, target=(host, port)
        )
    finally:
        for s in opened:
            s.close()
    assert online
    assert lines == [f"{host}:{port} unreachable, waiting up to 60 min", f"{host}:{port} reachable again, continuing"]
    assert clock.sleeps == [0.5, 0.625, 0.78125], "fast at first (policy rng 0.5: no jitter)"


async def test_wait_online_slows_down_to_probe_interval_and_stays_there() -> None:
    clock, lines = FakeTime(), []
    target = closed_port()
    assert not await wait_online(clock.policy(max_offline_wait=120.0), lines.append, target=target)
    assert clock.sleeps[:16] == pytest.approx(
        [
            0.5,
            0.625,
            0.78125,
            0.9765625,
            1.220703125,
            1.52587890625,
            1.9073486328125,
            2.384185791015625,
            2.9802322387695312,
            3.725290298461914,
            4.656612873077393,
            5.820766091346741,
            7.275957614183426,
            9.094947017729282,
            11.368683772161603,
            14.210854715202004,
        ]
    )
    after = clock.sleeps[16:]
    assert after[:-1] == [15.0] * (len(after) - 1) and 0 < after[-1] <= 15.0, "the last wait is cut to the deadline"
    assert sum(clock.sleeps) == pytest.approx(120.0)


async def test_wait_online_gives_up_after_max_offline_wait_with_a_final_probe_at_the_deadline() -> None:
    clock, lines = FakeTime(), []
    target = closed_port()
    assert not await wait_online(clock.policy(probe_interval=0.3, max_offline_wait=1.0), lines.append, target=target)
    assert clock.sleeps == pytest.approx([0.3, 0.3, 0.3, 0.1])
    assert lines == [f"{target[0]}:{target[1]} unreachable, waiting up to 1 s"]


async def test_zero_max_offline_wait_still_probes_once() -> None:
    # No waiting still means one look: a policy of "don't wait" must not mean "assume the network is down".
    clock, lines = FakeTime(), []
    with listening() as target:
        assert await wait_online(clock.policy(max_offline_wait=0), lines.append, target=target)
    assert lines == []
    down = closed_port()
    assert not await wait_online(clock.policy(max_offline_wait=-5), lines.append, target=down)
    assert len(lines) == 1 and "unreachable" in lines[0] and clock.sleeps == []


async def test_wait_online_takes_an_async_notify_and_defaults_to_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[str] = []

    async def notify(line: str) -> None:
        heard.append(line)

    clock = FakeTime()
    host, port = closed_port()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://{host}:{port}")
    opened: list[socket.socket] = []
    clock.on_sleep = [lambda: opened.append(socket.create_server((host, port)))]
    try:
        assert await wait_online(clock.policy(probe_interval=1.0), notify)
    finally:
        for s in opened:
            s.close()
    assert len(heard) == 2 and heard[1].endswith("reachable again, continuing")
