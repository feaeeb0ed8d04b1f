"""The probe's memory: one accepted probe per endpoint and credential per day, kept as a hash, mode 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flower_env import probe_fingerprint, probed_path, probed_today, remember_probe

KEY = "sk-ant-secret-value-123456"


@pytest.fixture
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example.com")


def test_remembered_today_for_this_endpoint_and_key_only(credential: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not probed_today()
    path = remember_probe()
    assert path == probed_path() and path.parent == Path(os.environ["XDG_CONFIG_HOME"]) / "flower"
    assert probed_today()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KEY not in path.read_text() and "gateway.example.com" not in path.read_text()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://other.example.com/")
    assert not probed_today(), "another endpoint is probed again"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example.com/")
    assert probed_today(), "a trailing slash is the same endpoint"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY + "x")
    assert not probed_today(), "another key is probed again"


def test_a_new_day_probes_again_and_old_days_are_dropped(credential: None) -> None:
    remember_probe(day="2024-01-01")
    assert probed_today(day="2024-01-01") and not probed_today(day="2024-01-02")
    remember_probe(day="2024-01-02")
    assert not probed_today(day="2024-01-01"), "only one day is kept"


def test_no_credential_no_memory(isolated_home: Path) -> None:
    assert probe_fingerprint() is None and remember_probe() is None and not probed_today()


def test_a_garbled_or_unwritable_file_only_means_probing_again(credential: None) -> None:
    path = probed_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert not probed_today()
    assert remember_probe() == path and probed_today()
    path.unlink()
    path.mkdir()  # a folder where the file should be: nothing to write to, no exception
    assert remember_probe() is None and not probed_today()


def test_token_and_key_of_the_same_value_are_different_credentials(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "same")
    as_token = probe_fingerprint()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "same")
    assert probe_fingerprint() != as_token
