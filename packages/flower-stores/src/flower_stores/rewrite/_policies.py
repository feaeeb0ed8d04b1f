"""What each load-time layer does, as frozen settings objects (safe to share between stores and threads)."""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["EphemeralPolicy", "PrunePolicy", "TrimPolicy", "first_line"]


@functools.lru_cache(maxsize=1024)  # a session repeats the same few glances thousands of times
def first_line(command: str, limit: int = 60) -> str:
    """How a command is shown in an "expired" note: its first line, cut to ``limit`` characters."""
    line = command.strip().splitlines()[0] if command.strip() else ""
    return line if len(line) <= limit else line[:limit] + "…"


@dataclass(frozen=True, slots=True)
class TrimPolicy:
    """Size: old large tool results move to spill files and leave a one-line pointer behind.

    Every ``tool_result`` whose text is at least ``min_chars`` long is a site; all but the newest
    ``keep_recent`` sites are written to ``<workspace>/<spill_dirname>/<sha256[:16]>.txt`` and replaced by
    the pointer. ``spill_dirname`` may be absolute (then the pointer shows the absolute path). Results with
    images or documents are never trimmed.
    """

    keep_recent: int = 10
    min_chars: int = 1000
    spill_dirname: str = ".flower/spill"
    enabled: bool = True
    text: str = (
        "[Earlier tool result trimmed: {chars:,} characters saved to {path}; Read that file if you need it again.]"
    )

    budget: int | None = None
    mask_over: int | None = 50_000

    def __post_init__(self) -> None:
        if self.min_chars < 1:
            raise ValueError(f"TrimPolicy.min_chars must be at least 1, not {self.min_chars}")
        if self.mask_over is not None and self.mask_over < 0:
            raise ValueError(f"TrimPolicy.mask_over must be None or at least 0, not {self.mask_over}")
        if self.budget is not None and self.budget < 1:
            raise ValueError(f"TrimPolicy.budget must be None or at least 1, not {self.budget}")

    def applies(self, output_chars: int) -> bool:
        """Whether the count rule runs on a load whose tool outputs total ``output_chars`` characters."""
        return self.enabled or (self.mask_over is not None and output_chars > self.mask_over)

    def placeholder(self, path: str, chars: int) -> str:
        """The pointer; ``path`` is relative to the workspace (the agent's working directory) when inside it."""
        return self.text.format(path=path, chars=chars)


@dataclass(frozen=True, slots=True)
class EphemeralPolicy:
    """Staleness: results of read-only glances (``git status``, ``ls`` — see `is_ephemeral`) expire.

    All but the newest ``keep_recent`` glance results become a short "expired" note; results longer than
    ``max_chars`` are left to the trimming layer. Nothing is spilled: a stale ``git status`` is worth nothing,
    and rerunning it is cheap.
    """

    enabled: bool = True
    keep_recent: int = 6
    max_chars: int = 2000
    text: str = "[`{cmd}` result expired {age} results ago; the state may have changed — rerun it if needed]"

    def placeholder(self, command: str, age: int) -> str:
        return self.text.format(cmd=first_line(command), age=age)


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """Errors and debris: what is dropped or repaired so a resumed model sees a clean, valid history.

    - ``drop_api_errors``: synthetic assistant entries (``isApiErrorMessage`` or ``model == "<synthetic>"``)
      are removed; the model must not read "API Error: Connection dropped" as something it said.
    - ``keep_denials``: of the permission denials (``toolDenialKind`` in ``denial_kinds``), only the newest
      ``keep_denials`` stay; each older one loses its ``tool_use`` block and its ``tool_result`` block
      together. The newest one stops an immediate retry of the same blocked call; more teach the model that
      it "cannot use tools".
    - ``denial_kinds``: ``permission-rule`` (a deny rule or a ``can_use_tool`` refusal) and ``user-rejected``
      (a call that was not pre-approved and could not be asked about). Both are pruned: a headless run
      produces the second for every tool outside ``allowed_tools``, with the same "learned helplessness"
      effect. An *interrupted* call is also marked ``user-rejected`` by Claude Code, but it is never a denial
      here (it did run): it is neutralised instead.
    - ``neutralize_interrupts``: the result of a call stopped while running ("The user doesn't want to
      proceed … STOP what you are doing and wait …") becomes ``interrupt_text``; a resumed run should not
      wait for a user who is not there.
    - ``heal_orphans``: a ``tool_use`` without any result gets a synthetic result (``orphan_text``), which the
      API requires.
    """

    drop_api_errors: bool = True
    neutralize_interrupts: bool = True
    heal_orphans: bool = True
    keep_denials: int = 1
    denial_kinds: Collection[str] = frozenset(
        {"permission-rule", "user-rejected"}
    )  # any collection; kept as a frozenset (hashable)
    interrupt_text: str = "[This tool call was interrupted before it finished; it may have run in part. Check the current state before running it again.]"
    orphan_text: str = "[This tool call was cut off and no result was recorded; it may have run in part. Check the current state and redo it if it is still needed.]"

    def __post_init__(self) -> None:
        if not isinstance(self.denial_kinds, frozenset):
            object.__setattr__(self, "denial_kinds", frozenset(self.denial_kinds))
