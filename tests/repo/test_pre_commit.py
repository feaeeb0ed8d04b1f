""".pre-commit-config.yaml runs the suite's own checks (ruff check, ruff format, mypy) from the checkout's hatch
environment, as local hooks: a commit never downloads a hook repository.

The file is parsed with PyYAML when it is installed (pre-commit brings it); the hatch environment does not
carry it, so without it the same facts are read from the text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".pre-commit-config.yaml"
REQUIRED = {"ruff-check": "ruff check", "ruff-format": "ruff format", "mypy": "mypy"}


def _hooks_from_yaml(text: str) -> list[dict[str, Any]] | None:
    try:
        import yaml
    except ImportError:
        return None
    config = yaml.safe_load(text)
    assert isinstance(config, dict) and isinstance(config.get("repos"), list), "no `repos:` list"
    hooks: list[dict[str, Any]] = []
    for repo in config["repos"]:
        assert repo.get("repo") == "local", f"a hook repository would be downloaded at commit time: {repo.get('repo')}"
        hooks.extend(repo.get("hooks") or [])
    return hooks


def _hooks_from_text(text: str) -> list[dict[str, Any]]:
    """The ``- id:`` blocks of the file, with their ``entry:`` and ``language:`` (enough for the checks below)."""
    repos = re.findall(r"^\s*-\s*repo:\s*(\S+)", text, flags=re.M)
    assert repos, "no `- repo:` entry"
    assert set(repos) == {"local"}, f"a hook repository would be downloaded at commit time: {repos}"
    hooks: list[dict[str, Any]] = []
    for block in re.split(r"^\s*-\s*id:", text, flags=re.M)[1:]:
        hook: dict[str, Any] = {"id": block.splitlines()[0].strip()}
        for key in ("entry", "language"):
            found = re.search(rf"^\s*{key}:\s*(.+?)\s*$", block, flags=re.M)
            if found:
                hook[key] = found.group(1).strip("'\"")
        hooks.append(hook)
    return hooks


@pytest.fixture(scope="module")
def hooks() -> dict[str, dict[str, Any]]:
    text = CONFIG.read_text(encoding="utf-8")
    found = _hooks_from_yaml(text)
    if found is None:
        found = _hooks_from_text(text)
    return {str(hook["id"]): hook for hook in found}


def test_ruff_and_mypy_are_hooks(hooks: dict[str, dict[str, Any]]) -> None:
    missing = sorted(set(REQUIRED) - set(hooks))
    assert not missing, f".pre-commit-config.yaml lacks the hooks {missing}"
    for hook_id, command in REQUIRED.items():
        assert command in hooks[hook_id]["entry"], f"{hook_id} does not run `{command}`: {hooks[hook_id]['entry']}"
    assert "--fix" in hooks["ruff-check"]["entry"]


def test_tool_hooks_run_the_hatch_environment(hooks: dict[str, dict[str, Any]]) -> None:
    for hook_id in REQUIRED:
        hook = hooks[hook_id]
        assert hook["language"] == "system", f"{hook_id}: `language: system` runs the installed tool, nothing fetched"
        entry = hook["entry"]
        assert entry.startswith((".hatch/default/bin/", "hatch run ")), (
            f"{hook_id} must run the hatch environment's tool (the version the root pyproject pins): {entry}"
        )
        executable = ROOT / entry.split()[0]
        if entry.startswith(".hatch/") and (ROOT / ".hatch" / "default").is_dir():
            assert executable.is_file(), f"{hook_id}: {executable} is not in the hatch environment"


def test_every_hook_runs_offline(hooks: dict[str, dict[str, Any]]) -> None:
    # `system` runs what is installed; `pygrep` is built into pre-commit. Any other language makes pre-commit
    # build an environment for the hook, which downloads packages.
    offline = {"system", "pygrep"}
    wrong = {hook_id: hook.get("language") for hook_id, hook in hooks.items() if hook.get("language") not in offline}
    assert not wrong, f"hooks that would download an environment at commit time: {wrong}"
