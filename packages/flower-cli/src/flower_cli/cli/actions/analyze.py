"""``flower analyze [RUN_DIR] | --store URL --run ID``: the numbers of a run, read-only — a table, JSON (``--json``)
or an HTML page."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from ..._shared.files import atomic_write_text
from ...analyze import (
    AnalyzeError,
    RunReport,
    analyze_run,
    analyze_store_run,
    render_html,
    render_table,
    table_width,
    write_json,
)

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_analyze"]


def _report(opts: GlobalOptions, run_dir: Path | None, run: str | None) -> RunReport:
    """The report of a run dir, or with ``--run`` of a run's records in the store (a fleet run's)."""
    if run is not None:
        if run_dir is not None:
            raise Exit(
                ExitCode.USAGE,
                f"give either a run dir ({run_dir}) or --run {run}, not both: --run reads the run from --store",
            )
        if not opts.store:
            raise Exit(
                ExitCode.USAGE,
                f"--run {run} reads the run's records from a store; pass --store URL (or set FLOWER_STORE_URL)",
            )
        return analyze_store_run(opts.store, run, opts.workspace)

    target = run_dir.expanduser().resolve() if run_dir is not None else opts.run_dir
    if opts.store:
        # Without --run, analyze reads a run dir's own files; saying so beats a report that silently describes
        # another store.
        sys.stderr.write(
            f"note: flower analyze reads {target / 'sessions.db'}; --store / FLOWER_STORE_URL is used with --run ID only\n"
        )
    return analyze_run(target, opts.workspace)


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """The cyclic garbage collector, tuned for one pass over a store: analyze parses millions of small dicts
    that die by reference counting as each session is dropped, yet the default thresholds run a collection
    every 700 of them and, now and then, a full one over everything the imports left. Frozen imports and a
    larger first generation cut that to a few collections, with the same memory (nothing of it is cyclic)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], 50_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def run_analyze(
    opts: GlobalOptions, run_dir: Path | None, html: Path | None, *, wide: bool = False, run: str | None = None
) -> None:
    if html is not None:
        html = html.expanduser().resolve()
        if not html.parent.is_dir():
            raise Exit(
                ExitCode.USAGE,
                f"cannot write {html}: {html.parent} is not a directory (create it, or pick another path for --html)",
            )
        if html.is_dir():
            raise Exit(ExitCode.USAGE, f"--html {html} is a directory; give a file name such as {html / 'run.html'}")
    try:
        with _few_collections():
            report = _report(opts, run_dir, run)
    except AnalyzeError as exc:
        raise Exit(ExitCode(exc.code), exc.message) from None
    if html is not None:
        try:
            atomic_write_text(html, render_html(report))
        except OSError as exc:
            raise Exit(ExitCode.NOT_DONE, f"cannot write {html}: {exc.strerror or exc}") from None
        sys.stderr.write(f"wrote {html}\n")
    if opts.json:
        write_json(report, sys.stdout)
    elif html is None:
        sys.stdout.write(render_table(report, wide=wide, width=table_width(sys.stdout)))
