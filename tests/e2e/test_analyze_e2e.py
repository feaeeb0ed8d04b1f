"""`flower analyze` on run dirs the real command produced: its numbers against the scripted server's log.

Two runs, each made once per module: a coordinator that hands the hands-on work to an Agent-tool worker, and a
two-step workflow under a workbench whose first step loses its connection mid-stream (a retry that resumes),
spills a big output, and whose second step resumes the first step's session.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from e2e._runs import Run, context_of, flower, isolated_env

from harness import ScriptedServer, Step, Text, ToolUse, Usage, bash, result_text, server_error, when_prompt

pytestmark = pytest.mark.e2e

COORD, WORKER = "COORDINATE-THE-COUNT", "WORKER-TASK-COUNT-ROOT"
AGENT_INPUT = {
    "description": "count the root",
    "prompt": f"{WORKER}: run ls / and report",
    "subagent_type": "general-purpose",
    "run_in_background": False,
}


@pytest.fixture(scope="module")
def coordinator_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The main thread dispatches one worker (foreground Agent call); the worker runs Bash and reports."""
    root = tmp_path_factory.mktemp("coordinator")
    home, ws = root / "home", root / "ws"
    home.mkdir()
    ws.mkdir()
    with ScriptedServer() as api:
        api.script(
            Step(
                ToolUse(
                    "Agent",
                    AGENT_INPUT,
                    text="Delegating.",
                    usage=Usage(
                        input_tokens=1200,
                        cache_read_input_tokens=4800,
                        cache_creation_input_tokens=300,
                        output_tokens=40,
                    ),
                ),
                when_prompt(COORD),
            ),
            Step(
                bash("ls /", usage=Usage(input_tokens=900, cache_creation_input_tokens=2100, output_tokens=20)),
                when_prompt(WORKER),
            ),
            Step(
                Text(
                    "The root holds the usual directories: bin, etc, usr and more.",
                    usage=Usage(input_tokens=500, cache_read_input_tokens=2900, output_tokens=30),
                ),
                when_prompt(WORKER),
            ),
            # No explicit input count: the server estimates it from the request, and reports that.
            Step(
                Text(
                    "The worker counted the root for us.", usage=Usage(cache_read_input_tokens=6300, output_tokens=12)
                ),
                when_prompt(COORD),
            ),
        )
        env = isolated_env(home, api)
        done = flower("once", "-t", "Agent,Bash,Read", f"{COORD}: have a worker look at / for you", cwd=ws, env=env)
        assert done.returncode == 0, done.stderr
        assert api.pending == 0 and not api.unscripted, "every scripted reply was used, nothing else was asked"
        yield Run(ws, env, list(api.requests))


def test_context_per_turn_is_what_the_server_reported_for_each_main_thread_call(coordinator_run: Run) -> None:
    report = coordinator_run.analyze_json()
    [session] = report["sessions"]
    main_calls, worker_calls = coordinator_run.of_agent(COORD), coordinator_run.of_agent(WORKER)
    assert len(main_calls) == 2 and len(worker_calls) == 2
    assert session["main"]["context_per_turn"] == [context_of(r) for r in main_calls]
    assert session["main"]["context_per_turn"][0] == 1200 + 4800 + 300
    [worker] = session["workers"]
    assert worker["context_per_turn"] == [context_of(r) for r in worker_calls]
    cache_read = sum(int((r.usage or {})["cache_read_input_tokens"]) for r in main_calls)
    assert session["main"]["cache_hit_ratio"] == round(cache_read / sum(context_of(r) for r in main_calls), 4)
    assert session["main"]["context_peak"] == max(context_of(r) for r in main_calls)
    assert report["totals"]["context_peak"] == session["main"]["context_peak"]


def _chars_of_agent(requests: list[Any], fragment: str, replies: list[tuple[list[str], list[dict[str, Any]]]]) -> int:
    """An agent's characters of work from the outside: what the scripted model said and called, plus the tool
    results the agent's last request carried back (as the server received them)."""
    said = sum(len(t) for texts, _ in replies for t in texts)
    called = sum(len(json.dumps(i, ensure_ascii=False, separators=(",", ":"))) for _, inputs in replies for i in inputs)
    last = [r for r in requests if r.usage is not None and fragment in r.first_user_text][-1]
    results = sum(len(result_text(b)) for b in last.tool_results())
    return said + called + results


