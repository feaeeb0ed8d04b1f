"""The five-part handoff document: the request for it, parsing a model's answer (English or the original's
Chinese headings), the Markdown kept on disk, the successor's first message, and the "degraded" document built
mechanically when the session could not write one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..._shared.sections import alias_table, split_sections

__all__ = ["HANDOFF_PROMPT", "SECTIONS", "TITLES", "Handoff", "degraded", "handoff_prompt"]

SECTIONS = ("doing", "decided", "dead_ends", "next_step", "scene")
TITLES = {
    "doing": "Doing now",
    "decided": "Decided, and why",
    "dead_ends": "Dead ends",
    "next_step": "Next",
    "scene": "Scene",
}
_ALIASES: dict[str, tuple[str, ...]] = {
    "doing": (
        "Doing now",
        "Doing",
        "Current work",
        "In progress",
        "Where I am",
        "Progress",
        "现在在做什么",
        "现在在做",
        "当前进度",
        "进度",
    ),
    "decided": (
        "Decided, and why",
        "Decided and why",
        "Decided",
        "Decisions",
        "Settled",
        "已经定下的",
        "已定的事",
        "决策",
    ),
    "dead_ends": (
        "Dead ends",
        "Tried and failed",
        "What did not work",
        "What didn't work",
        "Ruled out",
        "走不通的路",
        "试过不行的",
        "排除的路",
    ),
    "next_step": ("Next", "Next step", "Next steps", "下一步"),
    "scene": ("Scene", "Pointers", "Where things are", "Files", "现场", "文件"),
}
_TABLE = alias_table(_ALIASES)

HANDOFF_PROMPT = """Your context is nearly full ({used} of a {window}-token window). A fresh session will take over this step from a handoff you write now. Stop the work here and reply with exactly these five sections:

## Doing now
What you were in the middle of, concretely. (required)

## Decided, and why
Each settled decision with its reason in a line, so nobody reopens it.

## Dead ends
Approaches that failed and why they failed. Write "(none yet)" if there were none; do not invent any.

## Next
The next concrete actions, in order, precise enough to start on at once. (required)

## Scene
Pointers only: the files, branches, commands, notes and artifacts that matter, each with a few words. Paths, not contents.

Rules: the handoff must stand on its own (the successor remembers nothing of this conversation); point to files instead of pasting them; do not restate the brief or the goal, which are frozen under notes/ where the successor can read them. Do not call tools; just write the handoff."""

_DEGRADED_MARK = "[degraded: no handoff was written]"
_SCENE_PROMPT_CHARS = 1200


def _names(workers: Sequence[str]) -> str:
    return ", ".join(f'"{w}"' for w in workers)


def handoff_prompt(used: int, window: int, stopped: Sequence[str] = ()) -> str:
    """`HANDOFF_PROMPT` with the context used and the window filled in; ``stopped`` names the background
    workers this handoff ended before they finished (the old session must know, or its handoff waits for them)."""
    prompt = HANDOFF_PROMPT.format(used=f"{used:,}", window=f"{window:,}")
    if stopped:
        prompt += (
            f"\n\nThis handoff has stopped your background workers that were still running: {_names(stopped)}. "
            "They will not report back; whatever they did not write to disk is lost. Say under Next whether to "
            "dispatch them again."
        )
    return prompt


@dataclass(frozen=True)
class Handoff:
    doing: str = ""
    decided: str = ""
    dead_ends: str = ""
    next_step: str = ""
    scene: str = ""
    degraded: bool = False

    @classmethod
    def parse(cls, text: str) -> Handoff:
        """The five parts from a model's answer (English or the original's Chinese headings). Code blocks
        are kept as text: a handoff's scene often quotes a command."""
        found = split_sections(text, _TABLE, fences="keep")
        doing = found.get("doing")
        return cls(
            doing,
            found.get("decided"),
            found.get("dead_ends"),
            found.get("next_step"),
            found.get("scene"),
            doing.startswith(_DEGRADED_MARK),
        )

    @classmethod
    def load(cls, path: Path | str) -> Handoff:
        try:
            return cls.parse(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return cls()

    def section(self, key: str) -> str:
        if key not in SECTIONS:
            raise KeyError(f"no handoff section {key!r}; sections are {', '.join(SECTIONS)}")
        value: str = getattr(self, key)
        return value

    @property
    def complete(self) -> bool:
        """ "Doing now" and "Next" are both written (the other parts may be empty)."""
        return not self.missing()

    def missing(self) -> list[str]:
        return [TITLES[key] for key in ("doing", "next_step") if not self.section(key).strip()]

    def incomplete_reason(self) -> str:
        """Why this document cannot be used as is ("" when it can), for the degraded fallback's note."""
        missing = self.missing()
        return f"it had no {' and no '.join(repr(m) for m in missing)} section" if missing else ""

    def summary(self) -> dict[str, str]:
        """The parts a UI shows after a handoff (the scene is pointers; it is left out)."""
        return {key: self.section(key) for key in ("doing", "decided", "dead_ends", "next_step")}

    def to_markdown(self, step: str) -> str:
        parts = [
            f"# Handoff ({step})",
            "",
            "> Written when a session's context filled up, for the fresh session that took the step over (it got",
            "> this text in its first message). You may edit it; it is also the record of the takeover.",
        ]
        for key in SECTIONS:
            parts += ["", f"## {TITLES[key]}", self.section(key).strip() or "(empty)"]
        return "\n".join(parts) + "\n"

    def successor_prompt(self, step: str, *, path: Path | str | None = None, stopped: Sequence[str] = ()) -> str:
        """The first message of the session that takes over (``stopped``: workers the handoff ended unfinished)."""
        intro = (
            f'You are taking over step "{step}" from a session whose context filled up. You remember nothing of '
            "its work: this handoff is what it left you. The brief and the goal are frozen under notes/ in the "
            "workbench; read them there when you need them."
        )
        if path is not None:
            intro += f" This handoff is also saved at {path}."
        if stopped:
            intro += (
                f" The handoff stopped background workers before they finished: {_names(stopped)}. They will not "
                "report to you; check on disk what they left and dispatch them again if their work is still needed."
            )
        blocks = [intro]
        blocks += [f"## {TITLES[key]}\n{self.section(key).strip()}" for key in SECTIONS if self.section(key).strip()]
        blocks.append('Continue from "Next". Do not start over, and do not go back to the person for background.')
        return "\n\n".join(blocks)


def degraded(step: str, original_prompt: str, why: str) -> Handoff:
    """A handoff built mechanically when the session could not write one (the writing round failed, missed a
    required part, or the context overflowed): the successor is sent to look at the scene itself."""
    task = original_prompt.strip()
    if len(task) > _SCENE_PROMPT_CHARS:
        task = task[:_SCENE_PROMPT_CHARS].rstrip() + " […]"
    return Handoff(
        doing=(
            f'{_DEGRADED_MARK} The previous session ran out of context in step "{step}" and could not write '
            f"its handoff ({why})."
        ),
        next_step=(
            "Before anything else, find out how far the work got by looking at the scene yourself: the "
            "workbench's notes/ and artifacts/, `git status` and `git log` if this is a repository, and the files "
            "the task names. Then continue the task from there; do not start it over."
        ),
        scene=f"The task this step was first given:\n{task}" if task else "",
        degraded=True,
    )
