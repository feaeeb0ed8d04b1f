"""Build transcripts shaped like the ones Claude Code 2.1 writes (as observed through the scripted server).

One entry per content block, chained by ``parentUuid``; tool results in their own user entries with
``toolUseResult``; denials marked ``toolDenialKind``; a dropped connection as a ``<synthetic>`` assistant
entry; an interrupted call as ``user-rejected`` with no ``permissionDecision``; plus uuid-less bookkeeping
entries (``last-prompt``, ``queue-operation``) between them.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

SESSION = "5f0c8f0e-0000-4000-8000-000000000001"
_COMMON = {
    "userType": "external",
    "entrypoint": "sdk-py",
    "cwd": "/ws",
    "sessionId": SESSION,
    "version": "2.1.332",
    "gitBranch": "main",
    "isSidechain": False,
}


class Transcript:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self._n = itertools.count(1)
        self._messages = itertools.count(1)

    def _uuid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._n):012d}"

    def add(self, entry: dict[str, Any], *, chain: bool = True) -> dict[str, Any]:
        if chain:
            entry = {
                "parentUuid": self.leaf,
                **entry,
                "uuid": entry.get("uuid") or self._uuid(),
                **{k: v for k, v in _COMMON.items() if k not in entry},
            }
            self.leaf = entry["uuid"]
        self.entries.append(entry)
        return entry

    def user(self, text: str, **extra: Any) -> dict[str, Any]:
        return self.add({"type": "user", "message": {"role": "user", "content": text}, **extra})

    def assistant(self, *blocks: dict[str, Any], message_id: str | None = None) -> list[dict[str, Any]]:
        """One assistant message: one entry per block, sharing ``message.id`` (as Claude Code stores them)."""
        mid = message_id or f"msg_{next(self._messages):04d}"
        return [
            self.add(
                {
                    "type": "assistant",
                    "message": {
                        "id": mid,
                        "role": "assistant",
                        "model": "claude-scripted",
                        "content": [block],
                        "usage": {"input_tokens": 100, "output_tokens": 5},
                    },
                }
            )
            for block in blocks
        ]

    def call(self, name: str, tool_input: dict[str, Any], tool_id: str | None = None, text: str | None = None) -> str:
        tool_id = tool_id or f"toolu_{next(self._n):06d}"
        blocks = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        ]
        self.assistant(*blocks)
        return tool_id

    def result(self, tool_id: str, content: Any, *, is_error: bool = False, **extra: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": is_error}],
            },
            "toolUseResult": {"stdout": content if isinstance(content, str) else "", "stderr": ""},
        }
        entry.update(extra)
        return self.add(entry)

    def bash(self, command: str, output: str, **extra: Any) -> str:
        tool_id = self.call("Bash", {"command": command, "description": command[:40]})
        self.result(tool_id, output, **extra)
        return tool_id

    def denied(self, command: str, kind: str = "permission-rule") -> str:
        tool_id = self.call("Bash", {"command": command})
        self.result(
            tool_id,
            f"Permission to use Bash with command {command} has been denied.",
            is_error=True,
            toolDenialKind=kind,
            permissionDecision={"decision": "reject", "source": "config"},
        )
        return tool_id

    def interrupted(self, command: str) -> str:
        tool_id = self.call("Bash", {"command": command})
        self.result(
            tool_id,
            "The user doesn't want to proceed with this tool use. STOP what you are doing and wait for the user to tell you how to proceed.",
            is_error=True,
            toolDenialKind="user-rejected",
            toolUseResult="User rejected tool use",
        )
        self.add(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}],
                },
            }
        )
        return tool_id

    def api_error(self, *, with_uuid: bool = True) -> dict[str, Any]:
        entry = {
            "type": "assistant",
            "isApiErrorMessage": True,
            "error": "server_error",
            "message": {
                "model": "<synthetic>",
                "role": "assistant",
                "content": [{"type": "text", "text": "API Error: Connection dropped (ECONNRESET)."}],
            },
        }
        if with_uuid:
            return self.add(entry)
        return self.add(entry, chain=False)

    def last_prompt(self) -> dict[str, Any]:
        return self.add(
            {"type": "last-prompt", "lastPrompt": "p", "leafUuid": self.leaf, "sessionId": SESSION}, chain=False
        )

    def snapshot(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.entries)


def _blocks_by(entries: list[dict[str, Any]], kind: str, id_field: str) -> dict[str, dict[str, Any]]:
    out = {}
    for entry in entries:
        content = (entry.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == kind:
                out[block[id_field]] = block
    return out


def tool_results(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """tool_use_id -> its tool_result block."""
    return _blocks_by(entries, "tool_result", "tool_use_id")


def tool_uses(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> the tool_use block."""
    return _blocks_by(entries, "tool_use", "id")


def chain_ok(entries: list[dict[str, Any]]) -> bool:
    """Every link names an entry that is present (or is None)."""
    uuids = {e["uuid"] for e in entries if isinstance(e.get("uuid"), str)}
    return all(
        e.get(f) is None or e[f] in uuids
        for e in entries
        for f in ("parentUuid", "leafUuid", "logicalParentUuid")
        if f in e
    )


def ancestry(entries: list[dict[str, Any]], uid: str) -> list[str]:
    """The uuids from ``uid`` up to the root (what Claude Code walks on resume)."""
    parent = {e["uuid"]: e.get("parentUuid") for e in entries if isinstance(e.get("uuid"), str)}
    out: list[str] = []
    current: str | None = uid
    while current is not None and current not in out:
        out.append(current)
        current = parent.get(current)
    return out
