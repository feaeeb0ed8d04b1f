"""The package README is true: its app runs against the real binary, its classify lines say what classify says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flower_resilience import classify
from harness import ScriptedServer, Text

README = Path(__file__).resolve().parents[2] / "packages" / "flower-resilience" / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


@pytest.mark.e2e
def test_the_two_minute_app_runs(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(Text("All green."))
    monkeypatch.chdir(workspace)
    exec(compile(_python_blocks()[0], str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "All green." in out and "result: All green." in out
    assert "ok=True resumed=False" in out and "attempt 1: ok" in out


def test_the_classify_examples_hold() -> None:
    examples = re.findall(r'^classify\((".*?")\)\s+# "(\w+)"', _python_blocks()[1], re.MULTILINE)
    assert len(examples) == 4
    for literal, kind in examples:
        assert classify(eval(literal)) == kind, literal
