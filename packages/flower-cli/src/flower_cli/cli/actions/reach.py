"""Before a run's first request: is the endpoint there at all? Said within seconds, with or without a terminal.

Without this look, a closed port or a dead gateway is found by Claude Code itself, which retries its request
quietly for about three minutes before flower's own offline wait even starts — a user with no terminal saw
nothing for 187 s. The look is free (DNS + TCP, nothing sent, see `flower_resilience.unreachable_reason`);
when it fails, one line says what was tried, the error, where ``ANTHROPIC_BASE_URL`` came from, that
``flower doctor`` checks the setup, and how long the run will wait; then the run waits for the endpoint with
the Runtime's own offline limit (exit 4 when it is not back) instead of sending requests into nothing.
"""

from __future__ import annotations

import os
import urllib.request
from typing import TYPE_CHECKING, Any

import anyio

import flower_env
import flower_resilience

from ..._shared.exits import Exit, ExitCode
from ...runtime import Event

if TYPE_CHECKING:
    from flower_resilience import Resilience

    from ...view import Renderer

__all__ = ["FIRST_LOOK_S", "reach_endpoint"]

FIRST_LOOK_S = 3.0  # the first look's own limit: with the start-up before it, the line is out within 5 s


def _behind_a_proxy(host: str) -> bool:
    """A proxy from the environment would carry Claude Code's requests: a direct TCP look proves nothing."""
    proxies = urllib.request.getproxies()
    if not (proxies.get("https") or proxies.get("http") or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host)


def reach_endpoint(view: Renderer, *, policy: Resilience | None = None, sink: Any = None) -> None:
    """Return once the endpoint answers a TCP handshake; before waiting for it, say so in one line.

    ``policy``: the offline limit and probe pace, the Runtime's own default when None (the one the command's
    Runtime uses). ``sink`` (``--json``): the line also goes to stdout as a ``notice`` event
    (``payload.offline``). Raises `Exit` (4) when the endpoint is not back within ``max_offline_wait``.
    """
    try:
        host, port = flower_resilience.endpoint()
    except ValueError:
        return  # a malformed base URL was refused by the credential gate already
    if _behind_a_proxy(host):
        return
    why = flower_resilience.unreachable_reason(host, port, FIRST_LOOK_S)
    if why is None:
        return
    url = os.environ.get("ANTHROPIC_BASE_URL") or flower_env.DEFAULT_BASE_URL
    where = flower_env.source_of("ANTHROPIC_BASE_URL") or "the default"
    policy = policy or flower_resilience.Resilience()
    budget = max(0.0, policy.max_offline_wait) if policy.enabled else 0.0
    waiting = (
        f"waiting up to {flower_resilience.human_wait(budget)} for it to answer (Ctrl-C stops)"
        if budget > 0
        else "not waiting (retries are off)"
    )
    line = (
        f"! cannot reach {host}:{port}: {why} — ANTHROPIC_BASE_URL={url} (from {where}); "
        f"`flower doctor` checks the setup; {waiting}"
    )
    view.line(line, "yellow")
    if sink is not None:
        sink(
            Event(
                "notice",
                line[2:],
                payload={"offline": True, "host": host, "port": port, "error": why, "source": where, "wait_s": budget},
            )
        )
    if budget <= 0:
        raise Exit(ExitCode.OFFLINE, f"{host}:{port} is not reachable ({why}); nothing was sent")
    view.begin_wait("offline", f"waiting for {host}:{port}")
    try:
        back = anyio.run(
            lambda: flower_resilience.wait_online(policy, None, target=(host, port)),
        )
    finally:
        view.end_wait("offline")
    if not back:
        raise Exit(
            ExitCode.OFFLINE,
            f"{host}:{port} not back within {flower_resilience.human_wait(budget)} ({why}); nothing was sent — "
            f"check the network or ANTHROPIC_BASE_URL (from {where}), or run `flower doctor`",
        )
    view.line(f"  + {host}:{port} answers again; starting", "green")
