"""lineage.json keeps the settings a plain wake must keep (``go``'s ``--no-goal``) beside the steps."""

from __future__ import annotations

import json
from pathlib import Path

from flower_cli.runtime import Lineage


def test_settings_are_kept_across_every_change_and_read_back(tmp_path: Path) -> None:
    lineage = Lineage.open(tmp_path, tmp_path)
    assert lineage.settings == {}
    lineage.keep(goal=False)
    lineage.remember("work", "s1")
    lineage.bump()
    again = Lineage.open(tmp_path, tmp_path)
    assert again.settings == {"goal": False} and again.steps == {"work": "s1"} and again.woke == 1
    assert json.loads((tmp_path / "lineage.json").read_text())["settings"] == {"goal": False}


def test_an_older_file_without_settings_and_a_malformed_one_read_as_none(tmp_path: Path) -> None:
    path = tmp_path / "lineage.json"
    path.write_text(json.dumps({"workspace": str(tmp_path.resolve()), "woke": 2, "steps": {"work": "s1"}}))
    assert Lineage.open(tmp_path, tmp_path).settings == {}
    path.write_text(json.dumps({"workspace": str(tmp_path.resolve()), "steps": {}, "settings": ["goal"]}))
    assert Lineage.open(tmp_path, tmp_path).settings == {}


def test_keeping_what_is_already_kept_writes_nothing(tmp_path: Path) -> None:
    lineage = Lineage.open(tmp_path, tmp_path)
    lineage.keep(goal=True)
    before = (tmp_path / "lineage.json").stat().st_mtime_ns
    lineage.keep(goal=True)
    assert (tmp_path / "lineage.json").stat().st_mtime_ns == before
