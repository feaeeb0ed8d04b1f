"""Workers supervised by flower: after a crash, a wake, a fleet takeover, the workers a coordinator's session left
running are carried on by flower itself, not left to the model to notice.

Before a step resumes a session (`StepRun._first_launch`), the supervision ledger (`_ledger`) is read from the
store; each worker that never reported is then

- **delivered** when it had finished (its final answer is in its transcript): nothing is run again;
- **resumed** from its own transcript when it has one: the transcript is copied, once, into a recovery session
  of its own (a stable id per coordinator session and Agent call), which is launched with "carry on", so its
  turns are not redone; a worker that worked in a worktree works there again;
- **dispatched again** with its original task when nothing of it is stored, in that same recovery session.

Each result reaches the coordinator as the completion notice it would have had (a ``<task-notification>``
marked recovered), in front of the resumed session's prompt; one line per recovered worker is emitted, and
`StepResult.recovered` lists them (the manifest and ``flower analyze`` count them). A process killed during a
recovery leaves the recovery session in the store; the next wake continues that session, never a new one.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
from claude_agent_sdk import SessionKey, SessionListSubkeysKey

from ._events import Event
from ._launcher import Launcher
from ._ledger import AGENT_TOOLS, WorkerRecord, worker_key, worker_ledger
from ._recovery_place import ensure_worktree, project_of, worker_place
from ._spec import AgentSpec
from ._step_state import StepState

if TYPE_CHECKING:
    from claude_agent_sdk import SessionStoreEntry

__all__ = [
    "RESUME_WORKER_PROMPT",
    "Recovery",
    "as_session",
    "completion_notice",
    "read_ledger",
    "recover",
    "recovery_session_id",
    "worker_spec",
]

RESUME_WORKER_PROMPT = (
    "Your previous session ended before you finished: the process running you stopped. Carry on with your task "
    "from where you stopped; what is above is done and stays done (check the files rather than redoing it). End "
    "with your report, as you would have."
)
_INTRO = (
    "flower recovered {n} worker(s) that had not reported when the previous session ended; each result follows as "
    "its completion notice. A notice above saying such a worker did not finish is superseded: do not dispatch "
    "it again or message it."
)
_NAMESPACE = uuid.UUID("5f0c2a52-8e0b-4d43-9d8c-3f1d6f3b2a10")  # flower's recovery sessions
# Recovery workers running at once: each is a Claude Code process; a wake with many must not swamp the machine.
_AT_ONCE = 3
# Tools that dispatch or steer workers: a recovered worker does its own work, it does not delegate.
_COORDINATING = frozenset({*AGENT_TOOLS, "SendMessage", "ListAgents", "TaskStop"})


@dataclass
class Recovery:
    """What recovering a session's workers did: ``recovered`` (one dict per worker, as `StepResult.recovered`
    keeps it) and ``notice``, the text the coordinator's next prompt starts with ("" when nothing was recovered)."""

    recovered: list[dict[str, str]]
    notice: str = ""


def recovery_session_id(coordinator_session: str, call_id: str) -> str:
    """The recovery session of the worker of Agent call ``call_id``: the same on every wake, so a recovery that
    was itself cut short is continued, not started again."""
    return str(uuid.uuid5(_NAMESPACE, f"{coordinator_session}/{call_id}"))


async def read_ledger(launcher: Launcher, session_id: str, spec: AgentSpec) -> list[WorkerRecord]:
    """The ledger of ``session_id`` as the store holds it (raw transcripts: no load-time layer in between);
    ``spec`` is the coordinator's (its worker types say which are isolated, and so where recoveries are stored)."""
    raw = launcher.store.raw
    project = launcher.store.project_key
    main = await raw.load(SessionKey(project_key=project, session_id=session_id)) or []
    # The coordinator's transcript alone says which workers reported: only the others' transcripts are read (a
    # resume of a session whose workers all reported, or that had none, reads nothing more).
    told = worker_ledger(main, {})
    if all(r.state == "reported" for r in told):
        return told
    done = {r.agent_id for r in told if r.state == "reported"}
    workers: dict[str, list[Any]] = {}
    subkeys = await raw.list_subkeys(SessionListSubkeysKey(project_key=project, session_id=session_id))
    for subpath in subkeys:
        agent_id = subpath.removeprefix("subagents/agent-")
        if subpath.startswith("subagents/agent-") and agent_id not in done:
            key = SessionKey(project_key=project, session_id=session_id, subpath=subpath)
            workers[agent_id] = await raw.load(key) or []
    first = worker_ledger(main, workers)
    recoveries: dict[str, list[Any]] = {}
    for record in first:
        if record.state == "reported":
            continue
        recovery = recovery_session_id(session_id, record.call_id)
        place = worker_place(launcher.workspace, spec, record, recovery)
        key = SessionKey(project_key=project_of(project, place), session_id=recovery)
        entries = await raw.load(key)
        if entries:
            recoveries[record.call_id] = entries
    return worker_ledger(main, workers, recoveries) if recoveries else first


