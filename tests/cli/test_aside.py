"""The aside's role, prompt and context, and its failures that need no model (the e2e file runs the binary)."""

from __future__ import annotations

from pathlib import Path

import pytest

import flower_cli
from flower_cli import ORACLE_RULES, AsideAnswer, Event, answer_aside, aside_context, build_options, progress_line
from flower_cli.go._aside import ASIDE_RULES, ASIDE_TOOLS, aside_prompt, aside_spec
from flower_cli.runtime._options import disallowed_tools

HANDS_ON = ("Write", "Edit", "NotebookEdit", "Bash", "Agent", "Task", "WebFetch", "WebSearch")


def test_the_aside_is_offered_only_read_only_tools_and_refuses_the_rest() -> None:
    spec = aside_spec(0.05)
    assert spec.tools == list(ASIDE_TOOLS) == ["Read", "Grep", "Glob"]
    assert spec.allowed_tools == list(ASIDE_TOOLS)
    assert not set(HANDS_ON) & set(spec.tools) and not set(HANDS_ON) & set(spec.allowed_tools)
    assert spec.permission_mode == "dontAsk"  # refuses what is not pre-approved instead of asking
    assert spec.max_budget_usd == 0.05 and spec.max_turns is not None
    assert spec.workbench is False and not spec.delegate_only and not spec.agents and not spec.mcp_servers
    assert "Agent" in disallowed_tools(spec)


def test_its_options_carry_the_tool_set_the_mode_and_the_budget(tmp_path: Path) -> None:
    options = build_options(aside_spec(0.02), cwd=tmp_path)
    assert options.tools == ["Read", "Grep", "Glob"]
    assert options.allowed_tools == ["Read", "Grep", "Glob"]
    assert options.permission_mode == "dontAsk"
    assert options.max_budget_usd == 0.02
    assert options.system_prompt["type"] == "preset"  # appended to Claude Code's prompt, not replacing it


def test_a_role_without_a_tool_set_keeps_the_harness_default(tmp_path: Path) -> None:
    assert build_options(flower_cli.oracle(), cwd=tmp_path).tools is None


def test_the_system_prompt_is_the_oracle_rules_plus_the_aside_rules() -> None:
    text = aside_spec().instructions
    assert text.startswith(ORACLE_RULES.strip()) and text.endswith(ASIDE_RULES)
    assert "side question" in ASIDE_RULES and "brief" in ASIDE_RULES and "not instructions" in ASIDE_RULES
    assert ASIDE_RULES.isascii()  # model-facing text is English


def test_the_prompt_puts_the_question_first_then_the_context() -> None:
    prompt = aside_prompt("  what is it doing? ", "<brief>\nB\n</brief>")
    assert prompt.startswith("Side question: what is it doing?\n")
    assert prompt.index("what is it doing?") < prompt.index("<brief>\nB")
    assert "beyond the files" in aside_prompt("q", "  ")


def _notes(tmp_path: Path, brief: str = "## Goal\nA ledger.\n", goal: str = "## Goal\nIt stores.\n") -> Path:
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "brief.md").write_text(brief, encoding="utf-8")
    (notes / "goal.md").write_text(goal, encoding="utf-8")
    return notes


def test_context_holds_the_brief_the_goal_and_the_recent_lines_in_order(tmp_path: Path) -> None:
    text = aside_context(_notes(tmp_path), ["first step", "", "second\nstep"])
    assert text.index("<brief>") < text.index("A ledger.") < text.index("</brief>")
    assert text.index("</brief>") < text.index("<goal>") < text.index("It stores.") < text.index("</goal>")
    assert (
        text.index("<recent_progress")
        < text.index("- first step")
        < text.index("- second step")
        < text.index("</recent_progress>")
    )


def test_context_says_what_is_missing(tmp_path: Path) -> None:
    text = aside_context(tmp_path / "nowhere", [])
    assert "(no brief yet)" in text and "(no goal yet)" in text and "(no progress yet)" in text


def test_context_reads_the_original_chinese_file_names(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "需求.md").write_text("## 目标\n旧的需求\n", encoding="utf-8")
    (notes / "目标.md").write_text("## 目标\n旧的目标\n", encoding="utf-8")
    text = aside_context(notes, [])
    assert "旧的需求" in text and "旧的目标" in text


def test_context_is_bounded_keeping_the_newest_lines_and_the_brief_head_and_tail(tmp_path: Path) -> None:
    brief = "BRIEF-HEAD\n" + "x" * 50_000 + "\nAMENDMENT-TAIL\n"
    notes = _notes(tmp_path, brief=brief, goal="g" * 20_000)
    recent = [f"line {i} " + "y" * 500 for i in range(1000)]
    text = aside_context(notes, recent)
    assert len(text) < 12_000
    assert "BRIEF-HEAD" in text and "AMENDMENT-TAIL" in text and "characters left out" in text
    assert "line 999 " in text and "line 0 " not in text
    kept = [line for line in text.splitlines() if line.startswith("- line ")]
    assert 0 < len(kept) <= 60 and all(len(line) <= 202 for line in kept)
    assert [int(line.split()[2]) for line in kept] == sorted(int(line.split()[2]) for line in kept)


def test_progress_lines_skip_what_tells_nothing() -> None:
    assert progress_line(Event("tool_call", "src/app.py", tool="Read")) == "[tool_call/Read main] src/app.py"
    assert progress_line(Event("text", "Writing\nthe  parser", subagent=True)) == "[text worker] Writing the parser"
    assert progress_line(Event("thinking", "hmm")) is None
    assert progress_line(Event("prompt", "brief to a worker")) is None
    assert progress_line(Event("system", "usage")) is None
    assert progress_line(Event("text", "")) is None
    assert len(progress_line(Event("text", "z" * 1000)) or "") < 230


async def test_an_empty_question_is_answered_without_running(tmp_path: Path) -> None:
    answer = await answer_aside("   ", workspace=tmp_path, run_dir=tmp_path / "runs", context="")
    assert answer == AsideAnswer("the side question is empty: type it right after the ?", 0.0, None, False)
    assert not (tmp_path / "runs").exists()


async def test_no_credentials_is_a_one_line_answer_not_an_exception(isolated_home: Path, tmp_path: Path) -> None:
    answer = await answer_aside("what now?", workspace=tmp_path, run_dir=tmp_path / "runs", context="")
    assert not answer.ok and answer.session_id is None and answer.cost_usd == 0.0
    assert answer.text.startswith("the side question could not start: ") and "\n" not in answer.text


async def test_an_unusable_run_dir_is_a_one_line_answer(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")
    (tmp_path / "runs").write_text("a file where the run dir should be")
    answer = await answer_aside("what now?", workspace=tmp_path, run_dir=tmp_path / "runs", context="")
    assert not answer.ok and answer.text.startswith("the side question could not start: ") and "\n" not in answer.text
    assert "is a file, not a directory" in answer.text


async def test_a_bad_budget_is_refused(tmp_path: Path) -> None:
    answer = await answer_aside("q", workspace=tmp_path, run_dir=tmp_path / "runs", context="", max_budget_usd=0)
    assert not answer.ok and "positive budget" in answer.text


def test_exported_lazily_from_the_package() -> None:
    for name in ("AsideAnswer", "answer_aside", "aside_context", "progress_line"):
        assert name in flower_cli.__all__ and getattr(flower_cli, name) is not None
