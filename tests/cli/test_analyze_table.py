"""The terminal table of `flower analyze`: the default fits 100 columns (and wraps at 80 or 120), nothing a user
must read is cut off, `--wide` keeps every column on one line per row, and `--json` does not change."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_cli.analyze import (
    Mark,
    RunReport,
    SessionReport,
    StepReport,
    ThreadStats,
    WorkSplit,
    render_table,
    table_width,
)
from flower_cli.analyze._layout import paragraph, shorten_middle, wrap
from flower_cli.analyze._table import DEFAULT_WIDTH, SESSION_COLUMNS, SESSION_HEADERS, STEP_COLUMNS, STEP_HEADERS
from flower_stores import SqliteSessionStore

LONG_DIR = "/home/someone/projects/" + "a-rather-deeply-nested-client-project/" * 3 + "workspace/runs"
ERROR = (
    "the model stopped before the goal: the test suite still fails in tests/test_payments.py "
    "(3 failures, 1 error) after four attempts; see the transcript of session 5d1e0c7a for the last run"
)
LONG_STEP = "implement-the-authentication-flow-end-to-end"


def _thread(name: str, contexts: list[int], *, chars: int = 100, calls: int = 1) -> ThreadStats:
    stats = ThreadStats(name=name, chars=chars, tool_calls=calls)
    for n, context in enumerate(contexts):
        stats.turns.append(context // 10, context - context // 10, 0, 10, 1, 1_767_225_600.0 + n)
    return stats


def _step(name: str, sid: str, **extra: Any) -> StepReport:
    fields: dict[str, Any] = {
        "step": name, "run": "r", "ok": True, "error": None, "session_ids": [sid], "cost_usd": 0.25,
        "num_turns": 3, "attempts": 1, "retries": 0, "resumes": 0, "interrupts": 0, "handoffs": 0,
        "context": 30_000, "duration_s": 10.0, "started_at": 1.0, "ended_at": 2.0,
        "split": WorkSplit(3, 2, 500, 4, 3, 1500, 1), "cache_hit_ratio": 0.9, "context_peak": 31_000,
    }  # fmt: skip
    fields.update(extra)
    return StepReport(**fields)


def _report() -> RunReport:
    """A run with everything long: its path, a step name, a failure's error, a session serving many steps, a
    handoff, workers, spills, a would-be trim, and a note."""
    old = SessionReport(
        "5d1e0c7a-1111-4000-8000-000000000001",
        "p",
        _thread("main", [12_000 + 900 * n for n in range(60)]),
        [_thread("agent-a", [3_000, 4_000, 5_000], chars=900, calls=2)],
        steps=["plan", "build", LONG_STEP, "review", "fix-the-flaky-tests", "ship"],
        cost_usd=1.2345,
        handoff_to="9f8e7d6c-2222-4000-8000-000000000002",
        on_resume={"trimmed": 4, "chars_saved": 41_000},
    )
    old.main.marks += [Mark("resume", 10, "continue"), Mark("error", 20, "API Error: 500")]
    old.main.api_errors, old.main.spilled, old.main.spilled_kept_out = 1, 2, 26_000
    new = SessionReport(
        "9f8e7d6c-2222-4000-8000-000000000002",
        "p",
        _thread("main", [8_000, 9_500, 11_000]),
        [],
        steps=["ship"],
        cost_usd=0.0812,
        handoff_from=old.session_id,
    )
    steps = [
        _step("plan", old.session_id),
        _step(LONG_STEP, old.session_id, attempts=3, retries=2, resumes=2, spilled=2, spilled_kept_out=26_000),
        _step("ship", new.session_id, ok=False, error=ERROR, handoffs=1, api_errors=1, cost_usd=12.5),
    ]
    note = f"1 session(s) named in manifest.json are not in sessions.db: {', '.join(['0a1b2c3d'] * 14)}"
    return RunReport(run_dir=LONG_DIR, steps=steps, sessions=[old, new], notes=[note])


def _width(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _headers(table: str) -> list[list[str]]:
    return [re.split(r" {2,}", line.strip()) for line in table.splitlines() if line.startswith(("step ", "session "))]


def _column_text(table: str, header_line_start: str, header: str) -> str:
    """The words of one column of the grid whose header line starts with ``header_line_start``, top to bottom:
    what a reader reads down that column (a failed step's error lines under it are not the column's)."""
    lines = table.splitlines()
    top = next(n for n, line in enumerate(lines) if line.startswith(header_line_start))
    start = lines[top].index(header)
    following = [lines[top].find(h, start + len(header)) for h in re.split(r" {2,}", lines[top].strip())]
    end = min([at for at in following if at > start], default=None)
    out = []
    for line in lines[top + 2 :]:
        if not line.strip():
            break
        if re.match(r"  \S", line):
            continue
        out.append(line[start:end].strip())
    return " ".join(" ".join(out).split())


def _error_lines(table: str) -> str:
    """The words of the failed step's error, on the lines under its row."""
    lines = table.splitlines()
    top = next(n for n, line in enumerate(lines) if line.startswith("  error: "))
    block = [lines[top]] + [line for line in lines[top + 1 :] if re.match(r"  \S", line)]
    return " ".join(" ".join(block).split())


