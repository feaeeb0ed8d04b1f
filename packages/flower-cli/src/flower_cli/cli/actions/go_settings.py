"""The options of ``flower go`` that a plain wake keeps: a run started with ``--no-goal`` stays without a goal.

They are recorded in the run's ``lineage.json`` (``settings``) when a run starts, read back when ``flower`` wakes
the directory with nothing said about them, and dropped with the lineage by ``--new``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...runtime import Lineage

if TYPE_CHECKING:
    from ...go import GoSettings
    from ...view import Renderer
    from .._global_options import GlobalOptions

__all__ = ["keep_settings", "kept_settings"]


def kept_settings(g: GlobalOptions, opts: GoSettings, view: Renderer) -> GoSettings:
    """``opts`` with what the run was started with where this start says nothing (``--new``: nothing is kept)."""
    if opts.new or opts.clarify_only or not opts.goal:
        return opts
    lineage = Lineage.open(g.run_dir, g.workspace)
    if lineage.settings.get("goal") is False:
        view.line("  (kept from the run's start: --no-goal; `flower --new` starts over)", "dim")
        return replace(opts, goal=False)
    return opts


def keep_settings(g: GlobalOptions, opts: GoSettings) -> None:
    """Record the options a plain wake of this run keeps."""
    Lineage.open(g.run_dir, g.workspace).keep(goal=opts.goal)
