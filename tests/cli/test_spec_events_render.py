from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock, ToolResultBlock, ToolUseBlock, UserMessage

from flower_cli import PLUGIN_DIR, AgentSpec, CompactPolicy, Event, build_options, normalize
from flower_cli.view import Renderer, sanitize


def test_compact_policy_env_and_validation() -> None:
    assert CompactPolicy().env() == {}
    assert CompactPolicy("no_summary").env() == {"DISABLE_AUTO_COMPACT": "1"}
    assert CompactPolicy("off", window=300_000).env() == {
        "DISABLE_COMPACT": "1",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "300000",
    }
    with pytest.raises(ValueError, match="unknown compact mode"):
        CompactPolicy("sometimes")  # type: ignore[arg-type]


def test_build_options_appends_instructions_and_is_portable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The harness's retry settings are flower's only when the person left them unset (see test_limit_wait.py).
    monkeypatch.setenv("CLAUDE_CODE_RETRY_WATCHDOG", "1")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    spec = AgentSpec("r", "Be brief.", env={"A": "1"}, compact=CompactPolicy("no_summary"), max_budget_usd=1.5)
    opts = build_options(spec, cwd=tmp_path, session_store=object(), resume="sid", fork=True)
    assert opts.system_prompt == {"type": "preset", "preset": "claude_code", "append": "Be brief."}
    assert opts.setting_sources == []
    assert opts.plugins == [{"type": "local", "path": str(PLUGIN_DIR)}]
    assert (PLUGIN_DIR / ".claude-plugin" / "plugin.json").is_file()
    assert opts.session_store_flush == "eager"
    assert opts.env == {"A": "1", "DISABLE_AUTO_COMPACT": "1"}
    assert opts.resume == "sid" and opts.fork_session is True and opts.max_budget_usd == 1.5
    # the harness's own schedulers are off unless the role names them
    assert {"Workflow", "ScheduleWakeup"} <= set(opts.disallowed_tools)
    opted_in = build_options(AgentSpec("r", "", allowed_tools=["Read", "Workflow"]), cwd=tmp_path)
    assert "Workflow" not in opted_in.disallowed_tools and "ScheduleWakeup" in opted_in.disallowed_tools
    assert build_options(spec, cwd=tmp_path, portable=False).setting_sources == ["project"]


def test_fork_without_resume_warns_and_is_ignored(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opts = build_options(AgentSpec("r", ""), cwd=tmp_path, fork=True)
    assert opts.fork_session is False and caught


def test_normalize_keeps_synthetic_errors_out_of_text() -> None:
    synthetic = AssistantMessage(
        content=[TextBlock("API Error: Connection refused")], model="<synthetic>", error="server_error"
    )
    [event] = normalize(synthetic)
    assert event.kind == "error" and "Connection refused" in event.text and event.payload["synthetic"]


def test_normalize_tool_calls_results_context_and_subagents() -> None:
    msg = AssistantMessage(
        content=[TextBlock("Looking."), ToolUseBlock("t1", "Bash", {"command": "ls -la"})],
        model="m",
        usage={
            "input_tokens": 100,
            "cache_read_input_tokens": 20,
            "cache_creation_input_tokens": 3,
            "output_tokens": 9,
        },
    )
    text, call = normalize(msg)
    assert text.kind == "text" and text.payload["context"] == 123
    assert call.kind == "tool_call" and call.tool == "Bash" and call.text == "ls -la"
    sub = UserMessage(content=[ToolResultBlock("t1", "x" * 900, is_error=True)], parent_tool_use_id="tp")
    [result] = normalize(sub)
    assert result.subagent and result.payload["is_error"] and len(result.text) == 500
    res = ResultMessage(
        subtype="success",
        duration_ms=1,
        duration_api_ms=1,
        is_error=False,
        num_turns=2,
        session_id="s",
        total_cost_usd=0.5,
    )
    [done] = normalize(res)
    # an SDK result ends one main-thread turn; the step's own "result" event comes from the Runtime
    assert done.kind == "turn" and done.payload["total_cost_usd"] == 0.5 and done.payload["num_turns"] == 2


def test_sanitize_removes_escape_sequences() -> None:
    hostile = "ok\x1b[2J\x1b]0;title\x07 \x1b[31mred\x1b[0m\x07\x00\ttab"
    assert sanitize(hostile) == "ok red    tab"


def test_renderer_accumulates_cost_and_context_across_events() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    view.render(normalize(AssistantMessage(content=[TextBlock("hi")], model="m", usage={"input_tokens": 4200}))[0])
    for cost in (0.25, 0.5):  # two steps: turns show the running cost, each step closes with its own result
        for running in (cost / 2, cost):
            view.render(
                normalize(
                    ResultMessage(
                        subtype="success",
                        duration_ms=1,
                        duration_api_ms=1,
                        is_error=False,
                        num_turns=1,
                        session_id="s",
                        total_cost_usd=running,
                    )
                )[0]
            )
        assert f"${view.cost + cost:.2f}" in view.status()
        view.render(Event("result", "success", payload={"cost_usd": cost, "num_turns": 2, "is_error": False}))
    # the turns' running totals are never added up (that would count the first turn twice)
    assert view.cost == 0.75 and view.context == 4200
    assert "context 4.2K" in view.status() and "$0.75" in view.status()
    assert out.getvalue().count("+ done") == 2
    assert "\x1b" not in out.getvalue()


def test_words_meant_to_be_read_wrap_and_nothing_is_clipped() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    view.width, view.fold = 40, True
    warning = "stdin is not a terminal: questions wait for lines on stdin (add --timeout 0 to decide at once)"
    view(Event("notice", warning))
    view(Event("tool_call", "x" * 80, tool="Bash"))
    lines = out.getvalue().splitlines()
    notice = [line for line in lines if "x" * 10 not in line and "Bash" not in line]
    assert all(len(line) <= 40 for line in notice)
    assert " ".join(line.strip().lstrip("! ").strip() for line in notice) == warning, "nothing of a warning is lost"
    assert notice[0].startswith("  ! ") and all(line.startswith("    ") for line in notice[1:])
    # a word longer than the width (a command, a path) stays whole on its own line: never cut, never "..."
    assert any(line.strip() == "x" * 80 for line in lines) and "..." not in out.getvalue()
