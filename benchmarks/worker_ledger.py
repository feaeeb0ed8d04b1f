"""What the supervision ledger costs a resume: `read_ledger` (what every resumed step now runs before its launch,
see flower_cli.runtime's `_recovery`) against the layered load the same resume already runs.

    hatch run python benchmarks/worker_ledger.py [--entries 10000] [--rounds 7]

A long coordinator session (``benchmarks/stores.py``'s generator, ~2 KB an entry) in a SQLite store, read three
ways: with no Agent call (most resumes: the coordinator transcript is read and scanned, nothing else); with 20
background workers that all reported (the same: no worker transcript is read); and with 20 workers of which 5
never reported (their transcripts, 300 entries each, are read too). Each time is the median of ``--rounds``
interleaved rounds; the ratio is against the layered load (expire + prune + heal, trimming off) of the same
session.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
from claude_agent_sdk import SessionKey, project_key_for_directory

from flower_cli import AgentSpec
from flower_cli.runtime._recovery import read_ledger
from flower_stores import PruningSessionStore

sys.path.insert(0, str(Path(__file__).parent))
from stores import synthetic_session

WORKERS = 20
UNREPORTED = 5


def _dispatches(session_id: str, reported: int) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The coordinator's entries that dispatch ``WORKERS`` workers (``reported`` of them reported), and each worker's
    transcript by agent id."""
    calls = [
        {"type": "tool_use", "id": f"toolu_{n}", "name": "Agent", "input": {"description": f"w{n}", "prompt": "go"}}
        for n in range(WORKERS)
    ]
    entries: list[dict[str, Any]] = [{"type": "assistant", "sessionId": session_id, "message": {"content": calls}}]
    workers: dict[str, list[dict[str, Any]]] = {}
    for n in range(WORKERS):
        agent = f"a{n:016x}"
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "Async agent launched successfully."}
        entries.append(
            {
                "type": "user",
                "message": {"content": [result]},
                "toolUseResult": {"isAsync": True, "status": "async_launched", "agentId": agent},
            }
        )
        meta = {"type": "agent_metadata", "toolUseId": f"toolu_{n}", "description": f"w{n}"}
        workers[agent] = [meta, *synthetic_session(300, seed=n, shape="small")]
        if n < reported:
            notice = (
                f"<task-notification>\n<task-id>{agent}</task-id>\n<status>completed</status>\n</task-notification>"
            )
            entries.append({"type": "user", "message": {"content": notice}})
    return entries, workers


async def _store(root: Path, name: str, entries: int, reported: int | None) -> tuple[Any, SessionKey]:
    workspace = root / name
    workspace.mkdir()
    store = PruningSessionStore(root / f"{name}.db", workspace)
    key = SessionKey(project_key=project_key_for_directory(str(workspace)), session_id=f"{name}-session")
    main = synthetic_session(entries)
    if reported is not None:
        extra, workers = _dispatches(key["session_id"], reported)
        main = main[: len(main) // 2] + extra + main[len(main) // 2 :]
        for agent, transcript in workers.items():
            await store.append(SessionKey(**key, subpath=f"subagents/agent-{agent}"), transcript)
    await store.append(key, main)
    launcher = SimpleNamespace(
        workspace=workspace, store=SimpleNamespace(session_store=store, project_key=key["project_key"])
    )
    return launcher, key


async def _median(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    spec = AgentSpec("lead", "")
    cases = {
        "no workers": None,
        f"{WORKERS} workers, all reported": WORKERS,
        f"{UNREPORTED} unreported": WORKERS - UNREPORTED,
    }
    print(f"coordinator session: {args.entries} entries; median of {args.rounds} rounds")
    print(f"{'case':<28} {'layered load':>13} {'read_ledger':>12} {'ratio':>7}  pending")
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, reported) in enumerate(cases.items()):
            launcher, key = await _store(Path(tmp), f"case{n}", args.entries, reported)
            store = launcher.store.session_store

            async def load(store: Any = store, key: SessionKey = key) -> None:
                await store.load(key)

            async def ledger(launcher: Any = launcher, key: SessionKey = key) -> None:
                await read_ledger(launcher, key["session_id"], spec)

            base, cost = await _median(load, args.rounds), await _median(ledger, args.rounds)
            pending = sum(1 for r in await read_ledger(launcher, key["session_id"], spec) if r.state != "reported")
            print(f"{name:<28} {base * 1000:>10.0f} ms {cost * 1000:>9.0f} ms {cost / base:>6.2f}x  {pending}")
            store.close()


if __name__ == "__main__":
    anyio.run(main)
