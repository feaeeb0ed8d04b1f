"""Builders for the .env source matrix (imported by the env tests and their conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flower_env._paths as paths

SOURCES = ("process", "flower_env", "cwd", "user", "checkout", "claude_local", "claude")


class EnvSources:
    def __init__(self, root: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.home = home
        self.monkeypatch = monkeypatch
        self.cwd = root / "project"
        self.cwd.mkdir()
        monkeypatch.chdir(self.cwd)
        self.checkout = root / "checkout"
        self.checkout.mkdir()
        monkeypatch.setattr(paths, "checkout_root", lambda: self.checkout)
        self.files: dict[str, Path] = {
            "flower_env": root / "extra.env",
            "cwd": self.cwd / ".env",
            "user": home / ".config" / "flower" / ".env",
            "checkout": self.checkout / ".env",
            "claude_local": home / ".claude" / "settings.local.json",
            "claude": home / ".claude" / "settings.json",
        }
        self._claude: dict[str, dict[str, str]] = {"claude_local": {}, "claude": {}}

    def put(self, source: str, key: str, value: str) -> None:
        if source == "process":
            self.monkeypatch.setenv(key, value)
            return
        if source == "flower_env":
            self.monkeypatch.setenv("FLOWER_ENV", str(self.files["flower_env"]))
        path = self.files[source]
        path.parent.mkdir(parents=True, exist_ok=True)
        if source.startswith("claude"):
            self._claude[source][key] = value
            path.write_text(json.dumps({"env": self._claude[source], "permissions": {"allow": ["Bash(*)"]}}))
        else:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"{key}={value}\n")
