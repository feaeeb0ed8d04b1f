"""flower_cli.testing as a user gets it: the pytest plugin an install registers, the environment its fixture
sets, and a package that needs nothing beyond the standard library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from flower_cli.testing import DUMMY_API_KEY, ScriptedServer, offline_environment


def test_installing_flower_cli_registers_the_pytest_plugin(pytestconfig: pytest.Config) -> None:
    [entry] = [e for e in metadata.entry_points(group="pytest11") if e.name == "flower_testing"]
    assert entry.value == "flower_cli.testing._pytest_plugin" and entry.dist is not None
    assert entry.dist.name == "flower-cli"
    assert pytestconfig.pluginmanager.has_plugin("flower_testing")


def test_the_fixture_points_the_process_at_its_server(scripted_claude: ScriptedServer) -> None:
    assert scripted_claude.running
    assert os.environ["ANTHROPIC_BASE_URL"] == scripted_claude.url
    assert os.environ["ANTHROPIC_API_KEY"] == DUMMY_API_KEY
    assert os.environ["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert os.environ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    home = Path(os.environ["HOME"])
    assert home.is_dir() and not any(home.iterdir()), "a fresh, empty HOME"
    assert os.environ["XDG_CONFIG_HOME"] == str(home / ".config")


@pytest.fixture
def leaky_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's shell: a real credential, a cloud switch, a shared store."""
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "a-real-token")
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("FLOWER_STORE_URL", "postgresql://db.example.invalid/flower")


def test_the_fixture_removes_what_would_reach_elsewhere(leaky_shell: None, scripted_claude: ScriptedServer) -> None:
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "FLOWER_STORE_URL"):
        assert name not in os.environ, name


def test_offline_environment_keeps_the_rest_and_overrides_ours(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "ANTHROPIC_API_KEY": "sk-ant-real", "AWS_PROFILE": "work"}
    env = offline_environment("http://127.0.0.1:9", tmp_path, base)
    assert env["PATH"] == "/usr/bin" and env["LANG"] == "C.UTF-8" and "AWS_PROFILE" not in env
    assert env["ANTHROPIC_API_KEY"] == DUMMY_API_KEY and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["HOME"] == str(tmp_path) and env["FLOWER_NO_UPDATE"] == "1"
    assert base["ANTHROPIC_API_KEY"] == "sk-ant-real", "the base mapping is not changed"


_PROBE = """
import json, sys
{imports}
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(imports: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE.format(imports=imports)], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(run.stdout))


def test_the_server_needs_only_the_standard_library() -> None:
    loaded = _modules_after("from flower_cli.testing import ScriptedServer, Text, bash, keyed, when_system")
    heavy = {m.split(".")[0] for m in loaded} & {"pytest", "claude_agent_sdk", "anyio", "flower_stores", "typer"}
    assert not heavy, f"flower_cli.testing imported {sorted(heavy)}"
    rooms = {m.split(".")[1] for m in loaded if m.startswith("flower_cli.")}
    assert rooms <= {"_shared", "testing"}, rooms


def test_the_plugin_leaves_the_server_unimported_until_a_test_asks() -> None:
    loaded = _modules_after("import flower_cli.testing._pytest_plugin")
    assert "http.server" not in loaded and "flower_cli.testing._server" not in loaded
