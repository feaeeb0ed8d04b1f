"""``flower sessions [show SID | import SID]``: what the store holds for this workspace (read-only), and filling
a session's gaps in it from the harness's local transcript."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

import flower_stores

from ..._shared.exits import Exit, ExitCode
from ...runtime import Manifest, harness_projects_dir
from ...view import sanitize
from .output import write_stdout
from .session_ids import resolve_session
from .sessions_elsewhere import elsewhere, elsewhere_hint
from .store import explained, open_store, store_label

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["import_session", "list_sessions", "show_session"]


def _open(opts: GlobalOptions) -> tuple[Any, str]:
    db = opts.run_dir / "sessions.db"
    if not opts.store and not db.exists():
        raise Exit(ExitCode.USAGE, f"no {db}: nothing has run in this run dir yet (use -w/-r to point at another).")
    # Read-only: looking at transcripts never creates, migrates or locks anything, on SQLite or PostgreSQL.
    return open_store(opts, read_only=True), _project_key(opts.workspace)


def _project_key(workspace: Path) -> str:
    """The key the harness files the workspace's transcripts under."""
    # why: the SDK's import costs most of a second, and `flower sessions` only reads the store
    from claude_agent_sdk import project_key_for_directory

    return project_key_for_directory(str(workspace))


def _explained(exc: Exception, opts: GlobalOptions) -> Exception:

    return explained(exc, opts)


def _costs(opts: GlobalOptions) -> dict[str, tuple[str, float]]:

    out: dict[str, tuple[str, float]] = {}
    for row in Manifest(opts.run_dir / "manifest.json").rows():
        sid = row.get("session_id")
        if isinstance(sid, str):
            step, cost = out.get(sid, (str(row.get("step", "")), 0.0))
            out[sid] = (step, cost + float(row.get("cost_usd") or 0.0))
    return out


def list_sessions(opts: GlobalOptions, *, every_path: bool = False) -> None:
    """Newest first, one line each (``--json``: one document, ``{"kind": "sessions", "sessions": [...]}``).

    ``every_path`` (``--all``): the sessions of every path the store holds, each line ending in its path. With
    none for this workspace, the line says which other paths have some (a moved project's old path).
    """
    store, project = _open(opts)
    try:
        listed: list[tuple[dict[str, Any], str | None]] = [
            (item, None) for item in anyio.run(store.list_sessions, project)
        ]
        # Other paths are looked up only when they are asked for or when this one has nothing (a shared
        # store may hold many projects, and each costs a listing and a transcript read).
        others = elsewhere(store, project) if every_path or not listed else []
        if every_path:
            for other in others:
                listed += [(item, other.path) for item in anyio.run(store.list_sessions, other.project_key)]
    except Exception as exc:  # a store that opens but cannot be read (a half-copied file)
        raise _explained(exc, opts) from exc
    finally:
        store.close()
    rows = _rows(opts, listed)
    if opts.json:
        document = {
            "kind": "sessions",
            "workspace": str(opts.workspace),
            "store": store_label(opts),
            "sessions": rows,
            "elsewhere": [{"path": e.path, "project_key": e.project_key, "sessions": e.sessions} for e in others],
        }
        write_stdout(json.dumps(document, ensure_ascii=False) + "\n")
        return
    if not rows:
        sys.stderr.write(f"no sessions for {opts.workspace} in {store_label(opts)}\n")
        if others:
            sys.stderr.write(sanitize(elsewhere_hint(others)) + "\n")
        return
    for row in rows:
        extra = f"  {row['step']}  ${row['cost_usd']:.4f}" if row["step"] else ""
        where = f"  {row['path']}" if row.get("path") else ""
        write_stdout(f"{row['session_id']}  {row['modified']}{extra}{where}\n")


def _rows(opts: GlobalOptions, listed: list[tuple[dict[str, Any], str | None]]) -> list[dict[str, Any]]:
    """The listed sessions, newest first, with their step and cost from the manifest (and their path, if
    not this workspace's)."""
    costs = _costs(opts) if listed else {}
    rows: list[dict[str, Any]] = []
    for item, path in sorted(listed, key=lambda pair: pair[0]["mtime"], reverse=True):
        sid = item["session_id"]
        step, cost = costs.get(sid, ("", 0.0))
        row = {
            "session_id": sid,
            "modified": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item["mtime"] / 1000)),
            "mtime_ms": item["mtime"],
            "step": step or None,
            "cost_usd": round(cost, 6) if step else None,
        }
        if path is not None:
            row["path"] = path
        rows.append(row)
    return rows


