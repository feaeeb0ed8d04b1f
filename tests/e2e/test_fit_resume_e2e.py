"""Every resume fits the window, with the real binary: a session holding 1.5 M characters of tool output (as the
store holds it) resumed with ``flower once --resume ID --window 200k``, with and without ``-T``, sends a first
request within the load budget that still carries the first prompt and the newest turns, and every output it
trimmed is one Read away at its path; ``--fork`` of the same session works too."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower_cli import AgentSpec, HandoffPolicy, Manifest, Runtime
from flower_stores import history_chars
from harness import RecordedRequest, ScriptedServer, Step, Text, bash, keyed, result_text, when_main, when_prompt, write

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

OUTPUTS = 12
OUTPUT_CHARS = 125_000  # twelve of them: 1.5 M characters of tool output
BUDGET = HandoffPolicy(window=200_000).load_budget  # what --window 200k gives every load
TAKING_OVER = "You are taking over step"
POINTER = re.compile(r"saved to (\S+?\.txt);")


def _flower(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", "--json", *args],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _done(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert run.returncode == 0, run.stderr[-3000:]
    final = json.loads(run.stdout.splitlines()[-1])
    assert final["kind"] == "done" and final["ok"] is True, final
    return dict(final)


def _output(n: int) -> str:
    """A distinct big output per call, so each spills to a file of its own."""
    line = f"output {n} " + "x" * 60 + "\n"
    return (line * (OUTPUT_CHARS // len(line) + 1))[:OUTPUT_CHARS]


def _inflate(db: Path) -> dict[str, str]:
    """Every tool result the store holds becomes ``OUTPUT_CHARS`` long, as if the commands had printed that much
    (the harness would have cut a real Bash output at 30k). Returns tool_use id -> its new text."""
    outputs: dict[str, str] = {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT store_key, seq, payload FROM entries").fetchall()
        for key, seq, payload in rows:
            entry = json.loads(payload)
            content = entry.get("message", {}).get("content")
            if entry.get("type") != "user" or not isinstance(content, list):
                continue
            changed = False
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = outputs.setdefault(block["tool_use_id"], _output(len(outputs)))
                    block["content"] = text
                    changed = True
            if changed:
                conn.execute(
                    "UPDATE entries SET payload = ? WHERE store_key = ? AND seq = ?", (json.dumps(entry), key, seq)
                )
    return outputs


def _sent_chars(request: RecordedRequest) -> int:
    return history_chars([{"type": m.get("role"), "message": m} for m in request.messages])


def _made_session(claude_env: ScriptedServer, workspace: Path) -> tuple[str, dict[str, str]]:
    start = when_main() & when_prompt("FIT-START")
    claude_env.script(
        *keyed(start, *[bash(f"echo part {n}") for n in range(OUTPUTS)], Text("NEWEST-TURN: all parts read."))
    )
    session = _done(_flower(workspace, "once", "-t", "Bash", "FIT-START: the brief — read every part."))["session_id"]
    outputs = _inflate(workspace / "runs" / "sessions.db")
    assert len(outputs) == OUTPUTS
    shutil.rmtree(Path(os.environ["HOME"]) / ".claude" / "projects", ignore_errors=True)  # resume from the store
    return session, outputs


def _check_first_request(
    request: RecordedRequest, workspace: Path, outputs: dict[str, str], budget: int = BUDGET
) -> None:
    assert _sent_chars(request) <= budget, (_sent_chars(request), budget)
    assert "FIT-START: the brief" in request.first_user_text, "the first prompt is kept"
    assert "NEWEST-TURN" in request.text, "the newest turn is kept"
    results = {b["tool_use_id"]: b for b in request.tool_results()}
    assert set(outputs) <= set(results), "no call lost its result"
    trimmed = 0
    for tool_id, text in outputs.items():
        sent = result_text(results[tool_id])
        found = POINTER.findall(sent)
        if found:
            trimmed += 1
            assert (workspace / found[0]).read_text(encoding="utf-8") == text, "a trimmed output is one Read away"
        else:
            assert sent == text, "an output is sent whole or as a pointer to it, nothing in between"
    assert trimmed >= OUTPUTS - budget // OUTPUT_CHARS
    assert result_text(results[list(outputs)[-1]]) == outputs[list(outputs)[-1]], "the newest output stays whole"


@pytest.mark.parametrize("trim", [False, True], ids=["default", "-T"])
def test_a_resume_of_a_huge_session_fits_the_window(claude_env: ScriptedServer, workspace: Path, trim: bool) -> None:
    session, outputs = _made_session(claude_env, workspace)
    before = len(claude_env.message_requests)
    claude_env.script(*keyed(when_main(), Text("RESUMED-ANSWER")))
    flags = ["-T"] if trim else []
    done = _done(_flower(workspace, *flags, "once", "--window", "200k", "--resume", session, "FIT-QUESTION: and?"))
    assert done["text"] == "RESUMED-ANSWER"
    first = next(r for r in claude_env.message_requests[before:] if "FIT-QUESTION" in r.text)
    _check_first_request(first, workspace, outputs)
    # The manifest row says what the resume's load trimmed.
    [load] = Manifest(workspace / "runs" / "manifest.json").rows()[-1]["loads"]
    assert load["session_id"] == session and load["sent_chars"] <= load["budget"] == BUDGET
    # Masked by count (a long session is, -T or not: the two oldest of twelve), then fitted by size.
    assert load["trimmed"] == OUTPUTS - 10 and load["fitted"] > 0
    # `flower analyze` says what the resume trimmed.
    seen = subprocess.run(
        [sys.executable, "-m", "flower_cli", "analyze"],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", "COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seen.returncode == 0, seen.stderr
    assert f"resume trimmed {load['trimmed'] + load['fitted']}" in seen.stdout, seen.stdout
    report = json.loads(_flower(workspace, "analyze").stdout)
    assert report["steps"][-1]["loads"] == [load]


def test_a_fork_of_a_huge_session_works(claude_env: ScriptedServer, workspace: Path) -> None:
    """A 1M window lets the fork load over a million characters: the harness mirrors the forked transcript back
    in one message larger than the SDK's default buffer of 1 MiB (which failed "JSON message exceeded maximum
    buffer size")."""
    session, outputs = _made_session(claude_env, workspace)
    before = len(claude_env.message_requests)
    claude_env.script(*keyed(when_main(), Text("FORKED-ANSWER")))
    done = _done(_flower(workspace, "once", "--window", "1m", "--resume", session, "--fork", "FIT-FORK: branch"))
    assert done["text"] == "FORKED-ANSWER" and done["session_id"] != session
    first = next(r for r in claude_env.message_requests[before:] if "FIT-FORK" in r.text)
    budget = HandoffPolicy(window=1_000_000).load_budget
    assert _sent_chars(first) > 1_048_576, "the fork sends (and mirrors) more than the SDK's default buffer"
    _check_first_request(first, workspace, outputs, budget)


