"""The brief: what the person wants, in four sections, frozen in ``notes/brief.md`` once it is complete.

Goal / Acceptance criteria / Boundaries (what will NOT be done) / Unknowns and assumptions. The clarifier
writes it; every later round works from it; text the person adds while a run works (mail) or when waking it
(a new sentence) is appended below as dated amendments and never rewrites the four sections.

``Brief.parse`` reads a model's answer (English or Chinese headings, see `ALIASES`); ``Brief.load`` reads the
frozen file back (``brief.md``, or the ``需求.md`` of a workbench the original flower wrote: see
docs/compatibility.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from .._shared.files import atomic_write_text
from .._shared.notes_lock import notes_lock
from .._shared.sections import Amendment, alias_table, split_sections

__all__ = ["ALIASES", "FORMAT", "RUNNING_LABEL", "SECTIONS", "TITLES", "WAKE_LABEL", "Amendment", "Brief"]

SECTIONS = ("goal", "acceptance", "boundaries", "unknowns")

TITLES = {
    "goal": "Goal",
    "acceptance": "Acceptance criteria",
    "boundaries": "Boundaries",
    "unknowns": "Unknowns and assumptions",
}

ALIASES: dict[str, tuple[str, ...]] = {
    "goal": ("Goal", "Goals", "The goal", "Objective", "目标"),
    "acceptance": (
        "Acceptance criteria",
        "Acceptance",
        "Acceptance tests",
        "Definition of done",
        "Done when",
        "验收标准",
        "验收条件",
        "验收",
    ),
    "boundaries": (
        "Boundaries",
        "Boundary",
        "Out of scope",
        "Non-goals",
        "Non goals",
        "Not doing",
        "What we will not do",
        "边界",
        "不做什么",
        "范围边界",
    ),
    "unknowns": (
        "Unknowns and assumptions",
        "Unknowns & assumptions",
        "Assumptions and unknowns",
        "Unknowns",
        "Assumptions",
        "Open questions",
        "未知与假设",
        "未知项与假设",
        "未知项",
        "已知未知",
        "假设",
        "未知",
    ),
}

_TABLE = alias_table(ALIASES)

# The shape the clarifier is asked for (the parser also reads the Chinese headings in `ALIASES`).
FORMAT = """## Goal
One or two sentences: what is wanted, for whom.

## Acceptance criteria
- observable facts that show it is done

## Boundaries
- what will NOT be done

## Unknowns and assumptions
- what is still open, and the assumption made for each"""

# Labels of the amendment headings; the Chinese labels 唤醒时追加 / 运行中补充 are read back as amendments too.
WAKE_LABEL = "Added at wake"
RUNNING_LABEL = "Added while running"

_EMPTY = "(empty)"
_NOTICE = (
    "> Confirmed with the person and frozen: every round works from this file. Edit it by hand only to\n"
    "> change what is wanted; text added later appears below the four sections, with the time it came in."
)
_NEW_FILE_TITLE = "# Brief (additions only — the four sections are not written yet)"


def _stamp(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))


@dataclass(frozen=True)
class Brief:
    goal: str = ""
    acceptance: str = ""
    boundaries: str = ""
    unknowns: str = ""
    amendments: tuple[Amendment, ...] = ()

    # --- reading ------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Brief:
        """A brief from a model's answer: fenced blocks are dropped (an unclosed fence drops the rest)."""
        return cls._from(text, fences="drop")

    @classmethod
    def load(cls, path: Path | str) -> Brief:
        """The brief in ``path``; an empty brief when the file is missing or unreadable.

        Fenced blocks in the file are kept (a person may have pasted code into an amendment) but never hold
        headings.
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return cls()
        return cls._from(text, fences="keep")

    @classmethod
    def _from(cls, text: str, *, fences: Literal["drop", "keep"]) -> Brief:
        found = split_sections(text, _TABLE, fences=fences, amendments=True)
        return cls(
            goal=found.get("goal"),
            acceptance=found.get("acceptance"),
            boundaries=found.get("boundaries"),
            unknowns=found.get("unknowns"),
            amendments=tuple(found.amendments),
        )

    # --- state --------------------------------------------------------------------------------------

    def section(self, key: str) -> str:
        if key not in SECTIONS:
            raise KeyError(f"no brief section {key!r}; sections are {', '.join(SECTIONS)}")
        value: str = getattr(self, key)
        return value

    @property
    def complete(self) -> bool:
        """All four sections are non-empty."""
        return not self.missing()

    def missing(self) -> list[str]:
        """Titles of the empty sections, in order (what the clarifier is told to fill in)."""
        return [TITLES[key] for key in SECTIONS if not self.section(key).strip()]

    def mentions(self, text: str) -> bool:
        """``text`` (whitespace-normalised) already appears verbatim in the brief: a wake sentence that is
        already there is not appended again."""
        needle = " ".join(text.split())
        if not needle:
            return True
        haystack = " ".join([*(self.section(k) for k in SECTIONS), *(a.text for a in self.amendments)])
        return needle in " ".join(haystack.split())

    # --- writing ------------------------------------------------------------------------------------

    def prompt_block(self) -> str:
        """The brief as a model is shown it: the non-empty sections, then the amendments."""
        blocks = [f"## {TITLES[key]}\n{self.section(key)}" for key in SECTIONS if self.section(key).strip()]
        blocks += [f"{a.heading()}\n{a.text}" for a in self.amendments if a.text.strip()]
        return "\n\n".join(blocks)

    def to_markdown(self) -> str:
        parts = ["# Brief", "", _NOTICE]
        for key in SECTIONS:
            parts += ["", f"## {TITLES[key]}", self.section(key).strip() or _EMPTY]
        for amendment in self.amendments:
            parts += ["", amendment.heading(), amendment.text.strip()]
        return "\n".join(parts) + "\n"

    def write(self, path: Path | str) -> Brief:
        """Freeze the brief into ``path`` (atomically) and return what was written.

        Amendments already in the file and not in this brief are kept: a mail that arrived while the
        clarifier was still working must survive the brief being frozen.
        """
        target = Path(path)
        with notes_lock(target):
            on_disk = Brief.load(target).amendments
            extra = tuple(a for a in on_disk if a not in self.amendments)
            written = replace(self, amendments=(*self.amendments, *extra)) if extra else self
            atomic_write_text(target, written.to_markdown())
        return written

    def with_amendment(self, text: str, label: str = RUNNING_LABEL, *, now: float | None = None) -> Brief:
        return replace(self, amendments=(*self.amendments, Amendment(label, _stamp(now), text.strip())))

    @staticmethod
    def amend(path: Path | str, text: str, label: str = RUNNING_LABEL, *, now: float | None = None) -> bool:
        """Append ``text`` to the brief file under ``## <label> (<date time>)``; False when there is nothing
        to append or the file cannot be written.

        The file is rewritten atomically under a lock, so a mail arriving while the clarifier freezes the
        brief lands after it instead of being lost.
        """
        body = text.strip()
        if not body:
            return False
        target = Path(path)
        try:
            with notes_lock(target):
                try:
                    existing = target.read_text(encoding="utf-8")
                except FileNotFoundError:
                    existing = _NEW_FILE_TITLE + "\n"
                heading = Amendment(label, _stamp(now), body).heading()
                atomic_write_text(target, f"{existing.rstrip()}\n\n{heading}\n{body}\n")
        except (OSError, UnicodeDecodeError):
            return False
        return True
