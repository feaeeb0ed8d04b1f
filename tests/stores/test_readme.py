"""The package README is true: its app runs against the real binary, its pure-function example prints what it says."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from flower_stores import is_ephemeral
from harness import ScriptedServer, Text, bash

README = Path(__file__).resolve().parents[2] / "packages" / "flower-stores" / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_the_two_minute_app_runs_and_resumes_lean(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "app.py").write_text("print('hi')\n")
    # Four glances in the first session; the resume keeps the newest two (keep_recent=2 in the README).
    claude_env.script(
        bash("git status"), bash("ls -la"), bash("git status --short"), bash("ls"), Text("A tiny demo app.")
    )
    claude_env.script(Text("No tests to run."))
    monkeypatch.chdir(workspace)
    first_request = len(claude_env.message_requests)

    exec(compile(_python_blocks()[0], str(README), "exec"), {"__name__": "readme"})

    out = capsys.readouterr().out
    assert "first: A tiny demo app." in out and "resumed: No tests to run." in out
    assert "expired 2 stale results" in out
    assert re.search(r"stored: \['[0-9a-f-]{36}'\]", out), out
    assert re.search(r"context of the last call: [1-9]\d* tokens", out), out
    assert claude_env.rejected == [] and claude_env.unscripted == []
    # The resumed session's first request carries the expiry notes, not the stale glances.
    resumed = [r for r in claude_env.message_requests[first_request:] if "Now run the tests." in r.text]
    assert resumed, "the resume never reached the model"
    assert resumed[0].text.count("result expired") == 2
    assert (workspace / "sessions.db").is_file()


def test_the_pure_function_example_holds(capsys: pytest.CaptureFixture[str]) -> None:
    block = _python_blocks()[1]
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    printed = re.search(r'print\(report\.summary\(\)\)\s+# "(.*?)"', block)
    assert printed is not None
    assert capsys.readouterr().out.strip() == printed.group(1)
    examples = re.findall(r"^is_ephemeral\((\".*?\")\)\s+# (True|False)", block, re.MULTILINE)
    assert len(examples) == 5
    for literal, verdict in examples:
        assert is_ephemeral(eval(literal)) is (verdict == "True"), literal


def test_the_postgres_example_holds(pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    block = _python_blocks()[2]
    assert "postgresql://flower:secret@db.internal:5432/flower" in block and '"/srv/project"' in block
    # The README's server and workspace, swapped for the test server (in a schema of its own) and a temp dir.
    schema = f"readme_{tmp_path.name.replace('-', '_')}"[:60]
    block = block.replace(
        'PostgresSessionStore("postgresql://flower:secret@db.internal:5432/flower")',
        f"PostgresSessionStore({pg_url!r}, schema={schema!r})",
    )
    block = block.replace('"/srv/project"', repr(str(tmp_path)))
    try:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    printed = re.search(r"\)\)\s+# (\d+ \w+):", block)
    assert printed is not None
    assert capsys.readouterr().out.strip() == printed.group(1)


def _printed(block: str) -> list[str]:
    """What the block says it prints: the ``# ...`` comment of every ``print(...)`` line that has one."""
    return re.findall(r"^\s*(?:except .*:\s*)?print\(.*\)\s+# (.*)$", block, re.MULTILINE)


def test_the_lease_example_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    block = _python_blocks()[3]
    assert "acquire_lease" in block and "hold_lease" in block
    monkeypatch.chdir(tmp_path)  # its sessions.db goes to the current directory
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (
        capsys.readouterr().out.splitlines()
        == _printed(block)
        == [
            "refused: nightly-42 1",
            "fenced out at epoch 2 - stored: 1",
            "driving at epoch 3",
        ]
    )


def test_the_session_index_example_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    block = _python_blocks()[4]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (
        capsys.readouterr().out.splitlines()
        == _printed(block)
        == ["True True True", "3052 (1, 1)", "QueryNotSupported"]
    )


def test_the_upkeep_example_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    block = _python_blocks()[5]
    assert "StoreUpkeep" in block
    monkeypatch.chdir(tmp_path)  # its sessions.db goes to the current directory
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (
        capsys.readouterr().out.splitlines()
        == _printed(block)
        == ["[('session-1', True), ('session-2', False)]", "['session-0']", "True"]
    )
