"""The update notice: it asks a (local stand-in) package index at most once a day, tells, never installs, and
stays silent and quick when it is off, offline, or in a source checkout."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flower_cli import __version__
from flower_cli.cli._update_notice import (
    INTERVAL_S,
    UpdateCheck,
    installed_from_source,
    is_newer,
    parse_version,
    upgrade_command,
)
from flower_cli.cli._update_source import Installed

REPO = "https://example.org/flower/flower"  # the repository the installation's metadata names, in these tests
OURS = Installed(from_index=True, repository=REPO)


class Index:
    """A stand-in for PyPI's JSON API on 127.0.0.1: answers ``body`` (after ``delay`` s) and counts requests."""

    def __init__(self) -> None:
        self.body: bytes = json.dumps({"info": {"version": "9.9.9", "project_urls": {"Repository": REPO}}}).encode()
        self.delay = 0.0
        self.hits = 0
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.hits += 1
                time.sleep(index.delay)
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(index.body)))
                    self.end_headers()
                    self.wfile.write(index.body)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/pypi/flower-cli/json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def index() -> Iterator[Index]:
    served = Index()
    yield served
    served.close()


def _env(tmp_path: Path, index: Index, **extra: str) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "FLOWER_UPDATE_URL": index.url, **extra}


def _state(tmp_path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((tmp_path / "config" / "flower" / "update-check.json").read_text())
    return data


def test_versions() -> None:
    assert parse_version("1.10.0") == (1, 10, 0) and parse_version("2.0rc1") is None and parse_version("x") is None
    assert is_newer("0.2.0", "0.1.0") and is_newer("0.1.10", "0.1.9") and is_newer("1", "0.9.9")
    assert not is_newer("0.1.0", "0.1") and not is_newer("0.1.0", "0.2.0") and not is_newer("0.3.0b1", "0.2.0")


def test_upgrade_command_follows_the_installer() -> None:
    assert upgrade_command("/home/u/.local/share/pipx/venvs/flower-cli") == "pipx upgrade flower-cli"
    assert upgrade_command("/home/u/.local/share/uv/tools/flower-cli") == "uv tool upgrade flower-cli"
    assert (
        upgrade_command("/opt/venv", "/opt/venv/bin/python")
        == "/opt/venv/bin/python -m pip install --upgrade flower-cli"
    )


def test_a_source_checkout_is_recognised() -> None:
    import flower_cli

    assert installed_from_source(flower_cli.__file__), "this test suite runs the editable checkout"
    assert not installed_from_source("/usr/lib/python3/dist-packages/flower_cli/update_notice.py")
    assert not installed_from_source("/venv/lib/python3.11/site-packages/flower_cli/update_notice.py")


def test_asks_once_a_day_tells_once_a_day_per_version(tmp_path: Path, index: Index) -> None:
    now = [1_000_000.0]
    check = UpdateCheck(
        "0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, clock=lambda: now[0], delay=0
    )
    check.begin(["once", "hi"])
    assert check.thread is not None
    check.thread.join(10)
    assert index.hits == 1 and _state(tmp_path)["latest"] == "9.9.9"
    notice = check.end()
    assert notice is not None and "flower 9.9.9 is available (this is 0.1.0)" in notice
    assert "-m pip install --upgrade flower-cli" in notice and "FLOWER_NO_UPDATE" in notice

    now[0] += 3600  # the same day: no ask, no repeat of the notice
    again = UpdateCheck(
        "0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, clock=lambda: now[0], delay=0
    )
    again.begin(["once", "hi"])
    assert again.thread is None and again.end() is None and index.hits == 1

    now[0] += INTERVAL_S  # a day later: asked again, told again
    later = UpdateCheck(
        "0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, clock=lambda: now[0], delay=0
    )
    later.begin(["run", "flows.py:main"])
    assert later.thread is not None
    later.thread.join(10)
    assert index.hits == 2 and later.end() is not None


def test_nothing_to_say_when_current(tmp_path: Path, index: Index) -> None:
    index.body = json.dumps({"info": {"version": __version__}}).encode()
    check = UpdateCheck(__version__, env=_env(tmp_path, index), source_checkout=False, installation=OURS, delay=0)
    check.begin(["once", "x"])
    assert check.thread is not None
    check.thread.join(10)
    assert check.end() is None


@pytest.mark.parametrize(
    ("extra", "args", "checkout", "installation"),
    [
        ({"FLOWER_NO_UPDATE": "1"}, ["once"], False, OURS),
        ({"CI": "true"}, ["once"], False, OURS),
        ({"DO_NOT_TRACK": "1"}, ["once"], False, OURS),
        ({"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, ["once"], False, OURS),
        ({}, ["--help"], False, OURS),
        ({}, ["--version"], False, OURS),
        ({}, ["once"], True, OURS),
        ({}, ["once"], False, Installed(from_index=False, repository=REPO)),  # from a path or a git+ URL
        ({}, ["once"], False, Installed(from_index=True, repository="")),  # names no repository
    ],
)
def test_off_means_no_ask_no_file_no_notice(
    tmp_path: Path, index: Index, extra: dict[str, str], args: list[str], checkout: bool, installation: Installed
) -> None:
    env = _env(tmp_path, index, **extra)
    check = UpdateCheck("0.1.0", env=env, source_checkout=checkout, installation=installation, delay=0)
    assert check.off_reason(args)
    check.begin(args)
    assert check.thread is None and check.end() is None
    assert index.hits == 0 and not (tmp_path / "config").exists()


def test_offline_is_silent_and_waits_a_day(tmp_path: Path) -> None:
    closed = Index()
    url = closed.url
    closed.close()  # nothing listens there now: connection refused
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "FLOWER_UPDATE_URL": url}
    check = UpdateCheck("0.1.0", env=env, source_checkout=False, installation=OURS, delay=0)
    check.begin(["once"])
    assert check.thread is not None
    check.thread.join(10)
    assert check.end() is None
    state = _state(tmp_path)
    assert state["latest"] is None and isinstance(state["checked"], float), (
        "a failed ask counts: no retry until tomorrow"
    )


def test_a_garbage_answer_is_silent(tmp_path: Path, index: Index) -> None:
    index.body = b"<html>captive portal</html>"
    check = UpdateCheck("0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, delay=0)
    check.begin(["once"])
    assert check.thread is not None
    check.thread.join(10)
    assert check.end() is None


def test_a_hanging_index_is_bounded_and_never_waited_for(tmp_path: Path, index: Index) -> None:
    index.delay = 5.0
    check = UpdateCheck(
        "0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, delay=0, timeout=0.5
    )
    check.begin(["once"])
    assert check.thread is not None
    started = time.perf_counter()
    assert check.end() is None
    assert time.perf_counter() - started < 0.05, "the end of a command never waits for the index"
    check.thread.join(10)
    assert not check.thread.is_alive(), "the ask gave up at its timeout"


def test_a_command_over_before_the_delay_never_asks(tmp_path: Path, index: Index) -> None:
    check = UpdateCheck("0.1.0", env=_env(tmp_path, index), source_checkout=False, installation=OURS, delay=5.0)
    check.begin(["once"])
    assert check.thread is not None
    check.end()
    check.thread.join(10)
    assert index.hits == 0 and not (tmp_path / "config" / "flower" / "update-check.json").exists()


_AS_INSTALLED = (
    "import flower_cli.cli._update_notice as u; u.installed_from_source = lambda *a: False; "
    f"u.installed_distribution = lambda name: u.Installed(True, {REPO!r}); "
    "from flower_cli.__main__ import main; main()"
)


def test_the_console_entry_tells_at_the_end_and_installs_nothing(tmp_path: Path, index: Index) -> None:
    # Stubs for every installer the notice might name: none may ever run.
    stubs = tmp_path / "bin"
    stubs.mkdir()
    ran = tmp_path / "installers-ran"
    for name in ("pip", "pip3", "pipx", "uv"):
        stub = stubs / name
        stub.write_text(f"#!/bin/sh\necho {name} >> {ran}\n")
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "config" / "flower" / "update-check.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"checked": time.time(), "latest": "9.9.9", "notified": 0.0, "notified_version": None}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_") and k != "CI"}
    env.update(_env(tmp_path, index), PATH=f"{stubs}{os.pathsep}{env['PATH']}")
    empty = tmp_path / "empty"
    empty.mkdir()

    done = subprocess.run(
        [sys.executable, "-c", _AS_INSTALLED, "sessions", "-r", str(empty)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, "the command's own exit code is kept"
    lines = done.stderr.strip().splitlines()
    assert "nothing has run" in lines[0] and lines[-1].startswith("flower 9.9.9 is available"), done.stderr
    assert done.stdout == ""
    again = subprocess.run(
        [sys.executable, "-c", _AS_INSTALLED, "sessions", "-r", str(empty)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "is available" not in again.stderr, "once a day"
    assert not ran.exists() and index.hits == 0, "a fresh state: no ask; and no installer ever ran"

    # In this source checkout (the real detection), nothing is told even with a newer version on record.
    state.write_text(json.dumps({"checked": time.time(), "latest": "9.9.9"}))
    checkout = subprocess.run(
        [sys.executable, "-m", "flower_cli", "sessions", "-r", str(empty)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "is available" not in checkout.stderr
