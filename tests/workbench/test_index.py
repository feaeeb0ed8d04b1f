"""INDEX.md: its format, what it lists, and that refreshing it is atomic and idempotent."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from flower_workbench import Workbench


def test_layout_and_ensure(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    assert wb.root == tmp_path.resolve() / ".flower"
    assert all(d.is_dir() for d in (wb.scripts, wb.artifacts, wb.notes))
    assert not wb.spill.exists()  # the spill guard creates it when it first spills
    assert wb.external is False


def test_empty_index_format(tmp_path: Path) -> None:
    text = Workbench(tmp_path).refresh()
    assert text == (
        "# Workbench index\n"
        "\n"
        "> Generated — do not edit by hand. A script whose first line is `# desc: one sentence` shows up here.\n"
        "\n"
        "## Reusable scripts (0)\n- (none)\n\n"
        "## Artifacts (0)\n- (none)\n\n"
        "## Decision notes (0)\n- (none)\n"
    )
    assert (tmp_path / ".flower" / "INDEX.md").read_text(encoding="utf-8") == text


def test_index_lists_each_section_with_description_and_size(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    (wb.scripts / "fetch.py").write_text("#!/usr/bin/env python3\n# desc: fetch the data\n")
    (wb.scripts / "sub").mkdir()
    (wb.scripts / "sub" / "plain.sh").write_text("echo hi\n")
    (wb.scripts / ".fetch.py.swp").write_text("editor junk")
    (wb.artifacts / "report.md").write_text("# Weekly report\n" + "x" * 2000)
    (wb.notes / "db.md").write_text("# Use SQLite\n")
    text = wb.refresh()
    assert "## Reusable scripts (2)\n- `.flower/scripts/fetch.py` — fetch the data (46B)\n" in text
    assert "- `.flower/scripts/sub/plain.sh` — (no description) (8B)\n" in text
    assert ".swp" not in text
    assert "## Artifacts (1)\n- `.flower/artifacts/report.md` — Weekly report (2.0K)\n" in text
    assert "## Decision notes (1)\n- `.flower/notes/db.md` — Use SQLite (13B)\n" in text


def test_sizes(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    (wb.artifacts / "big.bin").write_bytes(b"\0" * (3 * 1024 * 1024 + 1))
    assert "(3.0M)" in wb.refresh()


def test_spill_files_are_not_indexed(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    wb.spill.mkdir()
    (wb.spill / "0123456789abcdef.txt").write_text("x")
    assert "0123456789abcdef" not in wb.refresh()


def test_refresh_leaves_no_temporary_files_and_skips_unchanged_writes(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    wb.refresh()
    before = wb.index_path.stat().st_mtime_ns
    os.utime(wb.index_path, ns=(before - 10**9, before - 10**9))
    wb.refresh()
    assert wb.index_path.stat().st_mtime_ns == before - 10**9  # same text: not rewritten
    assert sorted(p.name for p in wb.root.iterdir()) == ["INDEX.md", "artifacts", "notes", "scripts"]


def test_concurrent_refreshes_never_expose_a_partial_index(tmp_path: Path) -> None:
    wb = Workbench(tmp_path).ensure()
    for i in range(200):
        (wb.notes / f"n{i:03d}.md").write_text(f"# note {i}\n")
    toggled = wb.notes / "toggled.md"
    without = wb.refresh()
    toggled.write_text("# toggled\n")
    with_it = wb.refresh()
    other = Workbench(tmp_path)  # a second process would have its own object and lock
    seen: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(wb.index_path.read_text(encoding="utf-8"))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(40):
            if i % 2:
                toggled.write_text("# toggled\n")
            else:
                toggled.unlink()
            (other if i % 3 else wb).refresh()
    finally:
        stop.set()
        thread.join()
    assert seen and set(seen) <= {without, with_it}


def test_refresh_if_changed_notices_new_files_without_rereading(tmp_path: Path) -> None:
    wb = Workbench(tmp_path)
    assert wb.refresh_if_changed() is True
    assert wb.refresh_if_changed() is False
    (wb.artifacts / "log.txt").write_text("# build log\n")
    assert wb.refresh_if_changed() is True
    assert "build log" in wb.index_path.read_text(encoding="utf-8")
    wb.index_path.unlink()
    assert wb.refresh_if_changed() is True  # a deleted index is rebuilt
