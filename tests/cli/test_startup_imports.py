"""`flower --help` stays fast: it imports neither the SDK nor the layers that need it.

The SDK (and the bundled harness's Python side) is the one import that costs most of a second; only the
command that runs an agent should pay for it. Each lazy import that keeps it off this path says why.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
        ["sessions", "--help"],
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
