"""`flower --help` stays fast: it imports neither the SDK nor the layers that need it; `flower analyze` imports
no SDK.

The SDK (and the bundled harness's Python side) is the one import that costs most of a second; only the
command that runs an agent should pay for it. Each lazy import that keeps it off this path says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# What `flower --help` (and a subcommand's --help) may not have imported when it exits.
_HEAVY = (
    "claude_agent_sdk",
    "anyio",
    "flower_stores",
    "flower_resilience",
    "flower_workbench",
    "flower_env",
    "temporalio",
)

_PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["flower", *sys.argv[1:]]
from flower_cli.__main__ import main
main()
"""


def _modules_after(*args: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "FLOWER_NO_UPDATE": "1", "HOME": "/nonexistent"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    line = next(x for x in run.stderr.splitlines() if x.startswith("MODULES "))
    return list(json.loads(line.removeprefix("MODULES ")))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["once", "--help"],
        ["go", "--help"],
        ["run", "--help"],
        ["setup", "--help"],
        ["doctor", "--help"],
        ["analyze", "--help"],
        ["sessions", "--help"],
        ["sessions", "show", "--help"],
        ["sessions", "import", "--help"],
        ["--version"],
        ["version"],
        ["fleet", "--help"],  # a plugin's help: flower-fleet's typer app, not the Temporal SDK
        ["fleet", "submit", "--help"],
    ],
)
def test_help_imports_no_sdk(args: list[str]) -> None:
    loaded = _modules_after(*args)
    heavy = sorted({m.split(".")[0] for m in loaded} & set(_HEAVY))
    assert not heavy, f"`flower {' '.join(args)}` imported {heavy}: keep them lazy on the help path"
    # The layers below the command line stay unloaded too: the help needs only the CLI and the stdout wrapper.
    rooms = sorted({m.split(".")[1] for m in loaded if m.startswith("flower_cli.") and m.count(".") >= 1})
    assert set(rooms) <= {"__main__", "_shared", "cli", "view"}, rooms


def _small_run(run_dir: Path) -> None:
    """A run dir with one session whose big tool result the "on resume" estimate would trim."""
    import anyio

    from flower_stores import SqliteSessionStore

    sid = "0d1c2b3a-0000-4000-8000-000000000001"
    stamp = "2026-01-01T00:00:00.000Z"
    entries: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u1", "sessionId": sid, "timestamp": stamp, "message": {"content": "look"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": sid,
            "timestamp": stamp,
            "message": {
                "id": "m1",
                "usage": {"input_tokens": 10, "output_tokens": 5},
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat big"}}],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "sessionId": sid,
            "timestamp": stamp,
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 50_000}]},
        },
    ]
    run_dir.mkdir(parents=True)
    with SqliteSessionStore(run_dir / "sessions.db") as store:
        anyio.run(store.append, {"project_key": "-ws", "session_id": sid}, entries)


@pytest.mark.parametrize("args", [[], ["--json"]])
def test_analyze_imports_no_sdk(tmp_path: Path, args: list[str]) -> None:
    """`flower analyze` only reads SQLite and JSON: it must not pay the SDK's import (its benchmark's target is
    twice a bare scan of the database, start-up included)."""
    run_dir = tmp_path / "runs"
    _small_run(run_dir)
    loaded = _modules_after(*args, "analyze", str(run_dir))
    sdk = sorted(m for m in loaded if m.split(".")[0] in ("claude_agent_sdk", "mcp", "flower_resilience"))
    assert not sdk, f"`flower {' '.join([*args, 'analyze'])}` imported {sdk[:5]}: keep the SDK off analyze's path"
    assert "flower_cli.analyze" in loaded and "flower_stores" in loaded  # it did read the run
    # typer 0.29 converts option values through pydantic (~0.25 s to import and build); flower's paths,
    # strings, flags and choices are converted without it (cli/_params.py).
    assert "pydantic" not in loaded, "`flower analyze` imported pydantic: see cli/_params.py"


def test_global_options_import_no_pydantic(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    _small_run(run_dir)
    loaded = _modules_after("-w", str(tmp_path), "-r", str(run_dir), "--color", "NEVER", "-v", "sessions", "--help")
    assert "pydantic" not in loaded
    loaded = _modules_after("--color", "always", "analyze", str(run_dir), "--html", str(tmp_path / "p.html"), "--wide")
    assert "pydantic" not in loaded
