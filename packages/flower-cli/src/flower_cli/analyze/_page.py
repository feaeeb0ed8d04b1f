"""The ``--html`` view of a `RunReport`: one self-contained page — inline CSS and inline SVG, no script, no
font, no image, nothing fetched — so it opens anywhere, offline, and can be mailed as one file.

Two charts: the main thread's context per turn, one line per session on a shared turn axis (resumes, failed
requests and handoffs marked), and the main-vs-worker split of tool calls and characters per session. The
layout puts the context chart at a fixed place on the page (`CHART_LEFT`, `CHART_TOP`) so a screenshot test
can look at exactly its plot area.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterator, Sequence
from html import escape

from .._shared.words import counted
from ._model import Mark, RunReport, SessionReport, Turns, WorkSplit
from ._table import SESSION_HEADERS, STEP_HEADERS, human, percent, session_cells, step_cells

__all__ = [
    "CHART_HEIGHT",
    "CHART_LEFT",
    "CHART_TOP",
    "CHART_WIDTH",
    "MAX_DOTS",
    "PALETTE",
    "PLOT_MARGIN",
    "render_html",
]

CHART_LEFT = 16
CHART_TOP = 104  # the header above it has this fixed height
CHART_WIDTH = 960
CHART_HEIGHT = 380
PLOT_MARGIN = (20, 24, 48, 72)  # top, right, bottom, left: the plot area inside the chart
MAX_DOTS = 1500  # above this many turns, lines only (a dot per turn would make a heavy page)
PALETTE = ("#1971c2", "#e8590c", "#0c8599", "#2f9e44", "#c2255c", "#f59f00", "#5c7cfa", "#868e96")
MAIN_COLOUR, WORKER_COLOUR = "#1971c2", "#f08c00"
MARK_STYLE = {
    "resume": ("#212529", "resumed"),
    "error": ("#e03131", "request failed"),
    "handoff": ("#7048e8", "handoff"),
    "notification": ("#adb5bd", "worker reported back"),
}

_CSS = f"""
* {{ box-sizing: border-box; }}
body {{ margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #212529; background: #fff; }}
header {{ height: {CHART_TOP}px; overflow: hidden; padding: 12px {CHART_LEFT}px 0; }}
header h1 {{ margin: 0 0 4px; font-size: 20px; }}
header p {{ margin: 0; color: #495057; font-size: 13px; }}
section {{ padding: 0 {CHART_LEFT}px; }}
svg {{ display: block; }}
svg text {{ font: 11px system-ui, sans-serif; fill: #495057; }}
.legend {{ margin: 8px 0 16px; font-size: 13px; }}
.legend span {{ display: inline-block; margin-right: 16px; }}
.legend i {{ display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 6px; }}
h2 {{ font-size: 16px; margin: 20px 0 8px; }}
.wide {{ overflow-x: auto; margin-bottom: 16px; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border-bottom: 1px solid #dee2e6; padding: 4px 10px; text-align: right; white-space: nowrap; }}
th:first-child, td:first-child {{ text-align: left; }}
th {{ background: #f1f3f5; }}
td.fail {{ color: #c92a2a; font-weight: 600; }}
.notes {{ color: #495057; }}
"""


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (an axis top that reads well)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)


def _fmt(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _in_time_order(s_index: int, turns: Turns) -> Iterator[tuple[float, int, int]]:
    """The session's turns as (stamp, session position, turn index), sorted; unstamped ones last. Lazily when
    they already are in order (the usual case), so merging a run's sessions holds no key per turn of the run."""
    stamps = [math.inf if math.isnan(s) else s for s in turns.stamps]
    keys = ((stamp, s_index, i) for i, stamp in enumerate(stamps, start=1))
    if all(a <= b for a, b in zip(stamps, stamps[1:])):
        yield from keys
    else:
        yield from sorted(keys)


class _Axis:
    """Turn positions on x (the run's main-thread turns in time order), tokens on y."""

    def __init__(self, sessions: Sequence[SessionReport]) -> None:
        top, right, bottom, left = PLOT_MARGIN
        self.x0, self.x1 = left, CHART_WIDTH - right
        self.y0, self.y1 = CHART_HEIGHT - bottom, top
        # positions[s][i]: where turn i + 1 of sessions[s] falls among all the run's turns, in time order (ties:
        # earlier session, then earlier turn) — each session's turns sorted, then merged.
        self.positions = [array("l", bytes(8 * len(s.main.turns))) for s in sessions]
        merged = heapq.merge(*(_in_time_order(n, s.main.turns) for n, s in enumerate(sessions)))
        count = 0
        for count, (_, s_index, index) in enumerate(merged, start=1):
            self.positions[s_index][index - 1] = count
        self.count = count
        peak = max((s.main.context_peak for s in sessions), default=0)
        self.top = _nice_ceiling(peak * 1.05)

    def x(self, position: float) -> float:
        if self.count <= 1:
            return (self.x0 + self.x1) / 2
        return self.x0 + (position - 1) / (self.count - 1) * (self.x1 - self.x0)

    def y(self, tokens: float) -> float:
        return self.y0 - tokens / self.top * (self.y0 - self.y1)

    def turn_x(self, s_index: int, index: int) -> float:
        """Where turn ``index`` (1-based) of ``sessions[s_index]`` is drawn."""
        return self.x(self.positions[s_index][index - 1])

    def mark_x(self, s_index: int, mark: Mark) -> float:
        """Between the turn before the mark and the one after it (at an end: half a step outside)."""
        turns = len(self.positions[s_index])
        half = (self.x1 - self.x0) / max(self.count - 1, 1) / 2
        before = mark.after_turn if 1 <= mark.after_turn <= turns else None
        after = mark.after_turn + 1 if 0 <= mark.after_turn < turns else None
        if before is not None and after is not None:
            return (self.turn_x(s_index, before) + self.turn_x(s_index, after)) / 2
        if before is not None:
            return min(self.turn_x(s_index, before) + half, self.x1)
        if after is not None:
            return max(self.turn_x(s_index, after) - half, self.x0)
        return self.x0


def _mark_shape(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "resume":
        return f'<path d="M{_fmt(x - 6)},{_fmt(y - 5)} L{_fmt(x + 6)},{_fmt(y - 5)} L{_fmt(x)},{_fmt(y + 6)} Z" fill="{colour}"/>'
    if kind == "error":
        return (
            f'<path d="M{_fmt(x - 5)},{_fmt(y - 5)} L{_fmt(x + 5)},{_fmt(y + 5)} M{_fmt(x + 5)},{_fmt(y - 5)} L{_fmt(x - 5)},{_fmt(y + 5)}"'
            f' stroke="{colour}" stroke-width="2.5"/>'
        )
    if kind == "handoff":
        return f'<path d="M{_fmt(x)},{_fmt(y - 7)} L{_fmt(x + 7)},{_fmt(y)} L{_fmt(x)},{_fmt(y + 7)} L{_fmt(x - 7)},{_fmt(y)} Z" fill="{colour}"/>'
    return f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="3" fill="{colour}"/>'


def _context_chart(sessions: Sequence[SessionReport]) -> str:
    axis = _Axis(sessions)
    parts = [
        f'<svg id="context-chart" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img"'
        ' aria-label="Main-thread context per turn, one line per session">',
        f'<rect class="plot" x="{axis.x0}" y="{axis.y1}" width="{axis.x1 - axis.x0}" height="{axis.y0 - axis.y1}" fill="#f8f9fa"/>',
    ]
    for i in range(6):
        tokens = axis.top * i / 5
        y = axis.y(tokens)
        parts.append(f'<line x1="{axis.x0}" x2="{axis.x1}" y1="{_fmt(y)}" y2="{_fmt(y)}" stroke="#dee2e6"/>')
        parts.append(f'<text x="{axis.x0 - 8}" y="{_fmt(y + 4)}" text-anchor="end">{human(tokens)}</text>')
    ticks = sorted({1, axis.count, *(round(1 + (axis.count - 1) * i / 8) for i in range(9))}) if axis.count else []
    for tick in ticks:
        parts.append(f'<text x="{_fmt(axis.x(tick))}" y="{axis.y0 + 16}" text-anchor="middle">{tick}</text>')
    parts.append(
        f'<text x="{(axis.x0 + axis.x1) / 2}" y="{CHART_HEIGHT - 10}" text-anchor="middle">main-thread turn (all sessions, in time order)</text>'
    )
    parts.append(
        f'<text x="14" y="{(axis.y0 + axis.y1) / 2}" text-anchor="middle" transform="rotate(-90 14 {(axis.y0 + axis.y1) / 2})">context tokens per turn</text>'
    )

    dots = sum(len(s.main.turns) for s in sessions) <= MAX_DOTS
    ends: dict[str, tuple[float, float]] = {}
    starts: dict[str, tuple[float, float]] = {}
    for n, session in enumerate(sessions):
        colour = PALETTE[n % len(PALETTE)]
        sid = escape(session.session_id)
        points = [(axis.turn_x(n, i), axis.y(c)) for i, c in enumerate(session.main.turns.contexts(), start=1)]
        if points:
            starts[session.session_id], ends[session.session_id] = points[0], points[-1]
            joined = " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in points)
            parts.append(
                f'<polyline class="context" data-session="{sid}" points="{joined}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        if dots:
            for turn, (x, y) in zip(session.main.turns, points, strict=True):
                parts.append(
                    f'<circle class="turn" data-session="{sid}" data-turn="{turn.index}" data-context="{turn.context}"'
                    f' cx="{_fmt(x)}" cy="{_fmt(y)}" r="3.5" fill="{colour}">'
                    f"<title>{sid[:8]} turn {turn.index}: {turn.context:,} context tokens ({turn.cache_read_input_tokens:,} from cache)</title></circle>"
                )
    stacked: dict[tuple[int, bool], int] = {}  # marks at one place stack downwards instead of hiding each other
    for n, session in enumerate(sessions):
        for mark in session.main.marks:
            colour, word = MARK_STYLE[mark.kind]
            x = axis.mark_x(n, mark)
            at_top = mark.kind != "notification"
            slot = stacked.get((round(x), at_top), 0)
            stacked[(round(x), at_top)] = slot + 1
            y = axis.y1 + 8 + 15 * slot if at_top else axis.y0 - 6 - 8 * slot
            if at_top and not slot:
                parts.append(
                    f'<line x1="{_fmt(x)}" x2="{_fmt(x)}" y1="{axis.y1}" y2="{axis.y0}" stroke="{colour}" stroke-dasharray="3 3" stroke-opacity="0.6"/>'
                )
            title = escape(
                f"{word} in {session.session_id[:8]} after turn {mark.after_turn}"
                + (f": {mark.label}" if mark.label else "")
            )
            parts.append(
                f'<g class="mark {mark.kind}" data-session="{escape(session.session_id)}"><title>{title}</title>{_mark_shape(mark.kind, x, y, colour)}</g>'
            )
        if session.handoff_to and session.session_id in ends and session.handoff_to in starts:
            (xa, ya), (xb, yb) = ends[session.session_id], starts[session.handoff_to]
            parts.append(
                f'<line class="handoff-link" x1="{_fmt(xa)}" y1="{_fmt(ya)}" x2="{_fmt(xb)}" y2="{_fmt(yb)}" stroke="#7048e8" stroke-dasharray="5 4"/>'
            )
    if not axis.count:
        parts.append(
            f'<text x="{(axis.x0 + axis.x1) / 2}" y="{(axis.y0 + axis.y1) / 2}" text-anchor="middle">no main-thread turns recorded</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend(sessions: Sequence[SessionReport]) -> str:
    items = []
    for n, session in enumerate(sessions):
        colour = PALETTE[n % len(PALETTE)]
        steps = ", ".join(session.steps) or "no step"
        items.append(
            f'<span><i style="background:{colour}"></i>{escape(session.session_id[:8])} ({escape(steps)})</span>'
        )
    for colour, word in MARK_STYLE.values():
        items.append(f'<span><i style="background:{colour};height:8px;width:8px"></i>{word}</span>')
    return f'<div class="legend">{"".join(items)}</div>'


def _split_chart(rows: Sequence[tuple[str, str, WorkSplit]]) -> str:
    """Per row two bars: tool calls and characters, main thread (blue) against workers (orange)."""
    label_w, bar_w, row_h = 190, 330, 44
    width = label_w + 2 * (bar_w + 40)
    height = 28 + row_h * len(rows)
    parts = [
        f'<svg id="split-chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="Main thread against workers">'
    ]
    for col, title in enumerate(("tool calls", "characters of work")):
        parts.append(
            f'<text x="{label_w + col * (bar_w + 40)}" y="14">{title}: main thread (blue) vs workers (orange)</text>'
        )
    for r, (key, label, split) in enumerate(rows):
        y = 26 + r * row_h
        parts.append(f'<text x="0" y="{y + 14}">{escape(label)}</text>')
        for col, (metric, main, worker) in enumerate(
            (
                ("tool_calls", split.main_tool_calls, split.worker_tool_calls),
                ("chars", split.main_chars, split.worker_chars),
            )
        ):
            x = label_w + col * (bar_w + 40)
            total = main + worker
            main_w = bar_w * main / total if total else 0.0
            parts.append(f'<rect x="{x}" y="{y}" width="{bar_w}" height="18" fill="#f1f3f5"/>')
            for part, value, px, pw, colour in (
                ("main", main, x, main_w, MAIN_COLOUR),
                ("worker", worker, x + main_w, bar_w - main_w if total else 0.0, WORKER_COLOUR),
            ):
                parts.append(
                    f'<rect class="split {part}" data-session="{escape(key)}" data-metric="{metric}" data-value="{value}"'
                    f' x="{_fmt(px)}" y="{y}" width="{_fmt(pw)}" height="18" fill="{colour}"><title>{part}: {value:,}</title></rect>'
                )
            share = percent(worker / total) if total else "-"
            parts.append(f'<text x="{x}" y="{y + 32}">main {human(main)} · workers {human(worker)} ({share})</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], fail_col: int | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="fail"' if i == fail_col and cell == "FAIL" else ""
            cells.append(f"<td{cls}>{escape(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def render_html(report: RunReport) -> str:
    totals = report.totals()
    summary = (
        f"{totals['steps']} step(s), {totals['sessions']} session(s) · main thread {counted(totals['main_turns'], 'turn')}, "
        f"{counted(totals['main_tool_calls'], 'tool call')} · workers {counted(totals['worker_turns'], 'turn')}, "
        f"{counted(totals['worker_tool_calls'], 'tool call')} "
        f"({percent(totals['worker_share'])} of the characters of work) · cache hit {percent(totals['cache_hit_ratio'])} · "
        f"spilled {totals['spilled']} ({human(totals['spilled_kept_out'])} characters kept out, read back {totals['spill_reads']}x) · retries {totals['retries']}, "
        f"resumes {totals['resumes']}, handoffs {totals['handoffs']} · cost ${totals['cost_usd']:.4f}"
    )
    split_rows = [
        (s.session_id, f"{s.session_id[:8]} ({', '.join(s.steps) or 'no step'})", s.split) for s in report.sessions
    ]
    split_rows.append(("total", "whole run", report.split))
    body = [
        f"<header><h1>flower analyze</h1><p>{escape(report.run_dir)}</p><p>{escape(summary)}</p></header>",
        "<section>",
        _context_chart(report.sessions),
        _legend(report.sessions),
        "<h2>Main thread vs workers</h2>",
        _split_chart(split_rows),
    ]
    if report.steps:
        body += [
            "<h2>Steps</h2>",
            _table(
                STEP_HEADERS,
                [step_cells(s) for s in report.steps],
                fail_col=1,
            ),
        ]
    if report.sessions:
        body += [
            "<h2>Sessions</h2>",
            _table(
                SESSION_HEADERS,
                [session_cells(s) for s in report.sessions],
            ),
        ]
    if report.notes:
        body.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in report.notes) + "</ul>")
    body.append("</section>")
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>flower analyze · {escape(report.run_dir)}</title><style>{_CSS}</style></head><body>"
    )
    return "".join([head, *body, "</body></html>\n"])  # one copy of a page that can run to tens of MB
