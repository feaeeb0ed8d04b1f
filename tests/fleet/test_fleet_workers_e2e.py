"""A fleet takeover carries the coordinator's workers on: the worker machine holding a coordinator's step dies
(SIGKILL of its process group) while a background worker runs; the other machine resumes the step, and flower
there recovers the worker from its transcript in the shared PostgreSQL store before the coordinator goes on."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import project_key_for_directory
from fleet_helpers import Fleet, kill_machine, status_json, wait_for

from flower_fleet import step_session_id
from flower_stores import store_from_url
from harness import ScriptedServer, Text, Turn, bash, dispatch, keyed, when_main, when_notified, when_prompt

pytestmark = pytest.mark.e2e

FLOWS = (
    "from flower_cli import AgentSpec, Step, Workflow\n"
    "lead = AgentSpec('lead', 'You split work between workers.', allowed_tools=['Agent', 'Bash'])\n"
    "def main():\n"
    "    return Workflow([Step('work', lead, {prompt!r})], name='lead-with-a-worker')\n"
)


def test_a_takeover_resumes_the_dead_machine_s_worker_from_its_transcript(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    task = f"LEAD-TASK {run_id}"
    ws = fleet.workspace(run_id, FLOWS.format(prompt=task))
    gate = fleet.tmp / "gate"
    piece = dispatch(
        "piece",
        bash(f"touch {fleet.tmp}/started; until [ -e {gate} ]; do sleep 0.05; done"),
        bash("echo piece > piece.txt; echo once >> done.log"),
        Text("PIECE-DONE"),
        prompt="PIECE: write piece.txt",
    )
    lead = when_main() & when_prompt(task)
    claude_env.script(
        *keyed(lead & ~when_notified(), Turn([piece]), *[Text("Waiting for the worker.") for _ in range(3)]),
        *keyed(lead & when_notified("PIECE-DONE"), Text("FINISHED WITH THE PIECE")),
    )
    fleet.start_worker("a", "--slots", "1")
    fleet.start_worker("b", "--slots", "1")
    sent = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--heartbeat-timeout", "5")
    assert sent.returncode == 0, sent.stderr

    session = step_session_id(run_id, "work")
    wait_for(lambda: (fleet.tmp / "started").exists(), 180, "the worker's first command runs")
    wait_for(
        lambda: any(f"until [ -e {gate} ]" in json.dumps(e) for e in _all_entries(pg_url, ws, session)),
        60,
        "the worker's turn is in the store",
    )
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step shows as running on a worker")
    kill_machine(fleet.worker_by_identity(held[0]["worker"]))
    gate.touch()  # nothing of the dead machine is left to see it

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait", timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
    [step] = status_json(fleet, run_id)["done"]
    assert step["ok"] is True and step["output"] == "FINISHED WITH THE PIECE", step
    assert step["attempt"] == 2 and step["session_id"] == session
    assert (ws / "piece.txt").read_text() == "piece\n" and (ws / "done.log").read_text() == "once\n"
    assert _recovered_in_manifests(fleet, run_id), "the taking-over attempt's row lists the recovered worker"
    assert not claude_env.rejected, claude_env.rejected


def _all_entries(pg_url: str, ws: Path, session: str) -> list[Any]:
    """The coordinator's and its workers' entries in the store (the workers' under their subkeys)."""
    store = store_from_url(pg_url)
    try:
        key = {"project_key": project_key_for_directory(str(ws)), "session_id": session}
        found = list(anyio.run(store.load, key) or [])
        for subpath in anyio.run(store.list_subkeys, key):
            found.extend(anyio.run(store.load, {**key, "subpath": subpath}) or [])
        return found
    finally:
        store.close()


def _recovered_in_manifests(fleet: Fleet, run_id: str) -> bool:
    """Does a manifest row of the run list the recovered worker?"""
    for path in (fleet.tmp / "root" / "manifests" / run_id).rglob("*.json"):
        for row in json.loads(path.read_text()):
            if any(w.get("description") == "piece" for w in row.get("recovered") or []):
                return True
    return False
