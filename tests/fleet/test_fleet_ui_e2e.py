"""The fleet on `flower ui`'s page, end to end: a go run submitted to a real Temporal dev server (a real worker, the
real Claude Code binary against the scripted server) is listed on the page of a `flower ui` started with
FLOWER_TEMPORAL set, with its question; the question answered from the page (headless chromium through Selenium)
reaches the run, which goes on to the end."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from e2e._browser import browser, no_alert, wait_for
from fleet_helpers import (
    ANSWER,
    BRIEF,
    CLARIFIER,
    GOAL,
    GOAL_SETTER,
    JUDGE,
    LEAD,
    QUESTION,
    Fleet,
    status_json,
    verdict,
    worker_logs,
)

from harness import ScriptedServer, Text, ToolUse, keyed, when

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
def test_the_page_lists_a_fleet_run_and_answers_its_question(
    fleet: Fleet, claude_env: ScriptedServer, tmp_path: Path
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    answered = when(lambda r: ANSWER in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER & ~answered, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["en", "fr"]})),
        *keyed(CLARIFIER & answered, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Bonjour written. ALL-DONE")),
        *keyed(JUDGE, verdict("achieved", "the check passes")),
    )
    fleet.start_worker("a", "--slots", "1")
    submitted = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id)
    assert submitted.returncode == 0, submitted.stderr

    page = fleet.start_flower("ui")
    try:
        assert page.stdout is not None
        url = page.stdout.readline().strip()
        assert "/?token=" in url, url
        with browser(tmp_path / "chromium-profile") as driver:
            driver.get(url)
            key = f"fleet/{run_id}"
            item = wait_for(
                lambda: driver.find_elements("css selector", f'#runs li[data-run="{key}"] .badge.ask'),
                f"the fleet run with its question badge\n{worker_logs(fleet)}",
                timeout=240,
            )
            item[0].click()
            wait_for(lambda: driver.find_element("id", "question-text").text == QUESTION, "the fleet run's question")
            driver.save_screenshot(str(tmp_path / "fleet-waiting.png"))
            driver.find_element("id", "answer-input").send_keys(ANSWER)
            driver.find_element("id", "answer-send").click()
            wait_for(
                lambda: driver.find_element("id", "verb-result").text == "answer sent to the fleet run",
                "the answer sent",
            )
            wait_for(
                lambda: (
                    driver.find_element("css selector", f'#runs li[data-run="{key}"]').get_attribute("data-state")
                    == "done"
                ),
                f"the fleet run done\n{worker_logs(fleet)}",
                timeout=300,
            )
            driver.save_screenshot(str(tmp_path / "fleet-done.png"))
            assert no_alert(driver)
    finally:
        page.terminate()
        _, err = page.communicate(timeout=60)
    assert "Traceback" not in err, err
    state = status_json(fleet, run_id)
    assert state["answers"] == [ANSWER] and state["status"] == "completed", state
