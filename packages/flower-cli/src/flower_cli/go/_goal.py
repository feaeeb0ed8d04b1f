"""The goal: one statement and a checklist an independent judge can tick, frozen in ``notes/goal.md``.

A check that cannot be verified in this environment (it needs a Mac, a phone, a paid account…) is marked
``[cannot verify here: <why>]`` (``[此环境无法验证…]`` is read too); such a check can never pass, so the
person is warned before the work starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from .._shared.files import atomic_write_text
from .._shared.notes_lock import notes_lock
from .._shared.sections import alias_table, bullet_items, split_sections

__all__ = ["ALIASES", "FORMAT", "UNVERIFIABLE_MARK", "Goal", "is_unverifiable"]

ALIASES: dict[str, tuple[str, ...]] = {
    "statement": ("Goal", "Goal statement", "Statement", "Objective", "目标", "完成标志"),
    "checks": (
        "Checks",
        "Checklist",
        "Check list",
        "Acceptance checks",
        "Verification",
        "Verification checklist",
        "判定清单",
        "判定条件",
        "验收清单",
        "检查项",
        "判定",
    ),
}
_TABLE = alias_table(ALIASES)

# What the goal-setter is told to write in front of a check it cannot verify here.
UNVERIFIABLE_MARK = "[cannot verify here: <why>]"
_UNVERIFIABLE = re.compile(
    r"[\[【]\s*(?:cannot|can't|can not)\s+(?:be\s+)?verif(?:y|ied)\s+here\b[^\]】]*[\]】]"
    r"|[\[【]\s*(?:unverifiable|not verifiable)\s+here\b[^\]】]*[\]】]"
    r"|[\[【]\s*此环境(?:无法|没法|不能)验证[^\]】]*[\]】]",
    re.IGNORECASE,
)

# The shape the goal-setter is asked for (the parser also reads the Chinese headings in `ALIASES`).
FORMAT = f"""## Goal
One sentence: what is true when the work is done.

## Checks
- one check per line, each something a judge can verify by looking (run a command, read a file)
- {UNVERIFIABLE_MARK} in front of a check that cannot be verified in this environment"""

_NOTICE = (
    "> Derived from notes/brief.md and frozen: after every round an independent judge checks the work against\n"
    "> this file. Edit it by hand if a check is wrong. A check marked [cannot verify here: …] can never pass\n"
    "> in this environment."
)


def is_unverifiable(check: str) -> bool:
    return _UNVERIFIABLE.search(check) is not None


@dataclass(frozen=True)
class Goal:
    statement: str = ""
    checks: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Goal:
        return cls._from(text, fences="drop")

    @classmethod
    def load(cls, path: Path | str) -> Goal:
        """The goal in ``path``; an empty goal when the file is missing or unreadable."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return cls()
        return cls._from(text, fences="keep")

    @classmethod
    def _from(cls, text: str, *, fences: Literal["drop", "keep"]) -> Goal:
        found = split_sections(text, _TABLE, fences=fences)
        return cls(found.get("statement"), tuple(bullet_items(found.get("checks"))))

    @property
    def complete(self) -> bool:
        """A statement and at least one check."""
        return bool(self.statement.strip()) and bool(self.checks)

    def unverifiable(self) -> list[str]:
        """The checks marked as not verifiable in this environment."""
        return [check for check in self.checks if is_unverifiable(check)]

    def unverifiable_warning(self, path: Path | str) -> str:
        """The warning shown before work starts when some checks can never pass here ("" when none)."""
        marked = self.unverifiable()
        if not marked:
            return ""
        lines = [
            f"{len(marked)} of {len(self.checks)} checks cannot be verified in this environment. The judge can never "
            f"pass them, so the run will stop at them and ask you. You can still edit {path} now:"
        ]
        lines += [f"  - {check}" for check in marked]
        return "\n".join(lines)

    def amend(self, text: str) -> Goal:
        """A copy whose statement carries ``text`` as a change the person made (the checks stay)."""
        change = text.strip()
        if not change:
            return self
        return replace(self, statement=f"{self.statement.rstrip()}\n\n(Changed by the person) {change}".strip())

    def prompt_block(self) -> str:
        lines = ["## Goal", self.statement.strip() or "(empty)", "", "## Checks"]
        lines += [f"{i}. {check}" for i, check in enumerate(self.checks, 1)] or ["(empty)"]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = [
            "# The goal of this run",
            "",
            _NOTICE,
            "",
            "## Goal",
            self.statement.strip() or "(empty)",
            "",
            "## Checks",
        ]
        lines += [f"- {check}" for check in self.checks] or ["(empty)"]
        return "\n".join(lines) + "\n"

    def write(self, path: Path | str) -> None:
        """Freeze the goal into ``path`` (atomically)."""
        target = Path(path)
        with notes_lock(target):
            atomic_write_text(target, self.to_markdown())
