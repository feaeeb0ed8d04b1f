"""`flower ui`'s server: the token on every request (the live streams included), the streams, the verbs, the
static page (text never HTML), and the command's edges. The page in a browser: tests/e2e/test_ui_e2e.py."""

from __future__ import annotations

import http.client as httpc
import json
import re
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from ui_helpers import MemorySource, PageServer, http, store_source

from flower_cli.cli import main
from flower_cli.ui import STATIC_DIR, SourceError, sse_message

ROOT = Path(__file__).resolve().parents[2]
EVIL = "<script>alert(1)</script>"


@pytest.fixture
def source() -> MemorySource:
    mem = MemorySource()
    mem.runs.append({"id": "r1", "state": "running", "step": "work", "cost_usd": 0.5, "question": None})
    mem.publish("r1", {"kind": "step", "text": "work", "payload": {"index": 1, "total": 1}})
    mem.publish("r1", {"kind": "tool_result", "text": EVIL, "payload": {}})
    return mem


@pytest.fixture
def page(source: MemorySource) -> Iterator[PageServer]:
    with PageServer([source]) as server:
        yield server


GATED = [
    ("GET", "/"),
    ("GET", "/static/ui.js"),
    ("GET", "/static/index.html"),
    ("GET", "/api/runs"),
    ("GET", "/api/runs/stream"),
    ("GET", "/api/runs/mem/r1/events"),
    ("GET", "/nowhere"),
    ("POST", "/api/runs/mem/r1/answer"),
    ("POST", "/api/runs/mem/r1/mail"),
    ("POST", "/api/runs/mem/r1/stop"),
]


@pytest.mark.parametrize(("method", "path"), GATED)
def test_every_request_without_the_token_is_refused(page: PageServer, method: str, path: str) -> None:
    body = b'{"text": "yes"}' if method == "POST" else None
    for query in ("", "?token=", "?token=wrong" + page.token[5:]):
        status, _, text = http(page.base + path + query, method=method, body=body)
        assert status == 401, (path, query)
        assert "open the URL `flower ui` printed" in json.loads(text)["error"]
    status, _, _ = http(page.base + path, method=method, body=body, headers={"Cookie": "flower_ui_token=nope"})
    assert status == 401


def test_the_page_with_its_token_sets_the_cookie_and_forbids_scripts_of_elsewhere(page: PageServer) -> None:
    status, headers, body = http(page.url)
    assert status == 200 and b'<script src="static/ui.js" defer></script>' in body
    assert f"flower_ui_token={page.token}" in headers["set-cookie"]
    assert "httponly" in headers["set-cookie"].lower() and "samesite=strict" in headers["set-cookie"].lower()
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"  # the URL carries the token
    status, _, _ = http(page.base + "/api/runs", headers={"Cookie": f"flower_ui_token={page.token}"})
    assert status == 200  # a reload reads with the cookie


def test_a_cookie_alone_cannot_answer_stop_or_mail(page: PageServer, source: MemorySource) -> None:
    """What changes a run needs the token in the header or the URL: a browser sends the cookie with a form
    another site posts, not the header."""
    cookie = {"Cookie": f"flower_ui_token={page.token}", "Content-Type": "application/json"}
    status, _, _ = http(page.base + "/api/runs/mem/r1/stop", method="POST", body=b"{}", headers=cookie)
    assert status == 401 and source.said == []
    status, _, body = http(
        page.base + "/api/runs/mem/r1/stop", method="POST", body=b"{}", headers={"X-Flower-Token": page.token}
    )
    assert status == 200 and json.loads(body) == {"ok": True, "said": "stop sent to r1"}
    assert source.said == [("stop", "r1", "")]


