"""The root README's `flower analyze` sample keeps the columns and the summary line the command prints."""

from __future__ import annotations

import re
from pathlib import Path

from flower_cli.analyze.table import SESSION_HEADERS, STEP_HEADERS

README = Path(__file__).resolve().parents[2] / "README.md"


def _sample() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```\n\$ flower analyze\n(.*?)```", text, flags=re.S)
    assert block, "the README's tour shows `$ flower analyze` and its output in a code block"
    return block.group(1).splitlines()


def _columns(line: str) -> list[str]:
    return [c for c in re.split(r" {2,}", line.strip()) if c]


def test_the_readme_sample_has_the_commands_columns() -> None:
    lines = _sample()
    headers = [_columns(line) for line in lines if line.startswith(("step ", "session "))]
    assert headers == [list(STEP_HEADERS), [h for h in SESSION_HEADERS if h]]
    assert lines[0].startswith("flower analyze · ") and "step(s)" in lines[1] and "cost $" in lines[1]
