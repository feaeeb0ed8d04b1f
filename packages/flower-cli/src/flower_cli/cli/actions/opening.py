"""How a command opens its `Runtime`: the workspace checked again, the run dir tried for writing, the store
(``--store``, else ``<run dir>/sessions.db``) opened — each problem one line that says what to do."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._shared.exits import Exit, ExitCode
from ...runtime import DEFAULT_LIMIT_WAIT, HandoffPolicy, RunBudget, Runtime, describe_os_error, lease_ttl_from_env
from .._workspace import check_workspace
from .store import explained

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["open_runtime"]


def open_runtime(
    opts: GlobalOptions,
    *,
    workbench: Any = None,
    handoff: HandoffPolicy | bool = True,
    trim: bool | None = None,
    budget: float | RunBudget | None = None,
) -> Runtime:
    """The command's Runtime on its store (``--store``, else ``<run dir>/sessions.db``), or a one-line `Exit`
    saying what is wrong with the workspace (which must exist), the run dir (created, 0700) or the store.

    ``trim`` overrides ``-T`` (``go`` trims by default). ``budget``: the run's (see `Runtime`).

    The run dir is tried for writing first: a read-only or full disk is found before a paid step runs,
    not when its record cannot be written at the end.
    """

    check_workspace(opts.workspace)  # checked at start too; it may have been removed since (never created here)
    try:
        lease_ttl = lease_ttl_from_env(os.environ)
    except ValueError as exc:
        raise Exit(ExitCode.USAGE, str(exc)) from exc
    try:
        _check_writable(opts.run_dir)
        return Runtime(
            opts.workspace,
            opts.run_dir,
            workbench=opts.workbench if workbench is None else workbench,
            trim=opts.trim if trim is None else trim,
            handoff=handoff,
            store=opts.store,
            lease_ttl=lease_ttl,
            budget=budget,
            limit_wait=DEFAULT_LIMIT_WAIT if opts.limit_wait is None else opts.limit_wait,
        )
    except Exception as exc:
        raise explained(exc, opts) from exc


def _check_writable(directory: Path) -> None:
    def leave(problem: OSError) -> Exit:
        return Exit(ExitCode.CONFIG, describe_os_error(problem, "the run dir", elsewhere="point -r elsewhere"))

    try:
        # 0700: transcripts hold every tool output the agent saw. Created so, never chmod-ed after (an existing
        # looser run dir is left alone; `flower doctor` reports it).
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise leave(exc) from exc
    try:
        # A page, written through: an empty file can still be created on a full disk.
        with tempfile.TemporaryFile(dir=directory, prefix=".flower-write-check-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:  # named after the directory: the probe file's own name means nothing to a user
        raise leave(OSError(exc.errno, exc.strerror, str(directory))) from exc