async def recover(launcher: Launcher, state: StepState, session_id: str) -> Recovery:
    """Carry on every worker of ``session_id`` that has not reported (see the module docstring)."""
    pending = [r for r in await read_ledger(launcher, session_id, state.spec) if r.state != "reported"]
    if not pending:
        return Recovery([])
    notices: dict[str, str] = {}
    recovered: dict[str, dict[str, str]] = {}
    limiter = anyio.CapacityLimiter(_AT_ONCE)

    async def one(record: WorkerRecord) -> None:
        async with limiter:
            how, text, ok = await _carry_on(launcher, state, session_id, record)
        notices[record.call_id] = completion_notice(record, text, how, ok=ok)
        recovered[record.call_id] = {
            "id": record.agent_id or record.call_id,
            "call": record.call_id,
            "description": record.name,
            "how": how,
            "session": recovery_session_id(session_id, record.call_id) if how != "delivered" else "",
            "status": "completed" if ok else "failed",
        }

    async with anyio.create_task_group() as group:
        for record in pending:
            group.start_soon(one, record)
    order = [r.call_id for r in pending]  # dispatch order, whatever order they finished in
    # Named when delivered, all at once: a process killed while one recovery still runs has named none, and the
    # next wake (which delivers them all) names each once.
    for call in order:
        done = recovered[call]
        state.emit(Event("notice", _line(done), payload={"step": state.result.step, "recovered": done}))
    intro = _INTRO.format(n=len(order))
    return Recovery([recovered[c] for c in order], "\n\n".join([intro, *(notices[c] for c in order)]))


def completion_notice(record: WorkerRecord, text: str, how: str, *, ok: bool = True) -> str:
    """The ``<task-notification>`` the harness would have sent when the worker stopped, marked recovered."""
    status = "completed" if ok else "failed"
    verb = "finished" if ok else "failed"
    ids = f"<task-id>{record.agent_id or record.call_id}</task-id>\n<tool-use-id>{record.call_id}</tool-use-id>"
    return (
        f"<task-notification>\n{ids}\n<status>{status}</status>\n"
        f'<summary>Agent "{record.name}" {verb} (recovered by flower: {_HOW[how]})</summary>\n'
        f"<result>{text}</result>\n</task-notification>"
    )


_HOW = {
    "delivered": "it had finished; its answer had not reached you",
    "resumed": "resumed from its own transcript, its earlier turns kept",
    "redispatched": "nothing of it was stored; dispatched again with its original task",
}


def _line(done: dict[str, str]) -> str:
    said = {"delivered": "delivered its finished answer", "resumed": "resumed", "redispatched": "dispatched again"}
    failed = done["status"] != "completed"
    return f"recovered worker {done['description']!r}: {said[done['how']]}" + (
        " (it failed; the coordinator is told)" if failed else ""
    )