def test_turns_tool_calls_and_worker_share_match_the_request_log(coordinator_run: Run) -> None:
    report = coordinator_run.analyze_json()
    [session] = report["sessions"]
    split = session["split"]
    assert (split["main_turns"], split["main_tool_calls"]) == (2, 1)
    assert (split["worker_turns"], split["worker_tool_calls"], split["workers"]) == (2, 1, 1)
    worker_chars = _chars_of_agent(
        coordinator_run.requests,
        WORKER,
        [
            ([], [{"command": "ls /", "description": "ls /"}]),
            (["The root holds the usual directories: bin, etc, usr and more."], []),
        ],
    )
    main_chars = _chars_of_agent(
        coordinator_run.requests,
        COORD,
        [(["Delegating."], [AGENT_INPUT]), (["The worker counted the root for us."], [])],
    )
    assert split["worker_chars"] == worker_chars
    assert split["main_chars"] == main_chars
    assert split["worker_share"] == round(worker_chars / (worker_chars + main_chars), 4)
    assert report["totals"]["worker_share"] == split["worker_share"]


def test_steps_cost_and_the_table(coordinator_run: Run) -> None:
    report = coordinator_run.analyze_json()
    [row] = coordinator_run.manifest()
    [step] = report["steps"]
    assert step["step"] == "ad-hoc" and step["ok"] is True and step["session_ids"] == [row["session_id"]]
    assert step["cost_usd"] == round(row["cost_usd"], 6) == report["totals"]["cost_usd"]
    assert step["split"]["main_turns"] == 2 and step["split"]["worker_turns"] == 2, (
        "the step's window holds the whole session"
    )
    assert (step["retries"], step["resumes"], step["handoffs"]) == (0, 0, 0)

    table = flower("analyze", cwd=coordinator_run.workspace, env=coordinator_run.env)
    assert table.returncode == 0, table.stderr
    first, last = report["sessions"][0]["main"]["context_per_turn"][0], report["sessions"][0]["main"]["context_last"]
    assert f"{first / 1000:.1f}K → {last / 1000:.1f}K" in table.stdout
    assert row["session_id"][:8] in table.stdout and f"${row['cost_usd']:.4f}" in table.stdout
    assert f"{report['totals']['worker_share'] * 100:.0f}% of the characters" in table.stdout
    assert table.stderr == ""


