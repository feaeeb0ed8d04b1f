"""The type checker, run by CI: mypy --strict over every package's source (config: root pyproject.toml).

Each distribution ships ``py.typed``, a promise to the projects that type-check against it that its
annotations are complete and true; this test keeps that promise checked on every change.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_mypy_config_is_strict_over_all_six_packages() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert config["files"] == ["packages/*/src"]
    assert sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file()) == [
        "flower-cli",
        "flower-env",
        "flower-fleet",
        "flower-resilience",
        "flower-stores",
        "flower-workbench",
    ]


@pytest.mark.timeout(600)
def test_mypy_strict_finds_nothing() -> None:
    # The root pyproject.toml's [tool.mypy] says what and how; running from the root picks it up.
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=580)
    assert run.returncode == 0, (
        f"mypy found problems (run `hatch run python -m mypy`):\n{run.stdout[-6000:]}{run.stderr[-2000:]}"
    )
    assert "Success" in run.stdout
