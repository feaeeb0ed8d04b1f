"""The live page in a real browser (Debian's headless chromium through Selenium and chromium-driver), over a real
`flower go` run (the real Claude Code binary against the scripted server) and a real `flower ui` process started
from another directory: the run listed with its question badge, the question answered from the page and the run
going on with it, the context curve advancing while the run works (the numbers `flower analyze` gives), a tool
output holding ``<script>alert(1)</script>`` shown as those characters with no script run, mail from the page
reaching the coordinator, and a stop from the page. Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e._browser import browser, no_alert, wait_for
from fleet_helpers import BRIEF, CLARIFIER, LEAD, QUESTION
from ui_helpers import MemorySource, PageServer

from harness import After, Hang, ScriptedServer, Text, ToolUse, bash, keyed, result_text

pytestmark = pytest.mark.e2e

EVIL = "<script>alert(1)</script>"


def _env() -> dict[str, str]:
    return {**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1"}


def _tool_result(server: ScriptedServer, tool: str, command: str = "") -> str:
    ids = {
        b["id"]
        for r in server.message_requests
        for b in r.tool_uses()
        if b.get("name") == tool and command in json.dumps(b.get("input"))
    }
    for request in server.message_requests:
        for block in request.tool_results():
            if block.get("tool_use_id") in ids:
                return result_text(block)
    return ""


@pytest.fixture
def page_process(workspace: Path, tmp_path: Path) -> Iterator[str]:
    """`flower ui -w WORKSPACE` from another directory; its printed URL."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "-w", str(workspace), "ui"],
        cwd=elsewhere,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url
        yield url
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
        assert "Traceback" not in err, err


def _curve(driver: Any, step: str) -> list[int]:
    """The points of ``step``'s context curve as the page drew them."""
    for svg in driver.find_elements("css selector", "#curves svg"):
        if svg.find_element("css selector", "text").text.startswith(f"{step}:"):
            return [int(p) for p in (svg.get_attribute("data-points") or "").split(",") if p]
    return []


def _verb_said(driver: Any, start: str) -> str | None:
    said: str = driver.find_element("id", "verb-result").text
    return said if said.startswith(start) else None


@pytest.mark.timeout(600)
def test_the_page_follows_answers_mails_and_stops_a_real_run(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path, page_process: str
) -> None:
    advance, mailed = threading.Event(), threading.Event()
    claude_env.script(
        *keyed(
            CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["English", "French"]}), Text(BRIEF)
        ),
        *keyed(
            LEAD,
            bash(f"echo '{EVIL}'"),
            After(lambda s: advance.is_set(), bash("echo second-glance"), timeout=240),
            After(lambda s: mailed.is_set(), ToolUse("mcp__human__inbox", {}), timeout=240),
            Hang(),  # the coordinator works on until it is stopped
        ),
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--no-goal", "build a greeter"],
        cwd=workspace,
        env=_env(),
        stdin=subprocess.PIPE,  # kept open: the question waits for an answer instead of falling through
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with browser(tmp_path / "chromium-profile") as driver:
            _follow_the_run(driver, page_process, claude_env, workspace, tmp_path, advance, mailed)
            driver.find_element("id", "stop").click()
            wait_for(lambda: _verb_said(driver, "stop taken by the run"), "the stop taken")
            _, err = run.communicate(timeout=120)
            wait_for(
                lambda: driver.find_element("css selector", "#runs li").get_attribute("data-state") == "stopped",
                "the run listed as stopped",
            )
            driver.save_screenshot(str(tmp_path / "stopped.png"))
            assert no_alert(driver)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 1, err
    assert "stopped by" in err and "via flower ui" in err and "Traceback" not in err
    qa = (workspace / ".flower" / "notes" / "qa-log.md").read_text()
    assert "**A** [answered by " in qa and "via flower ui] French" in qa
    assert "ALSO-EXPORT-CSV please" in (workspace / ".flower" / "notes" / "brief.md").read_text()
    assert (tmp_path / "waiting.png").stat().st_size > 10_000 and (tmp_path / "stopped.png").is_file()


