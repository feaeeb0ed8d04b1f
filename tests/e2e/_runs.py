"""Real run dirs for `flower analyze` tests: the real `flower` command and Claude Code binary against the
scripted server, shared by the tests of one module (a run takes seconds; the reports are read many times)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import RecordedRequest, ScriptedServer, result_text

TEST_API_KEY = "sk-ant-test-0000000000000000"
_LEAKY_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_", "AWS_", "GOOGLE_", "OTEL_")
_LEAKY_NAMES = {"CLAUDECODE", "XDG_CONFIG_HOME", "DISABLE_AUTOUPDATER", "DISABLE_AUTO_COMPACT", "DISABLE_COMPACT", "CI"}


def isolated_env(home: Path, server: ScriptedServer) -> dict[str, str]:
    """What conftest's claude_env fixture sets, for module-scoped runs (no monkeypatch at that scope)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES) and k not in _LEAKY_NAMES}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY=TEST_API_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",
        DISABLE_AUTOUPDATER="1",
        FLOWER_NO_UPDATE="1",
    )
    return env


def flower(*args: str, cwd: Path, env: Mapping[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class Run:
    """A finished run: where it is, how to run flower there, and what the scripted server saw."""

    workspace: Path
    env: dict[str, str]
    requests: list[RecordedRequest]

    @property
    def run_dir(self) -> Path:
        return self.workspace / "runs"

    def manifest(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads((self.run_dir / "manifest.json").read_text())
        return rows

    def analyze_json(self, *extra: str) -> dict[str, Any]:
        done = flower("--json", "analyze", *extra, cwd=self.workspace, env=self.env)
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def of_agent(self, fragment: str) -> list[RecordedRequest]:
        """The answered model calls of the agent whose prompt holds ``fragment``, in the order answered."""
        return [r for r in self.requests if r.usage is not None and fragment in r.first_user_text]


def context_of(request: RecordedRequest) -> int:
    usage = request.usage or {}
    return (
        int(usage["input_tokens"]) + int(usage["cache_read_input_tokens"]) + int(usage["cache_creation_input_tokens"])
    )


def tool_result_after(server: ScriptedServer, tool: str) -> str:
    """The text of the tool_result answering the first call of ``tool``."""
    ids = {block["id"] for r in server.message_requests for block in r.tool_uses() if block.get("name") == tool}
    for request in server.message_requests:
        for block in request.tool_results():
            if block.get("tool_use_id") in ids:
                return result_text(block)
    return ""


def store_place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[str], str]:
    """For a test parametrised ``["sqlite", "postgres"]``: a fresh workspace, the ``flower`` options that name its
    store (none: the run dir's sessions.db; ``--store URL``: the test server), and that store's URL."""
    workspace = tmp_path / f"ws-{time.time_ns()}"  # unique: its project key is unique on a shared server too
    workspace.mkdir()
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return workspace, ["--store", url], url
    return workspace, [], f"sqlite:///{workspace / 'runs' / 'sessions.db'}"
