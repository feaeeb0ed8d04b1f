"""``flower run TARGET``: load a workflow from ``file.py:attr`` or ``module:attr`` and drive it."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._shared.exits import Exit, ExitCode
from ...go import HumanChannel
from ...workflow import Workflow, WorkflowError
from .budget import budget_from
from .closing import conclude
from .credentials import ensure_credentials
from .handoff import handoff_policy
from .opening import open_runtime
from .output import make_view
from .publish import publishing
from .rescue import rescued, run_rescued

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["load_target", "run_workflow"]


def load_target(target: str) -> Any:
    """The object named by ``file.py:attr`` or ``module:attr``, with a one-line error for each mistake."""
    path_part, sep, attr = target.rpartition(":")
    if not sep or not path_part or not attr:
        raise Exit(ExitCode.USAGE, f"{target!r}: give the workflow as file.py:attr or module:attr, e.g. flows.py:main")
    if path_part.endswith(".py"):
        file = Path(path_part).expanduser()
        if not file.is_file():
            raise Exit(
                ExitCode.USAGE,
                f"no file {file} (current directory {Path.cwd()}); to import by module name, drop the .py",
            )
        file = file.resolve()
        name = f"flower_run_{file.stem}"
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise Exit(ExitCode.USAGE, f"cannot load {file} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(file.parent))  # so the file can import its neighbours
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise Exit(ExitCode.USAGE, f"importing {file} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(path_part)
        except ModuleNotFoundError as exc:
            raise Exit(ExitCode.USAGE, f"cannot import {path_part!r}: {exc}") from exc
        except Exception as exc:
            raise Exit(ExitCode.USAGE, f"importing {path_part!r} failed: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise Exit(ExitCode.USAGE, f"{path_part!r} has no {attr!r}")
    return getattr(module, attr)


def _as_workflow(obj: Any, target: str) -> Workflow:

    if isinstance(obj, Workflow):
        return obj
    if callable(obj):
        try:
            made = obj()
        except WorkflowError as exc:
            raise Exit(ExitCode.USAGE, f"{target}: {exc}") from exc
        if isinstance(made, Workflow):
            return made
        raise Exit(ExitCode.USAGE, f"{target}() returned {type(made).__name__}, not a flower_cli.Workflow")
    raise Exit(
        ExitCode.USAGE, f"{target} is a {type(obj).__name__}, not a flower_cli.Workflow or a function returning one"
    )


def run_workflow(
    opts: GlobalOptions,
    target: str,
    *,
    window: str | None = None,
    no_handoff: bool = False,
    budget: float | None = None,
) -> None:

    handoff = handoff_policy(window, no_handoff)
    budget = budget_from(budget)
    try:
        workflow = _as_workflow(load_target(target), target)
    except WorkflowError as exc:
        raise Exit(ExitCode.USAGE, f"{target}: {exc}") from exc
    view, sink = make_view(opts, allow_hint=lambda tool: f"add {tool!r} to the step's AgentSpec(allowed_tools=...)")
    ensure_credentials(view, verbose=opts.verbose, reach=True, sink=sink if opts.json else None)

    # The workflow's own workbench wins; -W gives one to a workflow that brings none.
    workbench = workflow.workbench if workflow.workbench not in (None, False) else opts.workbench
    runtime = open_runtime(opts, workbench=workbench, handoff=handoff, budget=budget)
    with rescued(
        runtime,
        recorded="the steps so far are",
        again="run the same `flower run` again (each step continues its session)",
    ):
        with publishing(opts, runtime, sink, command="run", channel=_human_channel(workflow)) as published:
            sink = published.sink  # every event is published for `flower status/watch` as well
            try:
                outcome = run_rescued(runtime, lambda: published.main(lambda: workflow.run(runtime, on_event=sink)))
            except ValueError as exc:  # WorkflowError, or IsolationError from a runtime used inside a gate
                raise Exit(ExitCode.USAGE, f"{target}: {exc}") from exc
            published.check_stopped(opts.workspace)
            assert outcome is not None  # only a stop ends main without a result, and check_stopped left then
            conclude(opts, view, sink, runtime, outcome, raise_budget=f"flower run {target} --budget {{budget}}")


def _human_channel(workflow: Workflow) -> HumanChannel | None:
    """The workflow's human channel when it is flower's own (answers and mail can reach it from elsewhere)."""
    channel = getattr(workflow, "channel", None)
    return channel if isinstance(channel, HumanChannel) else None