def _follow_the_run(
    driver: Any,
    url: str,
    server: ScriptedServer,
    workspace: Path,
    tmp_path: Path,
    advance: threading.Event,
    mailed: threading.Event,
) -> None:
    driver.get(url)
    # the run list: the run, waiting, with its question badge; the run opened with its question
    item = wait_for(lambda: driver.find_elements("css selector", "#runs li .badge.ask"), "the question badge")[0]
    assert "question" in item.text
    wait_for(lambda: driver.find_element("id", "question-text").text == QUESTION, "the question on the page")
    driver.save_screenshot(str(tmp_path / "waiting.png"))

    # answered from the page: an option fills the box, the run takes it, the clarifier gets it
    [french] = [b for b in driver.find_elements("css selector", "#question-options button") if b.text == "French"]
    french.click()
    driver.find_element("id", "answer-send").click()
    wait_for(lambda: _verb_said(driver, "answer taken by the run"), "the answer taken")
    wait_for(lambda: _tool_result(server, "mcp__human__ask"), "the clarifier got the answer")
    assert _tool_result(server, "mcp__human__ask") == "The person answered:\nFrench"
    wait_for(lambda: driver.find_element("id", "question-box").is_displayed() is False, "the question box gone")

    # the work goes on: the tool output holding a script shows as text, and runs nothing
    wait_for(lambda: EVIL in driver.find_element("id", "log").text, "the tool output on the page", timeout=120)
    assert no_alert(driver)
    assert driver.execute_script("return document.querySelectorAll('script').length") == 1  # the page's own
    first = wait_for(lambda: _curve(driver, "work"), "the work step's context curve")

    # the curve advances while the run works
    advance.set()
    wait_for(lambda: len(_curve(driver, "work")) > len(first), "the curve advancing", timeout=120)
    wait_for(lambda: _tool_result(server, "Bash", "second-glance").strip() == "second-glance", "the second command run")

    # mail from the page reaches the coordinator
    driver.find_element("id", "mail-input").send_keys("ALSO-EXPORT-CSV please")
    driver.find_element("id", "mail-send").click()
    wait_for(lambda: _verb_said(driver, "mail taken by the run"), "the mail taken")
    mailed.set()
    wait_for(lambda: "ALSO-EXPORT-CSV please" in _tool_result(server, "mcp__human__inbox"), "the coordinator's mail")
    wait_for(lambda: sum(1 for r in server.message_requests if LEAD(r)) >= 4, "the coordinator working on")

    # the curve's numbers are `flower analyze`'s for the work session
    points = wait_for(lambda: (c := _curve(driver, "work")) and len(c) >= 3 and c, "three work turns on the page")
    status = _flower_json(workspace, "status")
    [session] = {r["session"] for r in status["runs"]}  # the session the run works in now: the work step's
    sessions = _flower_json(workspace, "analyze")["sessions"]
    [work] = [s for s in sessions if s["session_id"] == session]
    assert points == work["main"]["context_per_turn"]


def _flower_json(workspace: Path, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "flower_cli", "--json", *args],
        cwd=workspace,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_page_shows_workers_the_tool_now_handoffs_retries_limits_and_the_budget(tmp_path: Path) -> None:
    """What a long run tells besides its turns, as the runtime's events say it (shapes of `flower --json`), fed
    through a source in the test: the page's drawing of each, in the browser."""
    source = MemorySource()
    source.runs.append({"id": "r1", "state": "running", "step": "work", "cost_usd": 1.5, "question": None})
    worker = {"id": "t1", "description": "write the parser"}
    for event in (
        {"kind": "step", "text": "work", "payload": {"index": 1, "total": 1}},
        {"kind": "text", "text": "on it", "payload": {"context": 5000, "message_id": "m1"}},
        {
            "kind": "tool_call",
            "text": "sleep 5",
            "tool": "Bash",
            "payload": {"context": 5000, "message_id": "m1", "id": "b1"},
        },
        {
            "kind": "task",
            "text": "write the parser",
            "payload": {"task_id": "t1", "kind": "TaskStartedMessage", "worker": worker},
        },
        {
            "kind": "tool_call",
            "text": "parser.py",
            "tool": "Write",
            "subagent": True,
            "payload": {"context": 9, "worker": worker},
        },
        {"kind": "handoff", "text": "handing off at 170000 tokens", "payload": {"phase": "start"}},
        {"kind": "retry", "text": "network down; waiting for it", "payload": {"step": "work"}},
        {"kind": "limit", "text": "usage limit: waiting until 05:00", "payload": {"step": "work", "phase": "waiting"}},
        {
            "kind": "notice",
            "text": "75% of the budget spent",
            "payload": {"budget": {"limit_usd": 2.0, "spent_usd": 1.5}},
        },
        {
            "kind": "ask",
            "text": "<b>bold?</b>",
            "payload": {
                "kind": "question",
                "state": "asked",
                "id": "q1",
                "question": "<b>bold?</b>",
                "options": ["<i>x</i>"],
            },
        },
    ):
        source.publish("r1", event)
    with PageServer([source]) as page, browser(tmp_path / "chromium-profile") as driver:
        driver.get(page.url)
        wait_for(lambda: driver.find_element("id", "question-text").text == "<b>bold?</b>", "the question as text")
        assert [b.text for b in driver.find_elements("css selector", "#question-options button")] == ["<i>x</i>"]
        assert driver.find_element("id", "workers").text == "write the parser · running · [Write] parser.py"
        incidents = driver.find_element("id", "incidents").text.splitlines()
        assert incidents == [
            "handoff: handing off at 170000 tokens",
            "retry: network down; waiting for it",
            "limit: usage limit: waiting until 05:00",
        ]
        wait_for(lambda: driver.find_element("id", "budget-text").text == "$1.5000 of $2.0000 budget", "the budget")
        now = driver.find_element("id", "now-tool").text
        assert now.startswith("[Bash] sleep 5 · running for "), now
        assert _curve(driver, "work") == [5000]  # one API call, however many blocks it had
        driver.save_screenshot(str(tmp_path / "details.png"))
        assert no_alert(driver)
