"""Waiting out a usage limit: how soon the session goes on after the reset, and how many requests are sent while
the limit holds — flower against the harness alone, in one run.

Each case runs the real Claude Code binary against the scripted Messages API (offline, a temporary HOME): a
first turn runs a Bash command, then the next request opens a usage-limit window of W seconds (429 with the
unified rate-limit headers and the reset, `usage_limited`), then the script answers. Cases:
- flower: `flower once` (the harness started with CLAUDE_CODE_RETRY_WATCHDOG=1; flower stops it at its first
  retry notice and waits the reset out itself, then resumes the same session);
- watchdog: the harness alone through the SDK, with CLAUDE_CODE_RETRY_WATCHDOG=1 (it waits for the reset itself);
- backoff: the harness alone with its default retries (CLAUDE_CODE_MAX_RETRIES=10, no watchdog), as a plain SDK
  app would run it.
For each it prints the requests refused inside the window (the first one is sent before anyone knows of the
limit), the delay from the reset to the resumed request reaching the server, and whether the session went on.

Run: hatch run python benchmarks/limits.py [--windows 20,45]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import claude_agent_sdk as sdk

from harness import RecordedRequest, ScriptedServer, Text, bash, usage_limited

API_KEY = "sk-ant-bench-0000000000000000"
MARK = "echo limits-bench-first-turn"


@dataclass
class Outcome:
    case: str
    window_s: int
    refused: int  # requests the server refused inside the window
    delay_s: float | None  # from the reset to the resumed request reaching the server
    same_session: bool  # the resumed request carried the first turn
    ok: bool


def environment(home: Path, server: ScriptedServer, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "FLOWER_"))}
    return {
        **keep,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "FLOWER_NO_UPDATE": "1",
        "FLOWER_NO_PROBE": "1",
        **extra,
    }


def resumed_request(server: ScriptedServer) -> RecordedRequest | None:
    """The first answered model request after the window (the server's clock is monotonic, the reset is not)."""
    ends = server.limit_ends
    if ends is None:
        return None
    offset = time.time() - time.monotonic()
    return next((r for r in server.message_requests if r.status == 200 and r.received_at + offset >= ends), None)


def measure(case: str, window: int, run: Callable[[ScriptedServer, Path], bool]) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="flower-limits-bench-") as tmp, ScriptedServer() as server:
        home = Path(tmp)
        (home / "ws").mkdir()
        server.script(bash(MARK), usage_limited(window), Text("Finished after the limit."))
        ok = run(server, home)
        resumed = resumed_request(server)
        offset = time.time() - time.monotonic()
        delay = (
            None if resumed is None or server.limit_ends is None else resumed.received_at + offset - server.limit_ends
        )
        return Outcome(case, window, len(server.limited), delay, resumed is not None and MARK in resumed.text, ok)


def run_flower(server: ScriptedServer, home: Path) -> bool:
    env = environment(home, server, CLAUDE_CODE_MAX_RETRIES="0")  # flower's own retries, as in the tests
    done = subprocess.run(
        [sys.executable, "-m", "flower_cli", "once", "-t", "Bash", "do the work"],
        cwd=home / "ws",
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode == 0


def harness_alone(**settings: str) -> Callable[[ScriptedServer, Path], bool]:
    def run(server: ScriptedServer, home: Path) -> bool:
        env = environment(home, server, **settings)
        options = sdk.ClaudeAgentOptions(
            cwd=str(home / "ws"), env=env, allowed_tools=["Bash"], permission_mode="acceptEdits"
        )

        async def main() -> bool:
            ok = False
            try:
                async for message in sdk.query(prompt="do the work", options=options):
                    if isinstance(message, sdk.ResultMessage):
                        ok = not message.is_error
            except Exception:  # noqa: BLE001 - a harness that gave up is an outcome here, not a crash
                return False
            return ok

        return anyio.run(main)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="20,45", help="usage-limit windows to meet, in seconds")
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[ScriptedServer, Path], bool]]] = [
        ("flower", run_flower),
        ("watchdog", harness_alone(CLAUDE_CODE_RETRY_WATCHDOG="1", CLAUDE_CODE_MAX_RETRIES="10")),
        ("backoff", harness_alone(CLAUDE_CODE_MAX_RETRIES="10")),
    ]
    print(f"{'case':<10} {'window':>7} {'refused':>8} {'reset->resumed':>15} {'same session':>13} {'ok':>4}")
    for window in (int(w) for w in args.windows.split(",")):
        for name, run in cases:
            out = measure(name, window, run)
            delay = "never" if out.delay_s is None else f"{out.delay_s:+.2f} s"
            print(
                f"{out.case:<10} {out.window_s:>6}s {out.refused:>8} {delay:>15} {str(out.same_session):>13} "
                f"{str(out.ok):>4}",
                flush=True,
            )
    print(
        "refused: requests sent inside the window (the first is sent before anyone knows of the limit); "
        "flower's target is that one and no other, and the resumed request <= 2 s + jitter after the reset"
    )


if __name__ == "__main__":
    main()
