"""The linter and the formatter, run by CI: ruff over the whole repository (config: root pyproject.toml).

A `noqa` must say why (ruff's RUF100 removes one that suppresses nothing); `ruff format` owns the layout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(150)
def test_ruff_check_finds_nothing() -> None:
    run = _ruff("check", "--no-cache", ".")
    assert run.returncode == 0, (
        f"ruff found problems (run `hatch run ruff check .`):\n{run.stdout[-6000:]}{run.stderr[-2000:]}"
    )


@pytest.mark.timeout(150)
def test_the_tree_is_formatted() -> None:
    run = _ruff("format", "--check", "--no-cache", ".")
    assert run.returncode == 0, (
        f"not formatted (run `hatch run ruff format .`):\n{run.stdout[-6000:]}{run.stderr[-2000:]}"
    )


def test_every_noqa_says_why() -> None:
    # `# noqa: CODE - the reason`: a bare code tells the next reader nothing about why the rule does not apply.
    bare = []
    for path in ROOT.glob("**/*.py"):
        if any(part in {".hatch", ".venv", ".git"} for part in path.relative_to(ROOT).parts):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "# noqa" in line and " - " not in line.split("# noqa", 1)[1]:
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bare, "a noqa without its reason:\n" + "\n".join(bare)
