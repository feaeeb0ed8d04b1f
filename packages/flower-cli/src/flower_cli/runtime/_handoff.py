"""Handoff instead of compaction: when a session's context nears the window, it writes a five-part handoff and
a fresh session takes the step over from it.

This module holds the self-contained parts: the policy (window, threshold, warning point, generations), where
the window comes from, recognising a context-overflow API error, the handoff document (parse, Markdown, the
successor's prompt, the mechanical "degraded" fallback) and saving it under the workbench's ``notes/``.

Window precedence: an explicit value (``--window``) > ``FLOWER_WINDOW`` > the calibration file (the smallest
context seen in a real overflow for this endpoint and model) > a guess from the model name. The guess is
200,000 unless the name asks for the 1M context (a standalone ``1m`` / ``[1m]``): 200k is the standard window
of every current Claude model, and the 1M window is an opt-in that Claude Code selects with that suffix. A
guess that is too large is the expensive mistake (the request overflows and the handoff degrades); a default
of 1M would make it on every gateway (docs/compatibility.md).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from .._shared.files import atomic_write_text, file_lock, move_aside, read_json
from .._shared.notes_lock import notes_lock
from .._shared.sections import alias_table, split_sections

__all__ = [
    "DEFAULT_WINDOW",
    "HANDOFF_PROMPT",
    "OVERFLOW_WHY",
    "SECTIONS",
    "TITLES",
    "Handoff",
    "HandoffPolicy",
    "Window",
    "calibration_path",
    "degraded",
    "guess_window",
    "handoff_prompt",
    "is_overflow",
    "parse_token_count",
    "record_overflow",
    "resolve_window",
    "safe_step_name",
    "save",
]

DEFAULT_WINDOW = 200_000
_ONE_MILLION = 1_000_000
_MIN_AT = 10_000
_MIN_WARN = 1_000
_WARN_BEFORE = 20_000
_AUTO_HEADROOM_FLOOR = 50_000

# --- the window -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A context window size and where it came from (for ``-v`` and ``flower doctor``)."""

    tokens: int
    source: Literal["option", "FLOWER_WINDOW", "calibrated", "model name", "default"]
    note: str = ""  # e.g. why FLOWER_WINDOW was ignored


def parse_token_count(text: str) -> int:
    """``"200000"``, ``"200_000"``, ``"200k"``, ``"1m"``, ``"1.5M"`` → tokens; ValueError with a clear message."""
    raw = text.strip().lower().replace("_", "").replace(",", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([km]?)", raw)
    if not match:
        raise ValueError(f"{text!r} is not a token count; write e.g. 200000, 200k or 1m")
    value = float(match.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2)]
    if value < 1 or value != int(value):
        raise ValueError(f"{text!r} is not a positive whole number of tokens")
    return int(value)


def guess_window(model: str | None) -> int:
    """The window a model name implies: 1M when it asks for it (``…[1m]``, ``…-1m``), else 200k."""
    if model and re.search(r"(?<![a-z0-9])1m(?![a-z0-9])", model.lower()):
        return _ONE_MILLION
    return DEFAULT_WINDOW


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _model(model: str | None, env: Mapping[str, str]) -> str:
    return model or env.get("ANTHROPIC_MODEL") or env.get("ANTHROPIC_DEFAULT_OPUS_MODEL") or ""


def calibration_path(env: Mapping[str, str] | None = None) -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.windows``."""
    e = _env(env)
    base = e.get("XDG_CONFIG_HOME") or str(Path(e.get("HOME") or Path.home()) / ".config")
    return Path(base) / "flower" / ".windows"


def _calibration_key(model: str, base_url: str | None, env: Mapping[str, str]) -> str:
    url = (base_url or env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/") or "default"
    return f"{url}|{model or 'default'}"


def _read_calibration(path: Path) -> dict[str, int]:
    data, _problem = read_json(path)
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def resolve_window(
    window: int | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Window:
    """The context window to plan handoffs against, and its source (see the module docstring)."""
    if window is not None:
        if window <= 0:
            raise ValueError(f"a context window must be a positive token count, not {window}")
        return Window(window, "option")
    e = _env(env)
    note = ""
    raw = e.get("FLOWER_WINDOW", "").strip()
    if raw:
        try:
            return Window(parse_token_count(raw), "FLOWER_WINDOW")
        except ValueError as exc:
            note = f"FLOWER_WINDOW ignored: {exc}"
    name = _model(model, e)
    seen = _read_calibration(calibration_path(e)).get(_calibration_key(name, base_url, e))
    if seen:
        return Window(seen, "calibrated", note)
    if name:
        return Window(guess_window(name), "model name", note)
    return Window(DEFAULT_WINDOW, "default", note)


def record_overflow(
    context: int,
    *,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Remember that ``context`` tokens overflowed this endpoint and model, so later runs plan for it.

    Keeps the smallest value seen. Written atomically under a lock (parallel runs share the file); a corrupt
    file is moved aside, not overwritten. False when there was nothing to record or it could not be written.
    """
    if context <= 0:
        return False
    e = _env(env)
    path = calibration_path(e)
    key = _calibration_key(_model(model, e), base_url, e)
    try:
        with file_lock(path):
            data, problem = read_json(path)
            if problem:
                move_aside(path)
                data = None
            known = _read_calibration(path) if data is not None else {}
            if key in known and known[key] <= context:
                return True
            known[key] = context
            atomic_write_text(path, json.dumps(known, indent=2, sort_keys=True) + "\n")
    except OSError:
        return False
    return True


