"""What a role is: the declaration a Runtime turns into SDK options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["AgentSpec", "CompactPolicy", "CompactMode"]

CompactMode = Literal["auto", "no_summary", "off"]
_COMPACT_MODES = ("auto", "no_summary", "off")


@dataclass(frozen=True)
class CompactPolicy:
    """How the harness's own compaction behaves for one agent.

    The variables go into the agent subprocess's ``env`` (setting them in a shell is pointless: this copy
    wins). ``auto`` leaves the harness alone; ``no_summary`` turns auto-compaction off (``/compact`` still
    works); ``off`` disables compaction entirely. A ``window`` tells the harness the context size to
    compact against.
    """

    mode: CompactMode = "auto"
    window: int | None = None

    def __post_init__(self) -> None:
        # Checked at construction, so a bad policy fails where it is written, not later inside run().
        if self.mode not in _COMPACT_MODES:
            raise ValueError(f"unknown compact mode {self.mode!r}; use one of {', '.join(_COMPACT_MODES)}")
        if self.window is not None and self.window <= 0:
            raise ValueError(f"compact window must be a positive token count, got {self.window}")

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.mode == "no_summary":
            out["DISABLE_AUTO_COMPACT"] = "1"
        elif self.mode == "off":
            out["DISABLE_COMPACT"] = "1"
        if self.window is not None:
            out["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(self.window)
        return out


@dataclass
class AgentSpec:
    """One role: instructions appended to Claude Code's own prompt, tools, limits, hooks.

    ``allowed_tools`` is the list that runs without asking — not an exclusive whitelist; the Runtime adds a
    guard (`whitelist_guard`) so hands-on tools outside it are refused on the main thread. ``tools`` (None =
    the harness's full set) is the set of built-in tools the model is offered at all: a role that must never
    write (the aside) lists only its read-only tools, so the others are not even in its context.
    """

    name: str
    instructions: str
    allowed_tools: list[str] = field(default_factory=lambda: ["Read", "Glob", "Grep"])
    disallowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    effort: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    permission_mode: str = "default"
    agents: dict[str, Any] | None = None
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, list[Any]] | None = None
    compact: CompactPolicy | None = None
    env: dict[str, str] = field(default_factory=dict)
    glance: bool = False
    workbench: bool = True  # inject the workbench index into a new session's first message
    delegate_only: bool = False
    tools: list[str] | None = None
