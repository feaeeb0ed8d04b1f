"""A Runtime with a workbench: one spill directory for the spill guard and load-time trimming."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_cli import Runtime


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


def test_trimming_spills_where_the_workbench_does(workspace: Path) -> None:
    with Runtime(workspace, workspace / "runs", workbench=True, trim=True) as rt:
        assert rt.workbench.show(rt.workbench.spill) == "runs/workbench/spill"
        assert rt.store.policy.spill_dirname == "runs/workbench/spill"
        assert rt.workbench.index_path.is_file()  # refreshed at construction


def test_an_external_workbench_gets_an_absolute_spill_dir(workspace: Path, tmp_path: Path) -> None:
    with Runtime(workspace, tmp_path / "elsewhere", workbench=True, trim=True) as rt:
        assert rt.workbench.external
        assert rt.store.policy.spill_dirname == str(rt.workbench.spill)


def test_without_a_workbench_the_default_spill_dir_stays(workspace: Path) -> None:
    with Runtime(workspace, workspace / "runs", trim=True) as rt:
        assert rt.workbench is None
        assert rt.store.policy.spill_dirname == ".flower/spill"
