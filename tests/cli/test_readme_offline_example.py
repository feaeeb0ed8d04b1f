"""The package README's "Test your workflows offline" example runs as written: its flows.py and test_flows.py
are copied into an empty directory and pytest runs them there, as a user would, with the `scripted_claude`
fixture that installing flower-cli brings (the pytest11 entry point) and the real Claude Code binary."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "packages" / "flower-cli" / "README.md"


def _example_files() -> dict[str, str]:
    """The section's Python blocks by the file name each one's first line gives (``# flows.py``)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Test your workflows offline\n")
    section = text[start : text.find("\n### ", start)]
    files: dict[str, str] = {}
    for block in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        first, _, rest = block.partition("\n")
        name = re.fullmatch(r"# (\w+\.py)", first.strip())
        assert name, f"each example block starts with its file name, as `# flows.py`: {first!r}"
        files[name.group(1)] = rest
    return files


def test_the_example_is_a_workflow_and_its_test() -> None:
    files = _example_files()
    assert sorted(files) == ["flows.py", "test_flows.py"]
    assert "Step(" in files["flows.py"] and "scripted_claude" in files["test_flows.py"]
    body = files["test_flows.py"][files["test_flows.py"].index("def test_") :]
    assert len(body.strip().splitlines()) <= 10, "the test is the README's ten-line example"


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_the_example_passes_under_pytest(tmp_path: Path, isolated_home: Path) -> None:
    assert any(e.name == "flower_testing" for e in metadata.entry_points(group="pytest11")), (
        "flower-cli's pytest11 entry point is not installed in this environment (an install from before it was "
        "added): reinstall flower-cli (`pip install --no-deps -e packages/flower-cli`, or remove .hatch/)"
    )
    project = tmp_path / "project"
    project.mkdir()
    for name, source in _example_files().items():
        (project / name).write_text(source, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_flows.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert re.search(r"\b1 passed\b", ran.stdout), ran.stdout[-2000:]
