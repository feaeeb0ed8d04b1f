"""`LoadReport`: what one layered load changed, and the one-line summary the UI shows."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["LoadReport", "trim_report"]


@dataclass(frozen=True, slots=True)
class LoadReport:
    """Counts of one load's rewrite. All zero means the transcript went to the model unchanged."""

    expired: int = 0  # glance results replaced by an "expired" note
    trimmed: int = 0  # large results moved to spill files
    kept: int = 0  # large results left in place (the newest keep_recent)
    chars_saved: int = 0  # characters the trimmed results no longer send
    denials_dropped: int = 0  # old denials removed (tool_use + tool_result)
    api_errors_dropped: int = 0  # synthetic error entries removed
    interrupts_neutralized: int = 0  # interrupted-call results replaced by a neutral note
    orphans_healed: int = 0  # tool_use blocks given a synthetic result
    pruned: int = 0  # entries removed from the transcript in total
    fitted: int = 0  # tool outputs and inputs moved to spill files to fit the size budget (beyond ``trimmed``)
    # With a size budget (``TrimPolicy.budget``, characters): the budget, and the characters the load sends
    # (`history_chars` of the rewritten transcript). Both 0 without a budget.
    sent_chars: int = 0
    budget: int = 0
    # What the load found odd and passed through or repaired (a line that is not an object, a parentUuid that
    # is not a string, a uuid two entries share): one line each. They change nothing the counts above count.
    notes: tuple[str, ...] = ()

    def __add__(self, other: LoadReport) -> LoadReport:
        return LoadReport(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __bool__(self) -> bool:
        """Whether the load changed what the model is sent (``kept`` and ``notes`` change nothing)."""
        return any(
            getattr(self, f.name) for f in fields(self) if f.name not in ("kept", "notes", "sent_chars", "budget")
        )

    @property
    def over_budget(self) -> int:
        """How many characters the load sends beyond its budget (0: it fits, or there was no budget). A load
        over its budget cannot succeed as a request: the caller hands off instead of sending it."""
        return max(0, self.sent_chars - self.budget) if self.budget else 0

    def as_dict(self) -> dict[str, Any]:
        return {f.name: list(self.notes) if f.name == "notes" else getattr(self, f.name) for f in fields(self)}

    def summary(self) -> str:
        """One line for a status bar, e.g. ``trimmed 12 tool results (kept 20), saved ~48k tokens; …``."""
        parts: list[str] = []
        if self.trimmed:
            parts.append(
                f"trimmed {self.trimmed} tool result{_s(self.trimmed)} (kept {self.kept}), saved ~{_tokens(self.chars_saved)} tokens"
            )
        if self.fitted:
            parts.append(f"moved {self.fitted} more tool output{_s(self.fitted)} or input{_s(self.fitted)} to fit")
        if self.over_budget:
            parts.append(f"still {self.sent_chars:,} characters, over the budget of {self.budget:,}")
        if self.expired:
            parts.append(f"expired {self.expired} stale result{_s(self.expired)}")
        if self.pruned:
            parts.append(f"pruned {self.pruned} entr{'y' if self.pruned == 1 else 'ies'}")
        repaired = self.interrupts_neutralized + self.orphans_healed
        if repaired:
            parts.append(f"repaired {repaired} interrupted call{_s(repaired)}")
        if self.notes:
            parts.append(f"noted {len(self.notes)} odd entr{'y' if len(self.notes) == 1 else 'ies'}")
        return "; ".join(parts) if parts else "nothing trimmed"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _tokens(chars: int) -> str:
    tokens = chars // 4  # the usual ~4 characters per token
    return f"{tokens // 1000}k" if tokens >= 1000 else str(tokens)


def trim_report(store_or_report: Any) -> str:
    """The one-line summary of a store's last load (``store.last_report``), or of a `LoadReport`."""
    report = (
        store_or_report if isinstance(store_or_report, LoadReport) else getattr(store_or_report, "last_report", None)
    )
    if not isinstance(report, LoadReport):
        return "nothing trimmed"
    return report.summary()
