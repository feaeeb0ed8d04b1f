"""What an attempt cost, when the harness reports session totals rather than per-run figures.

Measured with Claude Code 2.1.332 (the binary in claude-agent-sdk 0.2.189): at the end of every run the
harness appends a ``cost-state`` entry to the transcript (``totalCostUSD``, ``modelUsage``…), and a run that
resumes the session restores it. So after a resume ``ResultMessage.total_cost_usd`` and ``model_usage`` are
cumulative for the session, while ``usage`` and ``num_turns`` cover only that run. Summing
``total_cost_usd`` over a failed attempt and its resumption counts the first attempt twice.

We do not rely on that staying true. An attempt's own cost is ``reported - baseline`` only when the result
shows restored counters: its ``model_usage`` token total exceeds this run's own ``usage`` by at least half of
the baseline's tokens. Otherwise the report is taken as the run's own. The baseline is what the harness would
restore: the previous result seen for that session in this call, or else the transcript's last
``cost-state`` (from the session store when the options have one, else the local JSONL).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage

__all__ = ["CostMark", "mark_of", "own_cost", "transcript_mark"]

_MODEL_TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
_RUN_TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True)
class CostMark:
    """The harness's running totals for a session at one point: dollars and tokens over all models."""

    cost_usd: float
    tokens: int | None


def _sum(values: Mapping[str, Any] | None, keys: tuple[str, ...]) -> int | None:
    if not isinstance(values, Mapping):
        return None
    total = 0
    for key in keys:
        value = values.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def _model_tokens(model_usage: Any) -> int | None:
    if not isinstance(model_usage, Mapping) or not model_usage:
        return None
    per_model = [_sum(u, _MODEL_TOKEN_KEYS) for u in model_usage.values()]
    return sum(t for t in per_model if t is not None)


def mark_of(result: ResultMessage) -> CostMark | None:
    if result.total_cost_usd is None:
        return None
    return CostMark(float(result.total_cost_usd), _model_tokens(result.model_usage))


def own_cost(result: ResultMessage, baseline: CostMark | None) -> float:
    """The part of ``result.total_cost_usd`` this run added, given what the session had cost before it."""
    reported = float(result.total_cost_usd or 0.0)
    if baseline is None:
        return reported
    run_tokens = _sum(result.usage, _RUN_TOKEN_KEYS)
    all_tokens = _model_tokens(result.model_usage)
    if run_tokens is not None and all_tokens is not None and baseline.tokens:
        restored = all_tokens - run_tokens >= baseline.tokens / 2
    else:
        restored = reported >= baseline.cost_usd
    return max(0.0, reported - baseline.cost_usd) if restored else reported


def _mark_of_entry(entry: Any, session_id: str) -> CostMark | None:
    if not isinstance(entry, Mapping) or entry.get("type") != "cost-state":
        return None
    if entry.get("sessionId") not in (None, session_id):
        return None
    cost = entry.get("totalCostUSD")
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        return None
    return CostMark(float(cost), _model_tokens(entry.get("modelUsage")))


def _last_mark_in_file(path: Path, session_id: str, block: int = 1 << 16) -> CostMark | None:
    # cost-state lines sit at the end of each run, so read backwards rather than parse a 20 MB transcript.
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            position = handle.tell()
            tail = b""
            while position > 0:
                step = min(block, position)
                position -= step
                handle.seek(position)
                chunk = handle.read(step) + tail
                lines = chunk.split(b"\n")
                tail = lines.pop(0) if position > 0 else b""
                for line in reversed(lines):
                    if b"cost-state" in line:
                        try:
                            mark = _mark_of_entry(json.loads(line), session_id)
                        except ValueError:
                            continue
                        if mark is not None:
                            return mark
    except OSError:
        return None
    return None


def _local_transcript(options: ClaudeAgentOptions, session_id: str) -> Path:
    from claude_agent_sdk import project_key_for_directory  # why: the SDK loads only when a cost is read

    config = (options.env or {}).get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    root = Path(config) if config else Path.home() / ".claude"
    return root / "projects" / project_key_for_directory(options.cwd) / f"{session_id}.jsonl"


async def transcript_mark(options: ClaudeAgentOptions, session_id: str) -> CostMark | None:
    """The last ``cost-state`` of ``session_id``, from where the harness will resume it (None if none)."""
    store = options.session_store
    if store is not None:
        from claude_agent_sdk import project_key_for_directory  # why: the SDK loads only when a cost is read

        key = {"project_key": project_key_for_directory(options.cwd), "session_id": session_id}
        entries: Any = None
        try:
            with anyio.move_on_after(max(options.load_timeout_ms, 1) / 1000):
                entries = await store.load(key)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - accounting must never fail the run; the resume will say what is wrong
            entries = None
        if entries:
            for entry in reversed(entries):
                mark = _mark_of_entry(entry, session_id)
                if mark is not None:
                    return mark
            return None
    path = _local_transcript(options, session_id)
    return await anyio.to_thread.run_sync(_last_mark_in_file, path, session_id)