def test_the_default_table_fits_100_columns_and_wide_shows_every_column() -> None:
    report = _report()
    table, wide = render_table(report), render_table(report, wide=True)
    assert _width(table) <= DEFAULT_WIDTH == 100
    assert _width(wide) > 150, "--wide puts every column and the summary on one line each"
    assert _headers(table) == [[c.header for c in STEP_COLUMNS], [c.header for c in SESSION_COLUMNS]]
    assert _headers(wide) == [list(STEP_HEADERS), [h for h in SESSION_HEADERS if h]]
    # What matters stays in columns: every step's and session's cost, the session ids, ok/FAIL.
    for cost in ("$0.2500", "$12.5000", "$1.2345", "$0.0812"):
        assert cost in table
    assert "FAIL" in table and "5d1e0c7a" in table and "9f8e7d6c" in table
    # The rest is said in words: handoffs both ways, workers, spills, the would-be trim, resumes and errors.
    assert "→ 9f8e7d6c" in table and "from 5d1e0c7a" in table
    assert "1 worker: 3 turns / 2 tool calls" in table
    assert "spilled 2 (26.0K kept out)" in table and "a resume would trim 4 (41.0K chars)" in table
    assert "2 retries, 2 resumes, 26.0K kept out" in _column_text(table, "step ", "events")


def test_nothing_a_reader_needs_is_cut_off() -> None:
    report = _report()
    table = render_table(report)
    # The long step name wraps inside its column; the failed step's error goes whole on lines under its row.
    assert "1 handoff, 1 failed request" in _column_text(table, "step ", "events")
    assert LONG_STEP in _column_text(table, "step ", "step").replace("- ", "-")
    assert _error_lines(table) == "error: " + ERROR
    # A session's steps too many for their column are listed whole under it.
    assert "6 steps" in _column_text(table, "session ", "steps")
    assert "steps plan, build, " + LONG_STEP + ", review, fix-the-flaky-tests, ship" in " ".join(table.split())
    # The note is wrapped, whole.
    note_lines = table[table.index("note: ") :].splitlines()
    assert " ".join(" ".join(note_lines).split()) == f"note: {report.notes[0]}"
    # A path too long for the title keeps both ends; --wide prints it whole.
    title = table.splitlines()[0]
    assert title.startswith("flower analyze · /home/someone/projects/") and title.endswith("/workspace/runs")
    assert "…" in title and len(title) <= DEFAULT_WIDTH
    assert render_table(report, wide=True).splitlines()[0] == f"flower analyze · {LONG_DIR}"


