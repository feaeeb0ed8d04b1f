"""One launch of the SDK and what it is built from: its prompt and session (`Launch`), and the options, hooks,
first message and resilient stream every launch of a step gets (`Launcher`).

Why apart from the step: the Runtime's settings (policies, workbench, store, harness log) are fixed for the
length of a step, so a step is handed one `Launcher`, made when it starts, and a launch needs nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, SessionStore

import flower_resilience
import flower_workbench
from flower_resilience import EventHandler, Resilience, ResilientQuery
from flower_workbench import Workbench

from ._events import EventSink
from ._guards import delegate_guard, isolate_guard, merge_hooks, whitelist_guard
from ._handoff import HandoffLoop
from ._harness_log import HarnessLog
from ._isolation import isolated_workers
from ._options import build_options
from ._policies import RunPolicy
from ._spec import AgentSpec, CompactPolicy
from ._store import RunStore
from ._workbench import first_prompt

__all__ = ["Launch", "Launcher"]


@dataclass(frozen=True)
class Launch:
    """One launch of the SDK: its prompt and the session it continues. A fork or a roll-back point applies to the
    step's first launch only; what follows continues the session that launch produced (the original re-sent
    resume_at on every attempt)."""

    prompt: str
    resume: str | None = None
    fork: bool = False
    resume_at: str | None = None
    session_id: str | None = None  # the id of the new session it starts (its lease is taken first)
    # When set, the prompt is held until it says True (the harness starts meanwhile): a launch after a usage limit.
    opens: Callable[[], Awaitable[bool]] | None = None


@dataclass(frozen=True)
class Launcher:
    """What every launch of a step is built from, as the Runtime has it when the step starts."""

    workspace: Path
    run_dir: Path
    policy: RunPolicy
    workbench: Workbench | None
    resilience: Resilience
    store: RunStore
    harness_log: HarnessLog

    def first_prompt(self, spec: AgentSpec, prompt: str, resume: str | None) -> str:
        return first_prompt(self.workbench, spec, prompt, resume)

    def hooks(self, spec: AgentSpec, post_extra: list[Any] | None = None) -> dict[str, list[Any]]:
        """The role's walls (delegate-only, a tool whitelist, worktree isolation) and the workbench's guards."""
        pre: list[Any] = []
        post: list[Any] = []
        workbench = self.workbench
        if spec.delegate_only:
            artifacts = f"{workbench.show(workbench.root / 'artifacts')}/" if workbench else ".flower/artifacts/"
            pre.append(delegate_guard(allow_glance=spec.glance, artifacts=artifacts))
        else:
            wall = whitelist_guard(spec.allowed_tools, role=spec.name)
            if wall is not None:
                pre.append(wall)
        if spec.agents:
            isolation = isolate_guard(isolated_workers(spec.agents))
            if isolation is not None:
                pre.append(isolation)
        if workbench is not None:
            post.append(flower_workbench.index_guard(workbench))
            if self.policy.spill_threshold:
                post.append(flower_workbench.spill_guard(workbench, threshold=self.policy.spill_threshold))
        return merge_hooks(spec.hooks, {"PreToolUse": pre, "PostToolUse": [*post, *(post_extra or [])]})

    def options(
        self,
        spec: AgentSpec,
        *,
        resume: str | None,
        fork: bool,
        resume_at: str | None,
        post_hooks: list[Any] | None = None,
        session_id: str | None = None,
        session_store: SessionStore | None = None,
    ) -> ClaudeAgentOptions:
        """The SDK options of one launch; ``session_store`` is the step's lease's fenced view (default: the
        store)."""
        add_dirs = [self.workbench.root] if self.workbench is not None and self.workbench.external else []
        if self.policy.handoff.enabled and spec.compact is None:
            # Handoff replaces the harness's compaction: left on, it would summarise the thread away (at about
            # window - 33k) before or instead of a handoff. A spec's own CompactPolicy is respected.
            spec = replace(spec, compact=CompactPolicy(mode="no_summary"))
        options: ClaudeAgentOptions = build_options(
            spec,
            cwd=self.workspace,
            # The SDK writes through the mirror watch, and the watch through the lease's fence: a failed append
            # is seen and kept, a superseded driver's is refused.
            session_store=self.store.for_sdk(session_store),
            resume=resume,
            fork=fork,
            resume_at=resume_at,
            session_id=session_id,
            portable=self.policy.portable,
            plugin_dirs=self.policy.plugin_dirs,
            add_dirs=add_dirs,
            hooks=self.hooks(spec, post_hooks),
            stderr=self.harness_log.write,
        )
        return options

    def query(
        self,
        prompt: str | AsyncIterable[dict[str, Any]],
        options: ClaudeAgentOptions,
        on_event: EventHandler | None = None,
    ) -> ResilientQuery:
        """One launch through flower-resilience (the only retry loop), with the policy's query function."""
        return flower_resilience.resilient_query(
            prompt=prompt, options=options, policy=self.resilience, on_event=on_event, query_fn=self.policy.query_fn
        )

    def load_budget(self, spec: AgentSpec) -> int:
        """The characters a resumed session of ``spec`` may send (`HandoffPolicy.load_budget`, from the window
        known for its model), which every load of the step is fitted to, handoffs enabled or not."""
        return self.policy.handoff.resolved(model=_model(spec)).load_budget

    def handoff_loop(self, spec: AgentSpec, step: str, prompt: str, emit: EventSink) -> HandoffLoop | None:
        if not self.policy.handoff.enabled:
            return None
        # Without a workbench the document still lands on disk, in the run dir, where a person can read and edit
        # it (not only in the successor's prompt).
        save_dir = self.workbench.notes if self.workbench is not None else self.run_dir / "handoffs"
        return HandoffLoop(
            self.policy.handoff, step=step, original_prompt=prompt, save_dir=save_dir, emit=emit, model=_model(spec)
        )


def _model(spec: AgentSpec) -> str | None:
    """The model a spec names for the window (None: the environment's)."""
    return spec.model if spec.model not in (None, "inherit") else None
