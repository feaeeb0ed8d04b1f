"""describe/settings masking and sources, write_user_env merging, and the live probe's verdicts."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import pytest
from env._sources import EnvSources

from flower_env import (
    EnvFileError,
    describe,
    load_dotenv,
    probe_credentials,
    settings,
    setup_values,
    user_env_path,
    write_user_env,
)
from harness import (
    ApiError,
    Hang,
    ScriptedServer,
    Text,
    invalid_request,
    overloaded,
    rate_limited,
    server_error,
    unauthorized,
)


def test_describe_masks_secrets_and_names_sources(sources: EnvSources) -> None:
    sources.put("user", "ANTHROPIC_API_KEY", "sk-ant-abcdefghijkl")
    sources.put("process", "ANTHROPIC_MODEL", "claude-opus-x")
    load_dotenv()
    shown = describe()
    assert shown["ANTHROPIC_API_KEY"] == f"sk-a…(19 chars)  ({sources.files['user']})"
    assert shown["ANTHROPIC_MODEL"] == "claude-opus-x  (process environment)"
    assert shown["ANTHROPIC_BASE_URL"] == "https://api.anthropic.com  (default)"
    assert "abcdefgh" not in str(shown)
    assert [s.key for s in settings()] == ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"]


def test_setup_values_map_tokens_and_models() -> None:
    assert setup_values("sk-ant-xyz") == {"ANTHROPIC_API_KEY": "sk-ant-xyz", "ANTHROPIC_AUTH_TOKEN": None}
    gw = setup_values("gw-123", base_url="https://gw.example/", model="m1")
    assert gw["ANTHROPIC_AUTH_TOKEN"] == "gw-123" and gw["ANTHROPIC_API_KEY"] is None
    assert gw["ANTHROPIC_BASE_URL"] == "https://gw.example"
    assert gw["ANTHROPIC_MODEL"] == gw["ANTHROPIC_DEFAULT_OPUS_MODEL"] == gw["ANTHROPIC_DEFAULT_SONNET_MODEL"] == "m1"


def test_write_user_env_merges_atomically_with_mode_0600(isolated_home: Path) -> None:
    path = user_env_path()
    path.parent.mkdir(parents=True)
    path.write_text("# my notes\nOTHER_TOOL=keep\nANTHROPIC_API_KEY=sk-ant-old\n")
    written = write_user_env(setup_values("gateway-token", model="claude x"))
    assert written == path
    text = path.read_text()
    assert "# my notes" in text and "OTHER_TOOL=keep" in text
    assert "ANTHROPIC_AUTH_TOKEN=gateway-token" in text
    assert "sk-ant-old" not in text, "the other credential kind is removed so it cannot win silently"
    assert 'ANTHROPIC_MODEL="claude x"' in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(path.parent.glob(".env.*.tmp"))
    load_dotenv(path, override=True)
    assert os.environ["ANTHROPIC_MODEL"] == "claude x"


def test_write_user_env_new_file_gets_a_header(isolated_home: Path) -> None:
    path = write_user_env({"ANTHROPIC_AUTH_TOKEN": "t"})
    assert path.read_text().startswith("# flower credentials") and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_write_user_env_refuses_a_file_it_cannot_parse_and_changes_nothing(isolated_home: Path) -> None:
    path = user_env_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"K=caf\xe9\n")
    with pytest.raises(EnvFileError, match="not UTF-8"):
        write_user_env({"ANTHROPIC_AUTH_TOKEN": "t"})
    assert path.read_bytes() == b"K=caf\xe9\n"


@pytest.fixture
def probe_env(isolated_home: Path, scripted_api: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedServer:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-probe")
    return scripted_api


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (Text("hi"), "ok"),
        (unauthorized(), "auth"),
        (ApiError(403, "permission_error", "forbidden"), "auth"),
        (ApiError(404, "not_found_error", "Not found"), "config"),
        (invalid_request("model: unknown model claude-nope"), "config"),
        (invalid_request("messages: something else"), "ok"),
        (rate_limited(), "ok"),
        (server_error(), "net"),
        (overloaded(), "net"),
    ],
)
def test_probe_verdicts(probe_env: ScriptedServer, reply, verdict: str) -> None:  # type: ignore[no-untyped-def]
    probe_env.script(reply)
    result = probe_credentials(timeout=10)
    assert result.verdict == verdict, result
    [request] = probe_env.message_requests
    body = request.json
    assert body["max_tokens"] == 16 and body["messages"] == [{"role": "user", "content": "hi"}]
    assert request.headers["x-api-key"] == "sk-ant-probe" and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"


def test_probe_uses_bearer_and_the_haiku_model(probe_env: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "gw-tok")
    monkeypatch.setenv("ANTHROPIC_MODEL", "big-model")
    monkeypatch.setenv("ANTHROPIC_DEFAULT_HAIKU_MODEL", "small-model")
    probe_env.script(Text("hi"))
    assert probe_credentials(timeout=10).ok
    [request] = probe_env.message_requests
    assert request.headers["authorization"] == "Bearer gw-tok" and request.json["model"] == "small-model"


def test_probe_on_a_closed_port_is_net(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert probe_credentials(timeout=5).verdict == "net"


def test_probe_returns_within_its_timeout_when_the_server_never_answers(probe_env: ScriptedServer) -> None:
    probe_env.script(Hang())
    started = time.monotonic()
    result = probe_credentials(timeout=1.5)
    elapsed = time.monotonic() - started
    assert result.verdict == "net" and elapsed < 3.0, (result, elapsed)


def test_probe_without_credentials_is_auth(isolated_home: Path) -> None:
    assert probe_credentials().verdict == "auth"
