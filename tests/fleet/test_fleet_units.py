"""The fleet's small parts: session ids, configuration, the plan loader, the history lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_fleet import FleetConfig, FleetConfigError, step_session_id
from flower_fleet._loader import PlanError, load_workflow


def test_a_step_session_id_is_stable_and_differs_per_run_and_label() -> None:
    one = step_session_id("run-1", "build")
    assert one == step_session_id("run-1", "build")
    assert len({one, step_session_id("run-2", "build"), step_session_id("run-1", "build#retry1")}) == 3
    assert len(one) == 36 and one.count("-") == 4  # a uuid, as the SDK takes it


def test_the_configuration_comes_from_the_environment_and_a_given_value_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FLOWER_TEMPORAL", "temporal.example:7233")
    monkeypatch.setenv("FLOWER_TEMPORAL_NAMESPACE", "ns")
    monkeypatch.setenv("FLOWER_FLEET_TASK_QUEUE", "q")
    monkeypatch.setenv("FLOWER_FLEET_ROOT", str(tmp_path))
    config = FleetConfig.from_env(namespace="other")
    assert (config.address, config.namespace, config.task_queue, config.root) == (
        "temporal.example:7233",
        "other",
        "q",
        tmp_path,
    )
    assert not config.tls
    config.check()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FLOWER_TEMPORAL": "no-port"}, "give the Temporal server as host:port"),
        ({"FLOWER_TEMPORAL_TLS_CERT": "/nonexistent.pem"}, "needs both FLOWER_TEMPORAL_TLS_CERT and"),
        ({"FLOWER_TEMPORAL_TLS_CA": "/nonexistent.pem"}, "FLOWER_TEMPORAL_TLS_CA=/nonexistent.pem: no such file"),
    ],
)
def test_a_setting_that_cannot_work_is_one_line(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(FleetConfigError, match=message):
        FleetConfig.from_env().check()


def test_the_plan_loader_reads_a_workflow_from_the_workspace_and_says_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "w = AgentSpec('w', 'x')\n"
        "def main():\n"
        "    return Workflow([Step('a', w, 'p'), Step('b', w, 'q')], name='two')\n"
        "not_a_flow = 3\n"
    )
    flow = load_workflow(tmp_path, "flows.py:main")
    assert [s.name for s in flow.steps] == ["a", "b"]
    assert load_workflow(tmp_path, "flows.py:main") is not flow, "each step gets its own workflow (its own ctx)"
    with pytest.raises(PlanError, match="not a flower_cli.Workflow"):
        load_workflow(tmp_path, "flows.py:not_a_flow")
    with pytest.raises(PlanError, match="no file"):
        load_workflow(tmp_path, "missing.py:main")
    with pytest.raises(PlanError, match="file.py:attr"):
        load_workflow(tmp_path, "flows.py")


def test_submit_tells_a_workflow_from_an_ask() -> None:
    from flower_fleet._cli import _is_workflow

    assert _is_workflow("flows.py:main") and _is_workflow("pkg.flows:build") and _is_workflow("sub/flows.py:main")
    assert not _is_workflow("build a greeter") and not _is_workflow("refactor") and not _is_workflow("fix: the bug")


def test_the_answer_note_carries_the_question_and_the_answer_or_gos_texts() -> None:
    from flower_cli import HumanChannel
    from flower_fleet._questions import answer_note

    channel = HumanChannel()
    note = answer_note("English or French?", " French {x} ", timed_out=False, channel=channel)
    assert "You asked: English or French?" in note and "The person answered:\nFrench {x}" in note
    assert "{where}" in note, "the runner fills in where the workspace came from"
    assert channel.timeout_text in answer_note("Q?", "", timed_out=True, channel=channel)
    assert channel.declined_text in answer_note("Q?", "  ", timed_out=False, channel=channel)


async def test_go_flow_run_phase_refuses_a_later_round_without_its_session_and_feedback(tmp_path: Path) -> None:
    from flower_cli import GoSettings, HumanChannel, WorkflowError, build_go_flow, go_workbench

    flow = build_go_flow(GoSettings(ask="x"), channel=HumanChannel(), workbench=go_workbench(tmp_path))
    with pytest.raises(WorkflowError, match="round_no >= 2"):
        await flow.run_phase(object(), "work", round_no=2)  # type: ignore[arg-type]
    with pytest.raises(WorkflowError, match="no step 'nope'"):
        await flow.run_phase(object(), "nope")  # type: ignore[arg-type]
