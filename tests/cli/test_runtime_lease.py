"""The Runtime's session lease, in milliseconds: the model call is replaced (`Runtime(query_fn=...)`) by a stand-in
that honours ``options.session_id`` as Claude Code does and mirrors each message through ``options.session_store``
(the store the SDK would write through). The store (SQLite), the lease, the fence and the manifest are real.
tests/e2e/test_lease_e2e.py runs the same rules with the real binary, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, Message, ResultMessage, SystemMessage, TextBlock
from cli.test_runtime_branches import HANDOFF_TEXT, WINDOW, answered, bash, counter

import flower_stores
from flower_cli import HandoffPolicy, Runtime, SessionBusy
from flower_cli import runtime as runtime_room
from flower_stores import FencedSessionStore, LeaseHeld, LeaseOwner, SqliteSessionStore

THIEF = LeaseOwner("other-box", 4242, "run-thief")


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


def _uuid() -> str:
    return str(uuid.uuid4())


def init(sid: str) -> SystemMessage:
    return SystemMessage(subtype="init", data={"type": "system", "subtype": "init", "session_id": sid})


def said(sid: str, text: str, *, context: int = 1_000) -> AssistantMessage:
    usage = {"input_tokens": context, "output_tokens": 5, "cache_read_input_tokens": 0}
    return AssistantMessage(
        content=[TextBlock(text)], model="claude-scripted", usage=usage, session_id=sid, uuid=_uuid()
    )


def ended(sid: str, text: str = "done", *, cost: float = 0.01) -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=10,
        duration_api_ms=5,
        is_error=False,
        num_turns=1,
        session_id=sid,
        total_cost_usd=cost,
        result=text,
        terminal_reason="completed",
    )


# An item of a script: a message, an exception to raise, or an async callable run at that point with the `Launch`
# (a look at the lease, a takeover).
Script = Callable[[str], list[Any]]


@dataclass
class Launch:
    prompt: str
    options: ClaudeAgentOptions
    session_id: str
    lease_session: str | None  # the session the fenced view the SDK got is fenced for (None: no fence)
    refused: list[str] = field(default_factory=list)  # appends the store refused (flower_stores.LeaseLost)


@dataclass
class Model:
    """Plays one script per launch. A new session takes ``options.session_id`` (as Claude Code's
    ``--session-id``), else a fresh uuid; a resumed one keeps its id; a fork gets ``options.session_id``."""

    scripts: list[Script]
    launches: list[Launch] = field(default_factory=list)

    def __call__(self, *, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Message]:
        assert self.scripts, f"launched more often than scripted; prompt: {prompt[:80]!r}"
        if options.resume and not options.fork_session:
            sid = options.resume
        else:
            sid = options.session_id or _uuid()
        store = getattr(options.session_store, "target", options.session_store)  # under the mirror watch
        fenced = store.lease.session_id if isinstance(store, FencedSessionStore) else None
        launch = Launch(prompt, options, sid, fenced)
        self.launches.append(launch)
        return self._play(self.scripts.pop(0)(sid), launch)

    async def _play(self, items: list[Any], launch: Launch) -> AsyncIterator[Message]:
        await self._mirror(launch, {"type": "user", "uuid": _uuid(), "message": {"content": launch.prompt}})
        for item in items:
            await anyio.lowlevel.checkpoint()
            if isinstance(item, BaseException):
                raise item
            if callable(item):
                await item(launch)
                continue
            if isinstance(item, AssistantMessage):
                body = {"role": "assistant", "content": [{"type": "text", "text": "x"}], "usage": item.usage}
                await self._mirror(launch, {"type": "assistant", "uuid": item.uuid, "message": body})
            yield item

    @staticmethod
    async def _mirror(launch: Launch, entry: dict[str, Any]) -> None:
        """As the SDK's mirror: an append the store refuses is reported (a MirrorErrorMessage), not raised."""
        options = launch.options
        key = {"project_key": flower_stores_key(options), "session_id": launch.session_id}
        try:
            await options.session_store.append(key, [{**entry, "sessionId": launch.session_id}])  # type: ignore[union-attr, arg-type, list-item]
        except flower_stores.LeaseLost as exc:
            launch.refused.append(str(exc))


