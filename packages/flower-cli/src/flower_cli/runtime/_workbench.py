"""What a workbench changes in a Runtime's steps: where it lives, the resume prompt that names it, where
load-time trimming spills, and the index in a new session's first message.

Why together: a `Workflow` can lend the Runtime another workbench between steps (``Runtime.use_workbench``),
and everything here must follow it at once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import flower_resilience
from flower_resilience import Resilience
from flower_stores import TrimPolicy
from flower_workbench import Workbench

from ._spec import AgentSpec

__all__ = ["first_prompt", "make_workbench", "resilience_for", "trim_policy"]


def make_workbench(workbench: bool | Workbench, workspace: Path, run_dir: Path) -> Workbench | None:
    """False: none; True: one at ``<run_dir>/workbench``; a `Workbench`: that one (its index refreshed)."""
    if not workbench:
        return None
    wb = workbench if isinstance(workbench, Workbench) else Workbench(workspace, home=run_dir / "workbench")
    wb.refresh()
    return wb


def resilience_for(given: Resilience, workbench: Workbench | None) -> Resilience:
    """``given``, with a resume prompt that says where to look when there is a workbench."""
    if workbench is not None and given.resume_prompt == flower_resilience.RESUME_PROMPT:
        # The library's default names nothing a run may lack; with a workbench, say where to look. A prompt
        # the caller chose is theirs and stays.
        return dataclasses.replace(given, resume_prompt=_resume_prompt(workbench))
    return given


def trim_policy(enabled: bool, workbench: Workbench | None) -> TrimPolicy:
    if workbench is None:
        return TrimPolicy(enabled=enabled)
    # One spill directory, not two: load-time trimming writes where the spill guard does, so a moved
    # workbench (-W, isolation) does not leave half the spilled outputs behind in <workspace>/.flower.
    return TrimPolicy(enabled=enabled, spill_dirname=workbench.show(workbench.spill))


def first_prompt(workbench: Workbench | None, spec: AgentSpec, prompt: str, resume: str | None) -> str:
    """``prompt`` as a launch sends it: a NEW session of a spec that reads the workbench gets its index first."""
    # The index goes into the first message of a new session, not the system prompt: a system prompt that
    # changes whenever the index does would invalidate the prompt cache on every turn.
    if workbench is None or not spec.workbench or resume:
        return prompt
    workbench.refresh()
    return f"{workbench.prompt_block()}\n\n---\n\n{prompt}"


def _resume_prompt(workbench: Workbench) -> str:
    return (
        "The previous round was interrupted before it finished. Check what is already done, in the working "
        f"directory and in the workbench `{workbench.show(workbench.root)}/`, continue from where it stopped, "
        "and do not start over."
    )
