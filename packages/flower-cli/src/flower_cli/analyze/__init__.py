"""``flower analyze``: read a run dir (sessions.db + manifest.json) or a store's records of one run (``--store URL
--run ID``), read-only, and report where the context went, what the cache saved, how much work the workers did
instead of the main thread, what was kept out of the context, and what each step cost — as a terminal table, JSON, or one self-contained HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from .._shared.lazy import lazy_surface
from ._model import Mark as Mark
from ._model import RunReport as RunReport
from ._model import SessionReport as SessionReport
from ._model import StepReport as StepReport
from ._model import ThreadStats as ThreadStats
from ._model import Turn as Turn
from ._model import WorkSplit as WorkSplit
from ._page import render_html as render_html
from ._report import build_report
from ._source import AnalyzeError as AnalyzeError
from ._source import read_run, read_store_run, resolve_run_dir
from ._table import render_table as render_table
from ._table import table_width as table_width

# The names above imported as themselves and the functions below (see `flower_cli._shared.lazy`).
__all__ = lazy_surface(__name__)


def analyze_run(path: Path, workspace: Path | None = None) -> RunReport:
    """The report of the run dir at ``path`` (or of ``path/runs`` when ``path`` is a workspace).

    ``workspace`` only sets where the would-be trim pointers of the "on resume" numbers point; nothing is
    written anywhere. Raises `AnalyzeError` (with flower's exit code) when there is no run or it is unreadable.
    """
    run_dir = resolve_run_dir(path)
    return build_report(read_run(run_dir), workspace or run_dir.parent)


def analyze_store_run(url: str, run_id: str, workspace: Path) -> RunReport:
    """The report of run ``run_id`` from the run records of the store at ``url`` (``flower analyze --store URL
    --run ID``): its rows and lineage, and the sessions they name, read from that store opened read-only.

    ``workspace`` only sets where the would-be trim pointers of the "on resume" numbers point. Raises
    `AnalyzeError`: exit 2 for a malformed URL or a run the store does not know, 3 for a store that cannot be
    opened, 1 for one that cannot be read.
    """
    return build_report(read_store_run(url, run_id), workspace)


def write_json(report: RunReport, stream: TextIO) -> None:
    """``json.dumps(report.as_dict(), ensure_ascii=False, indent=2)`` and a newline, written to ``stream`` a few
    thousand pieces at a time: the text of a run of thousands of sessions is never whole in memory (nor the
    millions of small strings it is joined from)."""
    pieces: list[str] = []
    for piece in json.JSONEncoder(ensure_ascii=False, indent=2).iterencode(report.as_dict()):
        pieces.append(piece)
        if len(pieces) >= 4096:
            stream.write("".join(pieces))
            pieces.clear()
    pieces.append("\n")
    stream.write("".join(pieces))
