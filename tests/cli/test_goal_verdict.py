"""The goal and verdict parsers: English and Chinese (docs/compatibility.md), unverifiable checks, and the
substring traps of the verdict words."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_cli import Goal, Verdict
from flower_cli.go._goal import FORMAT as GOAL_FORMAT
from flower_cli.go._goal import is_unverifiable
from flower_cli.go._verdict import FORMAT as VERDICT_FORMAT
from flower_cli.go._verdict import (
    NO_CLEAR_VERDICT,
    UNREACHABLE_OPTIONS,
    classify,
    unreachable_choice,
    unreachable_question,
)

CHINESE_GOAL = """目标设定如下。

# 目标
`ledger` 能在终端里记账、出月报,测试全绿。

# 判定清单
- [ ] `ledger add 12.5 午饭` 之后 ~/.ledger.csv 多一行
- `ledger report --month 2024-05` 输出按类别的合计
1. `pytest -q` 退出码为 0
2、README 写了安装和用法
3) [此环境无法验证:需要 macOS] 在 macOS 上能装
"""


def test_the_originals_chinese_goal() -> None:
    goal = Goal.parse(CHINESE_GOAL)
    assert goal.complete
    assert goal.statement == "`ledger` 能在终端里记账、出月报,测试全绿。"
    assert goal.checks == (
        "`ledger add 12.5 午饭` 之后 ~/.ledger.csv 多一行",
        "`ledger report --month 2024-05` 输出按类别的合计",
        "`pytest -q` 退出码为 0",
        "README 写了安装和用法",
        "[此环境无法验证:需要 macOS] 在 macOS 上能装",
    )
    assert goal.unverifiable() == ["[此环境无法验证:需要 macOS] 在 macOS 上能装"]


@pytest.mark.parametrize("heading", ["完成标志", "目标", "Goal", "**Goal statement**"])
@pytest.mark.parametrize("checks", ["判定清单", "判定条件", "验收清单", "检查项", "判定", "Checks", "Checklist"])
def test_goal_aliases(heading: str, checks: str) -> None:
    goal = Goal.parse(f"## {heading}\nship it\n\n## {checks}\n* one\n+ two\n")
    assert goal == Goal("ship it", ("one", "two"))


def test_an_english_goal_with_wrapped_items_and_markers() -> None:
    text = (
        "## Goal\nThe ledger CLI records and reports spending.\n\n## Checks\n"
        "1. `ledger add` appends a row\n   to the CSV file\n"
        "2. [cannot verify here: needs a Windows machine] installs on Windows\n"
        "- [x] tests pass\n"
    )
    goal = Goal.parse(text)
    assert goal.checks == (
        "`ledger add` appends a row to the CSV file",
        "[cannot verify here: needs a Windows machine] installs on Windows",
        "tests pass",
    )
    assert len(goal.unverifiable()) == 1


@pytest.mark.parametrize(
    ("check", "marked"),
    [
        ("[cannot verify here: no GPU] trains", True),
        ("runs on iOS [can't verify here]", True),
        ("【此环境无法验证:没有 Windows】能在 Windows 跑", True),
        ("[此环境没法验证] X", True),
        ("cannot verify here without a phone", False),  # not in brackets: an ordinary check's words
        ("[ ] tests pass", False),
    ],
)
def test_unverifiable_marker(check: str, marked: bool) -> None:
    assert is_unverifiable(check) is marked


def test_incomplete_goals() -> None:
    assert not Goal.parse("## 目标\n做 X").complete
    assert not Goal.parse("## 判定清单\n- a").complete
    assert not Goal.parse("## Goal\nX\n## Checks\n(empty)").complete


def test_goal_file_round_trip_and_amend(tmp_path: Path) -> None:
    path = tmp_path / "notes" / "goal.md"
    goal = Goal.parse(CHINESE_GOAL)
    goal.write(path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# The goal of this run\n") and "## Checks\n- `ledger add" in text
    assert Goal.load(path) == goal
    changed = goal.amend("也要支持美元")
    assert changed.checks == goal.checks
    assert changed.statement.endswith("\n\n(Changed by the person) 也要支持美元")
    assert goal.amend("  ") is goal
    assert Goal.load(tmp_path / "missing.md") == Goal()


def test_goal_prompt_block_numbers_the_checks() -> None:
    assert Goal("X", ("a", "b")).prompt_block() == "## Goal\nX\n\n## Checks\n1. a\n2. b"


# --- verdicts --------------------------------------------------------------------------------------------


def test_the_originals_chinese_verdict() -> None:
    verdict = Verdict.parse(
        "**结论**:未达成\n**理由**:月报按类别的合计不对,测试有 2 个失败。\n**未通过**:\n- 第 2 条\n- 第 3 条\n"
    )
    assert verdict.state == "not_yet" and verdict.ok and not verdict.achieved
    assert verdict.reason == "月报按类别的合计不对,测试有 2 个失败。"
    assert verdict.failed == ("第 2 条", "第 3 条")


def test_an_english_verdict_in_the_asked_format() -> None:
    text = "I ran the tests and read the CLI.\n\n## Verdict\nachieved\n\n## Reason\nAll five checks pass.\n\n## Failed checks\n- none\n"
    verdict = Verdict.parse(text)
    assert verdict == Verdict("achieved", "All five checks pass.", ())
    assert verdict.feedback() == ""


@pytest.mark.parametrize(
    ("text", "state"),
    [
        # Substring traps: the "no" of "no blockers", the "failed" of "nothing failed" must not decide.
        ("**Verdict**: achieved, nothing failed", "achieved"),
        ("**结论**:达成(no blockers)", "achieved"),
        ("## Verdict\nNo blockers left; achieved.", "achieved"),
        ("## Verdict\nnot achieved", "not_yet"),
        ("## Verdict\nNot yet achieved — two checks fail", "not_yet"),
        ("## Verdict\nThe goal has not been fully achieved", "not_yet"),
        ("## Verdict\nisn't achieved", "not_yet"),
        ("## Verdict\nnot_yet", "not_yet"),
        ("## Verdict\nunmet", "not_yet"),
        ("## Verdict\nyesterday's build was achieved", "achieved"),  # "yes" inside a word is not "yes"
        ("## Verdict\nunreachable: needs macOS", "unreachable"),
        ("## Verdict\nCannot be achieved here", "unreachable"),
        ("**结论**:已达成", "achieved"),
        ("**结论**:尚未达成", "not_yet"),
        ("**结论**:没有达成", "not_yet"),
        ("**判定**:无法达成(需要真机)", "unreachable"),
        ("结论：此环境无法验证", "unreachable"),
        ("## 结论\n未完成", "not_yet"),
        ("## Verdict\nYes.", "achieved"),
        ("## Verdict\nNo, the report is wrong", "not_yet"),
        ("## Verdict\n", ""),
        ("## Verdict\nhard to say", ""),
    ],
)
def test_verdict_section_states(text: str, state: str) -> None:
    assert Verdict.parse(text).state == state


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("1", "achieved"),
        ("true", "achieved"),
        ("0", "not_yet"),
        ("False", "not_yet"),
        ("The goal is achieved: all checks met.", "achieved"),
        ("Not yet. The README is missing.", "not_yet"),
        ("未达成,还差测试。", "not_yet"),
        # Without a Verdict section, prose naming two states is ambiguous, never "achieved" by accident.
        ("I checked whether it was achieved; it is not yet.", ""),
        ("1 check failed", ""),
        ("", ""),
    ],
)
def test_whole_text_verdicts(text: str, state: str) -> None:
    assert Verdict.parse(text).state == state


def test_quoted_output_in_a_fence_does_not_decide() -> None:
    text = "```\nVerdict: achieved\n```\n## Verdict\nnot yet\n## Reason\nthe log above is old"
    assert Verdict.parse(text).state == "not_yet"


def test_classify_is_leftmost_and_word_bounded() -> None:
    assert classify("achieved (not everything was easy)") == "achieved"
    assert classify("method") == ""
    assert classify("incomplete") == "not_yet"


def test_feedback_for_a_rejected_round() -> None:
    verdict = Verdict("not_yet", "The report sums are wrong.", ("report by category",))
    text = verdict.feedback()
    assert text.startswith(
        "The last round has not reached the goal yet. The judge's reason:\nThe report sums are wrong."
    )
    assert "- report by category" in text
    assert text.endswith("Do not start over, and do not widen the scope.")
    assert NO_CLEAR_VERDICT in Verdict().feedback()
    assert not Verdict().ok


def test_the_formats_the_models_are_shown_parse_back() -> None:
    goal = Goal.parse(GOAL_FORMAT)
    assert goal.complete and len(goal.checks) == 2 and len(goal.unverifiable()) == 1
    # A judge that copies the template back has not given a verdict.
    assert Verdict.parse(VERDICT_FORMAT).state == ""
    assert Verdict.parse(VERDICT_FORMAT.replace("achieved | not yet | unreachable", "not yet")).state == "not_yet"


def test_unverifiable_warning(tmp_path: Path) -> None:
    goal = Goal.parse(CHINESE_GOAL)
    warning = goal.unverifiable_warning(tmp_path / "goal.md")
    assert warning.startswith("1 of 5 checks cannot be verified in this environment.")
    assert f"edit {tmp_path / 'goal.md'} now:" in warning and warning.endswith(
        "  - [此环境无法验证:需要 macOS] 在 macOS 上能装"
    )
    assert Goal("x", ("a",)).unverifiable_warning("g.md") == ""


@pytest.mark.parametrize(
    ("answer", "choice"),
    [
        (UNREACHABLE_OPTIONS[0], "accept"),
        (UNREACHABLE_OPTIONS[1], "change"),
        (UNREACHABLE_OPTIONS[2], "continue"),
        ("Accept it", "accept"),
        ("接受这个结果,就这样往下走", "accept"),
        ("修改目标", "change"),
        ("change: drop the macOS check", "change"),
        ("you are wrong, the Makefile builds an ELF", "continue"),
        ("你判断错了,继续做", "continue"),
    ],
)
def test_unreachable_choice(answer: str, choice: str) -> None:
    assert unreachable_choice(answer) == choice


def test_unreachable_question() -> None:
    assert unreachable_question("needs a Mac") == "The judge says the goal is **unreachable**: needs a Mac\nWhat now?"
