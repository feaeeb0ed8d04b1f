"""The `flower` command end to end: real processes, the real Claude Code binary, the scripted server."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Outage, ScriptedServer, Text, bash, result_text

pytestmark = pytest.mark.e2e


def flower(
    *args: str, cwd: Path, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command as a user would: a fresh process, stdin not a terminal."""
    full_env = {**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def manifest_rows(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "manifest.json").read_text())


def test_once_answers_on_stdout_and_records_the_step(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash("echo hello from bash"), Text("The answer is 42."))
    done = flower("once", "-t", "Bash,Read", "what is the answer?", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The answer is 42.\n"
    assert "Traceback" not in done.stderr
    assert "* Bash echo hello from bash" in done.stderr
    assert "total cost $" in done.stderr and "manifest" in done.stderr
    run_dir = workspace / "runs"
    assert (run_dir / "sessions.db").is_file()
    [row] = manifest_rows(run_dir)
    assert row["step"] == "ad-hoc" and row["ok"] is True and row["session_id"]
    assert row["num_turns"] >= 2 and row["cost_usd"] > 0
    with sqlite3.connect(run_dir / "sessions.db") as conn:
        stored = conn.execute(
            "select count(*) from entries where store_key like ?", (f"%/{row['session_id']}",)
        ).fetchone()[0]
    assert stored > 0
    # the status line carries the real cumulative cost, not a fresh renderer's $0.00
    assert "cost $0.00 " not in done.stderr.replace("cost $0.00 ·", "")


def test_once_resume_continues_the_same_session_from_the_store(
    claude_env: ScriptedServer, workspace: Path, isolated_home: Path
) -> None:
    claude_env.script(Text("First answer: remember the word PAPAYA."))
    first = flower("once", "remember a word", cwd=workspace)
    assert first.returncode == 0, first.stderr
    sid = manifest_rows(workspace / "runs")[0]["session_id"]
    shutil.rmtree(isolated_home / ".claude")  # the store is now the only copy
    claude_env.script(Text("It was PAPAYA."))
    second = flower("once", "--resume", sid, "which word?", cwd=workspace)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "It was PAPAYA."
    last = claude_env.message_requests[-1]
    assert "remember the word PAPAYA" in last.text, "the resumed request must carry the earlier conversation"
    rows = manifest_rows(workspace / "runs")
    assert [r["session_id"] for r in rows] == [sid, sid]


def test_once_resume_of_an_unknown_session_is_a_usage_error(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("hi"))
    assert flower("once", "hi", cwd=workspace).returncode == 0
    done = flower("once", "--resume", "no-such-session", "again", cwd=workspace)
    assert done.returncode == 2 and "flower sessions" in done.stderr and "Traceback" not in done.stderr


def test_outage_mid_once_is_waited_out_and_the_same_session_finishes(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(bash("echo step one"), Outage(seconds=2.0), bash("echo step two"), Text("Both steps done."))
    done = flower("once", "-t", "Bash", "do two steps", cwd=workspace, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Both steps done."
    [row] = manifest_rows(workspace / "runs")
    assert row["ok"] is True and row["resumed"] is True and row["attempts"] >= 2
    assert any(e for e in row["errors"]), "the outage's error must be kept"
    after = [r for r in claude_env.message_requests if r.status == 200][-1]
    assert "API Error" not in after.text
    sessions = {a.get("session_id") for a in row["attempt_log"] if a.get("session_id")}
    assert sessions == {row["session_id"]}


def test_run_drives_a_two_step_workflow(claude_env: ScriptedServer, workspace: Path) -> None:
    (workspace / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
        "def main():\n"
        "    return Workflow([\n"
        "        Step('draft', writer, 'write a draft'),\n"
        "        Step('polish', writer, lambda ctx: 'polish this: ' + ctx['draft'], resume_from='draft'),\n"
        "    ])\n"
    )
    claude_env.script(Text("DRAFT-TEXT"), Text("POLISHED-TEXT"))
    done = flower("run", "flows.py:main", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "POLISHED-TEXT"
    assert "== draft" in done.stderr and "1/2" in done.stderr and "2/2" in done.stderr
    rows = manifest_rows(workspace / "runs")
    assert [r["step"] for r in rows] == ["draft", "polish"]
    assert rows[0]["session_id"] == rows[1]["session_id"], "polish resumes draft's session"
    assert "polish this: DRAFT-TEXT" in claude_env.message_requests[-1].text
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert lineage["steps"]["draft"] == rows[0]["session_id"]


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("flows.py", "file.py:attr"),
        ("missing.py:main", "no file"),
        ("flows.py:nope", "has no 'nope'"),
        ("flows.py:value", "not a flower_cli.Workflow"),
    ],
)
def test_run_target_mistakes_are_one_line_errors(
    claude_env: ScriptedServer, workspace: Path, target: str, fragment: str
) -> None:
    (workspace / "flows.py").write_text("value = 3\n")
    done = flower("run", target, cwd=workspace)
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr


def test_setup_with_flags_merges_into_the_user_env(isolated_home: Path, workspace: Path) -> None:
    user_env = isolated_home / ".config" / "flower" / ".env"
    user_env.parent.mkdir(parents=True)
    user_env.write_text("MY_OTHER_KEY=keep-me\n")
    done = flower(
        "setup", "--token", "gw-token-123", "--base-url", "http://127.0.0.1:9", "--model", "claude-x", cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    text = user_env.read_text()
    assert "MY_OTHER_KEY=keep-me" in text and "ANTHROPIC_AUTH_TOKEN=gw-token-123" in text
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:9" in text and "ANTHROPIC_MODEL=claude-x" in text
    assert stat.S_IMODE(user_env.stat().st_mode) == 0o600


def test_setup_without_a_terminal_or_flags_says_what_to_pass(isolated_home: Path, workspace: Path) -> None:
    done = flower("setup", cwd=workspace)
    assert done.returncode == 2 and "--token" in done.stderr and "Traceback" not in done.stderr


def test_once_without_credentials_and_without_a_terminal_exits_3_with_the_fix(
    isolated_home: Path, workspace: Path
) -> None:
    done = flower("once", "hi", cwd=workspace)
    assert done.returncode == 3
    assert "flower setup" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_two_once_processes_sharing_a_run_dir_keep_both_rows(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("answer one"), Text("answer two"))
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "flower_cli", "once", f"question {n}"],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    rows = manifest_rows(workspace / "runs")
    assert len(rows) == 2 and len({r["run"] for r in rows}) == 2 and all(r["ok"] for r in rows)


def test_sessions_lists_and_shows(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("Listed answer."))
    assert flower("once", "a question to list", cwd=workspace).returncode == 0
    sid = manifest_rows(workspace / "runs")[0]["session_id"]
    listed = flower("sessions", cwd=workspace)
    assert listed.returncode == 0 and sid in listed.stdout and "ad-hoc" in listed.stdout
    shown = flower("sessions", "show", sid, cwd=workspace)
    assert shown.returncode == 0 and "a question to list" in shown.stdout and "Listed answer." in shown.stdout


def test_doctor_reports_sources_endpoint_probe_and_store(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("pong"))
    done = flower("doctor", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "ANTHROPIC_BASE_URL" in done.stderr and "process environment" in done.stderr
    assert f"127.0.0.1:{claude_env.port} reachable" in done.stderr
    assert "all good" in done.stderr


def test_doctor_says_the_context_window_and_where_it_came_from(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("pong"))
    done = flower("doctor", cwd=workspace, env={"FLOWER_WINDOW": "100k"})
    assert done.returncode == 0, done.stderr
    assert "100,000 tokens (FLOWER_WINDOW); a session hands off at 50,000" in done.stderr
    bad = flower("doctor", cwd=workspace, env={"FLOWER_WINDOW": "lots"})
    assert bad.returncode == 0, bad.stderr
    assert "FLOWER_WINDOW ignored: 'lots' is not a token count" in bad.stderr


def test_json_mode_prints_one_event_per_line(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("json answer"))
    done = flower("--json", "once", "hi", cwd=workspace)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["kind"] == "done" and events[-1]["text"] == "json answer"
    assert any(e["kind"] == "result" for e in events)


def test_rejected_credential_exits_3_without_waiting(claude_env: ScriptedServer, workspace: Path) -> None:
    from harness import unauthorized

    claude_env.script(unauthorized())
    done = flower("once", "hi", cwd=workspace, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert len(claude_env.message_requests) == 1, "a 401 is not retried"
    [row] = manifest_rows(workspace / "runs")
    assert row["ok"] is False and row["errors"]


def test_sigterm_mid_step_records_the_step(claude_env: ScriptedServer, workspace: Path) -> None:
    import signal

    from harness import Hang

    claude_env.script(Hang())
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "once", "hang please"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        claude_env.wait_for(lambda s: len(s.message_requests) >= 1, timeout=120)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM  # it dies of the signal: status 143 to a shell
    [row] = manifest_rows(workspace / "runs")
    assert row["error"] == "killed-by-signal" and row["ok"] is False and row["ended_at"] > 0
    last = err.strip().splitlines()[-1]
    assert last.startswith("flower: stopped by SIGTERM; the step is recorded in "), err
    # The session id is known once the harness announced it; before that, the command itself is the way on.
    again = f"flower once --resume {row['session_id']}" if row["session_id"] else "run the same command again"
    assert "manifest.json" in last and again in last, last


def test_first_run_on_a_terminal_asks_for_credentials(
    scripted_api: ScriptedServer, isolated_home: Path, workspace: Path
) -> None:
    import pty
    import select

    scripted_api.script(Text("configured and answered"))
    env = {
        **os.environ,
        "FLOWER_NO_UPDATE": "1",
        "FLOWER_NO_PROBE": "1",
        "ANTHROPIC_BASE_URL": scripted_api.url,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "once", "hello"],
        cwd=workspace,
        env=env,
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(terminal)
    try:
        for answer in ("sk-ant-typed-at-the-prompt", "", ""):
            os.write(controller, (answer + "\n").encode())
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
        os.close(controller)
    assert proc.returncode == 0, err
    assert "configure flower" in err and out.strip() == "configured and answered"
    user_env = isolated_home / ".config" / "flower" / ".env"
    assert "ANTHROPIC_API_KEY=sk-ant-typed-at-the-prompt" in user_env.read_text()
    assert scripted_api.message_requests[-1].headers["x-api-key"] == "sk-ant-typed-at-the-prompt"
    del select


def test_once_with_a_workbench_spills_big_output_and_shows_the_block(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(
        bash("python3 -c \"[print(f'line {i:05d} ' + 'z'*60) for i in range(700)]\""),
        Text("Spilled and done."),
    )
    done = flower("-W", "once", "-t", "Bash,Read", "make a lot of output", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Spilled and done.\n"
    first, follow_up = claude_env.message_requests[:2]
    assert first.first_user_text.startswith("# Workbench runs/workbench/")
    assert first.first_user_text.endswith("make a lot of output")
    pointer = result_text(follow_up.tool_results()[-1])
    assert pointer.startswith("[output of 50400 characters saved to runs/workbench/spill/")
    spill = workspace / "runs" / "workbench" / "spill"
    [spilled] = list(spill.iterdir())
    assert spilled.stat().st_size == 50400
    assert (workspace / "runs" / "workbench" / "INDEX.md").is_file()