def test_the_verbs_reach_the_source_and_bad_input_gets_one_line(page: PageServer, source: MemorySource) -> None:
    def post(path: str, body: Any) -> tuple[int, dict[str, Any]]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, _, text = http(page.base + path, method="POST", body=raw, headers={"X-Flower-Token": page.token})
        return status, json.loads(text)

    assert post("/api/runs/mem/r1/answer", {"text": "blue " + EVIL}) == (200, {"ok": True, "said": "answer sent to r1"})
    assert post("/api/runs/mem/r1/mail", {"text": "also red"})[0] == 200
    assert source.said == [("answer", "r1", "blue " + EVIL), ("mail", "r1", "also red")]
    assert post("/api/runs/mem/r1/answer", {"text": "  "}) == (
        400,
        {"ok": False, "error": "the text is empty: write what to send"},
    )
    assert post("/api/runs/mem/r1/answer", b"yes")[1]["error"] == 'send JSON: {"text": "..."}'
    assert post("/api/runs/mem/r1/answer", {"text": "x" * 20_001})[0] == 400
    assert post("/api/runs/mem/r1/shout", {"text": "x"})[0] == 404
    status, said = post("/api/runs/fleet/r1/answer", {"text": "x"})
    assert status == 404 and "known: mem" in said["error"]
    source.refuse = SourceError("r1 waits on no question; `flower status` shows what it does", 409)
    assert post("/api/runs/mem/r1/answer", {"text": "x"}) == (
        409,
        {"ok": False, "error": "r1 waits on no question; `flower status` shows what it does"},
    )
    assert len(source.said) == 2