def _message(entry: dict[str, Any], limit: int | None = None) -> tuple[str, str] | None:
    """(type, text) of a user or assistant entry — its text, tool calls and results in one line — or None.

    ``limit`` caps each tool call's input and each result (the one-line human view); None keeps them whole.
    """
    kind = entry.get("type")
    message = entry.get("message") if isinstance(entry.get("message"), dict) else None
    if kind not in ("user", "assistant") or message is None:
        return None

    def cap(text: str) -> str:
        return text if limit is None else text[:limit]

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
            parts.append(f"[{block.get('name')}] {cap(str(block.get('input', '')))}")
        elif block.get("type") == "tool_result":
            body = block.get("content")
            text = (
                body
                if isinstance(body, str)
                else " ".join(b.get("text", "") for b in body or [] if isinstance(b, dict))
            )
            parts.append(f"-> {cap(text)}")
    text = " ".join(" ".join(parts).split())
    return (str(kind), text) if text else None


def _line(entry: dict[str, Any]) -> str | None:
    found = _message(entry, limit=120)
    return f"{found[0]:9} {found[1][:200]}" if found else None


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


def _json_transcript(
    entries: list[dict[str, Any]],
    workers: dict[str, list[dict[str, Any]]],
    shown: set[str],
    out: list[dict[str, Any]],
    worker: str | None = None,
    depth: int = 0,
) -> None:
    """The messages in the order `_print_transcript` shows them, whole, each naming its worker (None: main)."""
    for entry in entries:
        found = _message(entry)
        if found:
            out.append(
                {
                    "type": found[0],
                    "text": found[1],
                    "uuid": entry.get("uuid"),
                    "timestamp": entry.get("timestamp"),
                    "worker": worker,
                    "depth": depth,
                }
            )
        agent = _agent_id(entry)
        if agent and agent not in shown and agent in workers:
            shown.add(agent)
            _json_transcript(workers[agent], workers, shown, out, agent, depth + 1)


def show_session(opts: GlobalOptions, session_id: str) -> None:
    """One line per message (``--json``: one document, ``{"kind": "session", "messages": [...]}``)."""
    store, project = _open(opts)
    try:
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
    if opts.json:
        messages: list[dict[str, Any]] = []
        _json_transcript(entries, workers, shown, messages)
        for agent, transcript in workers.items():
            if agent not in shown:
                shown.add(agent)
                _json_transcript(transcript, workers, shown, messages, agent, 1)
        document = {"kind": "session", "session_id": session_id, "messages": messages}
        write_stdout(json.dumps(document, ensure_ascii=False, default=str) + "\n")
        return
    _print_transcript(entries, workers, shown)
    # Workers no call points at (e.g. launched by a worker whose own transcript is gone): still shown.
    for agent, transcript in workers.items():
        if agent not in shown:
            shown.add(agent)
            write_stdout(f"worker {agent}\n")
            _print_transcript(transcript, workers, shown, 1)


def import_session(opts: GlobalOptions, session_id: str, source: Path | None) -> None:
    """Append to the store every entry of the session's local transcript it lacks (idempotent, by uuid).

    The transcript is ``--from`` (a ``<session id>.jsonl``, its workers' files beside it), else the harness's
    own copy (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, ``projects/<project key>/<id>.jsonl``), else the copy a
    failed run kept in ``<run dir>/unstored/``. ``--json``: one document, ``{"kind": "import", ...}``.
    """
    project = _project_key(opts.workspace)
    if source is None:
        candidates = [
            harness_projects_dir() / project / f"{session_id}.jsonl",
            opts.run_dir / "unstored" / project / f"{session_id}.jsonl",
        ]
        source = next((c for c in candidates if c.is_file()), None)
        if source is None:
            raise Exit(
                ExitCode.USAGE,
                f"no local transcript of session {session_id} for {opts.workspace} (looked at {candidates[0]} and "
                f"{candidates[1]}); give its path with --from PATH (and the workspace it ran in with -w)",
            )
    elif not source.is_file():
        raise Exit(ExitCode.USAGE, f"--from {source}: no such file; give the session's <session id>.jsonl")
    store = open_store(opts)
    try:
        report = anyio.run(flower_stores.import_transcript, store, project, session_id, source)
    except Exception as exc:
        raise _explained(exc, opts) from exc
    finally:
        store.close()
    if opts.json:
        document = {
            "kind": "import",
            "session_id": session_id,
            "workspace": str(opts.workspace),
            "store": store_label(opts),
            "source": str(source),
            "files": [str(f) for f in report.files],
            "read": report.read,
            "added": report.added,
            "skipped_lines": report.skipped_lines,
        }
        write_stdout(json.dumps(document, ensure_ascii=False) + "\n")
        return
    skipped = f"; {report.skipped_lines} unreadable line(s) skipped" if report.skipped_lines else ""
    write_stdout(
        f"imported {report.added} of {report.read} entries of session {session_id} into {store_label(opts)} "
        f"(from {source}){skipped}\n"
    )