# --- the policy -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HandoffPolicy:
    """When to hand off. ``window=None`` resolves it (`resolve_window`) when asked; ``headroom=0`` means
    automatic: ``max(50_000, window // 4)`` (a 200k window hands off at 150k, 1M at 750k).

    ``at = max(10_000, window - headroom)``; ``warn_at = max(1_000, at - 20_000)``; at most
    ``max_generations`` handoffs in one step (then it stops with a diagnostic instead of burning money on
    sessions that fill up at start).
    """

    enabled: bool = True
    window: int | None = None
    headroom: int = 0
    max_generations: int = 8

    def __post_init__(self) -> None:
        if self.window is not None and self.window <= 0:
            raise ValueError(f"the handoff window must be a positive token count, not {self.window}")
        if self.headroom < 0:
            raise ValueError(f"the handoff headroom must be 0 (automatic) or positive, not {self.headroom}")
        if self.max_generations < 1:
            raise ValueError(f"max_generations must be at least 1, not {self.max_generations}")

    def resolved(
        self, *, model: str | None = None, base_url: str | None = None, env: Mapping[str, str] | None = None
    ) -> HandoffPolicy:
        """A copy with the window filled in from the precedence chain (unchanged when already set)."""
        if self.window is not None:
            return self
        return replace(self, window=resolve_window(model=model, base_url=base_url, env=env).tokens)

    @property
    def window_tokens(self) -> int:
        return self.window if self.window is not None else resolve_window().tokens

    @property
    def headroom_tokens(self) -> int:
        if self.headroom:
            return self.headroom
        return max(_AUTO_HEADROOM_FLOOR, self.window_tokens // 4)

    @property
    def at(self) -> int:
        """The main-thread context at which the step hands off."""
        return max(_MIN_AT, self.window_tokens - self.headroom_tokens)

    @property
    def warn_at(self) -> int:
        """The context at which a "handoff is near" warning is shown (once per generation)."""
        return max(_MIN_WARN, self.at - _WARN_BEFORE)


# --- overflow errors --------------------------------------------------------------------------------

_OVERFLOW = re.compile(
    r"prompt is too long"
    r"|context[ _]length[ _]exceeded"
    r"|maximum context length"
    r"|exceeds? (?:the |your )?(?:model'?s? )?context (?:window|limit|length)"
    r"|input length and [`'\"]?max_tokens[`'\"]? exceed"
    r"|too many total text bytes"
    r"|context window (?:is )?(?:full|exceeded)"
    r"|上下文(?:长度)?(?:超过|超出|超限)|超出(?:了)?(?:最大)?上下文",
    re.IGNORECASE,
)


def is_overflow(*texts: str | None) -> bool:
    """Whether any of ``texts`` (an API error message, a result's error, a synthetic error row) says the
    request no longer fits the context window. Such a session cannot even write its handoff."""
    return any(text and _OVERFLOW.search(text) for text in texts)


# --- the handoff document ---------------------------------------------------------------------------

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

# Why a degraded handoff was built, for the common cases (the caller may give any other reason).
OVERFLOW_WHY = "the context was too full to run even one more round to write it"

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
        """The five parts from a model's answer (English or Chinese headings, see `_ALIASES` and
        docs/compatibility.md). Code blocks are kept as text: a handoff's scene often quotes a command."""
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


_UNSAFE = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')


def safe_step_name(step: str) -> str:
    """A step name usable in a file name: path separators and characters Windows refuses removed."""
    return _UNSAFE.sub("", step).strip().strip(".") or "step"


def save(notes_dir: Path | str, step: str, doc: Handoff, *, now: float | None = None) -> Path:
    """Write ``doc`` to ``<notes>/handoff-<step>.md``; the previous generation's file, if any, is moved to
    ``<notes>/archive/handoff/<step>-<YYYYmmdd-HHMMSS>.md`` first (never overwriting an archived one)."""
    notes = Path(notes_dir)
    safe = safe_step_name(step)
    path = notes / f"handoff-{safe}.md"
    with notes_lock(path):
        if path.exists():
            archive = notes / "archive" / "handoff"
            archive.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
            target, n = archive / f"{safe}-{stamp}.md", 1
            while target.exists():
                n += 1
                target = archive / f"{safe}-{stamp}-{n}.md"
            os.replace(path, target)
        atomic_write_text(path, doc.to_markdown(step))
    return path
