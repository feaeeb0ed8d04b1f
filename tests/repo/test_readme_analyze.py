"""The `flower analyze` samples (docs/analyze.md, where the README's tour of it moved) keep the columns and the summary the command prints: the default
table (which fits DEFAULT_WIDTH columns) and `--wide` (every column)."""

from __future__ import annotations

import re
from pathlib import Path

from flower_cli.analyze._table import DEFAULT_WIDTH, SESSION_COLUMNS, SESSION_HEADERS, STEP_COLUMNS, STEP_HEADERS

README = Path(__file__).resolve().parents[2] / "docs" / "analyze.md"


def _sample(command: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(rf"```\n\$ {re.escape(command)}\n(.*?)```", text, flags=re.S)
    assert block, f"docs/analyze.md shows `$ {command}` and its output in a code block"
    return block.group(1).splitlines()


def _columns(line: str) -> list[str]:
    return [c for c in re.split(r" {2,}", line.strip()) if c]


def test_the_readme_sample_has_the_default_tables_columns_and_fits_its_width() -> None:
    lines = _sample("flower analyze")
    headers = [_columns(line) for line in lines if line.startswith(("step ", "session "))]
    assert headers == [[c.header for c in STEP_COLUMNS], [c.header for c in SESSION_COLUMNS]]
    assert lines[0].startswith("flower analyze · ") and "step(s)" in lines[1] and "cost $" in lines[1]
    too_wide = [line for line in lines if len(line) > DEFAULT_WIDTH]
    assert not too_wide, f"the default table fits {DEFAULT_WIDTH} columns: {too_wide}"


def test_the_readme_shows_every_column_with_wide() -> None:
    lines = _sample("flower analyze --wide")
    headers = [_columns(line) for line in lines if line.startswith(("step ", "session "))]
    assert headers == [list(STEP_HEADERS), [h for h in SESSION_HEADERS if h]]
    assert lines[0].startswith("flower analyze · ") and "step(s)" in lines[1] and "cost $" in lines[1]
