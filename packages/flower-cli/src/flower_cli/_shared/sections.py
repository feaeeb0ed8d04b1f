"""Splitting a model's (or a person's) Markdown into named sections: the one parser brief, goal, verdict and
handoff share.

A heading is a line in one of the forms ``## X``, ``**X**``, ``X:`` / ``X：``, ``3. X`` / ``3、X``, with an
optional body on the same line (``**X**: body``, ``3. X: body``), where **the heading part is exactly one of
the section's aliases** (case-insensitive, an optional trailing ``(…)`` allowed). A line that merely
*begins* with an alias word ("目标平台是 Linux", "Assumptions we make about…") is body text: taken for a
heading, it would cut the section short.

Amendment headings appended later (``## Added at wake (2025-01-02 10:00:00)``, or the Chinese
``## 唤醒时追加(10:00:00)``) are recognised by their trailing time stamp and kept apart, not folded into the
last section.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "EMPTY_MARKERS",
    "Amendment",
    "Sections",
    "alias_table",
    "bullet_items",
    "is_empty_marker",
    "split_sections",
]

# What an empty section holds in flower's files (and in the Chinese ones of docs/compatibility.md).
EMPTY_MARKERS = frozenset({"(empty)", "(none)", "(未填)", "(空)", "(暂无)", "(无)"})

_FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
_RULE = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_HASHES = re.compile(r"^\s{0,3}[#＃]{1,6}[ \t]*")  # models do write "##目标" without the space
_NUMBER = re.compile(r"^\s{0,3}(?:\d{1,2}|[一二三四五六七八九十]{1,3})[ \t]*[.、)．）][ \t]*")
_BOLD = re.compile(r"^(\*\*|__)(.+?)\1(.*)$")
_COLON = re.compile(r"[:：]")
_PAREN_TAIL = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")
# A stamp like 10:00:00, 10:00, or 2025-01-02 10:00:00 inside trailing parentheses marks an amendment.
_STAMPED = re.compile(
    r"^(?P<label>.+?)\s*[(（](?P<stamp>[^()（）]*\d{1,2}[:：]\d{2}(?:[:：]\d{2})?[^()（）]*)[)）]\s*$"
)


@dataclass(frozen=True)
class Amendment:
    """Text appended to a frozen file after the fact, under ``## <label> (<stamp>)``."""

    label: str
    stamp: str
    text: str

    def heading(self) -> str:
        return f"## {self.label} ({self.stamp})" if self.stamp else f"## {self.label}"


@dataclass
class Sections:
    """The first non-empty body of each key, and any amendments, in file order."""

    bodies: dict[str, str] = field(default_factory=dict)
    amendments: list[Amendment] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # keys whose heading appeared (even with an empty body)

    def get(self, key: str) -> str:
        return self.bodies.get(key, "")


def _norm(text: str) -> str:
    """How heading words are compared: NFKC (full-width → ASCII), casefolded, single-spaced."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


_EMPTY_NORMALISED = frozenset(_norm(m) for m in EMPTY_MARKERS)


def alias_table(aliases: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{key: [alias, …]}`` → ``{normalised alias: key}``."""
    table: dict[str, str] = {}
    for key, names in aliases.items():
        for name in names:
            table[_norm(name)] = key
    return table


def is_empty_marker(text: str) -> bool:
    return _norm(text) in _EMPTY_NORMALISED


def _lookup(head: str, table: Mapping[str, str]) -> str | None:
    head = head.strip().rstrip(":：").strip()
    key = table.get(_norm(head))
    if key is None:
        # "Boundaries (what we will not do)", "边界（不做什么）": the parenthetical is a gloss.
        bare = _PAREN_TAIL.sub("", head)
        if bare != head:
            key = table.get(_norm(bare.rstrip(":：")))
    return key


@dataclass(frozen=True)
class _Heading:
    kind: Literal["section", "amendment"]
    name: str  # the section key, or the amendment's label
    body: str  # text on the heading's own line, or the amendment's stamp
    strong: bool  # "## X" / "**X**"; weak = "3. X: …" / "X: …", which are often just labelled list lines


