"""Fixtures every test folder shares: an isolated HOME, the scripted Messages API, the real binary."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import ScriptedServer
from harness.agent import bundled_claude

# Variables from the developer's shell that would leak credentials, settings or behaviour into a test.
_LEAKY_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_", "AWS_", "GOOGLE_", "OTEL_")
_LEAKY_NAMES = {"CLAUDECODE", "XDG_CONFIG_HOME", "DISABLE_AUTOUPDATER", "DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"}

TEST_API_KEY = "sk-ant-test-0000000000000000"

# The third-party releases the packages declare ranges for (tests/repo/test_dependency_ranges.py).
_TESTED = ("claude-agent-sdk", "typer", "anyio", "python-dotenv")


def pytest_report_header() -> str:
    """Every test log says which dependency versions it ran on: CI installs the newest the ranges allow."""
    from importlib import metadata

    versions = []
    for name in _TESTED:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return "tested with: " + ", ".join(versions)


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and XDG_CONFIG_HOME; no ANTHROPIC_/CLAUDE_/FLOWER_ variable from the outside survives."""
    for name in list(os.environ):
        if name.startswith(_LEAKY_PREFIXES) or name in _LEAKY_NAMES:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def scripted_api() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def claude_env(isolated_home: Path, scripted_api: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedServer:
    """Point the real Claude Code binary at the scripted server, with a dummy key and no side traffic.

    ``CLAUDE_CODE_MAX_RETRIES=0`` makes the harness give up on the first failed request, so outage and error
    tests are bounded and the retry behaviour under test is ours, not the harness's.
    """
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_API_KEY)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    return scripted_api


@pytest.fixture
def claude_binary() -> Path:
    path = bundled_claude()
    assert path.is_file(), f"the claude-agent-sdk wheel ships no Claude Code binary at {path}"
    return path