async def test_a_resume_that_cannot_fit_hands_off_with_what_can_be_salvaged(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    """A history over the budget even with every output moved (its first prompt alone is): no request resumes
    it; the successor starts from a degraded handoff that carries the brief, the last words and the files."""
    brief = "HUGE-BRIEF: " + "the goal in detail. " * 22_000  # 440k characters: no trimming can fit it
    start = when_main() & when_prompt("HUGE-BRIEF")
    target = str(workspace / "half.md")
    claude_env.script(
        *keyed(start, write(target, "half done\n"), Text("LAST-WORDS: half of it is in half.md.")),
        Step(Text("SUCCESSOR-DONE"), when_prompt(TAKING_OVER)),
    )
    spec = AgentSpec("builder", "You build things.", allowed_tools=["Write", "Read"])
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=200_000)) as rt:
        one = await rt.run(spec, brief, step_name="build")
        assert one.ok, (one.error, one.errors)
        before = len(claude_env.message_requests)
        two = await rt.run(spec, "RESUME-QUESTION: go on", step_name="build#2", resume=one.session_id)

    assert two.ok and two.text == "SUCCESSOR-DONE", (two.error, two.errors)
    assert two.retired == [one.session_id]
    later = claude_env.message_requests[before:]
    resumed = [r for r in later if "HUGE-BRIEF" in r.first_user_text and TAKING_OVER not in r.first_user_text]
    assert not resumed, "the over-long history was never sent"
    [successor] = [r for r in later if TAKING_OVER in r.first_user_text]
    text = successor.first_user_text
    assert "[degraded: no handoff was written]" in text and "over the 390,000 a resume may send" in text
    assert "LAST-WORDS: half of it is in half.md." in text and target in text
    assert "HUGE-BRIEF: the goal in detail." in text and "RESUME-QUESTION: go on" in text
    assert len(text) < 20_000
    assert any(e.startswith("handoff degraded") for e in two.errors)
    assert two.loads and two.loads[0]["sent_chars"] > two.loads[0]["budget"]
