"""A launch that dies before the harness reports its cost still paid for what was answered: the real `flower`,
the real Claude Code binary, the scripted server.

The first request is answered (with known usage) and asks for a command that kills the harness itself — a crash
after a paid request and before any ``ResultMessage``. flower resumes and finishes; the manifest counts the dead
attempt's request as paid: ``cost_estimated_usd`` on the row and on the attempt, and inside ``cost_usd``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from e2e._runs import flower

from flower_cli.runtime._paid import estimate_usd
from harness import ScriptedServer, Text, Usage, bash

pytestmark = [pytest.mark.e2e]

# Kill this command's own Claude Code process (an ancestor named "claude"): never another process of the machine.
KILL_OWN_HARNESS = (
    'p=$PPID; while [ "$p" -gt 1 ] && [ "$(cat /proc/$p/comm)" != claude ]; do '
    "p=$(awk '{print $4}' /proc/$p/stat); done; "
    '[ "$p" -gt 1 ] && kill -9 "$p"'
)
PAID = Usage(input_tokens=120_000, output_tokens=2_000)


def test_a_crashed_attempts_answered_request_is_recorded_as_paid(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash(KILL_OWN_HARNESS, usage=PAID), Text("FINISHED-AFTER-CRASH"))
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    done = flower("once", "-t", "Bash", "do the thing", cwd=workspace, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "FINISHED-AFTER-CRASH"
    [row] = json.loads((workspace / "runs" / "manifest.json").read_text())
    first = next(r for r in claude_env.message_requests if r.usage)
    model = (first.json or {}).get("model")
    # The harness streams a request's blocks with the usage known then: the input whole, the output as counted so
    # far (the final count comes after the last block). So the estimate holds the input and errs low on output.
    low = estimate_usd(model, {"input_tokens": 120_000})
    high = estimate_usd(model, {"input_tokens": 120_000, "output_tokens": 2_000})
    assert low > 0.02  # 120k input tokens at any list price
    assert row["attempts"] >= 2 and row["attempt_log"][0]["error"], "the first attempt died"
    estimated = row["attempt_log"][0]["cost_estimated_usd"]
    assert low <= estimated <= high + 1e-6
    assert row["cost_estimated_usd"] == estimated
    assert row["cost_usd"] >= row["cost_estimated_usd"], "the estimate is counted as paid"
    assert all("cost_estimated_usd" not in a for a in row["attempt_log"][1:]), "the finished attempt's is measured"