def _sse(page: PageServer, path: str, count: int, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The first ``count`` messages of the stream at ``path`` (with the token), as {"event", "id", "data"}."""
    connection = httpc.HTTPConnection(urlsplit(page.base).netloc, timeout=30)
    sep = "&" if "?" in path else "?"
    connection.request("GET", f"{path}{sep}token={page.token}", headers=headers or {})
    response = connection.getresponse()
    assert response.status == 200 and response.headers["content-type"].startswith("text/event-stream")
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    while len(messages) < count:
        line = response.fp.readline().decode().rstrip("\n")
        if not line:
            if "data" in current:
                messages.append(current)
            current = {}
        elif line.startswith(("event: ", "id: ")):
            key, _, value = line.partition(": ")
            current[key] = value
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
    connection.close()
    return messages


def test_a_run_s_events_stream_live_and_resume_after_the_last_seen(page: PageServer, source: MemorySource) -> None:
    first = _sse(page, "/api/runs/mem/r1/events", 2)
    assert [m["id"] for m in first] == ["1", "2"] and all(m["event"] == "run-event" for m in first)
    assert first[1]["data"]["event"]["text"] == EVIL  # JSON text; the page puts it in with textContent
    source.publish("r1", {"kind": "text", "text": "third", "payload": {"context": 1200, "message_id": "m1"}})
    resumed = _sse(page, "/api/runs/mem/r1/events", 1, headers={"Last-Event-ID": "2"})
    assert resumed[0]["id"] == "3" and resumed[0]["data"]["event"]["text"] == "third"
    assert _sse(page, "/api/runs/mem/r1/events?after=1", 1)[0]["id"] == "2"


def test_the_runs_stream_sends_the_list_and_each_change(page: PageServer, source: MemorySource) -> None:
    connection = httpc.HTTPConnection(urlsplit(page.base).netloc, timeout=30)
    connection.request("GET", f"/api/runs/stream?token={page.token}")
    response = connection.getresponse()

    def next_listing() -> dict[str, Any]:
        while True:
            line = response.fp.readline().decode()
            if line.startswith("data: "):
                listing: dict[str, Any] = json.loads(line[6:])
                return listing

    assert [r["id"] for r in next_listing()["runs"]] == ["r1"]
    source.runs.append({"id": "r2", "state": "waiting", "question": "Which colour?", "created_ms": 10})
    listing = next_listing()
    assert [(r["id"], r["source"]) for r in listing["runs"]] == [("r2", "mem"), ("r1", "mem")]  # newest first
    connection.close()


def test_a_source_that_fails_is_one_line_beside_the_others(source: MemorySource) -> None:
    class Broken(MemorySource):
        async def list_runs(self) -> list[dict[str, Any]]:
            raise SourceError("the Temporal server at 127.0.0.1:1 does not answer")

    with PageServer([source, Broken(name="fleet")]) as server:
        status, _, body = http(f"{server.base}/api/runs?token={server.token}")
    listing = json.loads(body)
    assert status == 200 and [r["id"] for r in listing["runs"]] == ["r1"]
    assert listing["errors"] == ["fleet: the Temporal server at 127.0.0.1:1 does not answer"]


def test_the_page_puts_text_in_as_text_never_as_html() -> None:
    script = (STATIC_DIR / "ui.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
    assert "textContent" in script
    assert "<script>" not in (STATIC_DIR / "index.html").read_text()  # the page has no inline script: CSP allows none


def test_sse_message_is_one_json_line() -> None:
    assert sse_message({"t": "a\nb"}, event="x", event_id=3) == b'id: 3\nevent: x\ndata: {"t":"a\\nb"}\n\n'


def test_without_the_ui_extra_flower_ui_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flower_cli.cli.actions import ui

    monkeypatch.setattr(ui, "_extra_installed", lambda: False)
    assert main(["ui"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "`flower ui` needs the ui extra (starlette, uvicorn), which is not installed: pip install 'flower-cli[ui]'"
    ]


def test_a_port_that_is_taken_or_wrong_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["ui", "--port", str(port)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cannot listen on 127.0.0.1:{port} (") and err.endswith("leave it out for a free one")
    assert main(["ui", "--port", "70000"]) == 2
    assert "--port 70000 is not a port" in capsys.readouterr().err


def test_flower_ui_prints_its_url_and_serves_behind_the_token(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "-w", str(tmp_path), "--json", "ui", "--host", "0.0.0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        printed = json.loads(process.stdout.readline())
        assert printed["kind"] == "ui"
        match = re.fullmatch(r"http://([^:/]+):(\d+)/\?token=([\w-]{32})", printed["url"])
        assert match, printed
        base = f"http://127.0.0.1:{match[2]}"
        assert http(base + "/api/runs")[0] == 401
        status, _, body = http(f"{base}/api/runs?token={match[3]}")
        assert status == 200 and json.loads(body)["runs"] == []
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert "listening on 0.0.0.0: whoever reaches it and holds the token can answer and stop runs" in err
    assert "Traceback" not in err


@pytest.mark.timeout(600)
def test_the_wheel_ships_the_page(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT / "packages" / "flower-cli"),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("flower_cli-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for page_file in ("index.html", "ui.js", "ui.css"):
        assert f"flower_cli/ui/static/{page_file}" in names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: ui" in text and "starlette<2,>=1.7; extra == 'ui'" in text


def test_the_local_source_lists_follows_and_tells_through_control(tmp_path: Path) -> None:
    """The page over a real SQLite store a `RunPublisher` writes (as a running run does), through `Control`."""
    taken: list[Any] = []
    local, publish = store_source(tmp_path, "run-1", taken)
    publish({"kind": "step", "text": "clarify", "payload": {"index": 1, "total": 3}})
    publish({"kind": "ask", "text": "Which DB?", "payload": {"kind": "question", "state": "asked", "id": "q1"}})
    with PageServer([local]) as page:

        def listed() -> dict[str, Any]:
            return json.loads(http(f"{page.base}/api/runs?token={page.token}")[2])["runs"][0]

        run = _until(lambda: (r := listed())["state"] == "waiting" and r)
        assert (run["id"], run["source"], run["question"], run["step"]) == ("run-1", "local", "Which DB?", "clarify")
        events = _sse(page, "/api/runs/local/run-1/events", 2)
        assert [m["data"]["event"]["kind"] for m in events] == ["step", "ask"]

        status, _, body = http(
            f"{page.base}/api/runs/local/run-1/answer",
            method="POST",
            body=b'{"text": "SQLite"}',
            headers={"X-Flower-Token": page.token},
        )
        assert status == 200 and json.loads(body)["said"] == "answer taken by the run: took answer", body
        assert (taken[-1].kind, taken[-1].text, taken[-1].question) == ("answer", "SQLite", "q1")
        assert taken[-1].sender.endswith(" via flower ui")  # the Q&A log says the page answered

        missing = _sse(page, "/api/runs/local/nope/events", 1)
        assert missing[0]["event"] == "run-error" and missing[0]["data"]["status"] == 404
        assert "no run 'nope'" in missing[0]["data"]["error"]
        publish({"kind": "done", "ok": True})
        _until(lambda: listed()["state"] == "done")
        status, _, body = http(
            f"{page.base}/api/runs/local/run-1/stop", method="POST", body=b"{}", headers={"X-Flower-Token": page.token}
        )
        assert status == 409 and json.loads(body)["error"] == "run run-1 is done; only a running run takes stops"


def _until(check: Any, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
