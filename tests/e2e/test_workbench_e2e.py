"""The workbench guards in a real Claude Code session through the scripted Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_agent_sdk import InMemorySessionStore, project_key_for_directory
from workbench._hooks import spill_name

from flower_workbench import Workbench, index_guard, spill_guard
from harness import ScriptedServer, Text, bash, read, result_text, write
from harness.agent import agent_options, collect, final_result

pytestmark = pytest.mark.e2e

# 700 lines of 72 characters: 50,400 characters, more than Claude Code's own ~30 KB cut-off.
BIG = "".join(f"line {i:05d} " + "z" * 60 + "\n" for i in range(700))
BIG_COMMAND = "python3 -c \"[print(f'line {i:05d} ' + 'z'*60) for i in range(700)]\""
SMALL = "s" * 6000
SMALL_COMMAND = "python3 -c \"print('s'*6000)\""


async def test_spill_guard_and_index_guard_in_a_real_session(claude_env: ScriptedServer, workspace: Path) -> None:
    wb = Workbench(workspace)
    big = wb.spill / spill_name(BIG)
    small = wb.spill / spill_name(SMALL)
    script = "#!/bin/sh\n# desc: regenerate the sample data\npython3 gen.py\n"
    claude_env.script(
        bash(BIG_COMMAND),  # 1: spilled
        read(str(big)),  # 2: Read by absolute path — whole
        read(big.relative_to(workspace).as_posix()),  # 3: Read by relative path — whole
        bash(f"cat {big.relative_to(workspace)}"),  # 4: cat, relative — not spilled again
        bash(SMALL_COMMAND),  # 5: spilled
        bash(f"cat {small}"),  # 6: cat, absolute — not spilled again, comes back whole
        write(str(wb.scripts / "regen.sh"), script),  # 7: indexed
        Text("done"),
    )
    store = InMemorySessionStore()
    hooks = {"PostToolUse": [spill_guard(wb), index_guard(wb)]}
    messages = await collect(
        "work", agent_options(workspace, hooks=hooks, session_store=store, session_store_flush="eager")
    )
    result = final_result(messages)
    assert result.is_error is False, result
    assert claude_env.rejected == [] and claude_env.unscripted == []
    calls = claude_env.message_requests
    fed_back = [result_text(call.tool_results()[-1]) for call in calls[1:]]

    # 1. The spill file holds the whole output byte for byte; the model gets the pointer and the head.
    assert big.read_bytes() == BIG.encode()
    pointer = fed_back[0]
    assert pointer.startswith(f"[output of {len(BIG)} characters saved to .flower/spill/{big.name}")
    assert BIG[:400].replace("\n", " ") in pointer
    assert "line 00699" not in pointer and "persisted-output" not in pointer
    assert len(pointer) < 600 < len(BIG) // 80

    # 2, 3. Read of the spill file, absolute and relative: whole, not spilled again.
    for reread in fed_back[1:3]:
        assert "line 00000" in reread and "line 00699" in reread and "[output of" not in reread

    # 4. cat of a 50 KB spill file: our guard leaves it alone. (Above ~30 KB the harness applies its own
    #    cut-off and sends a 2 KB "<persisted-output>" preview; Read, by contrast, comes back whole.)
    assert "[output of" not in fed_back[3]

    # 5, 6. A 6 KB output: spilled; cat of its spill file by absolute path comes back whole.
    assert fed_back[4].startswith(f"[output of 6000 characters saved to .flower/spill/{small.name}")
    assert fed_back[5] == SMALL
    assert sorted(p.name for p in wb.spill.iterdir()) == sorted([big.name, small.name])

    # 7. The Write into scripts/ shows up in INDEX.md with its description.
    assert "- `.flower/scripts/regen.sh` — regenerate the sample data" in wb.index_path.read_text(encoding="utf-8")

    # The transcript the store keeps for a resume carries the pointer, not the 50 KB.
    key = {"project_key": project_key_for_directory(str(workspace)), "session_id": result.session_id}
    entries = await store.load(key)  # type: ignore[arg-type]
    transcript = json.dumps(entries)
    assert "line 00699" in transcript  # the Reads of the spill file are whole, as asked
    first_result = next(e for e in entries if e.get("type") == "user" and "toolUseResult" in e)
    assert "line 00699" not in json.dumps(first_result), "the spilled output leaked into the stored transcript"
