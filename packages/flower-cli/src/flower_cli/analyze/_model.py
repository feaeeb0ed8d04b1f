"""What `flower analyze` reports, as plain dataclasses: per turn, per thread, per session, per step, per run.

Every number here is derived from the run dir alone (sessions.db and manifest.json); ``as_dict`` gives the
JSON form printed by ``flower --json analyze``.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, overload

__all__ = [
    "Mark",
    "MarkKind",
    "RunReport",
    "SessionReport",
    "StepReport",
    "ThreadStats",
    "Turn",
    "Turns",
    "WorkSplit",
    "share",
]

MarkKind = Literal["resume", "error", "notification", "handoff"]


def share(part: int, whole: int) -> float:
    """``part / whole`` rounded to 4 places; 0.0 when there is nothing to share."""
    return round(part / whole, 4) if whole else 0.0


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call of a thread: the usage the API reported for it.

    ``context`` is what the model read on that call: fresh input + cache read + cache creation tokens.
    """

    index: int  # 1-based within its thread
    timestamp: float | None  # epoch seconds (from the transcript entry), None when it had none
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    output_tokens: int
    tool_calls: int

    @property
    def context(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class Turns(Sequence[Turn]):
    """A thread's turns, kept as columns of machine numbers: ~48 bytes a turn instead of an object with a
    dict, because a report keeps every turn of every session (the JSON and the page show them all) and a
    run of thousands of sessions must cost what its transcripts are, read one at a time, not what its turns
    would be as objects. Indexing or iterating builds `Turn` values on the fly."""

    __slots__ = ("cache_creation", "cache_read", "input", "output", "stamps", "tool_calls")

    def __init__(self) -> None:
        self.input = array("q")
        self.cache_read = array("q")
        self.cache_creation = array("q")
        self.output = array("q")
        self.tool_calls = array("q")
        self.stamps = array("d")  # epoch seconds; NaN where the entry had no timestamp

    def append(
        self, input_tokens: int, cache_read: int, cache_creation: int, output: int, calls: int, stamp: float | None
    ) -> None:
        self.input.append(input_tokens)
        self.cache_read.append(cache_read)
        self.cache_creation.append(cache_creation)
        self.output.append(output)
        self.tool_calls.append(calls)
        self.stamps.append(math.nan if stamp is None else stamp)

    def __len__(self) -> int:
        return len(self.input)

    def _turn(self, i: int) -> Turn:
        stamp = self.stamps[i]
        return Turn(
            index=i + 1,
            timestamp=None if math.isnan(stamp) else stamp,
            input_tokens=self.input[i],
            cache_read_input_tokens=self.cache_read[i],
            cache_creation_input_tokens=self.cache_creation[i],
            output_tokens=self.output[i],
            tool_calls=self.tool_calls[i],
        )

    @overload
    def __getitem__(self, i: int) -> Turn: ...
    @overload
    def __getitem__(self, i: slice) -> list[Turn]: ...
    def __getitem__(self, i: int | slice) -> Turn | list[Turn]:
        if isinstance(i, slice):
            return [self._turn(n) for n in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("turn index out of range")
        return self._turn(i)

    def __iter__(self) -> Iterator[Turn]:
        return (self._turn(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Turns) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return f"Turns({list(self)!r})"

    def contexts(self) -> list[int]:
        """Each turn's context (input + cache read + cache creation tokens), in order."""
        return [a + b + c for a, b, c in zip(self.input, self.cache_read, self.cache_creation, strict=True)]

    def context(self, i: int) -> int:
        return self.input[i] + self.cache_read[i] + self.cache_creation[i]

    def stamped(self) -> list[float]:
        return [s for s in self.stamps if not math.isnan(s)]


@dataclass(frozen=True)
class Mark:
    """Something that happened between turns: after ``after_turn`` turns of the thread (0 = before the first).

    ``resume``: a new prompt arrived in an existing session (a retry resuming, ``--resume``, a workflow step
    resuming another, an interrupt); ``error``: a failed request (the harness's synthetic error entry);
    ``notification``: a background worker reported back; ``handoff``: the session was retired and a
    successor took over.
    """

    kind: MarkKind
    after_turn: int
    label: str = ""


@dataclass
class ThreadStats:
    """One transcript: the main thread of a session, or one worker (an Agent-tool subagent).

    ``chars`` counts the thread's own work: its text, its tool calls' inputs and their results, and the
    worker reports delivered to it — not the prompts it was given. ``spilled_*``: tool outputs the spill
    guard kept on disk (``spilled_chars`` their full size, ``spilled_kept_out`` what the pointers saved);
    ``trimmed_*``: results already replaced by a trim pointer in the stored copy (forks of trimmed loads).
    """

    name: str  # "main" or "agent-<id>"
    turns: Turns = field(default_factory=Turns)
    tool_calls: int = 0
    chars: int = 0
    prompts: int = 0
    notifications: int = 0
    api_errors: int = 0
    spilled: int = 0
    spilled_chars: int = 0
    spilled_kept_out: int = 0
    trimmed: int = 0
    trimmed_kept_out: int = 0
    marks: list[Mark] = field(default_factory=list)
    # Spill files by name (``<sha256[:16]>.txt``): the ones this thread's pointers name, and how many of its
    # tool calls named each one (reading a spilled output back — the workbench being reused).
    spill_files: set[str] = field(default_factory=set)
    files_named: dict[str, int] = field(default_factory=dict)

    @property
    def input_tokens(self) -> int:
        return sum(self.turns.input)

    @property
    def cache_read_tokens(self) -> int:
        return sum(self.turns.cache_read)

    @property
    def cache_creation_tokens(self) -> int:
        return sum(self.turns.cache_creation)

    @property
    def output_tokens(self) -> int:
        return sum(self.turns.output)

    @property
    def context_total(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def cache_hit_ratio(self) -> float:
        """Share of all context tokens read from the prompt cache."""
        return share(self.cache_read_tokens, self.context_total)

    @property
    def context_peak(self) -> int:
        return max(self.turns.contexts(), default=0)

    @property
    def context_last(self) -> int:
        return self.turns.context(-1) if self.turns else 0

    @property
    def kept_out(self) -> int:
        return self.spilled_kept_out + self.trimmed_kept_out

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "turns": len(self.turns),
            "tool_calls": self.tool_calls,
            "chars": self.chars,
            "prompts": self.prompts,
            "notifications": self.notifications,
            "api_errors": self.api_errors,
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_creation_tokens": self.cache_creation_tokens,
            "output_tokens": self.output_tokens,
            "cache_hit_ratio": self.cache_hit_ratio,
            "context_peak": self.context_peak,
            "context_last": self.context_last,
            "context_per_turn": self.turns.contexts(),
            "spilled": self.spilled,
            "spilled_chars": self.spilled_chars,
            "spilled_kept_out": self.spilled_kept_out,
            "trimmed": self.trimmed,
            "trimmed_kept_out": self.trimmed_kept_out,
            "marks": [asdict(m) for m in self.marks],
        }


@dataclass(frozen=True)
class WorkSplit:
    """The main thread against all its workers: turns, tool calls and characters of work."""

    main_turns: int
    main_tool_calls: int
    main_chars: int
    worker_turns: int
    worker_tool_calls: int
    worker_chars: int
    workers: int

    @classmethod
    def of(cls, main: ThreadStats, workers: list[ThreadStats]) -> WorkSplit:
        return cls(
            main_turns=len(main.turns),
            main_tool_calls=main.tool_calls,
            main_chars=main.chars,
            worker_turns=sum(len(w.turns) for w in workers),
            worker_tool_calls=sum(w.tool_calls for w in workers),
            worker_chars=sum(w.chars for w in workers),
            workers=sum(1 for w in workers if w.turns),
        )

    def __add__(self, other: WorkSplit) -> WorkSplit:
        return WorkSplit(
            self.main_turns + other.main_turns,
            self.main_tool_calls + other.main_tool_calls,
            self.main_chars + other.main_chars,
            self.worker_turns + other.worker_turns,
            self.worker_tool_calls + other.worker_tool_calls,
            self.worker_chars + other.worker_chars,
            self.workers + other.workers,
        )

    @property
    def worker_share(self) -> float:
        """Share of all characters of work done in workers rather than in the main thread."""
        return share(self.worker_chars, self.main_chars + self.worker_chars)

    @property
    def worker_tool_share(self) -> float:
        return share(self.worker_tool_calls, self.main_tool_calls + self.worker_tool_calls)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "worker_share": self.worker_share, "worker_tool_share": self.worker_tool_share}


EMPTY_SPLIT = WorkSplit(0, 0, 0, 0, 0, 0, 0)


@dataclass
class SessionReport:
    """One session: its main-thread curve, its workers, what the layers keep out, where it came from and went."""

    session_id: str
    project_key: str
    main: ThreadStats
    workers: list[ThreadStats]
    steps: list[str] = field(default_factory=list)
    cost_usd: float = 0.0
    handoff_from: str | None = None
    handoff_to: str | None = None
    # What the store's load-time layers (expire + trim + prune, default policies, trimming on) would keep out
    # of the context if this session were resumed now: flower_stores.LoadReport as a dict.
    on_resume: dict[str, int] = field(default_factory=dict)
    in_manifest: bool = True

    @property
    def split(self) -> WorkSplit:
        return WorkSplit.of(self.main, self.workers)

    @property
    def started(self) -> float | None:
        return min(self.main.turns.stamped(), default=None)

    @property
    def spilled_kept_out(self) -> int:
        return self.main.spilled_kept_out + sum(w.spilled_kept_out for w in self.workers)

    @property
    def spilled(self) -> int:
        return self.main.spilled + sum(w.spilled for w in self.workers)

    @property
    def spill_reads(self) -> int:
        """Tool calls (main thread or workers) that read a spilled output of this session back."""
        threads = [self.main, *self.workers]
        files: set[str] = set()
        for thread in threads:
            files |= thread.spill_files
        return sum(n for t in threads for name, n in t.files_named.items() if name in files)

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "project_key": self.project_key,
            "steps": list(self.steps),
            "in_manifest": self.in_manifest,
            "cost_usd": round(self.cost_usd, 6),
            "handoff_from": self.handoff_from,
            "handoff_to": self.handoff_to,
            "main": self.main.as_dict(),
            "workers": [w.as_dict() for w in self.workers],
            "split": self.split.as_dict(),
            "spilled": self.spilled,
            "spilled_kept_out": self.spilled_kept_out,
            "spill_reads": self.spill_reads,
            "on_resume": dict(self.on_resume),
        }


@dataclass
class StepReport:
    """One manifest row (one step run), with the transcript numbers of its sessions during its run."""

    step: str
    run: str
    ok: bool
    error: str | None
    session_ids: list[str]  # the retired sessions in handoff order, then the live one
    cost_usd: float
    num_turns: int  # as the SDK counted them
    attempts: int
    retries: int
    resumes: int
    interrupts: int
    handoffs: int
    context: int  # the runtime's main-thread context watermark
    duration_s: float
    started_at: float
    ended_at: float
    split: WorkSplit = EMPTY_SPLIT
    cache_hit_ratio: float = 0.0
    context_peak: int = 0
    context_last: int = 0
    spilled: int = 0
    spilled_kept_out: int = 0
    api_errors: int = 0
    # What each resume's load sent and trimmed, as the runtime recorded it (the manifest row's ``loads``: the
    # session, `flower_stores.LoadReport`'s numbers and its summary).
    loads: list[dict[str, Any]] = field(default_factory=list)
    # The workers flower carried on when the step resumed a session they had not reported to (the row's
    # ``recovered``: see flower_cli.runtime's `_recovery`).
    recovered: int = 0
    # The run's budget when the step ended (the row's ``budget``: ``limit_usd``, ``spent_usd`` — the whole run's
    # spend then, earlier wakes included — and ``stopped``); None for a run without one.
    budget: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["split"] = self.split.as_dict()
        return out


@dataclass
class RunReport:
    """Everything `flower analyze` found in one run dir."""

    run_dir: str
    steps: list[StepReport]
    sessions: list[SessionReport]
    notes: list[str] = field(default_factory=list)

    @property
    def split(self) -> WorkSplit:
        total = EMPTY_SPLIT
        for session in self.sessions:
            total = total + session.split
        return total

    @property
    def cost_usd(self) -> float:
        """The manifest's cost (what the steps paid, retries and handoffs included)."""
        return round(sum(s.cost_usd for s in self.steps), 6)

    @property
    def budget(self) -> dict[str, Any] | None:
        """Spend against budget, as the last step that ended under one recorded it (``limit_usd``,
        ``spent_usd``, ``share`` of it spent, ``stopped``: the budget stopped that step); None without one."""
        under = [s for s in self.steps if s.budget is not None]
        if not under:
            return None
        last = max(under, key=lambda s: s.ended_at).budget or {}
        limit, spent = float(last.get("limit_usd") or 0.0), float(last.get("spent_usd") or 0.0)
        return {
            "limit_usd": limit,
            "spent_usd": round(spent, 6),
            "share": round(spent / limit, 4) if limit > 0 else 0.0,
            "stopped": bool(last.get("stopped")),
        }

    def totals(self) -> dict[str, Any]:
        mains = [s.main for s in self.sessions]
        context = sum(m.context_total for m in mains)
        return {
            "steps": len(self.steps),
            "sessions": len(self.sessions),
            "cost_usd": self.cost_usd,
            **self.split.as_dict(),
            "cache_hit_ratio": share(sum(m.cache_read_tokens for m in mains), context),
            "context_peak": max((m.context_peak for m in mains), default=0),
            "retries": sum(s.retries for s in self.steps),
            "resumes": sum(s.resumes for s in self.steps),
            "handoffs": sum(s.handoffs for s in self.steps),
            "recovered": sum(s.recovered for s in self.steps),
            "api_errors": sum(s.main.api_errors + sum(w.api_errors for w in s.workers) for s in self.sessions),
            "spilled": sum(s.spilled for s in self.sessions),
            "spill_reads": sum(s.spill_reads for s in self.sessions),
            "spilled_kept_out": sum(s.spilled_kept_out for s in self.sessions),
            "failed_steps": sum(1 for s in self.steps if not s.ok),
            "budget": self.budget,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "totals": self.totals(),
            "steps": [s.as_dict() for s in self.steps],
            "sessions": [s.as_dict() for s in self.sessions],
            "notes": list(self.notes),
        }
