"""AgentSpec → ClaudeAgentOptions: the one place a role becomes SDK options."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

import flower_resilience

from ._guards import HARNESS_SCHEDULERS
from ._limit_wait import harness_retry_env
from ._spec import AgentSpec

__all__ = ["MAX_BUFFER_SIZE", "PLUGIN_DIR", "build_options", "disallowed_tools"]

# The largest JSON message the SDK reads from the harness. Its default, 1 MiB, is smaller than one message of a
# long session: a fork or resume mirrors the whole transcript in one frame (a 4 MB session, one 4 MB line), and
# the SDK then fails "JSON message exceeded maximum buffer size" — after the harness has sent paid requests.
# Sessions of tens of MB exist (the stores benchmark's long session is 20 MB); the buffer only grows as a
# message needs it, so a generous ceiling costs nothing until it is used.
MAX_BUFFER_SIZE = 256 * 1024 * 1024

# The domain plugin ships inside the wheel (so every installed copy has its skills), at the top of the package
# where a reader of the source finds it.
PLUGIN_DIR = Path(__file__).parent.parent / "plugin"


def disallowed_tools(spec: AgentSpec) -> list[str]:
    """The spec's own disallowed tools plus the harness's schedulers it did not name in ``allowed_tools``."""
    out = list(spec.disallowed_tools)
    out += [t for t in HARNESS_SCHEDULERS if t not in spec.allowed_tools and t not in out]
    return out


def build_options(
    spec: AgentSpec,
    *,
    cwd: Path | str,
    session_store: Any | None = None,
    resume: str | None = None,
    fork: bool = False,
    resume_at: str | None = None,
    session_id: str | None = None,
    portable: bool = True,
    use_plugin: bool = True,
    plugin_dirs: Sequence[Path | str] = (),
    add_dirs: Sequence[Path | str] = (),
    hooks: dict[str, list[Any]] | None = None,
    env: dict[str, str] | None = None,
    flush: str = "eager",
    tethered: bool = True,
    stderr: Callable[[str], None] | None = None,
) -> Any:
    """Build the SDK options for one attempt of ``spec``.

    The role's instructions are **appended** to Claude Code's own system prompt, never replacing it.
    ``portable`` reads no user or project settings (``setting_sources=[]``), so a run behaves the same on
    every machine. ``fork`` and ``resume_at`` only mean something with ``resume``; without it they are
    ignored with a warning. ``session_id`` is the id of the NEW session the launch starts (a fork's too; a plain
    resume keeps the resumed id, so it is ignored there). ``tethered`` starts the harness through flower-resilience's tether, so it and
    everything it starts end when this process dies, however it dies (a harness outliving flower would go on
    acting on the session with nothing recording it). ``stderr`` receives the harness's own stderr, line by
    line (without it the harness writes to the terminal it inherits).
    """
    values = _spec_values(spec, portable=portable, cwd=cwd)
    plugins = ([PLUGIN_DIR] if use_plugin and PLUGIN_DIR.is_dir() else []) + [Path(p) for p in plugin_dirs]
    if plugins:
        values["plugins"] = [{"type": "local", "path": str(p)} for p in plugins]
    if add_dirs:
        values["add_dirs"] = [str(d) for d in add_dirs]
    if session_store is not None:
        values["session_store"] = session_store
        values["session_store_flush"] = flush
    merged_hooks = hooks if hooks is not None else spec.hooks
    if merged_hooks:
        values["hooks"] = merged_hooks
    # The harness's retry settings first (`harness_retry_env`: those the person left unset), theirs over them.
    merged_env = {
        **harness_retry_env(spec.env),
        **spec.env,
        **(spec.compact.env() if spec.compact else {}),
        **(env or {}),
    }
    if merged_env:
        values["env"] = merged_env
    if stderr is not None:
        values["stderr"] = stderr
    values.update(_session_values(resume, fork=fork, resume_at=resume_at, session_id=session_id))
    options = ClaudeAgentOptions(**values)
    return flower_resilience.tether(options) if tethered else options


def _spec_values(spec: AgentSpec, *, portable: bool, cwd: Path | str) -> dict[str, Any]:
    """The options the role itself decides: its instructions, tools, model and limits, workers, servers."""
    values: dict[str, Any] = {
        "system_prompt": {"type": "preset", "preset": "claude_code", "append": spec.instructions},
        "allowed_tools": list(spec.allowed_tools),
        "disallowed_tools": disallowed_tools(spec),
        "permission_mode": spec.permission_mode,
        "setting_sources": [] if portable else ["project"],
        "cwd": str(cwd),
        "max_buffer_size": MAX_BUFFER_SIZE,
    }
    if spec.tools is not None:
        values["tools"] = list(spec.tools)
    for name in ("model", "effort", "max_turns", "max_budget_usd"):
        value = getattr(spec, name)
        if value is not None:
            values[name] = value
    if spec.agents:
        values["agents"] = spec.agents
    if spec.mcp_servers:
        values["mcp_servers"] = spec.mcp_servers
    return values


def _session_values(resume: str | None, *, fork: bool, resume_at: str | None, session_id: str | None) -> dict[str, Any]:
    """The options that say which session the launch continues, branches off, or starts."""
    values: dict[str, Any] = {}
    if resume:
        values["resume"] = resume
        if fork:
            values["fork_session"] = True
            if session_id:
                values["session_id"] = session_id  # the harness takes a fixed id with resume only for a fork
        if resume_at:
            values["resume_session_at"] = resume_at
    else:
        if session_id:
            values["session_id"] = session_id
        if fork or resume_at:
            # stacklevel 3: the warning names build_options' caller, as it did when this was inline.
            warnings.warn("fork/resume_at need a session to resume; ignoring them for a new session", stacklevel=3)
    return values
