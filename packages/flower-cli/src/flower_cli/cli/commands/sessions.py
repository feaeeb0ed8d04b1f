"""``flower sessions [show SID]``: what sessions.db holds for this workspace, read-only."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from ..._shared.exits import Exit, ExitCode
from ...view import sanitize
from .common import write_stdout

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["list_sessions", "show_session"]


def _open(opts: GlobalOptions) -> tuple[Any, str]:
    db = opts.run_dir / "sessions.db"
    if not opts.store and not db.exists():
        raise Exit(ExitCode.USAGE, f"no {db}: nothing has run in this run dir yet (use -w/-r to point at another).")
    from claude_agent_sdk import project_key_for_directory

    from .store import open_store

    # Read-only: looking at transcripts never creates, migrates or locks anything, on SQLite or PostgreSQL.
    return open_store(opts, read_only=True), project_key_for_directory(str(opts.workspace))


def _explained(exc: Exception, opts: GlobalOptions) -> Exception:
    from .store import explained

    return explained(exc, opts)


def _costs(opts: GlobalOptions) -> dict[str, tuple[str, float]]:
    from ...runtime import Manifest

    out: dict[str, tuple[str, float]] = {}
    for row in Manifest(opts.run_dir / "manifest.json").rows():
        sid = row.get("session_id")
        if isinstance(sid, str):
            step, cost = out.get(sid, (str(row.get("step", "")), 0.0))
            out[sid] = (step, cost + float(row.get("cost_usd") or 0.0))
    return out


def list_sessions(opts: GlobalOptions) -> None:
    import anyio

    store, project = _open(opts)
    try:
        listed = anyio.run(store.list_sessions, project)
    except Exception as exc:  # a store that opens but cannot be read (a half-copied file)
        raise _explained(exc, opts) from exc
    finally:
        store.close()
    if not listed:
        from .store import store_label

        sys.stderr.write(f"no sessions for {opts.workspace} in {store_label(opts)}\n")
        return
    costs = _costs(opts)
    for item in sorted(listed, key=lambda s: s["mtime"], reverse=True):
        sid = item["session_id"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item["mtime"] / 1000))
        step, cost = costs.get(sid, ("", 0.0))
        extra = f"  {step}  ${cost:.4f}" if step else ""
        write_stdout(f"{sid}  {when}{extra}\n")


def _line(entry: dict[str, Any]) -> str | None:
    kind = entry.get("type")
    message = entry.get("message") if isinstance(entry.get("message"), dict) else None
    if kind not in ("user", "assistant") or message is None:
        return None
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            parts.append(f"[{block.get('name')}] {str(block.get('input', ''))[:120]}")
        elif block.get("type") == "tool_result":
            body = block.get("content")
            text = (
                body
                if isinstance(body, str)
                else " ".join(b.get("text", "") for b in body or [] if isinstance(b, dict))
            )
            parts.append(f"-> {text[:120]}")
    text = " ".join(" ".join(parts).split())
    return f"{kind:9} {text[:200]}" if text else None


def _agent_id(entry: dict[str, Any]) -> str | None:
    """The worker a main-thread entry launched: the Agent call's result names it (``toolUseResult.agentId``)."""
    result = entry.get("toolUseResult")
    if isinstance(result, dict) and isinstance(result.get("agentId"), str):
        return str(result["agentId"])
    return None


def _print_transcript(
    entries: list[dict[str, Any]], workers: dict[str, list[dict[str, Any]]], shown: set[str], depth: int = 0
) -> None:
    """One line per message; a worker's transcript right under the call that started it, indented."""
    pad = "    | " * depth
    for entry in entries:
        line = _line(entry)
        if line:
            write_stdout(sanitize(pad + line) + "\n")
        agent = _agent_id(entry)
        if agent and agent not in shown and agent in workers:
            shown.add(agent)
            _print_transcript(workers[agent], workers, shown, depth + 1)


def show_session(opts: GlobalOptions, session_id: str) -> None:
    import anyio

    store, project = _open(opts)
    try:
        from .session_ids import resolve_session
        from .store import store_label

        session_id = resolve_session(store, project, session_id, where=f"for {opts.workspace} in {store_label(opts)}")
    except Exit:
        store.close()
        raise
    except Exception as exc:
        store.close()
        raise _explained(exc, opts) from exc
    key = {"project_key": project, "session_id": session_id}
    try:
        entries = anyio.run(store.load, key)
        workers: dict[str, list[dict[str, Any]]] = {}
        if entries is not None:
            for subpath in anyio.run(store.list_subkeys, key):
                name = subpath.rsplit("/", 1)[-1]
                if subpath.startswith("subagents/") and name.startswith("agent-"):
                    loaded = anyio.run(store.load, {**key, "subpath": subpath})
                    workers[name[len("agent-") :]] = list(loaded or [])
    except Exception as exc:
        raise _explained(exc, opts) from exc
    finally:
        store.close()
    if entries is None:
        raise Exit(ExitCode.USAGE, f"no session {session_id} for {opts.workspace}; `flower sessions` lists them.")
    shown: set[str] = set()
    _print_transcript(entries, workers, shown)
    # Workers no call points at (e.g. launched by a worker whose own transcript is gone): still shown.
    for agent, transcript in workers.items():
        if agent not in shown:
            shown.add(agent)
            write_stdout(f"worker {agent}\n")
            _print_transcript(transcript, workers, shown, 1)