async def _carry_on(
    launcher: Launcher, state: StepState, session_id: str, record: WorkerRecord
) -> tuple[str, str, bool]:
    """Run one unreported worker to its end; (how, its final answer or error, ok)."""
    recovery = recovery_session_id(session_id, record.call_id)
    # A worker with a recovery session was recovered by an earlier process: it is named by how that began.
    began = "resumed" if record.started else "redispatched"
    if record.state == "finished":
        return ("delivered" if not record.recovery else began), record.result, True
    if record.recovery:  # a recovery cut short: the recovery session carries on
        how, prompt, resume = began, RESUME_WORKER_PROMPT, recovery
    elif record.state == "unfinished":
        await _copy_transcript(launcher, state.spec, session_id, record, recovery)
        how, prompt, resume = "resumed", RESUME_WORKER_PROMPT, recovery
    else:
        how, prompt, resume = "redispatched", record.prompt, None
    spec = worker_spec(state.spec, record)
    options = launcher.options(spec, resume=resume, fork=False, resume_at=None, session_id=recovery)
    place = worker_place(launcher.workspace, state.spec, record, recovery)
    if place is not None:
        problem = await anyio.to_thread.run_sync(ensure_worktree, launcher.workspace, place)
        if problem:
            return how, f"flower could not give the worker its worktree back: {problem}", False
        options = dataclasses.replace(options, cwd=place)
    text, ok = await _run(launcher, prompt, options, state)
    return how, text, ok


async def _run(launcher: Launcher, prompt: str, options: Any, state: StepState) -> tuple[str, bool]:
    """One recovery worker's launch, through flower-resilience; (its final answer or its error, ok)."""
    stream = launcher.query(prompt, options)
    text = ""
    try:
        async for message in stream:
            if type(message).__name__ == "ResultMessage" and not getattr(message, "is_error", False):
                text = getattr(message, "result", None) or text
    finally:
        await stream.aclose()
    record = stream.record
    # The step pays for its recoveries: their cost is the step's.
    state.result.cost_usd = round(state.result.cost_usd + float(record.cost_usd or 0.0), 6)
    if record.ok:
        return text, True
    return record.error or "the recovered worker stopped without an answer", False


def worker_spec(coordinator: AgentSpec, record: WorkerRecord) -> AgentSpec:
    """What a recovered worker runs as: its type's definition among the coordinator's workers when it has one,
    else a general worker with the tools the coordinator approved for its workers."""
    definition = (coordinator.agents or {}).get(record.agent_type or "")
    if definition is not None:
        model = getattr(definition, "model", None)
        return AgentSpec(
            name=f"worker:{record.agent_type}",
            instructions=str(getattr(definition, "prompt", "") or ""),
            allowed_tools=list(getattr(definition, "tools", None) or ()),
            model=None if model in (None, "inherit") else model,
            permission_mode=getattr(definition, "permissionMode", None) or coordinator.permission_mode,
            workbench=False,
        )
    tools = [t for t in coordinator.allowed_tools if t not in _COORDINATING and not t.startswith("mcp__")]
    return AgentSpec(
        name="worker",
        instructions="",
        allowed_tools=tools,
        model=coordinator.model,
        permission_mode=coordinator.permission_mode,
        workbench=False,
    )


async def _copy_transcript(
    launcher: Launcher, spec: AgentSpec, session_id: str, record: WorkerRecord, recovery: str
) -> None:
    """The worker's stored turns, as a session of its own (``recovery``) that the harness can resume."""
    assert record.agent_id is not None
    raw = launcher.store.raw
    source = SessionKey(
        project_key=launcher.store.project_key, session_id=session_id, subpath=worker_key(record.agent_id)
    )
    entries = await raw.load(source) or []
    place = worker_place(launcher.workspace, spec, record, recovery)
    target = SessionKey(project_key=project_of(launcher.store.project_key, place), session_id=recovery)
    # The entries are the harness's own, reshaped (see `as_session`): what the store protocol's entry type describes.
    await raw.append(target, cast("list[SessionStoreEntry]", as_session(entries, recovery)))


def as_session(entries: Sequence[Any], session_id: str) -> list[dict[str, Any]]:
    """A worker's transcript entries as the main thread of session ``session_id`` (new dicts; the input is kept):
    no longer a sidechain, no agent id, the harness's own bookkeeping of the worker left out."""
    out: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") == "agent_metadata":
            continue
        copy = {k: v for k, v in entry.items() if k != "agentId"}
        if "sessionId" in copy:
            copy["sessionId"] = session_id
        if "isSidechain" in copy:
            copy["isSidechain"] = False
        out.append(copy)
    return out