def flower_stores_key(options: ClaudeAgentOptions) -> str:
    from claude_agent_sdk import project_key_for_directory

    return project_key_for_directory(str(options.cwd))


def rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else []  # type: ignore[no-any-return]


def simple(text: str = "DONE") -> Script:
    return lambda sid: [init(sid), said(sid, text), ended(sid, text)]


async def _stored_lease(rt: Runtime, sid: str) -> tuple[Any, Any]:
    """(the live lease or None, the stored row's epoch) of ``sid`` in the runtime's SQLite store."""
    backend = rt.store.backend  # type: ignore[attr-defined]
    row, _now = backend._lease_read(rt.project_key, sid)
    return await rt.store.read_lease(rt.project_key, sid), (row.epoch if row is not None else None)  # type: ignore[attr-defined]


def test_the_default_ttl_is_flower_stores_own() -> None:
    import inspect

    assert inspect.signature(Runtime).parameters["lease_ttl"].default == flower_stores.DEFAULT_LEASE_TTL
    assert runtime_room.SessionBusy is SessionBusy and issubclass(SessionBusy, LeaseHeld)


async def test_a_new_session_is_leased_under_the_id_the_runtime_chose_before_the_harness_starts(
    workspace: Path, tmp_path: Path
) -> None:
    seen: list[Any] = []

    async def peek(launch: Launch) -> None:
        store = launch.options.session_store
        seen.append(await store.read_lease(flower_stores_key(launch.options), launch.session_id))  # type: ignore[union-attr]

    model = Model([lambda sid: [init(sid), peek, said(sid, "HELLO"), ended(sid, "HELLO")]])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        result = await rt.run(counter(), "say hello")
        [launch] = model.launches
        assert result.ok, (result.error, result.errors)
        assert result.session_id == launch.session_id == launch.options.session_id
        uuid.UUID(launch.session_id)  # the Runtime's choice: a uuid4
        assert launch.lease_session == launch.session_id, "the SDK wrote through the view fenced for that session"
        assert launch.refused == []
        live, epoch = await _stored_lease(rt, launch.session_id)
        assert live is None and epoch == 1, "released at the end of the step; the epoch stays"
    # While the step ran, the store named this process as the driver.
    [(owner, lease_sid)] = [(lease.owner, lease.session_id) for lease in seen]
    assert owner == LeaseOwner.this_process(rt.run_id) and lease_sid == launch.session_id


