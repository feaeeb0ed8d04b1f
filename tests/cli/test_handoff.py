"""Handoff building blocks: policy math, where the window comes from, overflow errors, the document, saving."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from flower_cli import Handoff, HandoffPolicy, is_overflow, record_overflow, resolve_window
from flower_cli.runtime import parse_token_count
from flower_cli.runtime._handoff import (
    HANDOFF_PROMPT,
    OVERFLOW_WHY,
    calibration_path,
    degraded,
    guess_window,
    handoff_prompt,
    safe_step_name,
    save,
)

# --- policy ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "at", "warn_at"),
    [
        (HandoffPolicy(window=200_000), 150_000, 130_000),  # auto headroom: max(50k, 25%)
        (HandoffPolicy(window=1_000_000), 750_000, 730_000),
        (HandoffPolicy(window=1_000_000, headroom=50_000), 950_000, 930_000),
        (HandoffPolicy(window=100_000), 50_000, 30_000),  # the 50k floor of the automatic headroom
        (HandoffPolicy(window=20_000), 10_000, 1_000),  # floors: never hand off below 10k, warn from 1k
    ],
)
def test_policy_thresholds(policy: HandoffPolicy, at: int, warn_at: int) -> None:
    assert (policy.at, policy.warn_at) == (at, warn_at)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"window": 0}, "positive"),
        ({"window": -5}, "positive"),
        ({"headroom": -1}, "headroom"),
        ({"max_generations": 0}, "max_generations"),
    ],
)
def test_policy_rejects_nonsense(kwargs: dict[str, int], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        HandoffPolicy(**kwargs)


def test_policy_defaults_and_resolution() -> None:
    policy = HandoffPolicy()
    assert policy.enabled and policy.window is None and policy.headroom == 0 and policy.max_generations == 8
    resolved = policy.resolved(model="claude-sonnet-4-5[1m]", env={})
    assert resolved.window == 1_000_000 and resolved.at == 750_000
    assert HandoffPolicy(window=300_000).resolved(model="x[1m]", env={}).window == 300_000


def test_an_unresolved_policy_reads_the_environment(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_WINDOW", "400k")
    assert HandoffPolicy().window_tokens == 400_000 and HandoffPolicy().at == 300_000


def test_an_unresolved_policy_resolves_its_window_once(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading `at` or `warn_at` does not go back to the environment and the calibration file every time.
    policy = HandoffPolicy()
    record_overflow(400_000)
    assert policy.at == 300_000
    calibration_path().unlink()
    monkeypatch.setenv("FLOWER_WINDOW", "100k")
    assert (policy.window_tokens, policy.at, policy.warn_at) == (400_000, 300_000, 280_000)
    assert policy == HandoffPolicy() and HandoffPolicy().at == 50_000, "a new policy reads them afresh"


# --- the window --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5[1m]", 1_000_000),
        ("claude-haiku-4-5[1m]", 1_000_000),  # the suffix is checked first
        ("opus-1m", 1_000_000),
        ("CLAUDE-OPUS-4-6[1M]", 1_000_000),
        ("claude-haiku-4-5", 200_000),
        ("claude-opus-4-1-20250805", 200_000),
        ("claude-sonnet-4-5", 200_000),
        ("some-gateway-model-41m", 200_000),  # "41m" is not the 1m token
        (None, 200_000),
    ],
)
def test_guess_window(model: str | None, window: int) -> None:
    assert guess_window(model) == window


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("200000", 200_000),
        ("200_000", 200_000),
        ("200k", 200_000),
        ("1m", 1_000_000),
        ("1.5M", 1_500_000),
        (" 64K ", 64_000),
    ],
)
def test_parse_token_count(text: str, tokens: int) -> None:
    assert parse_token_count(text) == tokens


@pytest.mark.parametrize("text", ["", "big", "-5", "0", "1.5", "10x"])
def test_parse_token_count_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_token_count(text)


def test_window_precedence(tmp_path: Path) -> None:
    env = {
        "XDG_CONFIG_HOME": str(tmp_path),
        "ANTHROPIC_MODEL": "claude-sonnet-4-5[1m]",
        "ANTHROPIC_BASE_URL": "https://gw.example/",
    }
    assert resolve_window(env=env) == resolve_window(model="claude-sonnet-4-5[1m]", env={**env, "ANTHROPIC_MODEL": ""})
    assert (resolve_window(env=env).tokens, resolve_window(env=env).source) == (1_000_000, "model name")

    assert record_overflow(640_000, env=env)
    assert (resolve_window(env=env).tokens, resolve_window(env=env).source) == (640_000, "calibrated")
    other_gateway = {**env, "ANTHROPIC_BASE_URL": "https://other.example"}
    assert resolve_window(env=other_gateway).source == "model name"

    with_env = {**env, "FLOWER_WINDOW": "300000"}
    assert (resolve_window(env=with_env).tokens, resolve_window(env=with_env).source) == (300_000, "FLOWER_WINDOW")
    assert (resolve_window(123_456, env=with_env).tokens, resolve_window(123_456, env=with_env).source) == (
        123_456,
        "option",
    )

    bad = resolve_window(env={**env, "FLOWER_WINDOW": "lots"})
    assert bad.source == "calibrated" and "FLOWER_WINDOW ignored" in bad.note
    assert resolve_window(env={"XDG_CONFIG_HOME": str(tmp_path)}).source == "default"
    with pytest.raises(ValueError):
        resolve_window(0, env=env)


def test_the_opus_mapping_is_read_when_no_model_is_set(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "ANTHROPIC_DEFAULT_OPUS_MODEL": "gw-opus[1m]"}
    assert resolve_window(env=env).tokens == 1_000_000


def test_record_overflow_keeps_the_smallest_and_the_file_format(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "ANTHROPIC_MODEL": "m"}
    path = calibration_path(env)
    assert path == tmp_path / "flower" / ".windows"
    assert not record_overflow(0, env=env) and not path.exists()
    assert record_overflow(500_000, env=env)
    assert record_overflow(700_000, env=env)  # larger: the known smaller one stays
    assert record_overflow(450_000, env=env, model="other", base_url="http://127.0.0.1:9/")
    assert json.loads(path.read_text()) == {"default|m": 500_000, "http://127.0.0.1:9|other": 450_000}


def test_a_corrupt_calibration_file_is_moved_aside(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    path = calibration_path(env)
    path.parent.mkdir(parents=True)
    path.write_text("{broken")
    assert resolve_window(env=env).source == "default"  # reading never fails
    assert record_overflow(90_000, env=env)
    assert json.loads(path.read_text()) == {"default|default": 90_000}
    assert [p.read_text() for p in path.parent.glob(".windows.corrupt-*")] == ["{broken"]


def test_parallel_overflow_records_keep_the_minimum(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    threads = [
        threading.Thread(target=record_overflow, args=(300_000 + 1000 * i,), kwargs={"env": env, "model": f"m{i % 2}"})
        for i in reversed(range(16))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert json.loads(calibration_path(env).read_text()) == {"default|m0": 300_000, "default|m1": 301_000}


@pytest.mark.parametrize(
    "text",
    [
        "prompt is too long: 1034567 tokens > 1000000 maximum",
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"Prompt is too long"}}',
        "This model's maximum context length is 200000 tokens",
        "context_length_exceeded",
        "Request exceeds the context window of the model",
        "input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000",
        "too many total text bytes",
        "请求的上下文长度超过限制",
    ],
)
def test_is_overflow(text: str) -> None:
    assert is_overflow(None, "", text)


@pytest.mark.parametrize(
    "text",
    ["Connection refused", "rate_limit_error", "Overloaded", "the prompt is fine", "max_tokens must be positive"],
)
def test_is_not_overflow(text: str) -> None:
    assert not is_overflow(text)


# --- the document ------------------------------------------------------------------------------------

ENGLISH = """Writing the handoff now.