def _heading(line: str, table: Mapping[str, str]) -> _Heading | None:
    rest = line.rstrip()
    strong = False
    numbered = False
    hashes = _HASHES.match(rest)
    if hashes:
        rest = rest[hashes.end() :]
        rest = re.sub(r"\s+[#＃]+\s*$", "", rest)  # closing hashes: "## Goal ##"
        strong = True
        stamped = _STAMPED.match(rest.strip())
        if stamped and _lookup(stamped.group("label"), table) is None:
            return _Heading("amendment", stamped.group("label").strip(), stamped.group("stamp").strip(), True)
    else:
        number = _NUMBER.match(rest)
        if number:
            rest = rest[number.end() :]
            numbered = True
    rest = rest.strip()
    bold = _BOLD.match(rest)
    if bold:
        key = _lookup(bold.group(2), table)
        if key is None:
            return None
        after = bold.group(3).strip()
        if after[:1] in (":", "："):
            after = after[1:].strip()
        return _Heading("section", key, after, not numbered)
    colon = _COLON.search(rest)
    if colon:
        key = _lookup(rest[: colon.start()], table)
        if key is not None:
            return _Heading("section", key, rest[colon.end() :].strip(), strong)
    if not (strong or numbered):
        return None  # a bare line is a heading only with a colon ("Goal: …"); "Goal-oriented …" is text
    key = _lookup(rest, table)
    return _Heading("section", key, "", strong) if key is not None else None


def _lines(text: str, fences: Literal["drop", "keep"]) -> Iterator[tuple[str, bool]]:
    """Each line and whether it may be a heading. Fenced blocks are dropped (an unclosed fence drops the
    rest), or kept as plain text that never holds a heading."""
    fence: str | None = None
    for line in text.splitlines():
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)[0] * 3
            if fences == "keep":
                yield line, False
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            if fences == "keep":
                yield line, False
            continue
        yield line, True


def _tidy(lines: list[str]) -> str:
    """Drop horizontal rules, squeeze runs of blank lines to one, strip the ends."""
    kept = [line for line in lines if not _RULE.match(line)]
    text = "\n".join(kept)
    text = re.sub(r"\n[ \t]*(?:\n[ \t]*)+\n", "\n\n", text)
    text = re.sub(r"^(?:[ \t]*\n)+", "", text).rstrip()
    return "" if is_empty_marker(text) else text  # a body that is only a placeholder is empty


def split_sections(
    text: str,
    table: Mapping[str, str],
    *,
    fences: Literal["drop", "keep"] = "drop",
    amendments: bool = False,
) -> Sections:
    """Split ``text`` by the headings of ``table`` (from `alias_table`).

    The first non-empty body of a key wins (a model that restates its answer does not override it). A
    heading naming the section already open is body text ("Assumption: the API is stable" inside the
    unknowns), and so is a weak heading (``X: …``, ``3. X: …``) naming a section already filled. With ``amendments``, a
    ``## <label> (<time>)`` heading starts an amendment, and everything after the first one belongs to
    amendments (they are always appended at the end, and what a person typed must not re-open a section).
    """
    out = Sections()
    current: str | None = None
    current_amendment: tuple[str, str] | None = None
    buffer: list[str] = []

    def close() -> None:
        body = _tidy(buffer)
        if current_amendment is not None:
            label, stamp = current_amendment
            out.amendments.append(Amendment(label, stamp, body))
        elif current is not None and body and not out.bodies.get(current):
            out.bodies[current] = body
        buffer.clear()

    for line, may_head in _lines(text, fences):
        found = _heading(line, table) if may_head else None
        if found is None:
            buffer.append(line)
            continue
        if found.kind == "amendment":
            if not amendments:
                buffer.append(line)
                continue
            close()
            current_amendment = (found.name, found.body)
            continue
        if current_amendment is not None:
            buffer.append(line)
            continue
        if found.name == current:
            # Repeating the open section's name never starts a new one: "Assumption: …" inside the
            # unknowns, or "## Goal" written twice in a row.
            if found.strong and not any(b.strip() for b in buffer):
                if found.body:
                    buffer.append(found.body)
            else:
                buffer.append(line)
            continue
        if not found.strong and out.bodies.get(found.name):
            buffer.append(line)  # "1. Goal: 90% coverage" inside the acceptance list is a list item
            continue
        close()
        current = found.name
        out.seen.add(found.name)
        if found.body:
            buffer.append(found.body)
    close()
    return out


_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)、．）]|[(（]\d{1,3}[)）])\s+|^\s*\d{1,3}、")
_CHECKBOX = re.compile(r"^\[[ xX✓✔]?\]\s*")


def bullet_items(body: str) -> list[str]:
    """A list section's items, bullet/number/checkbox markers stripped.

    A marked line starts an item; an indented unmarked line continues the one before; any other non-empty
    line is an item of its own (models do not always use bullets).
    """
    items: list[str] = []
    for raw in body.splitlines():
        if not raw.strip() or is_empty_marker(raw):
            continue
        marker = _BULLET.match(raw)
        if marker:
            item = _CHECKBOX.sub("", raw[marker.end() :].strip())
            if item:
                items.append(item)
        elif items and raw[:1] in (" ", "\t"):
            items[-1] = f"{items[-1]} {raw.strip()}"
        else:
            items.append(_CHECKBOX.sub("", raw.strip()))
    return [item for item in items if item]
