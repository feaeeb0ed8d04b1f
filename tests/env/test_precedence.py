"""Per-key precedence across the six sources (seven with both Claude settings files)."""

from __future__ import annotations

import itertools
import os

import pytest
from env._sources import SOURCES, EnvSources

from flower_env import load_dotenv, source_of

KEY = "ANTHROPIC_MODEL"  # one of the nine, so the Claude settings files may supply it too


@pytest.mark.parametrize(("higher", "lower"), list(itertools.combinations(SOURCES, 2)))
def test_every_pair_higher_source_wins(sources: EnvSources, higher: str, lower: str) -> None:
    sources.put(lower, KEY, f"from-{lower}")
    sources.put(higher, KEY, f"from-{higher}")
    load_dotenv()
    assert os.environ[KEY] == f"from-{higher}"


@pytest.mark.parametrize("only", SOURCES)
def test_each_source_alone_is_read_and_named(sources: EnvSources, only: str) -> None:
    sources.put(only, KEY, f"from-{only}")
    assigned = load_dotenv()
    assert os.environ[KEY] == f"from-{only}"
    where = source_of(KEY)
    if only == "process":
        assert KEY not in assigned and where == "process environment"
    else:
        assert assigned[KEY] == f"from-{only}"
        assert str(sources.files[only]) in (where or "")
        if only.startswith("claude"):
            assert (where or "").startswith("Claude Code settings")


def test_per_key_mixing(sources: EnvSources) -> None:
    sources.put("cwd", "ANTHROPIC_BASE_URL", "http://gateway.local")
    sources.put("user", "ANTHROPIC_AUTH_TOKEN", "user-token")
    sources.put("user", "ANTHROPIC_BASE_URL", "http://ignored")
    sources.put("claude", "ANTHROPIC_MODEL", "claude-model")
    load_dotenv()
    assert os.environ["ANTHROPIC_BASE_URL"] == "http://gateway.local"
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == "user-token"
    assert os.environ["ANTHROPIC_MODEL"] == "claude-model"


def test_empty_value_claims_the_key(sources: EnvSources) -> None:
    sources.put("cwd", "ANTHROPIC_AUTH_TOKEN", "")
    sources.put("user", "ANTHROPIC_AUTH_TOKEN", "real-token")
    load_dotenv()
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == ""


def test_claude_settings_lend_only_the_nine_keys(sources: EnvSources) -> None:
    sources.put("claude", "ANTHROPIC_API_KEY", "sk-ant-from-claude")
    sources.put("claude", "SOME_OTHER_SETTING", "nope")
    load_dotenv()
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-from-claude"
    assert "SOME_OTHER_SETTING" not in os.environ


def test_dotenv_files_have_no_allowlist(sources: EnvSources) -> None:
    sources.put("user", "MY_TOOL_SETTING", "x")
    load_dotenv()
    assert os.environ["MY_TOOL_SETTING"] == "x"


def test_override_replaces_process_values_from_an_explicit_file(sources: EnvSources, write_file) -> None:  # type: ignore[no-untyped-def]
    os.environ["ANTHROPIC_AUTH_TOKEN"] = "old"
    path = write_file("new.env", "ANTHROPIC_AUTH_TOKEN=new\n")
    assert load_dotenv(path) == {}
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == "old"
    assert load_dotenv(path, override=True) == {"ANTHROPIC_AUTH_TOKEN": "new"}
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == "new"


def test_explicit_path_reads_that_file_alone(sources: EnvSources, write_file) -> None:  # type: ignore[no-untyped-def]
    sources.put("user", "FROM_USER", "1")
    sources.put("claude", "ANTHROPIC_MODEL", "claude-model")
    path = write_file("only.env", "ONLY=yes\n")
    assert load_dotenv(path) == {"ONLY": "yes"}
    assert "FROM_USER" not in os.environ and "ANTHROPIC_MODEL" not in os.environ


def test_flower_env_relative_path_is_relative_to_the_current_directory(sources: EnvSources) -> None:
    (sources.cwd / "conf").mkdir()
    (sources.cwd / "conf" / "my.env").write_text("RELATIVE_OK=1\n")
    os.environ["FLOWER_ENV"] = "conf/my.env"
    load_dotenv()
    assert os.environ["RELATIVE_OK"] == "1"


def test_missing_home_directories_are_fine(sources: EnvSources) -> None:
    # isolated_home made HOME empty: no ~/.config, no ~/.claude
    assert load_dotenv() == {}


def test_no_home_at_all(sources: EnvSources, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOME")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setattr("pathlib.Path.home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError("no home"))))
    sources.put("cwd", "FROM_CWD", "1")
    load_dotenv()
    assert os.environ["FROM_CWD"] == "1"


def test_a_source_checkout_is_recognised_only_with_its_layout() -> None:
    from flower_env._paths import checkout_root

    root = checkout_root()
    # Running these tests from the repository: the real layout is present.
    assert root is not None and (root / "packages" / "flower-env").is_dir()
