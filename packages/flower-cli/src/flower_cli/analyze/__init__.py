"""``flower analyze``: read a run dir (sessions.db + manifest.json, read-only) and report where the context
went, what the cache saved, how much work the workers did instead of the main thread, what was kept out of
the context, and what each step cost — as a terminal table, JSON, or one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

from .model import Mark, RunReport, SessionReport, StepReport, ThreadStats, Turn, WorkSplit
from .page import render_html
from .report import build_report
from .source import AnalyzeError, read_run, resolve_run_dir
from .table import render_table, table_width

__all__ = [
    "AnalyzeError",
    "Mark",
    "RunReport",
    "SessionReport",
    "StepReport",
    "ThreadStats",
    "Turn",
    "WorkSplit",
    "analyze_run",
    "render_html",
    "render_table",
    "table_width",
]


def analyze_run(path: Path, workspace: Path | None = None) -> RunReport:
    """The report of the run dir at ``path`` (or of ``path/runs`` when ``path`` is a workspace).

    ``workspace`` only sets where the would-be trim pointers of the "on resume" numbers point; nothing is
    written anywhere. Raises `AnalyzeError` (with flower's exit code) when there is no run or it is unreadable.
    """
    run_dir = resolve_run_dir(path)
    return build_report(read_run(run_dir), workspace or run_dir.parent)
