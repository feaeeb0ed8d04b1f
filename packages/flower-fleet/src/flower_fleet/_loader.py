"""Load a run's workflow (``file.py:attr`` inside its workspace, or ``module:attr``) on a worker — only ever in an
activity, never in the Temporal workflow, which must not run user code."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from flower_cli import Workflow, WorkflowError

__all__ = ["PlanError", "load_workflow"]


class PlanError(ValueError):
    """The run's workflow cannot be loaded; the message says what to fix. Not worth retrying."""


def load_workflow(workspace: Path, target: str) -> Workflow:
    """The `Workflow` named by ``target``: a ``Workflow``, or a function returning one, called afresh each time
    (each step's activity gets its own, so one step's ctx never leaks into another's)."""
    path_part, sep, attr = target.rpartition(":")
    if not sep or not path_part or not attr:
        raise PlanError(f"{target!r}: give the workflow as file.py:attr or module:attr, e.g. flows.py:main")
    if path_part.endswith(".py"):
        file = Path(path_part).expanduser()
        file = (file if file.is_absolute() else workspace / file).resolve()
        if not file.is_file():
            raise PlanError(f"no file {file} in the run's workspace {workspace}")
        # A name per file and content: a worker runs many runs, and two flows.py must not share a module.
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:12]
        name = f"flower_fleet_flow_{file.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise PlanError(f"cannot load {file} as a Python module")
        module = importlib.util.module_from_spec(spec)
        if str(file.parent) not in sys.path:
            sys.path.insert(0, str(file.parent))  # so the file can import its neighbours
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise PlanError(f"importing {file} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(path_part)
        except Exception as exc:
            raise PlanError(f"importing {path_part!r} failed: {type(exc).__name__}: {exc}") from exc
    obj = getattr(module, attr, None)
    if obj is None:
        raise PlanError(f"{path_part!r} has no {attr!r}")
    try:
        made = obj() if callable(obj) and not isinstance(obj, Workflow) else obj
    except WorkflowError as exc:
        raise PlanError(f"{target}: {exc}") from exc
    if not isinstance(made, Workflow):
        raise PlanError(f"{target} is a {type(made).__name__}, not a flower_cli.Workflow or a function returning one")
    return made
