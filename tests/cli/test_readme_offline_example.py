"""The READMEs' offline-testing examples run as written (flower-cli's "Test your workflows offline", the root
README's "Workflows, tested offline"): each one's flows.py and test_flows.py are copied into an empty directory
and pytest runs them there, as a user would, with the `scripted_claude` fixture that installing flower-cli
brings (the pytest11 entry point) and the real Claude Code binary."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "flower-cli": (ROOT / "packages" / "flower-cli" / "README.md", "Test your workflows offline"),
    "root": (ROOT / "README.md", "Workflows, tested offline"),
}


def _example_files(readme: Path, heading: str) -> dict[str, str]:
    """The section's Python blocks by the file name each one's first line gives (``# flows.py``)."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i != -1]
    section = text[start : min(ends, default=len(text))]
    files: dict[str, str] = {}
    for block in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        first, _, rest = block.partition("\n")
        name = re.fullmatch(r"# (\w+\.py)", first.strip())
        assert name, f"each example block starts with its file name, as `# flows.py`: {first!r}"
        files[name.group(1)] = rest
    return files


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_is_a_workflow_and_its_test(example: str) -> None:
    files = _example_files(*EXAMPLES[example])
    assert sorted(files) == ["flows.py", "test_flows.py"]
    assert "Step(" in files["flows.py"] and "scripted_claude" in files["test_flows.py"]
    body = files["test_flows.py"][files["test_flows.py"].index("def test_") :]
    assert len(body.strip().splitlines()) <= 10, "the test is the README's ten-line example"


@pytest.mark.e2e
@pytest.mark.timeout(240)
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_passes_under_pytest(example: str, tmp_path: Path, isolated_home: Path) -> None:
    assert any(e.name == "flower_testing" for e in metadata.entry_points(group="pytest11")), (
        "flower-cli's pytest11 entry point is not installed in this environment (an install from before it was "
        "added): reinstall flower-cli (`pip install --no-deps -e packages/flower-cli`, or remove .hatch/)"
    )
    project = tmp_path / "project"
    project.mkdir()
    for name, source in _example_files(*EXAMPLES[example]).items():
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
