"""`RunBudget` (the money a whole run may spend), its file (``notes/budget.json``), the status line, and how the
command line reads ``--budget`` / ``FLOWER_BUDGET``. The end-to-end behaviour is in tests/e2e/test_budget_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower_cli._shared.budget import BudgetFile, budget_status, higher_budget, read_budget
from flower_cli._shared.exits import Exit, ExitCode
from flower_cli.cli.actions.budget import budget_from
from flower_cli.cli.actions.exit_codes import exit_code_for
from flower_cli.runtime import BUDGET_SPENT, RunBudget, StepResult, stopped_by_budget
from flower_cli.runtime._budget import role_of


def test_roles_are_step_names_without_their_round_retry_or_judge_number() -> None:
    assert role_of("work") == "work"
    assert role_of("work#round2") == "work"
    assert role_of("work·judge#3") == "judge"
    assert role_of("clarify#retry1") == "clarify"


def test_spent_counts_settled_steps_once_and_running_ones_at_their_latest_cost() -> None:
    budget = RunBudget(1.0)
    work = StepResult(step="work")
    budget.running(work, 0.2)
    budget.running(work, 0.5)  # the same step's later turn: its cost so far, not an addition
    assert budget.spent_usd == 0.5 and budget.spent_by == {"work": 0.5}
    work.cost_usd = 0.6
    budget.settle(work)  # the step is over: its whole cost, once
    assert budget.spent_by == {"work": 0.6} and budget.spent_usd == 0.6


def test_over_and_near_and_the_one_line_at_80_percent() -> None:
    budget = RunBudget(1.0)
    assert not budget.near and not budget.over and not budget.first_near()
    budget.charge("clarify", 0.79)
    assert not budget.first_near()
    budget.charge("goal", 0.01)
    assert budget.near and not budget.over
    assert budget.first_near() is True
    assert budget.first_near() is False, "said once"
    budget.charge("work", 0.2)
    assert budget.over
    assert budget.stop_reason().startswith(BUDGET_SPENT)
    assert "clarify $0.7900" in budget.stop_reason() and "work $0.2000" in budget.stop_reason()


def test_a_budget_that_jumps_straight_past_100_percent_says_no_80_percent_line() -> None:
    budget = RunBudget(0.1)
    budget.charge("work", 0.5)
    assert budget.over and budget.first_near() is False


def test_on_what_lists_the_roles_biggest_first() -> None:
    budget = RunBudget(10.0, spent_by={"judge": 0.1, "work": 2.5, "aside": 0.0})
    assert budget.on_what() == "work $2.50, judge $0.1000"


def test_a_kept_budget_carries_its_spend_and_a_new_limit_replaces_the_old(tmp_path: Path) -> None:
    path = tmp_path / "notes" / "budget.json"
    assert RunBudget.kept(path, None) is None and not path.exists(), "no budget given or kept: none"
    first = RunBudget.kept(path, 2.0)
    assert first is not None
    first.charge("work", 1.5)
    assert json.loads(path.read_text()) == {"limit_usd": 2.0, "spent_usd": 1.5, "spent_by": {"work": 1.5}}
    plain = RunBudget.kept(path, None)
    assert plain is not None and plain.limit_usd == 2.0 and plain.spent_usd == 1.5
    higher = RunBudget.kept(path, 5.0)
    assert higher is not None and higher.limit_usd == 5.0 and higher.spent_usd == 1.5
    assert read_budget(path) == BudgetFile(5.0, {"work": 1.5})


@pytest.mark.parametrize("text", ["", "[]", '{"limit_usd": 0}', '{"limit_usd": "ten"}', "not json"])
def test_a_file_that_is_not_a_budget_reads_as_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / "budget.json"
    path.write_text(text)
    assert read_budget(path) is None and budget_status(path) is None


def test_the_status_line(tmp_path: Path) -> None:
    assert budget_status(None) is None
    assert budget_status(BudgetFile(10.0, {"work": 3.2})) == "budget $3.20 of $10.00 (32%)"
    assert budget_status(BudgetFile(0.5, {"work": 0.6})) == "budget $0.6000 of $0.5000 (120%) · spent"


def test_the_budget_a_closing_line_proposes_is_more_than_is_spent() -> None:
    assert higher_budget(20.0, 21.0) == 40.0
    assert higher_budget(0.1, 0.48) == 0.72
    assert higher_budget(1.0, 1.2) == 2.0


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        RunBudget(0)


def test_the_command_line_reads_the_option_then_the_variable() -> None:
    assert budget_from(None, {}) is None
    assert budget_from(3.0, {"FLOWER_BUDGET": "9"}) == 3.0
    assert budget_from(None, {"FLOWER_BUDGET": "$12.50"}) == 12.5
    for given, env in ((0.0, {}), (-1.0, {}), (float("nan"), {}), (None, {"FLOWER_BUDGET": "lots"})):
        with pytest.raises(Exit) as caught:
            budget_from(given, env)
        assert caught.value.code == ExitCode.USAGE and "USD" in caught.value.message


def test_a_step_the_budget_stopped_exits_6() -> None:
    stopped = StepResult(step="work", ok=False, error=f"{BUDGET_SPENT}: $1.00 of $1.00 (work $1.00)")
    assert stopped_by_budget(stopped) and exit_code_for(stopped) == ExitCode.BUDGET == 6
    assert not stopped_by_budget(StepResult(step="work", ok=False, error="boom"))
