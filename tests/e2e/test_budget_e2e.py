"""A budget for the whole run, end to end: the real `flower` command and the real Claude Code binary against the
scripted server, whose usage numbers set what each model request costs (``usage(n)``: n input tokens).

What is checked: the run stops once its budget is spent — the turn in flight finishes, no new turn or step starts —
with the step recorded as stopped by the budget (its manifest row's ``budget``), one closing line (spent, on what,
the command that goes on) and exit 6; the spend stays within the budget plus the one turn in flight; one line at
80 %; a plain wake keeps the budget (``notes/budget.json``); a wake with a higher one goes on in the same sessions.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e._runs import flower as flower_in
from fleet_helpers import BRIEF, CLARIFIER, GOAL, GOAL_SETTER, JUDGE, LEAD, verdict

from harness import ScriptedServer, Text, Turn, Usage, bash, dispatch, keyed, when_notified

pytestmark = pytest.mark.e2e

ACHIEVED = verdict("achieved", "hello.txt says hello")


def usage(input_tokens: int) -> Usage:
    """What one model request reports: the harness prices it (about $0.04 for 10k input tokens here)."""
    return Usage(input_tokens=input_tokens, output_tokens=10)


def flower(*args: str, cwd: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    outer = {k: v for k, v in os.environ.items() if k != "FLOWER_BUDGET"}  # each test says its own budget
    env = {**outer, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", **(extra_env or {})}
    return flower_in(*args, cwd=cwd, env=env, timeout=300)


def rows(ws: Path) -> list[dict[str, Any]]:
    return json.loads((ws / "runs" / "manifest.json").read_text())  # type: ignore[no-any-return]


def kept_budget(ws: Path) -> dict[str, Any]:
    return json.loads((ws / ".flower" / "notes" / "budget.json").read_text())  # type: ignore[no-any-return]


def test_go_stops_at_the_budget_a_plain_wake_keeps_it_and_a_higher_one_goes_on(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    # clarify $0.04 + goal $0.04 = 80 % of $0.10: the one line. The work round's one turn ($0.40) crosses the
    # budget: it finishes, the judge does not start.
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF, usage=usage(10_000))),
        *keyed(GOAL_SETTER, Text(GOAL, usage=usage(10_000))),
        *keyed(
            LEAD,
            bash("echo hello > hello.txt", usage=usage(50_000)),
            Text("Round one: hello.txt is written.", usage=usage(50_000)),
        ),
    )
    stopped = flower("--timeout", "0", "--budget", "0.10", "build a greeter", cwd=workspace)
    assert stopped.returncode == 6, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert claude_env.unscripted == [] and claude_env.pending == 0
    assert not any(JUDGE(r) for r in claude_env.message_requests), "no step starts once the budget is spent"

    manifest = rows(workspace)
    assert [r["step"] for r in manifest] == ["clarify", "goal", "work", "work·judge#1"]
    spent = sum(r["cost_usd"] for r in manifest)
    work_turn = manifest[2]["cost_usd"]
    assert spent <= 0.10 + work_turn + 1e-6, "within the budget plus the one turn in flight"
    judge = manifest[3]
    assert not judge["ok"] and judge["cost_usd"] == 0 and judge["error"].startswith("budget spent")
    assert judge["budget"] == {"limit_usd": 0.1, "spent_usd": pytest.approx(spent, abs=1e-6), "stopped": True}
    assert manifest[2]["ok"] and manifest[2]["budget"]["stopped"] is False, "the turn in flight finished its step"

    lines = stopped.stderr.splitlines()
    near = [line for line in lines if "budget: $0.08" in line and "(80%)" in line]
    assert len(near) == 1, stopped.stderr
    assert any(line.startswith("  x work·judge#1 stopped: budget spent") for line in lines), stopped.stderr
    closing = lines[-1]
    assert "the run's budget is spent" in closing and "of $0.1000" in closing, closing
    assert "work $0.4" in closing and "goal $0.04" in closing and "clarify $0.04" in closing, closing
    assert float(closing.rpartition("flower --budget ")[2]) > spent, "the command goes on with more than is spent"
    kept = kept_budget(workspace)
    assert kept["limit_usd"] == 0.1 and kept["spent_usd"] == pytest.approx(spent, abs=1e-6)
    analyzed = flower("--json", "analyze", cwd=workspace)
    assert analyzed.returncode == 0, analyzed.stderr
    budget = json.loads(analyzed.stdout)["totals"]["budget"]
    assert budget == {
        "limit_usd": 0.1,
        "spent_usd": pytest.approx(spent, abs=1e-6),
        "share": pytest.approx(spent / 0.1, abs=1e-3),
        "stopped": True,
    }
    table = flower("analyze", cwd=workspace)
    assert f"budget ${spent:.4f} of $0.1000" in table.stdout and "stopped by it" in table.stdout, table.stdout

    # A plain wake keeps the budget: spent already, so nothing is sent and it ends the same way.
    sent = len(claude_env.message_requests)
    plain = flower("--timeout", "0", cwd=workspace)
    assert plain.returncode == 6, plain.stderr
    assert len(claude_env.message_requests) == sent, "a spent budget sends nothing"
    assert "the run's budget is spent" in plain.stderr.splitlines()[-1]
    assert rows(workspace)[-1]["step"] == "work" and rows(workspace)[-1]["budget"]["stopped"] is True

    # A wake with a higher budget goes on in the same work session, and the judge passes it.
    claude_env.script(
        *keyed(LEAD, Text("Checked: hello.txt says hello. ALL-DONE", usage=usage(10_000))),
        *keyed(JUDGE, ACHIEVED),
    )
    higher = flower("--timeout", "0", "--budget", "1", cwd=workspace)
    assert higher.returncode == 0, higher.stderr
    assert higher.stdout.strip() == "Checked: hello.txt says hello. ALL-DONE"
    after = rows(workspace)
    work = [r for r in after if r["step"] == "work" and r["cost_usd"] > 0]
    assert len(work) == 2 and work[0]["session_id"] == work[1]["session_id"], "the same work session goes on"
    resumed = [r for r in claude_env.message_requests if LEAD(r)][-1]
    assert "Round one: hello.txt is written." in resumed.text
    assert kept_budget(workspace)["limit_usd"] == 1
    assert kept_budget(workspace)["spent_usd"] == pytest.approx(sum(r["cost_usd"] for r in after), abs=1e-6)


def test_a_turn_that_spends_the_budget_with_workers_live_ends_the_step_there(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    # The lead dispatches a slow worker and ends its turn past the budget: the worker's notification would wake
    # it for another turn; that turn never starts.
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF, usage=usage(1_000))),
        *keyed(GOAL_SETTER, Text(GOAL, usage=usage(1_000))),
        *keyed(
            LEAD & ~when_notified(),
            Turn(
                [
                    "One worker writes the greeting.",
                    dispatch(
                        "write hello",
                        bash("sleep 20; echo hello > hello.txt", usage=usage(1_000)),
                        Text("WROTE-HELLO", usage=usage(1_000)),
                        subagent_type="coder",
                    ),
                ],
                usage=usage(50_000),
            ),
            Text("Dispatched; waiting.", usage=usage(50_000)),
        ),
        *keyed(LEAD & when_notified("WROTE-HELLO"), Text("never sent")),
    )
    stopped = flower("--timeout", "0", "--budget", "0.2", "build a greeter", cwd=workspace)
    assert stopped.returncode == 6, stopped.stderr
    work = next(r for r in rows(workspace) if r["step"] == "work")
    assert not work["ok"] and work["error"].startswith("budget spent") and work["budget"]["stopped"] is True
    assert not any(LEAD(r) and "WROTE-HELLO" in r.last_user_text for r in claude_env.message_requests)
    assert "to go on in the same sessions: flower --budget " in stopped.stderr.splitlines()[-1]


def test_once_with_a_budget_stops_at_it_and_says_how_to_go_on(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        bash("echo one", usage=usage(50_000)),
        Text("never sent"),
    )
    done = flower("once", "-t", "Bash", "-b", "0.1", "count to one", cwd=workspace)
    assert done.returncode == 6, done.stderr
    assert len(claude_env.message_requests) == 1, "the query's cap stops it after the request that crossed it"
    row = rows(workspace)[-1]
    assert row["budget"]["stopped"] is True and row["budget"]["limit_usd"] == 0.1
    closing = done.stderr.splitlines()[-1]
    assert f"flower once --resume {row['session_id']} --budget " in closing, closing


def test_once_reads_flower_budget_and_a_bad_one_is_a_usage_error(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("fine", usage=usage(1_000)))
    done = flower("--json", "once", "say fine", cwd=workspace, extra_env={"FLOWER_BUDGET": "5"})
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [step] = [e for e in events if e["kind"] == "result"]
    assert step["payload"]["budget"]["limit_usd"] == 5.0 and step["payload"]["budget"]["stopped"] is False
    last = events[-1]
    assert last["kind"] == "done" and last["budget"] == {
        "limit_usd": 5.0,
        "spent_usd": pytest.approx(last["cost_usd"], abs=1e-4),
    }
    assert rows(workspace)[-1]["budget"] == {
        "limit_usd": 5.0,
        "spent_usd": pytest.approx(0.004, abs=0.001),
        "stopped": False,
    }
    bad = flower("once", "say fine", cwd=workspace, extra_env={"FLOWER_BUDGET": "lots"})
    assert bad.returncode == 2 and "FLOWER_BUDGET='lots' is not an amount in USD" in bad.stderr
    negative = flower("go", "--budget", "-1", "x", cwd=workspace)
    assert negative.returncode == 2 and "--budget must be a positive amount" in negative.stderr


def test_run_with_a_budget_starts_no_step_once_it_is_spent(claude_env: ScriptedServer, workspace: Path) -> None:
    (workspace / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "spec = AgentSpec('worker', 'WORK-ROLE', allowed_tools=['Read'])\n"
        "def main():\n"
        "    return Workflow([Step('one', spec, 'Part one.'), Step('two', spec, 'Part two.')])\n"
    )
    claude_env.script(Text("part one done", usage=usage(50_000)), Text("never sent"))
    done = flower("run", "flows.py:main", "--budget", "0.1", cwd=workspace)
    assert done.returncode == 6, done.stderr
    assert len(claude_env.message_requests) == 1
    one, two = rows(workspace)
    assert one["ok"] and not two["ok"] and two["budget"]["stopped"] is True and two["cost_usd"] == 0
    assert "flower run flows.py:main --budget " in done.stderr.splitlines()[-1]