def test_it_wraps_to_80_and_to_120_columns() -> None:
    report = _report()
    narrow, roomy = render_table(report, width=80), render_table(report, width=120)
    assert _width(narrow) <= 80 and _width(roomy) <= 120
    assert _width(roomy) > 100, "a wider width is used, not just allowed"

    def summary(table: str) -> list[str]:
        lines = table.splitlines()
        return lines[1 : lines.index("")]

    assert len(summary(narrow)) > len(summary(roomy))
    for table in (narrow, roomy):
        part = "workers 3 turns / 2 tool calls (82% of the characters)"
        assert any(part in line for line in summary(table)), "a part of the summary is never split"
        assert _error_lines(table) == "error: " + ERROR
    # The sparkline gives up width below 100 columns, and keeps 32 at 100 and above.
    row = next(line for line in narrow.splitlines() if line.startswith("5d1e0c7a"))
    assert len(row.split()[4]) == 12  # "5d1e0c7a", "6", "steps", "60", the sparkline
    row = next(line for line in roomy.splitlines() if line.startswith("5d1e0c7a"))
    assert len(row.split()[4]) == 32


def test_layout_helpers_keep_every_character() -> None:
    text = "a " * 30 + "supercalifragilisticexpialidocious-and-then-some " + "b " * 10
    for width in (10, 20, 33):
        lines = wrap(text, width)
        assert all(len(line) <= width for line in lines)
        assert "".join("".join(lines).split()) == "".join(text.split())
    assert paragraph(["one", "two", "three"], 9) == ["one · two", "three"]
    assert paragraph(["one", "two"], 80, first="> ", indent="  ") == ["> one · two"]
    assert shorten_middle("/a/b/c", 10) == "/a/b/c"
    short = shorten_middle("/" + "x" * 50 + "/tail.txt", 20)
    assert len(short) == 20 and short.startswith("/xx") and short.endswith("tail.txt")


def test_the_width_is_100_or_a_narrower_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert table_width(io.StringIO()) == DEFAULT_WIDTH, "a pipe or a file: 100"
    for columns, width in ((72, 72), (100, 100), (180, 100), (30, 60)):
        monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback, c=columns: os.terminal_size((c, 24)))
        assert table_width(Terminal()) == width


# --- the command ----------------------------------------------------------------------------------------


def _entry(kind: str, n: int, **message: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u-{kind}-{n}",
        "timestamp": f"2026-01-01T00:00:{n:02d}Z",
        "message": {"role": kind, **message},
    }


def _flower(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_command_fits_100_columns_unless_wide_and_json_is_the_same(tmp_path: Path) -> None:
    ws = tmp_path / ("deeply-nested-" * 6) / "ws"
    entries = [
        _entry("user", 1, content="count the files"),
        _entry(
            "assistant",
            2,
            id="m1",
            model="m",
            content=[{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            usage={"input_tokens": 1200, "cache_read_input_tokens": 4800, "output_tokens": 9},
        ),
        _entry("user", 3, content=[{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb"}]),
    ]

    async def store() -> None:
        with SqliteSessionStore(ws / "runs" / "sessions.db") as db:
            await db.append({"project_key": "-ws", "session_id": "s-1"}, entries)

    anyio.run(store)
    row = {
        "step": "count-every-file-in-the-repository-and-report-back", "run": "r", "ok": False,
        "error": ERROR, "session_id": "s-1", "cost_usd": 0.01, "attempts": 2, "started_at": 1.0, "ended_at": 2e9,
    }  # fmt: skip
    (ws / "runs" / "manifest.json").write_text(json.dumps([row]))

    table, wide = _flower("analyze", cwd=ws), _flower("analyze", "--wide", cwd=ws)
    assert table.returncode == 0 and wide.returncode == 0, (table.stderr, wide.stderr)
    assert _width(table.stdout) <= 100 < _width(wide.stdout)
    assert _error_lines(table.stdout) == "error: " + ERROR
    assert f"flower analyze · {ws / 'runs'}" in wide.stdout
    as_json = _flower("--json", "analyze", cwd=ws)
    assert as_json.returncode == 0 and _flower("--json", "analyze", "--wide", cwd=ws).stdout == as_json.stdout
    assert json.loads(as_json.stdout)["steps"][0]["error"] == ERROR
