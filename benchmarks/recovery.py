"""How soon a run resumes after the API comes back, and what probing costs during a long outage, in one run.

Part 1 runs the real Claude Code binary against the scripted Messages API (offline, temporary HOME). The
server goes away in the middle of a session, stays down for 2, 4 and 20 s, and comes back on the same port.
`resilient_query` probes, waits and resumes the session. For each outage the script prints the lag from the
server's return to the resumed request reaching it, split into:
- probe: how long the wrapper took to notice the return;
- wait: the backoff it then slept;
- start: from the resume to the binary's request.
It runs each outage twice, once with today's schedule and once with the old one (a probe every 15 s, then
the full backoff). Default policies otherwise.

Part 2 counts probes during a long outage:
- over 60 minutes on a virtual clock: real probes of a closed loopback port, with the sleeps skipped;
- over ``--long`` seconds of real time on the real binary, read from the attempt record.

Run: hatch run python benchmarks/recovery.py [--outages 2,4,20] [--repeat 2] [--long 60]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from claude_agent_sdk import InMemorySessionStore

from flower_resilience import Resilience, ResilienceEvent, resilient_query, wait_online
from harness import Outage, ScriptedServer, Text, bash
from harness.agent import agent_options


class OldSchedule(Resilience):
    """flower-resilience before the fast probe: a probe every ``probe_interval``, then always the backoff."""

    def probe_wait(self, failed: int) -> float:
        return self.probe_interval

    def retry_wait(
        self, attempt: int, hint: float | None = None, *, offline_for: float | None = None, pushback: bool = False
    ) -> float:
        return self.backoff(attempt, hint)


POLICIES: dict[str, Resilience] = {"new": Resilience(), "old": OldSchedule()}


@dataclass
class Recovery:
    lag: float  # server listening again → resumed request received
    probe: float  # server back → the wrapper's "online" event
    wait: float  # backoff slept after that
    start: float  # "resumed" event → the request
    probes: int


def _down_for(server: ScriptedServer, seconds: float, back: dict[str, float]) -> threading.Thread:
    """Once the scripted Outage has stopped the server, keep it down ``seconds``, then listen again."""

    def run() -> None:
        server.wait_for(lambda s: not s.running, timeout=120)
        time.sleep(seconds)
        server.start()
        back["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def recover(root: Path, name: str, outage_s: float) -> Recovery:
    workspace = Path(tempfile.mkdtemp(dir=root, prefix=f"ws-{name}-{outage_s:g}-"))
    events: list[tuple[str, float]] = []

    def note(event: ResilienceEvent) -> None:
        events.append((event.kind, time.monotonic()))

    with ScriptedServer() as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        server.script(bash("echo one > one.txt"), Outage(seconds=None), Text("done"))
        back: dict[str, float] = {}
        watcher = _down_for(server, outage_s, back)
        options = agent_options(workspace, session_store=InMemorySessionStore(), session_store_flush="eager")
        stream = resilient_query(prompt="Do it.", options=options, policy=POLICIES[name], on_event=note)
        async for _ in stream:
            pass
        watcher.join(timeout=10)
        record = stream.record
        if not record.ok or not record.resumed or "at" not in back:
            raise SystemExit(f"{name} {outage_s:g} s: the run did not resume as expected: {record.to_dict()}")
        back_at = back["at"]
        resumed_request = next(r for r in server.message_requests if r.received_at > back_at)
    when = dict(events)
    failed = record.attempts[0]
    return Recovery(
        lag=resumed_request.received_at - back_at,
        probe=when.get("online", when["resumed"]) - back_at,
        wait=failed.backoff_s,
        start=resumed_request.received_at - when["resumed"],
        probes=failed.probes,
    )


async def long_outage(root: Path, name: str, seconds: float) -> int:
    """Probes the wrapper makes while the server is down ``seconds`` of real time (the attempt record's count)."""
    workspace = Path(tempfile.mkdtemp(dir=root, prefix=f"long-{name}-"))
    with ScriptedServer() as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        server.script(bash("echo one > one.txt"), Outage(seconds=None))
        policy = POLICIES[name]
        policy = type(policy)(max_offline_wait=seconds)
        stream = resilient_query(prompt="Do it.", options=agent_options(workspace), policy=policy)
        async for _ in stream:
            pass
    record = stream.record
    if record.ok or not record.error or "network not back" not in record.error:
        raise SystemExit(f"{name}: expected the long outage to outlast max_offline_wait: {record.to_dict()}")
    return record.attempts[0].probes


class _VirtualTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.probe_times = [0.0]

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.probe_times.append(self.now)  # the loop probes right after each sleep


def _closed_port() -> tuple[str, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return "127.0.0.1", sock.getsockname()[1]


async def virtual_hour(name: str, seed: int) -> list[float]:
    """When the probes of a 60-minute outage happen (real probes of a closed port, sleeps skipped)."""
    clock = _VirtualTime()
    policy = type(POLICIES[name])(
        max_offline_wait=3600.0, sleep=clock.sleep, clock=clock.clock, rng=random.Random(seed).random
    )
    assert not await wait_online(policy, target=_closed_port())
    return clock.probe_times


def _fmt(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:5.1f}"
    return f"{statistics.median(values):5.1f} ({min(values):.1f}-{max(values):.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outages", default="2,4,20", help="outage lengths in seconds, comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="runs per outage and schedule")
    parser.add_argument("--long", type=float, default=60.0, help="real-time long outage in seconds (0: skip)")
    args = parser.parse_args()
    outages = [float(x) for x in args.outages.split(",") if x.strip()]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        os.environ.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            ANTHROPIC_API_KEY="sk-ant-test-0000000000000000",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CODE_MAX_RETRIES="0",
            DISABLE_AUTOUPDATER="1",
        )

        print(
            "Part 1 - server back -> resumed request received (real binary, seconds; median (min-max) of "
            f"{args.repeat} runs)"
        )
        print(f"{'outage':>6} | {'schedule':>8} | {'lag':>15} | {'probe':>15} | {'wait':>15} | {'start':>15} | probes")
        lags: dict[tuple[str, float], float] = {}
        for outage_s in outages:
            for name in ("new", "old"):
                runs = [await recover(root, name, outage_s) for _ in range(args.repeat)]
                lags[name, outage_s] = statistics.median(r.lag for r in runs)
                print(
                    f"{outage_s:>5g}s | {name:>8} | {_fmt([r.lag for r in runs]):>15} | {_fmt([r.probe for r in runs]):>15} | "
                    f"{_fmt([r.wait for r in runs]):>15} | {_fmt([r.start for r in runs]):>15} | "
                    f"{'/'.join(str(r.probes) for r in runs)}"
                )
        for outage_s in outages:
            print(f"  {outage_s:g} s outage: new lag / old lag = {lags['new', outage_s] / lags['old', outage_s]:.2f}")

        print("\nPart 2 - probes during a long outage")
        hours = {name: [await virtual_hour(name, seed) for seed in range(5)] for name in ("new", "old")}
        print(f"{'schedule':>8} | {'minute 1':>8} | {'minute 2':>8} | {'per minute, 3-60':>16} | {'60 min total':>12}")
        for name, runs in hours.items():

            def in_minute(times: list[float], m: int) -> int:
                return sum(m * 60 <= t < (m + 1) * 60 for t in times)

            first = [in_minute(t, 0) for t in runs]
            second = [in_minute(t, 1) for t in runs]
            steady = [sum(in_minute(t, m) for m in range(2, 60)) / 58 for t in runs]
            total = [len(t) for t in runs]
            print(
                f"{name:>8} | {'/'.join(map(str, sorted(set(first)))):>8} | {'/'.join(map(str, sorted(set(second)))):>8} | "
                f"{max(steady):>16.2f} | {'/'.join(map(str, sorted(set(total)))):>12}"
            )
        if args.long > 0:
            counts = {name: await long_outage(root, name, args.long) for name in ("new", "old")}
            print(
                f"real binary, the first {args.long:g} s of an outage (max_offline_wait={args.long:g}): "
                f"new {counts['new']} probes, old {counts['old']} (the final probe at the deadline included)"
            )


if __name__ == "__main__":
    anyio.run(main)
