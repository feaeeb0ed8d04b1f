"""The terminal view of a `RunReport`: a summary, a table of steps, a table of sessions with a sparkline of the
main thread's context per turn. Plain text (no colour codes), so it pastes anywhere.

By default it fits ``DEFAULT_WIDTH`` columns: the columns that matter most stay columns, the others are said in
words (a step's last column, a line under each session), and prose wraps. ``wide`` prints every column on one
line per row (``STEP_HEADERS``, ``SESSION_HEADERS``; the HTML page's tables are those too)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from .._shared.words import counted
from ._layout import Column, grid, grid_rows, paragraph, shorten_middle, wrap
from ._model import RunReport, SessionReport, StepReport

__all__ = [
    "DEFAULT_WIDTH",
    "SESSION_COLUMNS",
    "SESSION_HEADERS",
    "STEP_COLUMNS",
    "STEP_HEADERS",
    "human",
    "percent",
    "render_table",
    "session_cells",
    "sparkline",
    "step_cells",
    "table_width",
]

_BARS = "▁▂▃▄▅▆▇█"
STEP_HEADERS = (
    "step",
    "ok",
    "sessions",
    "main",
    "workers",
    "worker %",
    "peak ctx",
    "cache hit",
    "kept out",
    "retries",
    "resumes",
    "handoffs",
    "cost",
)
SESSION_HEADERS = (
    "session", "steps", "turns", "context per turn", "first → last", "cache hit", "workers",
    "worker %", "spilled", "trim on resume", "resumes", "errors", "cost", "",
)  # fmt: skip


def human(n: int | float) -> str:
    """``7512`` → ``7.5K``; ``1234567`` → ``1.2M``; below a thousand, the number itself."""
    value = float(n)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{int(value)}"


def percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def sparkline(values: Sequence[int], width: int = 32) -> str:
    """One character per turn (buckets of turns when there are more than ``width``, showing each bucket's peak)."""
    if not values:
        return ""
    if len(values) > width:
        size = len(values) / width
        values = [max(values[int(i * size) : max(int((i + 1) * size), int(i * size) + 1)]) for i in range(width)]
    top = max(values) or 1
    return "".join(_BARS[min(len(_BARS) - 1, int(v / top * (len(_BARS) - 1) + 0.5))] for v in values)


def step_cells(step: StepReport) -> list[str]:
    split = step.split
    sessions = " ".join(s[:8] for s in step.session_ids) or "-"
    return [
        step.step or "?",
        "ok" if step.ok else "FAIL",
        sessions,
        f"{split.main_turns}/{split.main_tool_calls}",
        f"{split.worker_turns}/{split.worker_tool_calls}",
        percent(split.worker_share),
        human(step.context_peak or step.context),
        percent(step.cache_hit_ratio),
        human(step.spilled_kept_out) if step.spilled else "-",
        str(step.retries),
        str(step.resumes),
        str(step.handoffs),
        f"${step.cost_usd:.4f}",
    ]


def session_cells(session: SessionReport) -> list[str]:
    main, split = session.main, session.split
    curve = main.turns.contexts()
    trimmed = session.on_resume.get("chars_saved", 0)
    moved = session.on_resume.get("trimmed", 0)
    flags = []
    if session.handoff_from:
        flags.append(f"from {session.handoff_from[:8]}")
    if session.handoff_to:
        flags.append(f"→ {session.handoff_to[:8]}")
    return [
        session.session_id[:8],
        ",".join(session.steps) or "-",
        str(len(main.turns)),
        sparkline(curve),
        f"{human(curve[0]) if curve else 0} → {human(main.context_last)} (peak {human(main.context_peak)})",
        percent(main.cache_hit_ratio),
        f"{split.workers}: {split.worker_turns}/{split.worker_tool_calls}",
        percent(split.worker_share),
        f"{session.spilled} ({human(session.spilled_kept_out)}), {session.spill_reads} read"
        if session.spilled
        else "-",
        f"{moved} ({human(trimmed)})" if moved else "-",
        str(sum(1 for m in main.marks if m.kind == "resume")),
        str(main.api_errors),
        f"${session.cost_usd:.4f}",
        " ".join(flags),
    ]


def step_events(step: StepReport) -> str:
    """What the default table says in words about a step beyond its numbers: retries, resumes, handoffs, spills
    and failed requests (why a step failed goes on a line of its own under it)."""
    said = []
    if step.retries:
        said.append(counted(step.retries, "retry", "retries"))
    if step.resumes:
        said.append(counted(step.resumes, "resume"))
    if step.handoffs:
        said.append(counted(step.handoffs, "handoff"))
    if step.recovered:
        said.append(counted(step.recovered, "recovered worker"))
    if step.spilled:
        said.append(f"{human(step.spilled_kept_out)} kept out")  # by spills: what the wide table's "kept out" says
    if step.api_errors:
        said.append(counted(step.api_errors, "failed request"))
    said.extend(_load_said(load) for load in step.loads if _load_said(load))
    return ", ".join(said) or "-"


def _load_said(load: Mapping[str, Any]) -> str:
    """What one resume's load trimmed, in a few words ("" when it trimmed nothing)."""
    moved = sum(n for key in ("trimmed", "fitted") if isinstance(n := load.get(key), int))
    saved = load.get("chars_saved")
    saved = saved if isinstance(saved, int) else 0
    sent, budget = load.get("sent_chars"), load.get("budget")
    if isinstance(sent, int) and isinstance(budget, int) and budget and sent > budget:
        return f"resume over budget ({human(sent)}/{human(budget)} chars)"
    return f"resume trimmed {moved} ({human(saved)} chars)" if moved else ""


def session_details(session: SessionReport, *, steps: bool = False) -> list[str]:
    """The default table's line under a session, in parts: its steps (when ``steps``: too many for their column),
    its context from first to last turn, and what the wide table's other columns say, when they say something."""
    main, split = session.main, session.split
    said = [f"steps {', '.join(session.steps)}"] if steps else []
    if main.turns:
        said.append(f"context {human(main.turns.context(0))} → {human(main.context_last)}")
    if split.workers:
        said.append(
            f"{counted(split.workers, 'worker')}: {counted(split.worker_turns, 'turn')} / {counted(split.worker_tool_calls, 'tool call')}"
            f" ({percent(split.worker_share)} of the characters)"
        )
    if session.spilled:
        said.append(
            f"spilled {session.spilled} ({human(session.spilled_kept_out)} kept out), read back {session.spill_reads}x"
        )
    moved = session.on_resume.get("trimmed", 0)
    if moved:
        said.append(f"a resume would trim {moved} ({human(session.on_resume.get('chars_saved', 0))} chars)")
    resumes = sum(1 for m in main.marks if m.kind == "resume")
    if resumes:
        said.append(counted(resumes, "resume"))
    if main.api_errors:
        said.append(counted(main.api_errors, "failed request"))
    if session.handoff_from:
        said.append(f"from {session.handoff_from[:8]}")
    if session.handoff_to:
        said.append(f"→ {session.handoff_to[:8]}")
    return said


# The default table: what matters per step and per session in columns, the rest in words (`step_events`,
# `session_details`), so that it fits DEFAULT_WIDTH; `--wide` prints every column (STEP_HEADERS, SESSION_HEADERS).
DEFAULT_WIDTH = 100
MIN_WIDTH = 60  # narrower terminals get this, and wrap the lines themselves
SPARK_WIDTH = 32
_STEPS_LISTED = 24  # a session's steps longer than this are listed under it, the column says how many
STEP_COLUMNS = (
    Column("step", limit=24),
    Column("ok"),
    Column("turns", right=True),
    Column("worker %", right=True),
    Column("peak ctx", right=True),
    Column("cache hit", right=True),
    Column("cost", right=True),
    Column("events", flex=True, limit=12, sep=", "),
)
SESSION_COLUMNS = (
    Column("session"),
    Column("steps", limit=_STEPS_LISTED, sep=", "),
    Column("turns", right=True),
    Column("context per turn"),
    Column("peak ctx", right=True),
    Column("cache hit", right=True),
    Column("cost", right=True),
)
_DETAIL_INDENT = " " * 10  # under the steps column (a session id is 8 characters)


def _compact_steps(report: RunReport, width: int) -> list[str]:
    rows = []
    for step in report.steps:
        split = step.split
        rows.append(
            [
                step.step or "?",
                "ok" if step.ok else "FAIL",
                f"{split.main_turns}/{split.worker_turns}",
                percent(split.worker_share),
                human(step.context_peak or step.context),
                percent(step.cache_hit_ratio),
                f"${step.cost_usd:.4f}",
                step_events(step),
            ]
        )
    head, lines = grid_rows(STEP_COLUMNS, rows, width)
    out = head
    for step, row in zip(report.steps, lines, strict=True):
        out += row
        if not step.ok and step.error:  # what a reader must read whole: on its own lines, the table's width
            out += wrap("error: " + " ".join(step.error.split()), width, first="  ", indent="  ")
    return out


def _compact_sessions(report: RunReport, width: int) -> list[str]:
    # Below DEFAULT_WIDTH the sparkline gives up columns first (down to 8 turns' worth).
    spark = max(8, SPARK_WIDTH - max(DEFAULT_WIDTH - width, 0))
    out: list[str] = []
    body: list[list[str]] = []
    listed: list[bool] = []  # whether the steps column holds the session's steps (else they go under it)
    for session in report.sessions:
        main = session.main
        steps = ", ".join(session.steps) or "-"
        listed.append(len(steps) <= _STEPS_LISTED)
        body.append(
            [
                session.session_id[:8],
                steps if listed[-1] else f"{len(session.steps)} steps",
                str(len(main.turns)),
                sparkline(main.turns.contexts(), spark),
                human(main.context_peak),
                percent(main.cache_hit_ratio),
                f"${session.cost_usd:.4f}",
            ]
        )
    head, rows = grid_rows(SESSION_COLUMNS, body, width)
    out += head
    for session, lines, in_column in zip(report.sessions, rows, listed, strict=True):
        out += lines
        details = session_details(session, steps=not in_column)
        if details:
            out += paragraph(details, width, first=_DETAIL_INDENT, indent=_DETAIL_INDENT)
    return out


def _summary(report: RunReport) -> list[str]:
    """The run's totals, in parts (the default table wraps between them): what it cost and how the context
    went first; spills only when there were some."""
    totals = report.totals()
    parts = [
        f"{totals['steps']} step(s), {totals['sessions']} session(s)",
        f"cost ${totals['cost_usd']:.4f}",
        f"cache hit {percent(totals['cache_hit_ratio'])}",
        f"peak context {human(totals['context_peak'])}",
        f"main {counted(totals['main_turns'], 'turn')} / {counted(totals['main_tool_calls'], 'tool call')}",
        f"workers {counted(totals['worker_turns'], 'turn')} / {counted(totals['worker_tool_calls'], 'tool call')}"
        f" ({percent(totals['worker_share'])} of the characters)",
    ]
    if totals["spilled"]:
        parts.append(
            f"spilled {totals['spilled']} ({human(totals['spilled_kept_out'])} chars kept out,"
            f" read back {totals['spill_reads']}x)"
        )
    parts.append(f"retries {totals['retries']}, resumes {totals['resumes']}, handoffs {totals['handoffs']}")
    budget = totals["budget"]
    if budget is not None:
        stopped = " · stopped by it" if budget["stopped"] else ""
        parts.append(
            f"budget ${budget['spent_usd']:.4f} of ${budget['limit_usd']:.4f} ({percent(budget['share'])}){stopped}"
        )
    if totals["recovered"]:
        parts.append(f"recovered workers {totals['recovered']}")
    return parts


_COMPACT_STEPS_TITLE = "steps (turns: main/workers; worker % = share of the characters of work done in workers)"
_STEPS_TITLE = "steps (turns/tool calls; worker % = share of the characters of work done in workers)"
_SESSIONS_TITLE = "sessions (main-thread context per turn = input + cache read + cache creation tokens)"


def table_width(stream: TextIO) -> int:
    """The width to render for ``stream``: DEFAULT_WIDTH, or a terminal's own width when it is narrower."""
    try:
        if stream.isatty():
            return max(min(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, DEFAULT_WIDTH), MIN_WIDTH)
    except (OSError, ValueError):  # a closed or odd stream: the default
        pass
    return DEFAULT_WIDTH


def render_table(report: RunReport, *, wide: bool = False, width: int = DEFAULT_WIDTH) -> str:
    """The report as plain text: by default in ``width`` columns (prose wrapped, long paths shortened in the
    middle, the less important columns said in words under or beside each row); ``wide``: every column, one
    line per row, however long."""
    if wide:
        return _render_wide(report)
    title = "flower analyze · "
    out = [title + shorten_middle(report.run_dir, width - len(title)), *paragraph(_summary(report), width)]
    if report.steps:
        out += ["", *wrap(_COMPACT_STEPS_TITLE, width)]
        out += _compact_steps(report, width)
    if report.sessions:
        out += ["", *wrap(_SESSIONS_TITLE, width)]
        out += _compact_sessions(report, width)
    for note in report.notes:
        out += paragraph([note], width, first="note: ", indent="      ")
    return "\n".join(out) + "\n"


def _render_wide(report: RunReport) -> str:
    totals = report.totals()
    out = [
        f"flower analyze · {report.run_dir}",
        (
            f"{totals['steps']} step(s), {totals['sessions']} session(s) · main {counted(totals['main_turns'], 'turn')} / {counted(totals['main_tool_calls'], 'tool call')}"
            f" · workers {counted(totals['worker_turns'], 'turn')} / {counted(totals['worker_tool_calls'], 'tool call')} ({percent(totals['worker_share'])} of the characters)"
            f" · cache hit {percent(totals['cache_hit_ratio'])} · peak context {human(totals['context_peak'])}"
            f" · spilled {totals['spilled']} ({human(totals['spilled_kept_out'])} chars kept out, read back {totals['spill_reads']}x)"
            f" · retries {totals['retries']}, resumes {totals['resumes']}, handoffs {totals['handoffs']}"
            + (f", recovered workers {totals['recovered']}" if totals["recovered"] else "")
            + f" · cost ${totals['cost_usd']:.4f}"
        ),
    ]
    if report.steps:
        out += ["", _STEPS_TITLE]
        out += grid(_columns(STEP_HEADERS, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), [step_cells(s) for s in report.steps])
    if report.sessions:
        out += ["", _SESSIONS_TITLE]
        out += grid(_columns(SESSION_HEADERS, {2, 5, 7, 10, 11, 12}), [session_cells(s) for s in report.sessions])
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def _columns(headers: Sequence[str], right: set[int]) -> list[Column]:
    return [Column(h, right=i in right) for i, h in enumerate(headers)]
