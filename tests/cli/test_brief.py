"""The brief parser on English and Chinese texts, the heading forms the original flower wrote, and lines that
merely start with a heading word."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from flower_cli import Brief
from flower_cli.go import WAKE_LABEL
from flower_cli.go._brief import FORMAT, RUNNING_LABEL

# A clarifier's answer in the original flower's Chinese format ("## 目标" … "## 未知与假设"), which must still parse.
CHINESE_BRIEF = """好的,需求已经问清楚了,确认书如下。

## 目标
做一个命令行记账工具 `ledger`,记录每天的支出。
目标平台是 Linux,用户用终端操作。

## 验收标准
1. `ledger add 12.5 午饭` 能记一笔,写进 ~/.ledger.csv
2. `ledger report --month 2024-05` 按类别汇总
3. 有单元测试,`pytest` 全绿

## 边界
- 不做图形界面
- 不做多用户、不联网同步

## 未知与假设
- 假设：金额只有人民币
假设用户会自己备份 CSV 文件
- 未知：是否需要预算提醒(先不做)
"""

ENGLISH_BRIEF = """Here is the brief.

**Goal**: a command-line ledger that records daily spending.
Goal-oriented design is not needed; keep it simple.

**Acceptance criteria**
- `ledger add 12.5 lunch` appends a row to ~/.ledger.csv
- `ledger report --month 2024-05` sums by category

**Out of scope**
- No GUI.

