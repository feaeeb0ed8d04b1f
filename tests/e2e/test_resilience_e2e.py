"""flower-resilience against the real Claude Code binary and the scripted Messages API.

The server really goes away (it stops listening on its port) and really comes back; the harness really
fails (CLAUDE_CODE_MAX_RETRIES=0 from the conftest, so it gives up at once and the retrying is ours); the
wrapper really probes, waits, and resumes the session from the session store.

No test guesses how long anything takes: an `Outage` closes the port before the binary sees its connection
cut (so the wrapper's first probe always finds the server down), and a server that must come back is
restarted by `back_after_offline` only once the wrapper has reported it offline.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, InMemorySessionStore, ResultMessage, TextBlock

from flower_cli import AgentSpec, Runtime
from flower_cli.runtime import Event
from flower_resilience import RESUME_PROMPT, Resilience, ResilienceError, ResilienceEvent, resilient_query
from harness import Outage, ScriptedServer, Text, bash, overloaded, rate_limited, unauthorized
from harness.agent import agent_options

pytestmark = pytest.mark.e2e

# Real time, small numbers: the run must still wait for the server, just not for minutes.
FAST = Resilience(base_delay=0.2, max_delay=1.0, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=60.0)


class BackAfterOffline:
    """An ``on_event`` that restarts the server ``seconds`` after the wrapper reported it offline.

    The outage then has a known length as the wrapper sees it, however slowly the binary failed; ``back_at``
    is when the server listened again (``time.monotonic()``).
    """

    def __init__(self, server: ScriptedServer, seconds: float, then: Callable[[Any], Any] | None = None) -> None:
        self.server, self.seconds, self.then = server, seconds, then
        self.back_at: float | None = None
        self.timer: threading.Timer | None = None

    def _restart(self) -> None:
        self.server.start()
        self.back_at = time.monotonic()

    def __call__(self, event: Any) -> None:
        kind = event.kind if isinstance(event, ResilienceEvent) else event.payload.get("kind")
        if kind == "offline" and self.timer is None:
            assert not self.server.running, "the wrapper reported offline while the server was up"
            self.timer = threading.Timer(self.seconds, self._restart)
            self.timer.daemon = True
            self.timer.start()
        if self.then is not None:
            self.then(event)


def texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


async def test_an_outage_mid_session_waits_then_resumes_the_same_session(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(
        bash("echo one > one.txt"),
        bash("echo two > two.txt"),
        Outage(seconds=None),  # the third request: the server vanishes until `back` restarts it
        bash("echo three > three.txt"),
        Text("All four steps done."),
    )
    store = InMemorySessionStore()
    events: list[ResilienceEvent] = []
    back = BackAfterOffline(claude_env, 1.0, then=events.append)
    options = agent_options(workspace, session_store=store, session_store_flush="eager")
    stream = resilient_query(prompt="Do the four steps.", options=options, policy=FAST, on_event=back)
    started = time.monotonic()
    messages = [m async for m in stream]
    elapsed = time.monotonic() - started

    record = stream.record
    assert record.ok, record
    assert record.resumed and len(record.attempts) == 2
    failed, resumed = record.attempts
    assert failed.kind == "transient" and failed.error and "API Error" in failed.error
    assert failed.offline_s >= 1.0 and failed.probes >= 2, "the wrapper must have waited for the server, probing"
    assert failed.backoff_s == 0.0, "no backoff once the probe saw the server return"
    assert resumed.resumed and resumed.error is None
    assert record.session_ids == [failed.session_id] == [resumed.session_id], "one session, continued"
    assert options.resume is None

    # The script finished, in the same workspace, on the same session.
    assert [(workspace / f).read_text() for f in ("one.txt", "two.txt", "three.txt")] == ["one\n", "two\n", "three\n"]
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1 and not results[0].is_error and results[0].result == "All four steps done."
    assert messages[-1] is results[0]
    assert not any("API Error" in t for t in texts(messages)), "the synthetic notice never reaches the caller"
    assert not any(isinstance(m, AssistantMessage) and m.model == "<synthetic>" for m in messages)

    # What the server saw: two turns, the request the outage cut, then the resumed session.
    requests = claude_env.message_requests
    cut = next(i for i, r in enumerate(requests) if r.status is None)
    assert cut == 2 and len(requests) == 5
    after = requests[cut + 1 :]
    assert all("API Error" not in r.text for r in after), "no request after the outage carries the synthetic error"
    assert RESUME_PROMPT in after[0].user_texts()
    assert "echo one > one.txt" in after[0].text and "echo two > two.txt" in after[0].text, "history came back"
    assert claude_env.unscripted == [] and claude_env.rejected == []

    # Events: one failure, one line when down, one when back, the resume (no backoff: the outage is over).
    assert [e.kind for e in events] == ["attempt_failed", "offline", "online", "resumed"]
    assert events[-1].session_id == record.session_id

    # Cost: the binary's total after the resume is cumulative for the session (it restores the transcript's
    # cost-state), so the record's total equals it and the resumed attempt's own share is smaller.
    assert resumed.reported_cost_usd is not None and failed.reported_cost_usd is not None
    assert resumed.cost_usd < resumed.reported_cost_usd
    assert record.cost_usd == pytest.approx(results[0].total_cost_usd, abs=1e-6)
    assert record.cost_usd == pytest.approx(failed.cost_usd + resumed.cost_usd, abs=1e-6)
    assert record.num_turns == failed.num_turns + resumed.num_turns
    assert elapsed < 60


async def test_with_the_default_schedule_the_resume_follows_the_servers_return(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    # The default policy (probes 0.5 s apart, growing ×1.25): the old one probed every 15 s and then backed off
    # 3-5 s more. benchmarks/recovery.py measures the lag; this pins down the behaviour.
    claude_env.script(bash("echo one > one.txt"), Outage(seconds=None), Text("Done after the outage."))
    events: list[ResilienceEvent] = []
    back = BackAfterOffline(claude_env, 2.0, then=events.append)
    options = agent_options(workspace, session_store=InMemorySessionStore(), session_store_flush="eager")
    stream = resilient_query(prompt="Do it.", options=options, policy=Resilience(max_offline_wait=120.0), on_event=back)
    messages = [m async for m in stream]

    record = stream.record
    assert record.ok and record.resumed, record
    assert [e.kind for e in events] == ["attempt_failed", "offline", "online", "resumed"]
    failed = record.attempts[0]
    assert failed.backoff_s == 0.0 and failed.probes >= 3, failed
    assert 2.0 <= failed.offline_s < 15.0, "found back by a fast probe, not the old schedule's second one at 15 s"
    resumed_request = claude_env.message_requests[-1]
    assert back.back_at is not None and resumed_request.received_at > back.back_at
    assert RESUME_PROMPT in resumed_request.user_texts()
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Done after the outage."


@pytest.mark.parametrize("refusal", [rate_limited(retry_after=1), overloaded()], ids=["429", "529"])
async def test_a_rate_limit_or_an_overload_still_backs_off(
    claude_env: ScriptedServer, workspace: Path, refusal: Any
) -> None:
    # The endpoint is reachable (the first probe says so): the server asked us to slow down, so we do.
    claude_env.script(refusal, Text("Fine now."))
    events: list[ResilienceEvent] = []
    policy = Resilience(base_delay=1.0, probe_timeout=1.0, max_offline_wait=10.0, rng=lambda: 0.5)
    stream = resilient_query(prompt="hi", options=agent_options(workspace), policy=policy, on_event=events.append)
    messages = [m async for m in stream]

    record = stream.record
    assert record.ok and len(record.attempts) == 2, record
    failed = record.attempts[0]
    assert failed.kind == "transient" and failed.status == refusal.status
    assert failed.probes == 1 and failed.offline_s == 0.0 and failed.backoff_s == 1.0
    assert [e.kind for e in events] == ["attempt_failed", "backoff", "resumed"]
    requests = claude_env.message_requests
    assert requests[1].received_at - requests[0].received_at >= 1.0, "the retry came after the backoff"
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Fine now."


async def test_a_401_stops_at_once_without_waiting(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(unauthorized())
    events: list[ResilienceEvent] = []
    slow = Resilience(base_delay=30.0, probe_interval=30.0, max_offline_wait=600.0)  # any wait would show
    stream = resilient_query(prompt="hello", options=agent_options(workspace), policy=slow, on_event=events.append)
    started = time.monotonic()
    messages = [m async for m in stream]
    elapsed = time.monotonic() - started

    record = stream.record
    assert record.kind == "fatal" and not record.ok and len(record.attempts) == 1
    assert record.attempts[0].status == 401 and record.error and "Invalid API key" in record.error
    assert [e.kind for e in events] == ["attempt_failed", "gave_up"]
    assert len(claude_env.message_requests) == 1
    assert elapsed < 20, elapsed
    assert isinstance(messages[-1], ResultMessage) and messages[-1].is_error
    assert not any(isinstance(m, AssistantMessage) for m in messages)
    with pytest.raises(ResilienceError, match="Invalid API key"):
        record.raise_for_error()


async def test_an_outage_longer_than_max_offline_wait_ends_with_a_clear_error(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(bash("echo one > one.txt"), Outage(seconds=None))  # down until the test ends
    events: list[ResilienceEvent] = []
    policy = Resilience(base_delay=0.2, probe_interval=0.2, probe_timeout=1.0, max_offline_wait=1.5)
    stream = resilient_query(prompt="Do it.", options=agent_options(workspace), policy=policy, on_event=events.append)
    started = time.monotonic()
    [m async for m in stream]
    elapsed = time.monotonic() - started

    record = stream.record
    host, port = claude_env.host, claude_env.port
    assert record.error is not None and record.error.startswith(
        f"network not back within 1.5 s ({host}:{port} unreachable)"
    )
    assert "last error: API Error" in record.error
    # Deterministic since the Outage closes the port before it cuts the connection: the first probe after the
    # failure cannot find the server still listening (it sometimes did, and the run backed off and retried).
    assert [e.kind for e in events] == ["attempt_failed", "offline", "gave_up"]
    assert len(record.attempts) == 1 and record.attempts[0].offline_s >= 1.4 and record.attempts[0].probes >= 2
    assert elapsed < 30


def _claude_descendants() -> list[int]:
    """Live (non-zombie) processes below this one whose command line is the bundled claude binary."""
    parent_of: dict[int, int] = {}
    state_of: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state_of[int(entry)], parent_of[int(entry)] = fields[0], int(fields[1])
    found, frontier = [], [os.getpid()]
    while frontier:
        current = frontier.pop()
        for pid, ppid in parent_of.items():
            if ppid == current:
                frontier.append(pid)
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"_bundled/claude" in cmdline and state_of.get(pid) != "Z":
                    found.append(pid)
    return found


async def test_breaking_out_early_leaves_no_subprocess(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash("sleep 20"), Text("never reached"))
    stream = resilient_query(prompt="Take your time.", options=agent_options(workspace), policy=FAST)
    async for message in stream:
        if isinstance(message, AssistantMessage):  # the tool call: the binary is now running `sleep 20`
            assert _claude_descendants(), "the harness should be running while we iterate"
            break
    await stream.aclose()
    # Gone when aclose() returns, not "eventually": the caller may resume this session at once. (The SDK's
    # own query() fails this: its aclose() returns immediately and leaves the process running.)
    assert _claude_descendants() == []
    assert stream.record.closed and stream.record.session_id
    assert stream.record.attempts[0].closed and stream.record.error is None


async def test_a_callers_resume_counts_only_what_this_call_cost(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash("echo one > one.txt"), Text("First part done."), Text("Second part done."))
    store = InMemorySessionStore()
    options = agent_options(workspace, session_store=store, session_store_flush="eager")
    first = resilient_query(prompt="First part.", options=options, policy=FAST)
    [m async for m in first]
    assert first.record.ok and first.record.cost_usd > 0

    second = resilient_query(
        prompt="Second part.",
        options=agent_options(
            workspace, session_store=store, session_store_flush="eager", resume=first.record.session_id
        ),
        policy=FAST,
    )
    [m async for m in second]
    assert second.record.ok and second.record.session_id == first.record.session_id
    reported = second.record.attempts[0].reported_cost_usd
    assert reported is not None and reported > first.record.cost_usd, "the binary reports the session's running total"
    assert second.record.cost_usd == pytest.approx(reported - first.record.cost_usd, abs=1e-6)


# --- flower-cli's Runtime: the resume prompt says only what is true for the run ----------------------------

WORKER = AgentSpec("worker", "Be terse.", allowed_tools=["Bash"])


async def _runtime_step_through_an_outage(
    server: ScriptedServer, workspace: Path, *, workbench: bool
) -> tuple[Runtime, Any]:
    server.script(bash("echo one > one.txt"), Outage(seconds=None), Text("Resumed and done."))
    rt = Runtime(workspace, workspace / "runs", workbench=workbench, resilience=FAST)
    seen: list[Event] = []
    with rt:
        result = await rt.run(WORKER, "Do it.", on_event=BackAfterOffline(server, 0.5, then=seen.append))
    assert result.ok and result.resumed, result
    assert [e.payload.get("kind") for e in seen if e.kind == "retry"] == [
        "attempt_failed",
        "offline",
        "online",
        "resumed",
    ]
    return rt, server.message_requests[-1]


async def test_the_runtime_without_a_workbench_resumes_with_the_generic_prompt(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    rt, resumed = await _runtime_step_through_an_outage(claude_env, workspace, workbench=False)
    assert rt.resilience.resume_prompt == RESUME_PROMPT
    assert RESUME_PROMPT in resumed.user_texts()
    # (The flower plugin's skill list may name its workbench skill, "use when a workbench exists"; that is
    # Claude Code's listing, not what the run tells the model to do.)
    told = [t for t in resumed.user_texts() if "interrupted before it finished" in t]
    assert told == [RESUME_PROMPT], "the run has no workbench: the resume prompt must not mention one"


async def test_the_runtime_with_a_workbench_names_it_in_the_resume_prompt(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    rt, resumed = await _runtime_step_through_an_outage(claude_env, workspace, workbench=True)
    prompt = rt.resilience.resume_prompt
    assert prompt != RESUME_PROMPT and "workbench `runs/workbench/`" in prompt
    told = [t for t in resumed.user_texts() if "interrupted before it finished" in t]
    assert told == [prompt]
    assert (rt.resilience.max_attempts, rt.resilience.probe_interval) == (FAST.max_attempts, FAST.probe_interval), (
        "only the prompt changed"
    )


def test_the_runtime_keeps_a_resume_prompt_the_caller_chose(claude_env: ScriptedServer, workspace: Path) -> None:
    with Runtime(workspace, workspace / "runs", workbench=True, resilience=Resilience(resume_prompt="Carry on.")) as rt:
        assert rt.resilience.resume_prompt == "Carry on."
    with Runtime(workspace, workspace / "runs", resilience=True) as rt:
        assert rt.resilience.resume_prompt == RESUME_PROMPT
