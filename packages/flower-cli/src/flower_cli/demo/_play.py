"""Play the demo: the real `flower` command and the real Claude Code binary against the scripted model.

Three acts in one folder: `flower go "…"` runs until round two is under way, a SIGTERM stops it there (as a
reboot or a closed laptop would), and `flower` again picks the same session up from the store and finishes;
then `flower analyze --html` writes the page. Each act is a fresh `flower` process whose progress goes to this
process's stderr as it comes, so the person watches the product itself, not a recording of it.

An act fails when it stalls (no request reaches the model for `STALL_S` seconds), not when it is slow: on a
busy machine each Claude Code start can take many seconds, and the demo must still finish there.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..testing import ScriptedServer, offline_environment
from ._story import ASK, round_two_started, script_story

__all__ = ["STALL_S", "DemoError", "DemoRun", "play_demo"]

PROJECT = "greeter"  # the folder inside the demo's folder that the story builds in
PAGE = "analyze.html"
STALL_S = 180.0  # no model request for this long: the act is stuck (each act sends one every few seconds)
_LOCAL_S = 300.0  # `flower analyze` and a dying process: local work, bounded all the same


class DemoError(Exception):
    """The story did not play as scripted (a `flower` that exited early or wrongly, an act that stalled)."""


@dataclass(frozen=True)
class DemoRun:
    """What the demo did: where, how long, what the acts returned, and the page."""

    project: Path
    seconds: float
    answer: str
    page: Path | None
    requests: int


def play_demo(folder: Path, say: Callable[[str], None]) -> DemoRun:
    """Play the story in ``folder`` (created if missing; kept afterwards), announcing each act with ``say``."""
    project, home = folder / PROJECT, folder / "home"
    project.mkdir(parents=True, exist_ok=True)
    home.mkdir(exist_ok=True)
    started = time.monotonic()
    with ScriptedServer() as api:
        script_story(api)
        env = offline_environment(api.url, home)
        say(f'1/3  flower go "{ASK}"   (clarify, goal, a coordinator and its worker, a judge)')
        first = _start(["--timeout", "0", ASK], project, env, stdout=subprocess.DEVNULL)
        _follow(api, first, until=round_two_started, what="the first `flower`")
        if first.poll() is not None:
            raise DemoError(f"the first `flower` exited {first.returncode} before round two")
        say("2/3  SIGTERM in round two, while the model thinks: as a reboot or a closed laptop would stop it")
        first.send_signal(signal.SIGTERM)
        code = _ended(first, "the first `flower` did not stop on SIGTERM")
        if code != -signal.SIGTERM:
            raise DemoError(f"the first `flower` exited {code} on SIGTERM, not by the signal")
        say("3/3  flower   (again, in the same folder: it picks the same session up from the store)")
        again = _start(["--timeout", "0"], project, env, stdout=subprocess.PIPE)
        _follow(api, again, until=lambda server: False, what="the second `flower`")
        answer = again.stdout.read() if again.stdout is not None else ""
        if _ended(again, "the second `flower` did not end") != 0:
            raise DemoError(f"the second `flower` exited {again.returncode}, not 0")
        requests = len(api.message_requests)
    page = project / PAGE
    drawn = _start(["analyze", "--html", str(page)], project, env, stdout=subprocess.DEVNULL, quiet=True)
    return DemoRun(
        project=project,
        seconds=time.monotonic() - started,
        answer=answer.strip(),
        page=page if _ended(drawn, "`flower analyze` did not end") == 0 and page.exists() else None,
        requests=requests,
    )


def _start(
    args: list[str], project: Path, env: Mapping[str, str], *, stdout: int, quiet: bool = False
) -> subprocess.Popen[str]:
    """One `flower` in ``project``: its progress on this process's stderr (``quiet``: dropped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=project,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.DEVNULL if quiet else None,
        text=True,
    )


def _follow(
    api: ScriptedServer, child: subprocess.Popen[str], *, until: Callable[[ScriptedServer], bool], what: str
) -> None:
    """Wait until ``until(api)`` holds or ``child`` exits; fail when no request arrives for `STALL_S` seconds."""

    def moved(seen: int) -> Callable[[ScriptedServer], bool]:
        return lambda server: until(server) or child.poll() is not None or len(server.requests) != seen

    while True:
        try:
            api.wait_for(moved(len(api.requests)), timeout=STALL_S)
        except TimeoutError:
            child.kill()
            child.wait()
            raise DemoError(f"{what} stalled: no request reached the model for {STALL_S:.0f} s") from None
        if until(api) or child.poll() is not None:
            return


def _ended(child: subprocess.Popen[str], stuck: str) -> int:
    """``child``'s exit status, once it has ended (it was told to, or has nothing left to do)."""
    try:
        return int(child.wait(timeout=_LOCAL_S))
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise DemoError(stuck) from None
