"""`flower fleet submit --budget`: each step's activity runs under the run's budget, counting what the earlier steps
cost; once it is spent no further step sends anything, and the run fails saying so."""

from __future__ import annotations

import uuid

import pytest
from fleet_helpers import Fleet, status_json

from harness import ScriptedServer, Text, Usage

pytestmark = pytest.mark.e2e

FLOWS_TWO_STEPS = (
    "from flower_cli import AgentSpec, Step, Workflow\n"
    "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
    "def main():\n"
    "    return Workflow([Step('one', writer, 'part one'), Step('two', writer, 'part two')], name='two-steps')\n"
)


def test_a_fleet_run_stops_at_its_budget_before_the_next_step_sends_anything(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    fleet.workspace(run_id, FLOWS_TWO_STEPS)
    # Step one's one turn (50k input tokens, about $0.20) spends the $0.10 budget; step two is never asked.
    claude_env.script(Text("PART-ONE", usage=Usage(input_tokens=50_000, output_tokens=10)), Text("never sent"))
    fleet.start_worker("a", "--slots", "1")

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--budget", "0.1", "--wait")
    assert done.returncode == 1, done.stderr + (fleet.tmp / "worker-a.log").read_text()
    assert len(claude_env.message_requests) == 1, "the spent budget started no model request for step two"
    state = status_json(fleet, run_id)
    one, two = state["done"]
    assert one["ok"] is True and one["cost_usd"] > 0.1
    assert two["ok"] is False and two["error"].startswith("budget spent") and two["cost_usd"] == 0
    assert "budget spent" in done.stdout, done.stdout
