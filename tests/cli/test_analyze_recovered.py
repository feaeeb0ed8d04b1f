"""`flower analyze` counts the workers flower recovered (the manifest row's ``recovered``), per step and in all."""

from __future__ import annotations

import json
from pathlib import Path

from flower_cli.analyze import analyze_run, render_table


def test_recovered_workers_are_counted_per_step_and_in_the_totals(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    recovered = [
        {
            "id": "a1",
            "call": "toolu_1",
            "description": "piece 1",
            "how": "resumed",
            "session": "s",
            "status": "completed",
        },
        {
            "id": "a2",
            "call": "toolu_2",
            "description": "piece 2",
            "how": "delivered",
            "session": "",
            "status": "completed",
        },
    ]
    rows = [
        {"step": "work", "ok": False, "error": "killed", "cost_usd": 0.1, "attempts": 1},
        {"step": "work", "ok": True, "cost_usd": 0.2, "attempts": 1, "recovered": recovered},
    ]
    (run_dir / "manifest.json").write_text(json.dumps(rows))
    report = analyze_run(run_dir)
    assert [step.recovered for step in report.steps] == [0, 2]
    assert report.totals()["recovered"] == 2
    table = render_table(report)
    assert "2 recovered workers" in table and "recovered workers 2" in table
