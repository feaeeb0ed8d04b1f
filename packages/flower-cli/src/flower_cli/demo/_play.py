"""Play the demo: the real `flower` command and the real Claude Code binary against the scripted model.

Three acts in one folder: `flower go "…"` runs until round two is under way, a SIGTERM stops it there (as a
reboot or a closed laptop would), and `flower` again picks the same session up from the store and finishes;
then `flower analyze --html` writes the page. Each act is a fresh `flower` process whose progress goes to this
process's stderr as it comes, so the person watches the product itself, not a recording of it.
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

__all__ = ["DemoError", "DemoRun", "play_demo"]

PROJECT = "greeter"  # the folder inside the demo's folder that the story builds in
PAGE = "analyze.html"
_ACT_TIMEOUT_S = 120.0  # a generous bound per act (each takes seconds): a stuck act fails, it does not hang


class DemoError(Exception):
    """The story did not play as scripted (a `flower` that exited early, an act over its time)."""


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
        _first_act(api, project, env, say)
        say("3/3  flower   (again, in the same folder: it picks the same session up from the store)")
        again = _flower(["--timeout", "0"], project, env)
        if again.returncode != 0:
            raise DemoError(f"the second `flower` exited {again.returncode}, not 0")
        page = project / PAGE
        drawn = _flower(["analyze", "--html", str(page)], project, env, quiet=True)
        requests = len(api.message_requests)
    return DemoRun(
        project=project,
        seconds=time.monotonic() - started,
        answer=again.stdout.strip(),
        page=page if drawn.returncode == 0 and page.exists() else None,
        requests=requests,
    )


def _first_act(api: ScriptedServer, project: Path, env: Mapping[str, str], say: Callable[[str], None]) -> None:
    """`flower go` until round two reaches the model, then SIGTERM: the run must record it and die of it."""
    child = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--timeout", "0", ASK],
        cwd=project,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # a run stopped mid-round has no answer to print
    )
    try:
        api.wait_for(lambda server: round_two_started(server) or child.poll() is not None, timeout=_ACT_TIMEOUT_S)
    except TimeoutError:
        child.kill()
        child.wait()
        raise DemoError(f"round two did not start within {_ACT_TIMEOUT_S:.0f} s") from None
    if child.poll() is not None:
        raise DemoError(f"the first `flower` exited {child.returncode} before round two")
    say("2/3  SIGTERM in round two, while the model thinks: as a reboot or a closed laptop would stop it")
    child.send_signal(signal.SIGTERM)
    try:
        code = child.wait(timeout=_ACT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise DemoError("the first `flower` did not stop on SIGTERM") from None
    if code != -signal.SIGTERM:
        raise DemoError(f"the first `flower` exited {code} on SIGTERM, not by the signal")


def _flower(
    args: list[str], project: Path, env: Mapping[str, str], *, quiet: bool = False
) -> subprocess.CompletedProcess[str]:
    """One `flower` in ``project``; its progress on this process's stderr (``quiet``: kept), its stdout returned."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=project,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if quiet else None,
            text=True,
            timeout=_ACT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise DemoError(f"`flower {' '.join(args)}` took over {_ACT_TIMEOUT_S:.0f} s") from None