**Assumptions:**
Assumptions we make about the user: they use bash.
Assumption: amounts are in one currency.
"""


def test_the_originals_chinese_brief() -> None:
    brief = Brief.parse(CHINESE_BRIEF)
    assert brief.complete
    assert brief.goal == "做一个命令行记账工具 `ledger`,记录每天的支出。\n目标平台是 Linux,用户用终端操作。"
    assert brief.acceptance.splitlines()[0] == "1. `ledger add 12.5 午饭` 能记一笔,写进 ~/.ledger.csv"
    assert len(brief.acceptance.splitlines()) == 3
    assert brief.boundaries == "- 不做图形界面\n- 不做多用户、不联网同步"
    assert brief.unknowns.splitlines() == [
        "- 假设：金额只有人民币",
        "假设用户会自己备份 CSV 文件",
        "- 未知：是否需要预算提醒(先不做)",
    ]


def test_an_english_brief_with_bold_headings_and_same_line_bodies() -> None:
    brief = Brief.parse(ENGLISH_BRIEF)
    assert brief.complete
    assert brief.goal.startswith("a command-line ledger") and "Goal-oriented design" in brief.goal
    assert brief.acceptance.count("\n") == 1
    assert brief.boundaries == "- No GUI."
    assert (
        brief.unknowns == "Assumptions we make about the user: they use bash.\nAssumption: amounts are in one currency."
    )


@pytest.mark.parametrize(
    "heading",
    [
        "## 目标",
        "##目标",
        "**目标**",
        "目标:",
        "目标：",
        "3. 目标",
        "3、目标",
        "## Goal",
        "# GOAL",
        "**Goal:**",
        "1) Goal",
        "### Goal ###",
        "## 目标（一句话）",
    ],
)
def test_every_heading_form_is_read(heading: str) -> None:
    text = f"{heading}\n做一个 X\n\n## 验收标准\n能跑\n\n## 边界\n不做 Y\n\n## 未知与假设\n无"
    assert Brief.parse(text).goal == "做一个 X"


@pytest.mark.parametrize(
    ("line", "body"),
    [
        ("**目标**：做一个 X", "做一个 X"),
        ("目标: 做一个 X", "做一个 X"),
        ("3、目标：做一个 X", "做一个 X"),
        ("## Goal: make X", "make X"),
        ("**Goal** make X", "make X"),
    ],
)
def test_a_body_on_the_heading_line(line: str, body: str) -> None:
    assert Brief.parse(line).goal == body


@pytest.mark.parametrize(
    "trap",
    [
        "目标平台是 Linux",
        "假设用户会自己备份",
        "Goal-oriented design is out",
        "Assumptions we make are few",
        "## Goal build a CLI",  # the heading part is not exactly an alias
        "1. 目标平台：Linux",
        "未知的部分先跳过",
    ],
)
def test_a_line_that_merely_starts_with_a_heading_word_is_text(trap: str) -> None:
    # Taken for a heading, this line would cut the section here and lose everything after it.
    text = f"## 目标\n做一个 X\n{trap}\n还要 Z\n\n## 验收标准\n能跑"
    brief = Brief.parse(text)
    assert brief.goal == f"做一个 X\n{trap}\n还要 Z"
    assert brief.acceptance == "能跑"


def test_a_labelled_list_line_does_not_reopen_a_filled_section() -> None:
    text = "## Goal\nmake X\n\n## Acceptance criteria\n1. Goal: 90% coverage\n2. runs on Linux\n\n## Boundaries\nno GUI"
    brief = Brief.parse(text)
    assert brief.goal == "make X"
    assert brief.acceptance == "1. Goal: 90% coverage\n2. runs on Linux"


def test_the_first_non_empty_occurrence_wins() -> None:
    text = "## Goal\n\n## Goal\nfirst\n\n## Boundaries\nnone\n\n## Goal\nsecond"
    assert Brief.parse(text).goal == "first"


def test_fenced_blocks_are_dropped_and_an_unclosed_fence_drops_the_rest() -> None:
    text = "## Goal\nmake X\n```python\n## Boundaries\nprint('pasted code')\n```\nstill goal\n\n## Acceptance\nruns\n~~~\n## Boundaries\nlost"
    brief = Brief.parse(text)
    assert brief.goal == "make X\nstill goal"
    assert brief.acceptance == "runs"
    assert brief.boundaries == ""


def test_rules_are_dropped_and_blank_runs_squeezed() -> None:
    brief = Brief.parse("## Goal\nA\n\n\n\n\nB\n---\n***\nC")
    assert brief.goal == "A\n\nB\nC"


def test_missing_names_the_empty_sections_in_order() -> None:
    brief = Brief.parse("## 目标\n做 X\n## 边界\n不做 Y")
    assert not brief.complete
    assert brief.missing() == ["Acceptance criteria", "Unknowns and assumptions"]


def test_amendments_are_kept_apart_not_folded_into_unknowns() -> None:
    text = (
        CHINESE_BRIEF
        + "\n## 唤醒时追加(10:12:30)\n再加一个导出 CSV\n\n## 运行中补充（11:00:02）\n报表要按周\n## 目标\n这是人打的字,不是新目标\n"
    )
    brief = Brief.parse(text)
    assert brief.unknowns.endswith("是否需要预算提醒(先不做)")
    assert [(a.label, a.stamp) for a in brief.amendments] == [("唤醒时追加", "10:12:30"), ("运行中补充", "11:00:02")]
    assert brief.amendments[0].text == "再加一个导出 CSV"
    assert brief.amendments[1].text == "报表要按周\n## 目标\n这是人打的字,不是新目标"
    assert brief.goal.startswith("做一个命令行记账工具")


def test_markdown_round_trip_and_frozen_notice(tmp_path: Path) -> None:
    brief = Brief.parse(CHINESE_BRIEF).with_amendment("also export CSV", WAKE_LABEL, now=0)
    path = tmp_path / "notes" / "brief.md"
    brief.write(path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Brief\n\n> Confirmed with the person and frozen")
    assert "## Acceptance criteria\n1. `ledger add" in text
    assert Brief.load(path) == brief


def test_load_reads_placeholders_as_empty_and_tolerates_missing_files(tmp_path: Path) -> None:
    assert Brief.load(tmp_path / "nope.md") == Brief()
    (tmp_path / "b.md").write_text(Brief(goal="X").to_markdown(), encoding="utf-8")
    assert Brief.load(tmp_path / "b.md").missing() == ["Acceptance criteria", "Boundaries", "Unknowns and assumptions"]
    original = (
        "# 需求确认书\n> 已冻结\n\n## 目标\n做 X\n\n## 验收标准\n(未填)\n\n## 边界\n(未填)\n\n## 未知与假设\n(未填)\n"
    )
    (tmp_path / "需求.md").write_text(original, encoding="utf-8")
    assert Brief.load(tmp_path / "需求.md") == Brief(goal="做 X")


def test_load_keeps_code_a_person_pasted_into_an_amendment(tmp_path: Path) -> None:
    path = tmp_path / "brief.md"
    Brief(goal="g", acceptance="a", boundaries="b", unknowns="u").write(path)
    assert Brief.amend(path, "use this config:\n```toml\n## Goal\nx = 1\n```")
    loaded = Brief.load(path)
    assert loaded.goal == "g"
    assert loaded.amendments[0].text == "use this config:\n```toml\n## Goal\nx = 1\n```"


def test_prompt_block_has_sections_then_amendments() -> None:
    brief = Brief(goal="g", acceptance="a", boundaries="", unknowns="u").with_amendment("more", now=0)
    block = brief.prompt_block()
    assert block.startswith(
        "## Goal\ng\n\n## Acceptance criteria\na\n\n## Unknowns and assumptions\nu\n\n## Added while running ("
    )
    assert block.endswith(")\nmore")


def test_amend_appends_with_a_time_and_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes" / "brief.md"
    assert Brief.amend(path, "  export CSV too  ", now=0)
    assert not Brief.amend(path, "   ")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Brief (additions only")
    loaded = Brief.load(path)
    assert [a.label for a in loaded.amendments] == [RUNNING_LABEL]
    assert loaded.amendments[0].text == "export CSV too" and loaded.amendments[0].stamp.count(":") == 2


def test_freezing_keeps_amendments_that_arrived_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "brief.md"
    Brief.amend(path, "mail that came during clarification")
    written = Brief.parse(CHINESE_BRIEF).write(path)
    loaded = Brief.load(path)
    assert loaded.complete and loaded == written
    assert [a.text for a in loaded.amendments] == ["mail that came during clarification"]


def test_parallel_amendments_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "brief.md"
    Brief(goal="g", acceptance="a", boundaries="b", unknowns="u").write(path)
    threads = [threading.Thread(target=Brief.amend, args=(path, f"mail {i}")) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.text for a in Brief.load(path).amendments) == sorted(f"mail {i}" for i in range(12))
    assert not list(tmp_path.glob("brief.md.lock")), "the lock file must be hidden from the workbench index"


def test_mentions_finds_a_wake_sentence_already_in_the_brief() -> None:
    brief = Brief.parse(CHINESE_BRIEF).with_amendment("also   export CSV", now=0)
    assert brief.mentions("also export CSV")
    assert brief.mentions("不做图形界面")
    assert not brief.mentions("add a web UI")


def test_the_format_the_clarifier_is_shown_parses_back() -> None:
    assert Brief.parse(FORMAT).complete
