"""``flower --version``: the versions of flower's distributions, the SDK and the Claude Code it runs.

Read without starting a session and without importing the SDK (its import costs most of a second): package
metadata for the distributions, the version file the SDK wheel keeps beside its bundled binary, and only
when that is missing ``claude --version`` with a short timeout.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import typer

from .._shared.version import __version__

__all__ = ["DISTRIBUTIONS", "claude_code_version", "print_version", "version_report"]

DISTRIBUTIONS = ("flower-cli", "flower-env", "flower-stores", "flower-resilience", "flower-workbench")
_OPTIONAL = ("flower-fleet",)  # listed when installed
_SDK = "claude-agent-sdk"
_TIMEOUT_S = 5.0


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _run_version(binary: str) -> str | None:
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    return lines[0].removesuffix("(Claude Code)").strip() or None


def claude_code_version() -> tuple[str | None, str]:
    """(version or None, where it came from): the SDK's bundled binary, else the ``claude`` on PATH."""
    spec = importlib.util.find_spec("claude_agent_sdk")  # finds the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        bundled = Path(location) / "_bundled"
        try:
            recorded = (bundled / "claude.version").read_text(encoding="utf-8").strip()
        except OSError:
            recorded = ""
        if recorded:
            return recorded.removesuffix("(Claude Code)").strip(), "bundled with claude-agent-sdk"
        if (bundled / "claude").is_file():
            return _run_version(str(bundled / "claude")), "bundled with claude-agent-sdk"
    on_path = shutil.which("claude")
    if on_path:
        return _run_version(on_path), on_path
    return None, "no bundled binary and no claude on PATH"


def version_report() -> str:
    """What ``flower --version`` prints: one line per component, the first naming flower's own version."""
    rows: list[tuple[str, str]] = []
    for name in (*DISTRIBUTIONS, *_OPTIONAL):
        found = _installed(name)
        if found is not None or name in DISTRIBUTIONS:
            rows.append((name, found or "not installed"))
    rows.append((_SDK, _installed(_SDK) or "not installed"))
    code, source = claude_code_version()
    rows.append(("Claude Code", f"{code or 'unknown'} ({source})"))
    width = max(len(name) for name, _ in rows)
    return "\n".join([f"flower {__version__}", *(f"  {name:<{width}}  {value}" for name, value in rows)]) + "\n"


def print_version(value: bool) -> None:
    """``-V`` / ``--version`` (an eager option's callback) and ``flower version``: the report, then exit 0."""
    if value:
        typer.echo(version_report(), nl=False)
        raise typer.Exit()
