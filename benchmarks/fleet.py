"""flower-fleet benchmark: pickup after a kill, and what the fleet costs a workflow — from one run.

    hatch run python benchmarks/fleet.py [--steps 10] [--heartbeat-timeout 5]

Real everything but the model: a Temporal dev server (``$FLOWER_TEST_TEMPORAL`` or ``tests/temporal_server.py``),
PostgreSQL (``$FLOWER_TEST_PG_URL`` or ``tests/pg_cluster.py``), the real Claude Code binary against the scripted
Messages API, ``flower`` as subprocesses.

- overhead: a workflow of ``--steps`` short scripted steps (one reply each), ``flower run`` on one machine
  against ``flower fleet submit --wait`` with one worker already polling (both with the PostgreSQL store; both
  wall clocks include the command's own start-up). Goal: fleet <= 1.15x.
- pickup: two workers; the one holding a step in the middle of a long tool call is SIGKILLed with its process
  group; the seconds from the kill to the other worker's first request, and that minus the heartbeat timeout.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fleet_helpers import Fleet, kill_machine, status_json, wait_for  # noqa: E402 - after the path set-up

from harness import ScriptedServer, Text, bash  # noqa: E402 - after the path set-up


def _flows(steps: int) -> str:
    lines = ", ".join(f"Step('s{i}', w, 'step {i}: answer OK')" for i in range(steps))
    return (
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "w = AgentSpec('w', 'Answer tersely.', allowed_tools=['Bash'])\n"
        f"def main():\n    return Workflow([{lines}], name='bench')\n"
    )


def overhead(fleet: Fleet, server: ScriptedServer, steps: int) -> tuple[float, float]:
    local = fleet.tmp / f"local-{uuid.uuid4().hex[:6]}"
    local.mkdir()
    (local / "flows.py").write_text(_flows(steps))
    server.script(*[Text("OK") for _ in range(steps)])
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "flower_cli", "--store", fleet.store, "run", "flows.py:main"],
        cwd=local,
        env=fleet.env("local"),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    single = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]

    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    fleet.workspace(run_id, _flows(steps))
    server.script(*[Text("OK") for _ in range(steps)])
    started = time.monotonic()
    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait", timeout=1200)
    spread = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    return single, spread


def pickup(fleet: Fleet, server: ScriptedServer, heartbeat_timeout: float) -> float:
    run_id = f"kill-{uuid.uuid4().hex[:8]}"
    fleet.workspace(run_id, _flows(1))
    server.script(bash("python3 -c 'import time; time.sleep(120)'"), Text("OK"))
    fleet.start_worker("k1", "--slots", "1")
    sent = fleet.flower(
        "fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id,
        "--heartbeat-timeout", str(heartbeat_timeout),
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    before = len(server.message_requests)
    wait_for(lambda: len(server.message_requests) >= before + 1, 120, "the step's first request")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step running")
    seen = len(server.message_requests)
    kill_machine(fleet.worker_by_identity(held[0]["worker"]))
    killed = time.monotonic()
    wait_for(lambda: len(server.message_requests) > seen, heartbeat_timeout + 120, "the takeover's request")
    return time.monotonic() - killed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--heartbeat-timeout", type=float, default=5.0)
    args = parser.parse_args()

    from pg_cluster import Cluster
    from temporal_server import TemporalServer

    with tempfile.TemporaryDirectory(prefix="flower-fleet-bench-") as tmp, ScriptedServer() as server:
        os.environ.update(
            {
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
                "DISABLE_AUTOUPDATER": "1",
            }
        )
        temporal = os.environ.get("FLOWER_TEST_TEMPORAL")
        own_temporal = None if temporal else TemporalServer.start()
        pg = os.environ.get("FLOWER_TEST_PG_URL")
        own_pg = None if pg else Cluster.start()
        fleet = Fleet(
            Path(tmp), temporal or own_temporal.address,  # type: ignore[union-attr]
            pg or own_pg.url,  # type: ignore[union-attr]
        )  # fmt: skip
        try:
            fleet.start_worker("w", "--slots", "1")
            single, spread = overhead(fleet, server, args.steps)
            print(
                f"overhead: {args.steps} short steps, flower run {single:.1f} s, fleet {spread:.1f} s: "
                f"{spread / single:.2f}x (goal <= 1.15x)"
            )
            took = pickup(fleet, server, args.heartbeat_timeout)
            print(
                f"pickup after SIGKILL: {took:.1f} s, {took - args.heartbeat_timeout:+.1f} s over the heartbeat "
                f"timeout of {args.heartbeat_timeout:.0f} s"
            )
        finally:
            for process in fleet.workers:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            fleet.stop()
            if own_temporal is not None:
                own_temporal.stop()
            if own_pg is not None:
                own_pg.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
