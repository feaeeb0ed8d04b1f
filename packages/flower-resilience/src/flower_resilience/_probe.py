"""Free connectivity probes: a DNS lookup and a TCP handshake, nothing more.

No HTTP request, no credentials, no cost — the probe runs for as long as the network is down (fast at first,
then every ``probe_interval`` seconds), so it must never become the problem. Any failure (DNS, refused,
timeout) counts as unreachable; the probe does not try to tell them apart.
"""

from __future__ import annotations

import inspect
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio

from ._policy import Resilience, human_wait

__all__ = [
    "DEFAULT_BASE_URL",
    "Notify",
    "endpoint",
    "reachable",
    "reachable_sync",
    "unreachable_reason",
    "wait_online",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"

Notify = Callable[[str], Any]  # sync, or async (returns an awaitable)


def endpoint(base_url: str | None = None) -> tuple[str, int]:
    """``(host, port)`` the harness talks to: ``base_url``, else ``ANTHROPIC_BASE_URL``, else the public API.

    A gateway's path is ignored; ``http`` means port 80 and anything else 443 unless a port is given. The
    probe targets this and not api.anthropic.com: through a gateway, one being up says nothing of the other.
    """
    raw = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).strip()
    url = raw if "://" in raw else f"https://{raw}"
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"invalid port in base URL {raw!r}; write it as https://host[:port]") from None
    host = parts.hostname or "api.anthropic.com"
    if port is None:
        port = 80 if parts.scheme.lower() == "http" else 443
    return host, port


async def reachable(host: str, port: int, timeout: float = 5.0) -> bool:  # noqa: ASYNC109 - public API since 0.1
    """True when ``host`` resolves and accepts a TCP connection on ``port`` within ``timeout`` seconds.

    The connection is closed straight away, before a byte is sent.
    """
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
            await stream.aclose()
    except Exception:  # noqa: BLE001 - DNS failure, refusal, timeout, unreachable: all mean "not now"
        return False
    return True


def reachable_sync(host: str, port: int, timeout: float = 5.0) -> bool:
    """`reachable` for code without an event loop (a CLI's ``doctor``), with the same overall timeout."""
    return unreachable_reason(host, port, timeout) is None


def unreachable_reason(host: str, port: int, timeout: float = 5.0) -> str | None:
    """None when ``host`` resolves and accepts a TCP connection on ``port`` within ``timeout`` seconds; else why
    not, in a few words a person can act on ("connection refused", "no such host (DNS: …)", "no answer within
    5 s"). No event loop needed; nothing is sent.

    getaddrinfo has no timeout of its own, so it runs in a daemon thread that is abandoned if it hangs.
    """
    deadline = time.monotonic() + timeout
    found: list[list[Any]] = []
    failed: list[OSError] = []

    def resolve() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)
            found.append([])

    resolver = threading.Thread(target=resolve, name="flower-resilience-dns", daemon=True)
    resolver.start()
    resolver.join(timeout)
    if not found:
        return f"no DNS answer for {host} within {human_wait(timeout)}"
    if not found[0]:
        detail = failed[0].strerror if failed and failed[0].strerror else "no address"
        return f"no such host {host} (DNS: {detail})"
    last = "no address to connect to"
    for family, kind, proto, _, address in found[0]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"no answer within {human_wait(timeout)}"
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(remaining)
                sock.connect(address)
                return None
        except TimeoutError:
            last = f"no answer within {human_wait(timeout)}"
        except OSError as exc:
            last = (exc.strerror or type(exc).__name__).lower()
    return last


async def _call(callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    outcome = callback(*args)
    if inspect.isawaitable(outcome):
        await outcome


@dataclass(frozen=True)
class _Probing:
    """How a wait for the network went."""

    online: bool  # reachable in the end (False: max_offline_wait passed)
    probes: int  # probes made, the successful one included
    offline_s: float  # the whole wait when a probe failed; 0.0 when the first probe succeeded

    @property
    def was_down(self) -> bool:
        """A probe failed: the endpoint was unreachable for a while (and, if ``online``, came back)."""
        return self.probes > 1 or not self.online


async def _wait_online(
    policy: Resilience,
    target: tuple[str, int],
    on_down: Callable[[str], Awaitable[None]],
    on_up: Callable[[str], Awaitable[None]],
) -> _Probing:
    """The probing loop shared by `wait_online` and `resilient_query`: one line when down, one when back.

    Returns as soon as a probe succeeds: the caller decides what to do next (`Resilience.retry_wait`).
    """
    host, port = target
    budget = max(0.0, policy.max_offline_wait)
    started = policy.clock()
    deadline = started + budget
    failed = 0
    while True:
        if await reachable(host, port, policy.probe_timeout):
            if failed:
                await on_up(f"{host}:{port} reachable again, continuing")
            offline_s = max(0.0, policy.clock() - started) if failed else 0.0
            return _Probing(online=True, probes=failed + 1, offline_s=offline_s)
        failed += 1
        if failed == 1:
            if budget > 0:
                await on_down(f"{host}:{port} unreachable, waiting up to {human_wait(budget)}")
            else:
                await on_down(f"{host}:{port} unreachable (max_offline_wait is 0, not waiting)")
        remaining = deadline - policy.clock()
        if remaining <= 0:
            return _Probing(online=False, probes=failed, offline_s=max(0.0, policy.clock() - started))
        # The last sleep is cut to the deadline so the final probe happens at the deadline, not after it.
        await policy.sleep(min(policy.probe_wait(failed), remaining))


async def wait_online(
    policy: Resilience | None = None,
    notify: Notify | None = None,
    *,
    target: tuple[str, int] | None = None,
) -> bool:
    """Probe ``target`` (default `endpoint()`) until it answers (True) or ``max_offline_wait`` passes (False).

    Probes come fast at first and then less often (`Resilience.probe_wait`: 0.5 s growing to one every
    ``probe_interval``), so a short outage is noticed within about a second of its end and a long one costs
    at most one probe per ``probe_interval``. ``notify`` (sync or async) hears exactly two lines at most: when the first probe fails
    ("host:port unreachable, waiting up to 60 min") and when it is back ("host:port reachable again,
    continuing"). Reachable on the first probe says nothing. ``max_offline_wait <= 0`` still probes once:
    "do not wait" must not mean "assume the network is down".
    """
    policy = policy or Resilience()

    async def say(message: str) -> None:
        await _call(notify, message)

    return (await _wait_online(policy, target or endpoint(), say, say)).online
