"""The package README is true: its two-minute app runs against the real binary and spills as it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ScriptedServer, Text, bash, result_text

README = Path(__file__).resolve().parents[2] / "packages" / "flower-workbench" / "README.md"


@pytest.mark.e2e
def test_the_two_minute_app_runs(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(
        bash("python3 -c \"[print(f'line {i:05d} ' + 'z'*60) for i in range(700)]\""),
        bash("mkdir -p .flower/artifacts && echo '# Failure summary' > .flower/artifacts/summary.md"),
        Text("3 failures, summary in .flower/artifacts/summary.md"),
    )
    monkeypatch.chdir(workspace)
    code = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)[0]
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "3 failures" in out
    assert "- `.flower/artifacts/summary.md` — Failure summary" in out  # index_guard saw the Bash write
    first = claude_env.message_requests[0].first_user_text
    assert first.startswith("# Workbench .flower/") and "Run the full test suite" in first
    pointer = result_text(claude_env.message_requests[1].tool_results()[-1])
    assert pointer.startswith("[output of 50400 characters saved to .flower/spill/0d3ef986872bf74c.txt — Read it")
