"""The judge's verdict on a round: achieved, not yet, or unreachable (or, when it said nothing clear, empty).

Read from the ``Verdict`` section when there is one (``**Verdict**: not yet``, ``## 结论`` …), else from the
whole answer. Words are matched as words, not substrings, and negations count: "achieved, nothing
failed" and "达成(no blockers)" are achieved; "not achieved", "not yet achieved", "未达成" are not yet. Outside
a Verdict section, an answer naming more than one state is ambiguous: a judge's prose must not end a run by
accident.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from .._shared.sections import alias_table, bullet_items, split_sections

__all__ = [
    "ALIASES",
    "FORMAT",
    "NO_CLEAR_VERDICT",
    "UNREACHABLE_OPTIONS",
    "Choice",
    "State",
    "Verdict",
    "classify",
    "unreachable_choice",
    "unreachable_question",
]

State = Literal["achieved", "not_yet", "unreachable", ""]

ALIASES: dict[str, tuple[str, ...]] = {
    "state": ("Verdict", "Conclusion", "Decision", "Outcome", "Result", "结论", "判定", "判定结论"),
    "reason": ("Reason", "Reasons", "Why", "Rationale", "Evidence", "Justification", "理由", "依据"),
    "failed": (
        "Failed checks",
        "Failed",
        "Failing checks",
        "Checks that failed",
        "Not passed",
        "Unmet checks",
        "Gaps",
        "未通过",
        "未通过项",
        "没通过",
    ),
}
_TABLE = alias_table(ALIASES)

# The shape the judge is asked for (the parser also reads the Chinese headings in `ALIASES`).
FORMAT = """## Verdict
achieved | not yet | unreachable

## Reason
What you checked and what you saw, in a few sentences.

