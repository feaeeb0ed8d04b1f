"""The terminal view of a `RunReport`: a summary line, a table of steps, a table of sessions with a sparkline
of the main thread's context per turn. Plain text (no colour codes), so it pastes anywhere."""

from __future__ import annotations

from collections.abc import Sequence

from .model import RunReport, SessionReport, StepReport

__all__ = [
    "SESSION_HEADERS",
    "STEP_HEADERS",
    "human",
    "percent",
    "render_table",
    "session_cells",
    "sparkline",
    "step_cells",
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


def _grid(headers: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


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


def render_table(report: RunReport) -> str:
    totals = report.totals()
    out = [
        f"flower analyze · {report.run_dir}",
        (
            f"{totals['steps']} step(s), {totals['sessions']} session(s) · main {totals['main_turns']} turns / {totals['main_tool_calls']} tool calls"
            f" · workers {totals['worker_turns']} turns / {totals['worker_tool_calls']} tool calls ({percent(totals['worker_share'])} of the characters)"
            f" · cache hit {percent(totals['cache_hit_ratio'])} · peak context {human(totals['context_peak'])}"
            f" · spilled {totals['spilled']} ({human(totals['spilled_kept_out'])} chars kept out, read back {totals['spill_reads']}x)"
            f" · retries {totals['retries']}, resumes {totals['resumes']}, handoffs {totals['handoffs']} · cost ${totals['cost_usd']:.4f}"
        ),
    ]
    if report.steps:
        out += ["", "steps (turns/tool calls; worker % = share of the characters of work done in workers)"]
        out += _grid(
            STEP_HEADERS,
            [step_cells(s) for s in report.steps],
            frozenset({3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
        )
    if report.sessions:
        out += ["", "sessions (main-thread context per turn = input + cache read + cache creation tokens)"]
        out += _grid(
            SESSION_HEADERS,
            [session_cells(s) for s in report.sessions],
            frozenset({2, 5, 7, 10, 11, 12}),
        )
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"
