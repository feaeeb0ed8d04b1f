"""manifest.json and lineage.json under concurrent writers, corrupt files, and moved workspaces."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from flower_cli import Lineage, Manifest, StepResult


def _write_rows(path: str, run_id: str, count: int) -> None:
    manifest = Manifest(Path(path))
    rows = []
    for i in range(count):
        rows.append(StepResult(step=f"{run_id}-{i}", ok=True).row(run_id))
        manifest.write(run_id, rows)


def test_parallel_processes_keep_each_others_rows(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_rows, args=(str(path), f"run{n}", 25)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    rows = json.loads(path.read_text())
    assert sorted(r["step"] for r in rows) == sorted(f"run{n}-{i}" for n in range(4) for i in range(25))


def test_rewrite_replaces_only_own_rows(tmp_path: Path) -> None:
    m = Manifest(tmp_path / "manifest.json")
    m.write("a", [StepResult("s1").row("a")])
    m.write("b", [StepResult("s2").row("b")])
    m.write("a", [StepResult("s1").row("a"), StepResult("s3").row("a")])
    assert sorted(r["step"] for r in m.rows()) == ["s1", "s2", "s3"]


def test_corrupt_manifest_is_moved_aside_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("{not json")
    m = Manifest(path)
    m.write("a", [StepResult("s1").row("a")])
    kept = list(tmp_path.glob("manifest.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{not json"
    assert [r["step"] for r in m.rows()] == ["s1"]
    assert m.notes and "corrupt" in m.notes[0]


def test_row_has_duration_and_run(tmp_path: Path) -> None:
    row = StepResult("s", started_at=10.0, ended_at=12.345).row("r1")
    assert row["duration_s"] == 2.35 and row["run"] == "r1" and "errors" in row and "attempt_log" in row


def _remember(run_dir: str, workspace: str, step: str) -> None:
    lin = Lineage.open(Path(run_dir), Path(workspace))
    for i in range(10):
        lin.remember(f"{step}", f"sid-{step}-{i}")


def test_lineage_parallel_runs_do_not_clobber(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_remember, args=(str(tmp_path), str(ws), f"step{n}")) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lin = Lineage.open(tmp_path, ws)
    assert lin.steps == {f"step{n}": f"sid-step{n}-9" for n in range(4)}


def test_lineage_of_another_workspace_means_none(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    Lineage.open(tmp_path, a).remember("work", "sid-1")
    moved = Lineage.open(tmp_path, b)
    assert moved.steps == {} and moved.note and "belongs to" in moved.note
    assert Lineage.open(tmp_path, a).get("work") == "sid-1"


def test_lineage_bump_counts_wakes(tmp_path: Path) -> None:
    lin = Lineage.open(tmp_path, tmp_path)
    assert lin.bump() == 1 and lin.bump() == 2
    assert json.loads((tmp_path / "lineage.json").read_text())["woke"] == 2


@pytest.mark.parametrize("content", ["{not json", '["a list"]', '{"steps": "not a mapping"}'])
def test_corrupt_lineage_is_moved_aside_with_a_note_not_overwritten(tmp_path: Path, content: str) -> None:
    (tmp_path / "lineage.json").write_text(content)
    lineage = Lineage(tmp_path / "lineage.json", tmp_path)
    assert lineage.steps == {} and lineage.note is not None
    assert (tmp_path / "lineage.json").read_text() == content, "reading changes nothing"
    lineage.remember("draft", "sid-1")
    (kept,) = tmp_path.glob("lineage.json.corrupt-*")
    assert kept.read_text() == content
    assert json.loads((tmp_path / "lineage.json").read_text())["steps"] == {"draft": "sid-1"}
    (note,) = lineage.notes
    assert kept.name in note and "started a new lineage" in note
    lineage.remember("polish", "sid-2")
    assert len(lineage.notes) == 1 and len(list(tmp_path.glob("lineage.json.corrupt-*"))) == 1