## Doing now
Wiring `ledger report` to the CSV reader; the category sum is half done.

## Decided, and why
- CSV, not SQLite: the person wants to open it in a spreadsheet.

## Dead ends
(none yet)

## Next
1. Finish `report.py::sum_by_category`.
2. Run `pytest -q tests/test_report.py`.

## Scene
- src/ledger/report.py
- notes/decisions.md
```
pytest -q tests/test_report.py
```
"""

CHINESE = """## 现在在做什么
在写月报汇总,按类别求和写了一半。

## 已经定下的
用 CSV 存,因为人要用表格打开。

## 走不通的路
试过 pandas,太重,装不上。

## 下一步
把 sum_by_category 写完,跑 pytest。

## 现场
src/ledger/report.py
"""


def test_parse_an_english_handoff() -> None:
    doc = Handoff.parse(ENGLISH)
    assert doc.complete and not doc.degraded
    assert doc.doing.startswith("Wiring `ledger report`")
    assert doc.dead_ends == "(none yet)"
    assert doc.next_step.startswith("1. Finish")
    assert doc.scene.endswith("```\npytest -q tests/test_report.py\n```")  # code kept as text


def test_parse_the_originals_chinese_handoff_and_aliases() -> None:
    doc = Handoff.parse(CHINESE)
    assert doc.complete and doc.dead_ends == "试过 pandas,太重,装不上。" and doc.scene == "src/ledger/report.py"
    aliased = Handoff.parse(
        "## 当前进度\n写测试\n## 决策\n用 CSV\n## 试过不行的\npandas\n## 下一步\n跑测试\n## 文件\na.py"
    )
    assert (aliased.doing, aliased.decided, aliased.dead_ends, aliased.scene) == ("写测试", "用 CSV", "pandas", "a.py")


def test_doing_and_next_are_required() -> None:
    doc = Handoff.parse("## Doing now\nstuff\n## Decided\nthings")
    assert not doc.complete and doc.missing() == ["Next"]
    assert doc.incomplete_reason() == "it had no 'Next' section"
    assert Handoff().missing() == ["Doing now", "Next"] and Handoff.parse(ENGLISH).incomplete_reason() == ""


def test_markdown_round_trip_and_summary() -> None:
    doc = Handoff.parse(ENGLISH)
    text = doc.to_markdown("work")
    assert text.startswith("# Handoff (work)\n\n> Written when a session's context filled up")
    assert Handoff.parse(text) == doc
    assert list(doc.summary()) == ["doing", "decided", "dead_ends", "next_step"]
    assert Handoff.parse(Handoff(doing="x", next_step="y").to_markdown("s")) == Handoff(doing="x", next_step="y")


def test_the_successor_prompt() -> None:
    prompt = Handoff(doing="writing report", next_step="finish it", scene="src/report.py").successor_prompt(
        "work", path="/ws/.flower/notes/handoff-work.md"
    )
    assert prompt.startswith('You are taking over step "work" from a session whose context filled up.')
    assert "saved at /ws/.flower/notes/handoff-work.md" in prompt
    assert "## Doing now\nwriting report" in prompt and "## Decided" not in prompt  # empty parts left out
    assert prompt.endswith('Continue from "Next". Do not start over, and do not go back to the person for background.')


def test_the_handoff_prompt_asks_for_the_five_parts() -> None:
    text = handoff_prompt(150_321, 200_000)
    assert "150,321 of a 200,000-token window" in text
    for title in ("## Doing now", "## Decided, and why", "## Dead ends", "## Next", "## Scene"):
        assert title in text
    assert "{used}" in HANDOFF_PROMPT
    # The prompt's own headings are what the parser reads back.
    assert Handoff.parse(text).complete


def test_degraded_handoff() -> None:
    task = "Build the ledger. " * 200
    doc = degraded("work", task, OVERFLOW_WHY)
    assert doc.degraded and doc.complete
    assert doc.doing.startswith(
        '[degraded: no handoff was written] The previous session ran out of context in step "work"'
    )
    assert OVERFLOW_WHY in doc.doing and "git status" in doc.next_step
    assert doc.scene.startswith("The task this step was first given:\nBuild the ledger.") and doc.scene.endswith("[…]")
    assert len(doc.scene) < 1300
    assert Handoff.parse(doc.to_markdown("work")).degraded


@pytest.mark.parametrize(
    ("step", "safe"),
    [
        ("work", "work"),
        ('a/b\\c:d*e?f"g<h>i|j', "abcdefghij"),
        ("干活", "干活"),
        ("///", "step"),
        ("..", "step"),
        ("work·judge#1", "work·judge#1"),
    ],
)
def test_safe_step_name(step: str, safe: str) -> None:
    assert safe_step_name(step) == safe


def test_save_archives_the_previous_generation(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    first = save(notes, "work", Handoff(doing="gen 1", next_step="n1"), now=0)
    assert first == notes / "handoff-work.md"
    second = save(notes, "work", Handoff(doing="gen 2", next_step="n2"), now=0)
    third = save(notes, "work", Handoff(doing="gen 3", next_step="n3"), now=0)
    assert second == third == first
    assert Handoff.load(first).doing == "gen 3"
    archive = notes / "archive" / "handoff"
    stamp = next(archive.glob("work-????????-??????.md")).stem
    assert sorted(p.name for p in archive.iterdir()) == sorted([f"{stamp}.md", f"{stamp}-2.md"])
    assert (
        Handoff.load(archive / f"{stamp}.md").doing == "gen 1"
        and Handoff.load(archive / f"{stamp}-2.md").doing == "gen 2"
    )
    assert not [p for p in notes.glob("*.lock") if not p.name.startswith(".")], (
        "the lock file must be hidden from the workbench index"
    )
