"""What goes back to the model after a big Bash output, with and without the spill guard, in one run.

For 5 KB, 10 KB and 50 KB outputs it runs the real Claude Code binary against the scripted Messages API
(offline, temporary HOME) twice — Claude Code alone, then with `spill_guard` at its 4000-character default —
and prints the characters of the tool result the model receives next, the size of that whole request, and
the characters the session store keeps for that result.

Run: hatch run python benchmarks/workbench.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from claude_agent_sdk import InMemorySessionStore, project_key_for_directory

from flower_workbench import Workbench, spill_guard
from harness import ScriptedServer, Text, bash, result_text
from harness.agent import agent_options, collect, final_result

SIZES = (5_000, 10_000, 50_000)


def command(chars: int) -> str:
    lines = chars // 72
    return f"python3 -c \"[print(f'line {{i:05d}} ' + 'z'*60) for i in range({lines})]\""


async def one(root: Path, chars: int, guarded: bool) -> dict[str, Any]:
    workspace = root / f"ws-{chars}-{guarded}"
    workspace.mkdir()
    with ScriptedServer() as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        server.script(bash(command(chars)), Text("ok"))
        store = InMemorySessionStore()
        hooks = {"PostToolUse": [spill_guard(Workbench(workspace))]} if guarded else {}
        messages = await collect(
            "go", agent_options(workspace, hooks=hooks, session_store=store, session_store_flush="eager")
        )
        result = final_result(messages)
        follow_up = server.message_requests[1]
        entries = await store.load(
            {"project_key": project_key_for_directory(str(workspace)), "session_id": result.session_id}
        )  # type: ignore[arg-type]
    stored = next(e for e in entries or [] if e.get("type") == "user" and "toolUseResult" in e)
    return {
        "fed": len(result_text(follow_up.tool_results()[-1])),
        "request": follow_up.size,
        "stored": len(json.dumps(stored)),
        "harness_file": "persisted-output" in result_text(follow_up.tool_results()[-1]),
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        os.environ.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            ANTHROPIC_API_KEY="sk-ant-test-0000000000000000",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CODE_MAX_RETRIES="0",
            DISABLE_AUTOUPDATER="1",
        )
        print(f"{'output':>8} | {'Claude Code alone':^28} | {'with spill_guard (4000)':^28} | fed-back ratio")
        print(f"{'chars':>8} | {'fed':>8} {'request':>9} {'stored':>9} | {'fed':>8} {'request':>9} {'stored':>9} |")
        for chars in SIZES:
            alone = await one(root, chars, guarded=False)
            guarded = await one(root, chars, guarded=True)
            note = "(harness cut-off: 2 KB preview of a file in ~/.claude)" if alone["harness_file"] else ""
            print(
                f"{chars:>8} | {alone['fed']:>8} {alone['request']:>9} {alone['stored']:>9} | "
                f"{guarded['fed']:>8} {guarded['request']:>9} {guarded['stored']:>9} | "
                f"{guarded['fed'] / alone['fed']:.3f} {note}"
            )


if __name__ == "__main__":
    anyio.run(main)