## Failed checks
- each check that does not pass yet, as written in the goal (or "none")"""

NO_CLEAR_VERDICT = "The judge gave no clear verdict; treated as not reached yet."

_PHRASES: dict[State, tuple[str, ...]] = {
    "unreachable": (
        "unreachable",
        "unachievable",
        "not achievable",
        "not reachable",
        "impossible",
        "cannot be achieved",
        "can't be achieved",
        "can not be achieved",
        "cannot be reached",
        "cannot be met",
        "cannot be verified",
        "can't be verified",
        "cannot verify",
        "can't verify",
        "unverifiable",
        "not verifiable",
        "无法验证",
        "没法验证",
        "验证不了",
        "无法判定",
        "无法达成",
        "不可达成",
        "不能达成",
        "不可能达成",
        "达不成",
        "做不到",
        "不可能",
    ),
    "not_yet": (
        "not yet",
        "not_yet",
        "not-yet",
        "not achieved",
        "not yet achieved",
        "not been achieved",
        "not reached",
        "not met",
        "not done",
        "not complete",
        "not completed",
        "unmet",
        "incomplete",
        "partially achieved",
        "未达成",
        "没达成",
        "尚未达成",
        "没有达成",
        "还没达成",
        "没能达成",
        "部分达成",
        "未完成",
        "没完成",
    ),
    "achieved": (
        "achieved",
        "reached",
        "met",
        "done",
        "complete",
        "completed",
        "accomplished",
        "已达成",
        "达成",
        "已完成",
        "完成",
    ),
}
# Whole-answer tokens: "yes"/"no" count only standing alone ("No blockers, achieved" is achieved).
_TOKENS: dict[str, State] = {
    "yes": "achieved",
    "true": "achieved",
    "1": "achieved",
    "no": "not_yet",
    "false": "not_yet",
    "0": "not_yet",
}
_NEGATORS = frozenset(
    {
        "not",
        "never",
        "isn't",
        "wasn't",
        "hasn't",
        "haven't",
        "hadn't",
        "aren't",
        "weren't",
        "didn't",
        "doesn't",
        "don't",
        "won't",
    }
)


def _pattern() -> re.Pattern[str]:
    entries = sorted(((p, s) for s, ps in _PHRASES.items() for p in ps), key=lambda e: -len(e[0]))
    parts = []
    for phrase, _ in entries:
        escaped = re.escape(phrase).replace(r"\ ", r"\s+")
        parts.append(rf"(?<![a-z0-9]){escaped}(?![a-z0-9])" if phrase.isascii() else escaped)
    return re.compile("|".join(parts))


_PATTERN = _pattern()
_STATE_OF: dict[str, State] = {p: s for s, ps in _PHRASES.items() for p in ps}


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def _state_of(text: str, match: re.Match[str]) -> State:
    phrase = " ".join(match.group(0).split())
    state = _STATE_OF[phrase]
    if state == "achieved":
        # "not fully achieved", "hasn't been met", "未/没/不 + 完成": a negated success is a "not yet".
        before = text[: match.start()]
        clause = re.split(r"[.,;:!?()\[\]\n—–-]", before)[-1].split()[-3:]
        if any(word in _NEGATORS for word in clause) or before[-1:] in ("未", "没", "不", "非"):
            return "not_yet"
    return state


def _token(text: str) -> State | None:
    """``yes``/``no``/``1``/``0``… as the whole answer, or as its first word followed by punctuation."""
    bare = text.strip().strip("*_`'\"").strip()
    whole = re.fullmatch(r"([a-z0-9]+)[.!]?", bare)
    if whole and whole.group(1) in _TOKENS:
        return _TOKENS[whole.group(1)]
    lead = re.match(r"([a-z]+)\s*[,.;:!—–-]", bare)
    if lead and lead.group(1) in ("yes", "no"):
        return _TOKENS[lead.group(1)]
    return None


def classify(text: str, *, strict: bool = False) -> State:
    """The state ``text`` names. Leftmost phrase wins; with ``strict``, more than one state named → ""."""
    norm = _normal(text)
    token = _token(norm)
    if token is not None:
        return token
    states = [_state_of(norm, m) for m in _PATTERN.finditer(norm)]
    if not states:
        return ""
    if (strict and len(set(states)) > 1) or len(set(states)) == 3:
        return ""  # naming all three is the format's template copied back, not a verdict
    return states[0]


def _none_marker(item: str) -> bool:
    return _normal(item).strip(" .()（）") in {"none", "nothing", "n/a", "-", "无", "没有", "空", "暂无"}


@dataclass(frozen=True)
class Verdict:
    state: State = ""
    reason: str = ""
    failed: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Verdict:
        found = split_sections(text, _TABLE)
        failed = tuple(item for item in bullet_items(found.get("failed")) if not _none_marker(item))
        if "state" in found.seen:
            state = classify(found.get("state"))
        else:
            state = classify(text, strict=True)
        return cls(state, found.get("reason"), failed)

    @property
    def ok(self) -> bool:
        """A state was read (False = the judge said nothing clear)."""
        return self.state != ""

    @property
    def achieved(self) -> bool:
        return self.state == "achieved"

    @property
    def unreachable(self) -> bool:
        return self.state == "unreachable"

    def feedback(self) -> str:
        """What the worker's session is told when the round is rejected ("" when the goal was achieved)."""
        if self.achieved:
            return ""
        lines = [
            "The last round has not reached the goal yet. The judge's reason:",
            self.reason.strip() or NO_CLEAR_VERDICT,
        ]
        if self.failed:
            lines += ["", "Checks that do not pass yet:", *(f"- {item}" for item in self.failed)]
        lines += [
            "",
            "Continue from where you are and close only these gaps. Do not start over, and do not widen the scope.",
        ]
        return "\n".join(lines)


# --- asking the person when the goal is judged unreachable -------------------------------------------

Choice = Literal["accept", "change", "continue"]

UNREACHABLE_OPTIONS = (
    "Accept this result and stop working on the goal",
    "Change the goal",
    "The judge is wrong: keep working",
)


def unreachable_question(reason: str) -> str:
    """The question put to the person when a round is judged unreachable (asked with `UNREACHABLE_OPTIONS`)."""
    return f"The judge says the goal is **unreachable**: {reason.strip() or NO_CLEAR_VERDICT}\nWhat now?"


def unreachable_choice(answer: str) -> Choice:
    """What the person's answer to `unreachable_question` means. A picked option or an answer starting with
    "accept"/"接受" accepts, "change"/"修改" changes the goal; anything else says the judge is wrong (the
    words themselves go back to the worker)."""
    text = _normal(answer).strip()
    if text == _normal(UNREACHABLE_OPTIONS[0]) or text.startswith(("accept", "接受")):
        return "accept"
    if text == _normal(UNREACHABLE_OPTIONS[1]) or text.startswith(("change", "修改", "改目标")):
        return "change"
    return "continue"