@pytest.mark.parametrize("which", ["coordinator_run", "workflow_run"])
def test_the_on_resume_numbers_are_the_full_rewrites_report(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """analyze computes "on resume" with flower_stores.rewrite_report (no transcript built); on every stored
    thread of a real run it equals the report of the full rewrite a resume would run, and each session's
    on_resume is its main thread's."""
    import flower_stores

    run: Run = request.getfixturevalue(which)
    # A copy: even a read-only connection leaves -shm beside a WAL database, and the run dir stays untouched.
    for name in ("sessions.db", "sessions.db-wal"):
        if (run.run_dir / name).exists():
            shutil.copy(run.run_dir / name, tmp_path / name)
    db = sqlite3.connect(tmp_path / "sessions.db")
    threads: dict[str, list[dict[str, Any]]] = {}
    for key, payload in db.execute("SELECT store_key, payload FROM entries ORDER BY store_key, seq"):
        threads.setdefault(key, []).append(json.loads(payload))
    db.close()
    policies = {
        "ephemeral": flower_stores.EphemeralPolicy(),
        "trim_policy": flower_stores.TrimPolicy(),
        "prune_policy": flower_stores.PrunePolicy(),
    }
    full: dict[str, dict[str, Any]] = {}
    for key, entries in threads.items():
        expected = flower_stores.rewrite(entries, run.workspace, write_spill=False, **policies).report
        assert flower_stores.rewrite_report(entries, run.workspace, **policies) == expected, key
        full[key] = expected.as_dict()
    sessions = run.analyze_json()["sessions"]
    assert sessions
    for session in sessions:
        assert session["on_resume"] == full[f"{session['project_key']}/{session['session_id']}"]


def _fingerprint(run_dir: Path) -> dict[str, tuple[str, float]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
        for p in sorted(run_dir.iterdir())
        if p.is_file()
    }


def test_analyze_never_writes_to_the_run_dir(coordinator_run: Run, tmp_path: Path) -> None:
    before = _fingerprint(coordinator_run.run_dir)
    assert "sessions.db" in before and not any(n.endswith(("-wal", "-shm")) for n in before)
    assert flower("analyze", cwd=coordinator_run.workspace, env=coordinator_run.env).returncode == 0
    assert (
        flower("--json", "analyze", str(coordinator_run.run_dir), cwd=tmp_path, env=coordinator_run.env).returncode == 0
    )
    assert (
        flower(
            "analyze", "--html", str(tmp_path / "page.html"), cwd=coordinator_run.workspace, env=coordinator_run.env
        ).returncode
        == 0
    )
    assert _fingerprint(coordinator_run.run_dir) == before, "not a byte, not an mtime, not a side file"


FIRST, SECOND = "FIRST-STEP-DRAFT", "SECOND-STEP-POLISH"
SEQ = 3000  # `seq 1 3000` prints 13,892 characters: above the workbench's 4,000-character spill threshold
SEQ_OUTPUT = "\n".join(str(i) for i in range(1, SEQ + 1))  # as Bash returns it: no trailing newline
SPILL_FILE = hashlib.sha256(SEQ_OUTPUT.encode()).hexdigest()[:16] + ".txt"  # where the spill guard keeps it


@pytest.fixture(scope="module")
def workflow_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("workflow")
    home, ws = root / "home", root / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
        "def main():\n"
        "    return Workflow([\n"
        f"        Step('draft', writer, '{FIRST}: count to {SEQ}'),\n"
        f"        Step('polish', writer, lambda ctx: '{SECOND}: ' + ctx['draft'], resume_from='draft'),\n"
        "    ])\n"
    )
    with ScriptedServer() as api:
        api.script(
            bash(f"seq 1 {SEQ}", usage=Usage(input_tokens=3000, output_tokens=10)),
            bash(
                f"head -c 40 runs/workbench/spill/{SPILL_FILE}", usage=Usage(input_tokens=3200, output_tokens=10)
            ),  # read back
            server_error(),  # a 500: attempt 1 fails, attempt 2 resumes the same session
            Text(
                "Counted; the output is in the spill file.",
                usage=Usage(input_tokens=3400, cache_read_input_tokens=1000, output_tokens=10),
            ),
            Text("Polished.", usage=Usage(input_tokens=200, cache_read_input_tokens=4500, output_tokens=5)),
        )
        env = isolated_env(home, api)
        done = flower("-W", "run", "flows.py:main", cwd=ws, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert api.pending == 0, "every scripted reply was used"
        yield Run(ws, env, list(api.requests))


def test_a_resumed_retry_a_spill_and_a_second_step_in_the_same_session(workflow_run: Run) -> None:
    report = workflow_run.analyze_json()
    rows = workflow_run.manifest()
    assert [r["step"] for r in rows] == ["draft", "polish"] and rows[0]["session_id"] == rows[1]["session_id"]
    [session] = report["sessions"]
    answered = [r for r in workflow_run.requests if r.usage is not None]
    assert session["main"]["context_per_turn"] == [context_of(r) for r in answered], (
        "a failed call reported nothing and is no turn"
    )
    assert session["steps"] == ["draft", "polish"]

    draft, polish = report["steps"]
    assert (draft["attempts"], draft["retries"], draft["resumes"]) == (2, 1, 1)
    assert draft["split"]["main_turns"] + polish["split"]["main_turns"] == len(answered)
    assert polish["split"]["main_turns"] == 1 and polish["context_last"] == 200 + 4500

    # The spill: the full output's size from the pointer, and what it kept out = that size less what the
    # model got instead (the tool result as the server received it).
    pointed = next(b for r in answered for b in r.tool_results() if "characters saved to" in result_text(b))
    assert session["spilled"] == 1
    assert session["main"]["spilled_chars"] == len(SEQ_OUTPUT)
    assert session["spilled_kept_out"] == len(SEQ_OUTPUT) - len(result_text(pointed))
    assert draft["spilled_kept_out"] == session["spilled_kept_out"] and polish["spilled"] == 0
    assert session["spill_reads"] == 1 and report["totals"]["spill_reads"] == 1, "the spilled output was read back once"
    assert any(result_text(b) == SEQ_OUTPUT[:40].rstrip() for r in answered for b in r.tool_results()), (
        "the spill file was really read"
    )

    marks = [m["kind"] for m in session["main"]["marks"]]
    assert marks.count("error") == 1, "the failed request is marked"
    assert marks.count("resume") == 2, "the retry's resume prompt and the polish step's prompt"
    assert report["totals"]["retries"] == 1 and report["totals"]["resumes"] == 1
    assert report["totals"]["cost_usd"] == round(sum(r["cost_usd"] for r in rows), 6)


# --- the HTML page --------------------------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every start tag with its attributes, in document order (the page is HTML; the chart inline SVG)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def _elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.found


def _page(run: Run, target: Path) -> str:
    done = flower("analyze", "--html", str(target), cwd=run.workspace, env=run.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and f"wrote {target}" in done.stderr
    return target.read_text()


@pytest.mark.parametrize("which", ["coordinator_run", "workflow_run"])
def test_the_page_is_self_contained_with_a_point_per_turn_and_the_marks(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run: Run = request.getfixturevalue(which)
    html = _page(run, tmp_path / "run.html")
    for outside in ("http:", "https:", "<script", "src=", "href=", "@import", "url("):
        assert outside not in html, f"the page must not load anything ({outside!r})"
    report = run.analyze_json()
    elements = _elements(html)
    for session in report["sessions"]:
        sid = session["session_id"]
        dots = [a for t, a in elements if t == "circle" and a.get("class") == "turn" and a.get("data-session") == sid]
        assert [int(a["data-context"]) for a in dots] == session["main"]["context_per_turn"]
        [line] = [a for t, a in elements if t == "polyline" and a.get("data-session") == sid]
        assert len(line["points"].split()) == len(session["main"]["context_per_turn"])
        marks = [
            a["class"].split()[1]
            for t, a in elements
            if t == "g" and a.get("class", "").startswith("mark ") and a.get("data-session") == sid
        ]
        assert sorted(marks) == sorted(m["kind"] for m in session["main"]["marks"])
        bars = {
            (a["data-metric"], a["class"].split()[1]): int(a["data-value"])
            for t, a in elements
            if t == "rect" and a.get("data-session") == sid
        }
        split = session["split"]
        assert bars == {
            ("tool_calls", "main"): split["main_tool_calls"],
            ("tool_calls", "worker"): split["worker_tool_calls"],
            ("chars", "main"): split["main_chars"],
            ("chars", "worker"): split["worker_chars"],
        }


def test_headless_chromium_draws_the_chart(coordinator_run: Run, workflow_run: Run, tmp_path: Path) -> None:
    from e2e._chromium import dump_dom, hex_rgb, read_png, screenshot

    from flower_cli.analyze._page import CHART_HEIGHT, CHART_LEFT, CHART_TOP, CHART_WIDTH, PALETTE, PLOT_MARGIN

    for run, name in ((coordinator_run, "coordinator"), (workflow_run, "workflow")):
        page = tmp_path / f"{name}.html"
        _page(run, page)
        report = run.analyze_json()
        turns = sum(len(s["main"]["context_per_turn"]) for s in report["sessions"])

        # The browser parsed the inline SVG: the DOM it built holds a circle per main-thread turn.
        dom = dump_dom(page, tmp_path / f"profile-dom-{name}")
        assert sum(1 for t, a in _elements(dom) if t == "circle" and a.get("class") == "turn") == turns

        # And it drew it: inside the plot area, the first session's colour is on screen (its line and dots),
        # and the area is not one flat colour.
        shot = screenshot(
            page, tmp_path / f"{name}.png", tmp_path / f"profile-shot-{name}", (CHART_LEFT * 2 + CHART_WIDTH, 900)
        )
        image = read_png(shot, max_rows=CHART_TOP + CHART_HEIGHT)
        top, right, bottom, left = PLOT_MARGIN
        x0, x1 = CHART_LEFT + left, CHART_LEFT + CHART_WIDTH - right
        y0, y1 = CHART_TOP + top, CHART_TOP + CHART_HEIGHT - bottom
        target = hex_rgb(PALETTE[0])
        seen: set[tuple[int, int, int]] = set()
        inked = 0
        for y in range(y0, y1):
            for x in range(x0, x1):
                pixel = image.pixel(x, y)
                seen.add(pixel)
                if all(abs(a - b) <= 24 for a, b in zip(pixel, target)):
                    inked += 1
        assert inked >= 150 * turns // 3, f"{name}: only {inked} pixels of the line colour in the plot area"
        assert len(seen) > 10, f"{name}: the plot area is blank"
