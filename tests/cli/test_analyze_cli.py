"""`flower analyze` on run dirs that are missing, partial or damaged: one line, a documented exit code, and
nothing written. Plus the transcript reading on hand-made and layer-made entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from flower_cli.analyze import analyze_run, render_html, render_table
from flower_cli.analyze._page import MAX_DOTS
from flower_cli.analyze._transcript import thread_stats, trim_pointers
from flower_stores import SqliteSessionStore, TrimPolicy, trim

PK = "-tmp-ws"


def flower(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
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


def _one_line_error(done: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert fragment in done.stderr


def _assistant(
    mid: str,
    blocks: list[dict[str, Any]],
    *,
    input_tokens: int = 100,
    cache_read: int = 0,
    stamp: str = "2026-01-01T00:00:01Z",
) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": 0,
        "output_tokens": 5,
    }
    return {
        "type": "assistant",
        "uuid": f"u-{mid}-{len(blocks)}",
        "timestamp": stamp,
        "message": {"id": mid, "model": "m", "role": "assistant", "content": blocks, "usage": usage},
    }


def _user(content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "timestamp": "2026-01-01T00:00:02Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def _result(tool_id: str, text: str) -> dict[str, Any]:
    return _user([{"type": "tool_result", "tool_use_id": tool_id, "content": text}])


async def _store(
    db: Path,
    sessions: dict[str, list[dict[str, Any]]],
    workers: dict[str, dict[str, list[dict[str, Any]]]] | None = None,
) -> None:
    with SqliteSessionStore(db) as store:
        for sid, entries in sessions.items():
            await store.append({"project_key": PK, "session_id": sid}, entries)
            for sub, sub_entries in (workers or {}).get(sid, {}).items():
                await store.append({"project_key": PK, "session_id": sid, "subpath": sub}, sub_entries)  # type: ignore[typeddict-unknown-key]


# --- reading one transcript ----------------------------------------------------------------------------


def test_blocks_of_one_reply_are_one_turn_and_harness_entries_are_no_turns() -> None:
    entries = [
        _user("do it"),
        _assistant("m1", [{"type": "text", "text": "Looking."}], input_tokens=1000, cache_read=3000),
        _assistant(
            "m1",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            input_tokens=1000,
            cache_read=3000,
        ),
        _result("t1", "a\nb"),
        {
            "type": "assistant",
            "isApiErrorMessage": True,
            "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 500"}]},
        },
        {
            "type": "assistant",
            "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}]},
        },
        _user("<system-reminder>ignore me</system-reminder>", isMeta=True),
        _user("continue where you stopped"),
        _user("<task-notification><result>worker said hi</result></task-notification>"),
        _assistant("m2", [{"type": "text", "text": "Done."}], input_tokens=200, cache_read=4000),
        {"type": "attachment", "attachment": {"type": "date"}},
    ]
    stats = thread_stats("main", entries)
    assert [t.context for t in stats.turns] == [4000, 4200]
    assert [t.tool_calls for t in stats.turns] == [1, 0] and stats.tool_calls == 1
    assert stats.api_errors == 1 and stats.prompts == 2 and stats.notifications == 1
    assert [(m.kind, m.after_turn) for m in stats.marks] == [("error", 1), ("resume", 1), ("notification", 1)]
    notification = "<task-notification><result>worker said hi</result></task-notification>"
    assert stats.chars == len("Looking.") + len('{"command":"ls"}') + len("a\nb") + len(notification) + len("Done.")
    assert stats.cache_hit_ratio == round(7000 / 8200, 4)


def test_trim_pointers_are_read_from_the_layers_own_text(tmp_path: Path) -> None:
    big = "x" * 5000
    entries: list[dict[str, Any]] = []
    for n in range(3):
        entries += [
            _assistant(f"m{n}", [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {}}]),
            _result(f"t{n}", big + str(n)),
        ]
    trimmed = trim(entries, TrimPolicy(keep_recent=1), tmp_path, write_spill=False)
    assert trimmed.report.trimmed == 2
    stats = thread_stats("main", trimmed.entries)
    assert stats.trimmed == 2
    pointer_lengths = [
        len(b["content"])
        for e in trimmed.entries
        if e["type"] == "user"
        for b in e["message"]["content"]
        if len(b["content"]) < 5000
    ]
    assert stats.trimmed_kept_out == sum(5001 - n for n in pointer_lengths)
    assert trim_pointers("no pointer here") == []


# --- the command on real files -------------------------------------------------------------------------


def test_a_store_and_manifest_made_by_hand_give_steps_sessions_handoffs_and_costs(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    first = [
        _user("start"),
        _assistant("a1", [{"type": "text", "text": "one"}], input_tokens=9000, stamp="2026-01-01T00:00:01Z"),
    ]
    second = [
        _user("handoff document"),
        _assistant("b1", [{"type": "text", "text": "two"}], input_tokens=1500, stamp="2026-01-01T00:00:05Z"),
    ]
    worker = [
        _user("sub task"),
        _assistant(
            "w1",
            [{"type": "tool_use", "id": "x", "name": "Bash", "input": {"command": "pwd"}}],
            stamp="2026-01-01T00:00:03Z",
        ),
    ]
    anyio.run(
        _store, run_dir / "sessions.db", {"s-old": first, "s-new": second}, {"s-old": {"subagents/agent-w": worker}}
    )
    row = {
        "step": "work", "run": "r1", "ok": True, "session_id": "s-new", "retired": ["s-old"], "cost_usd": 0.5, "num_turns": 2,
        "attempts": 1, "errors": [], "resumed": False, "interrupts": 0, "context": 9000,
        "started_at": 1767225600.0, "ended_at": 1767225610.0, "duration_s": 10.0,
        "attempt_log": [{"session_id": "s-old", "cost_usd": 0.3, "resumed": False}, {"session_id": "s-new", "cost_usd": 0.2, "resumed": False}],
    }  # fmt: skip
    (run_dir / "manifest.json").write_text(json.dumps([row]))
    report = analyze_run(tmp_path)  # a workspace: its runs/ is found
    old, new = report.sessions
    assert (old.session_id, new.session_id) == ("s-old", "s-new"), "oldest first"
    assert old.handoff_to == "s-new" and new.handoff_from == "s-old"
    assert [m.kind for m in old.main.marks] == ["handoff"]
    assert (old.cost_usd, new.cost_usd) == (0.3, 0.2)
    [step] = report.steps
    assert step.handoffs == 1 and step.session_ids == ["s-old", "s-new"]
    assert step.split.worker_tool_calls == 1 and step.split.main_turns == 2
    assert step.context_peak == 9000 and step.context_last == 1500
    assert report.totals()["handoffs"] == 1
    page = render_html(report)
    assert 'class="handoff-link"' in page and 'class="mark handoff"' in page
    assert "from s-old" in render_table(report) and "→ s-new" in render_table(report)


def test_a_long_session_is_drawn_as_a_line_and_a_short_sparkline(tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = [_user("go")]
    for n in range(MAX_DOTS + 200):
        entries.append(_assistant(f"m{n}", [{"type": "text", "text": "."}], input_tokens=1000 + n))
    anyio.run(_store, tmp_path / "runs" / "sessions.db", {"long": entries})
    report = analyze_run(tmp_path)
    page = render_html(report)
    assert 'class="turn"' not in page, "no dot per turn above MAX_DOTS"
    points = page.split('class="context" data-session="long" points="')[1].split('"')[0]
    assert len(points.split()) == MAX_DOTS + 200
    row = next(line for line in render_table(report).splitlines() if line.startswith("long"))
    assert len(row.split()[3]) == 32, "the sparkline keeps its width"


def test_a_run_without_transcripts_still_renders(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(
        json.dumps([{"step": "s", "ok": False, "error": "boom", "cost_usd": 0.1, "attempts": 3}])
    )
    report = analyze_run(run_dir)
    assert report.steps[0].retries == 2 and not report.sessions
    assert "no main-thread turns recorded" in render_html(report)
    assert "FAIL" in render_table(report) and "no sessions.db" in render_table(report)


def test_default_run_dir_json_and_html(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    anyio.run(
        _store, ws / "runs" / "sessions.db", {"s1": [_user("hi"), _assistant("a", [{"type": "text", "text": "yo"}])]}
    )
    table = flower("analyze", cwd=ws)
    assert table.returncode == 0, table.stderr
    assert "no manifest.json" in table.stdout and "s1" in table.stdout
    as_json = flower("--json", "analyze", cwd=ws)
    assert json.loads(as_json.stdout)["sessions"][0]["main"]["context_per_turn"] == [100]
    page = flower("analyze", "--html", "out.html", cwd=ws)
    assert page.returncode == 0 and (ws / "out.html").read_text().startswith("<!DOCTYPE html>")


def test_no_run_dir_is_a_usage_error(tmp_path: Path) -> None:
    _one_line_error(flower("analyze", str(tmp_path / "nowhere"), cwd=tmp_path), 2, "no run dir at")
    _one_line_error(flower("analyze", cwd=tmp_path), 2, "no run dir at")
    (tmp_path / "empty").mkdir()
    _one_line_error(
        flower("analyze", str(tmp_path / "empty"), cwd=tmp_path), 2, "holds neither sessions.db nor manifest.json"
    )
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_corrupt_store_is_one_line_exit_1_and_stays_as_it_was(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    junk = b"SQLite format 3\x00" + b"\xff" * 3000
    (run_dir / "sessions.db").write_bytes(junk)
    _one_line_error(flower("analyze", str(run_dir), cwd=tmp_path), 1, "sessions.db")
    assert (run_dir / "sessions.db").read_bytes() == junk
    assert sorted(p.name for p in run_dir.iterdir()) == ["sessions.db"]


def test_a_corrupt_manifest_is_one_line_exit_1_and_is_not_moved(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text("[{not json")
    _one_line_error(flower("analyze", str(run_dir), cwd=tmp_path), 1, "not valid JSON")
    assert (run_dir / "manifest.json").read_text() == "[{not json"
    (run_dir / "manifest.json").write_text('{"step": "x"}')
    _one_line_error(flower("analyze", str(run_dir), cwd=tmp_path), 1, "not a JSON list")


def test_html_into_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text("[]")
    _one_line_error(
        flower("analyze", str(run_dir), "--html", str(tmp_path / "no" / "page.html"), cwd=tmp_path),
        2,
        "is not a directory",
    )
    assert not (tmp_path / "no").exists()
