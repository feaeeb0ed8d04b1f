"""What a degraded handoff can still carry without a model: read from the old session's stored transcript, its
first prompt (the brief and the goal it was given), the text of its last turns, and the files it changed.

Why: a handoff built mechanically used to say only "look at the scene yourself", with the step's prompt as the
task — for a resumed step that is the resume's one-line question, so the successor knew nothing of the work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ._document import Handoff

__all__ = ["Salvage", "salvage", "salvaged"]

_EDITING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_FIRST_PROMPT_CHARS = 6_000
_TURN_CHARS = 1_500
_LAST_TURNS = 3
_MAX_FILES = 40


@dataclass(frozen=True)
class Salvage:
    """What `salvage` found: the first prompt, the last turns' text (oldest first), the files changed."""

    first_prompt: str = ""
    last_turns: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.first_prompt or self.last_turns or self.files)


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " […]"


def _content(entry: Mapping[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("content") if isinstance(message, Mapping) else None


def _prompt_text(content: Any) -> str:
    """A person's words: a string, or the text blocks of a message that holds no tool result."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content):
        return ""
    return "\n".join(str(b.get("text")) for b in content if isinstance(b, Mapping) and b.get("type") == "text")


def salvage(entries: Iterable[Any]) -> Salvage:
    """The old session's first prompt, last turns' text and changed files, from its (main) transcript."""
    first = ""
    turns: list[str] = []
    files: dict[str, None] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("isSidechain") or entry.get("isMeta"):
            continue
        content = _content(entry)
        if entry.get("type") == "user" and not first and not entry.get("isCompactSummary"):
            first = _prompt_text(content).strip()
        elif entry.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "text" and str(block.get("text") or "").strip():
                    turns.append(str(block["text"]))
                elif block.get("type") == "tool_use" and block.get("name") in _EDITING_TOOLS:
                    tool_input = block.get("input")
                    path = (
                        tool_input.get("file_path") or tool_input.get("notebook_path")
                        if isinstance(tool_input, Mapping)
                        else None
                    )
                    if isinstance(path, str) and path:
                        files.pop(path, None)
                        files[path] = None  # the newest change last
            turns = turns[-_LAST_TURNS:]
    return Salvage(
        _cut(first, _FIRST_PROMPT_CHARS),
        tuple(_cut(t, _TURN_CHARS) for t in turns),
        tuple(list(files)[-_MAX_FILES:]),
    )


def salvaged(doc: Handoff, found: Salvage) -> Handoff:
    """A degraded ``doc`` that also carries what ``found`` holds: the last turns under "Doing now", the first
    prompt and the changed files under "Scene"."""
    if not found:
        return doc
    doing = doc.doing
    if found.last_turns:
        doing += "\n\nThe last words of the previous session, newest last:\n" + "\n\n".join(
            f"> {' '.join(t.splitlines())}" for t in found.last_turns
        )
    scene = doc.scene
    if found.files:
        scene = (
            "Files the previous session changed (newest last):\n"
            + "\n".join(f"- {f}" for f in found.files)
            + (f"\n\n{scene}" if scene else "")
        )
    if found.first_prompt:
        scene += (
            "\n\n" if scene else ""
        ) + f"The brief and goal the previous session was first given:\n{found.first_prompt}"
    return replace(doc, doing=doing, scene=scene)