async def test_session_id_names_the_new_session_and_resume_wins_only_when_stored(
    workspace: Path, tmp_path: Path
) -> None:
    chosen, missing = _uuid(), _uuid()
    model = Model([simple("ONE"), simple("TWO"), simple("THREE")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        first = await rt.run(counter(), "one", session_id=chosen)
        # A retry of a step whose first attempt stored nothing: the session to resume is not there.
        second = await rt.run(counter(), "two", resume=missing, session_id=missing)
        # It is there now: resume wins.
        third = await rt.run(counter(), "three", resume=missing, session_id=missing)
    assert first.session_id == chosen and model.launches[0].options.session_id == chosen
    assert second.session_id == missing and model.launches[1].options.resume is None
    assert model.launches[1].options.session_id == missing
    assert third.session_id == missing and model.launches[2].options.resume == missing
    assert model.launches[2].options.session_id is None
    assert all(launch.lease_session == launch.session_id for launch in model.launches)


async def test_a_live_lease_of_another_process_refuses_the_step_before_anything_runs(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model([simple("FIRST")])
    run_dir = tmp_path / "runs"
    with Runtime(workspace, run_dir, query_fn=model) as rt:
        first = await rt.run(counter(), "first")
        sid = first.session_id
        assert sid
        await rt.store.acquire_lease(rt.project_key, sid, THIEF, ttl=120)  # type: ignore[attr-defined]
        with pytest.raises(SessionBusy) as refused:
            await rt.run(counter(), "second", resume=sid)
    message = str(refused.value)
    assert "\n" not in message and sid[:8] in message
    for part in ("host other-box", "pid 4242", "run run-thief", "since", "until", "wait for that run to finish"):
        assert part in message, message
    assert refused.value.lease.owner == THIEF
    assert len(model.launches) == 1, "the refused step launched nothing"
    assert [row["session_id"] for row in rows(run_dir)] == [sid], "and recorded nothing"


async def test_the_same_runtime_drives_its_session_again_step_after_step(workspace: Path, tmp_path: Path) -> None:
    model = Model([simple("A"), simple("B"), simple("C")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        first = await rt.run(counter(), "a")
        second = await rt.run(counter(), "b", resume=first.session_id)
        third = await rt.run(counter(), "c", resume=first.session_id)
        assert first.session_id
        _live, epoch = await _stored_lease(rt, first.session_id)
    assert first.ok and second.ok and third.ok
    assert second.session_id == third.session_id == first.session_id
    assert epoch == 3, "each step took it afresh after the previous one released it"


async def test_a_lease_of_a_dead_process_of_this_machine_is_taken_over_at_once(workspace: Path, tmp_path: Path) -> None:
    dead = LeaseOwner(socket.gethostname(), _a_dead_pid(), "run-killed")
    model = Model([simple("FIRST"), simple("AGAIN")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        first = await rt.run(counter(), "first")
        sid = first.session_id
        assert sid
        await rt.store.acquire_lease(rt.project_key, sid, dead, ttl=600)  # type: ignore[attr-defined]
        again = await rt.run(counter(), "again", resume=sid)
        _live, epoch = await _stored_lease(rt, sid)
    assert again.ok and again.session_id == sid
    assert epoch == 3, "the dead holder's epoch (2) was superseded"


def _a_dead_pid() -> int:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(gone.stdout)  # reaped: os.kill(pid, 0) finds no process


async def test_a_lease_taken_over_mid_step_stops_the_step_and_fences_out_its_appends(
    workspace: Path, tmp_path: Path
) -> None:
    async def take_over(launch: Launch) -> None:
        # Another process finds the session's lease ended (as after an expiry) and takes it at the next epoch.
        store = launch.options.session_store.backend  # type: ignore[union-attr]
        lease = await store.read_lease(flower_stores_key(launch.options), launch.session_id)
        await store.release_lease(lease)
        await store.acquire_lease(lease.project_key, lease.session_id, THIEF, ttl=120)

    model = Model(
        [
            lambda sid: [
                init(sid),
                said(sid, "BEFORE"),
                take_over,
                said(sid, "AFTER: refused by the fence"),
                _forever,  # the harness would go on; the lost renewal must stop the step
            ]
        ]
    )
    run_dir = tmp_path / "runs"
    with Runtime(workspace, run_dir, query_fn=model, lease_ttl=0.3) as rt:
        with anyio.fail_after(30):
            result = await rt.run(counter(), "work")
        [launch] = model.launches
        entries = await rt.store.backend.load({"project_key": rt.project_key, "session_id": launch.session_id})  # type: ignore[attr-defined]
    assert not result.ok and result.error and result.error.startswith(Runtime.TAKEN_OVER), result.error
    assert "other-box/pid 4242 (run run-thief)" in result.error
    assert len(launch.refused) == 1 and "taken over at epoch 2" in launch.refused[0]
    texts = json.dumps(entries)
    assert "AFTER" not in texts and len(entries) == 2, "the prompt and BEFORE; nothing after the takeover"
    [row] = rows(run_dir)
    assert row["ok"] is False and row["error"].startswith(Runtime.TAKEN_OVER)


async def test_a_takeover_the_renewals_did_not_see_yet_still_fails_the_step(workspace: Path, tmp_path: Path) -> None:
    async def take_over(launch: Launch) -> None:
        store = launch.options.session_store.backend  # type: ignore[union-attr]
        lease = await store.read_lease(flower_stores_key(launch.options), launch.session_id)
        await store.release_lease(lease)
        await store.acquire_lease(lease.project_key, lease.session_id, THIEF, ttl=120)

    # The default ttl: no renewal falls inside the step, which runs to its end after the takeover.
    model = Model([lambda sid: [init(sid), said(sid, "BEFORE"), take_over, said(sid, "AFTER"), ended(sid, "AFTER")]])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        result = await rt.run(counter(), "work")
    assert not result.ok and result.error and result.error.startswith(Runtime.TAKEN_OVER), result.error
    assert "other-box/pid 4242" in result.error and len(model.launches[0].refused) == 1


async def _forever(launch: Launch) -> None:
    await anyio.sleep_forever()


async def test_a_handoff_successor_gets_its_own_lease_and_the_retired_one_is_released(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model(
        [
            lambda sid: [
                init(sid),
                bash(sid, "t1", "echo one", context=140_000),
                answered("t1", "one"),
                bash(sid, "t2", "echo two", context=160_000),
                answered("t2", "two"),
                said(sid, "NEVER-SHOWN"),
                ended(sid),
            ],
            lambda sid: [init(sid), said(sid, HANDOFF_TEXT, context=161_000), ended(sid, HANDOFF_TEXT)],
            lambda sid: [init(sid), said(sid, "SUCCESSOR-DONE"), ended(sid, "SUCCESSOR-DONE")],
        ]
    )
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW), query_fn=model) as rt:
        result = await rt.run(counter(), "count the widgets")
        old, writing, successor = model.launches
        old_lease = await _stored_lease(rt, old.session_id)
        new_lease = await _stored_lease(rt, successor.session_id)
    assert result.ok and result.retired == [old.session_id] and result.session_id == successor.session_id
    assert writing.session_id == old.session_id and writing.lease_session == old.session_id
    assert successor.session_id != old.session_id and successor.lease_session == successor.session_id
    assert successor.options.session_id == successor.session_id, "the successor's id was chosen and leased first"
    assert old_lease == (None, 1) and new_lease == (None, 1), "both released, each at its own first epoch"


async def test_without_a_lease_the_harness_picks_the_id_and_writes_to_the_store_itself(
    workspace: Path, tmp_path: Path
) -> None:
    model = Model([simple("FREE")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model, lease=False) as rt:
        result = await rt.run(counter(), "free")
        assert result.session_id
        live, epoch = await _stored_lease(rt, result.session_id)
    [launch] = model.launches
    assert result.ok and launch.options.session_id is None and launch.lease_session is None
    assert (live, epoch) == (None, None)


async def test_a_store_without_leases_runs_without_one(workspace: Path, tmp_path: Path) -> None:
    from claude_agent_sdk import InMemorySessionStore

    model = Model([simple("MEMORY")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model, store=InMemorySessionStore()) as rt:
        result = await rt.run(counter(), "in memory")
    assert result.ok and model.launches[0].lease_session is None


async def test_a_forked_session_is_new_and_leased_under_its_own_id(workspace: Path, tmp_path: Path) -> None:
    model = Model([simple("BASE"), simple("FORK")])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        base = await rt.run(counter(), "base")
        fork = await rt.run(counter(), "fork", resume=base.session_id, fork=True)
    launch = model.launches[1]
    assert fork.ok and fork.session_id != base.session_id
    assert launch.options.resume == base.session_id and launch.options.fork_session
    assert launch.options.session_id == fork.session_id == launch.lease_session


def test_sqlite_store_grants_leases(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    try:
        assert isinstance(store, flower_stores.SessionLeases)
    finally:
        store.close()
