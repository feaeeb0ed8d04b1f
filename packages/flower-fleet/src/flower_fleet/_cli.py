"""``flower fleet …``: a typer app flower-cli mounts through its ``flower_cli.commands`` entry point.

Only typer is imported at the top: ``flower --help`` loads this module, and must stay fast. Each command
imports the Temporal SDK inside its function.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

if TYPE_CHECKING:
    from ._client import Fleet  # why: it loads Temporal; flower --help loads this module
    from ._model import RunState

__all__ = ["app"]

T = TypeVar("T")

app = typer.Typer(
    help=(
        "Run flower workflows on many machines, on a Temporal server (FLOWER_TEMPORAL=host:port): "
        "`flower fleet worker` on each machine, `flower fleet submit flows.py:main` from anywhere."
    ),
    rich_markup_mode=None,
    no_args_is_help=True,
)

# Exit codes as flower's: 1 the run did not complete, 2 a usage mistake, 3 configuration (the server).
_NOT_DONE, _USAGE, _CONFIG = 1, 2, 3


def _fail(code: int, message: str) -> typer.Exit:
    sys.stderr.write(f"flower fleet: {message}\n")
    return typer.Exit(code)


def _run(work: Callable[[Fleet], Awaitable[T]]) -> T:
    """Connect (FLOWER_TEMPORAL…), run ``work``, and turn the fleet's errors into one line and an exit code."""

    from ._client import Fleet, RunNotFoundError  # why: it loads Temporal; flower --help loads this module
    from ._config import FleetConfigError

    async def go() -> T:
        fleet = await Fleet.connect()
        return await work(fleet)

    try:
        return asyncio.run(go())
    except FleetConfigError as exc:
        raise _fail(_CONFIG, str(exc)) from None
    except RunNotFoundError as exc:
        raise _fail(_USAGE, str(exc)) from None


def _leave(code: int) -> None:
    """End the process now, after flushing: a short-lived Temporal client can abort in interpreter shutdown
    (temporalio/sdk-python#300), which would turn a finished command into a crash."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _state_lines(state: RunState) -> list[str]:
    head = f"{state.run_id}  {state.status}  {state.workflow}  ${state.cost_usd:.4f}"
    lines = [head]
    done = {o.step: o for o in state.done}
    # A go phase continued after a question runs as "<label>/<n>": it is the same step.
    running = {r.step.split("/", 1)[0]: r for r in state.running}
    for name in state.steps:
        outcome = done.get(name)
        if outcome is not None:
            how = "skipped" if outcome.skipped else ("ok" if outcome.ok else f"failed: {outcome.error}")
            line = f"  {name}: {how}  session {outcome.session_id or '-'}  on {outcome.worker or '-'}"
            if outcome.restored_from:
                line += f"  (workspace restored from checkpoint {outcome.restored_from[:12]})"
            lines.append(line)
        elif name in running:
            held = running[name]
            lines.append(f"  {name}: {held.state or 'running'}  attempt {held.attempt}  on {held.worker or '-'}")
        elif name == state.step:
            lines.append(f"  {name}: running")
        else:
            lines.append(f"  {name}: waiting")
    if state.question:
        lines.append(f"  question: {state.question}")
    if state.error:
        lines.append(f"  error: {state.error}")
    return lines


def _as_json(state: RunState) -> str:

    return json.dumps({**dataclasses.asdict(state), "cost_usd": state.cost_usd}, ensure_ascii=False)


@app.command()
def worker(
    slots: Annotated[int, typer.Option("--slots", min=1, help="How many steps this machine runs at once.")] = 1,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="URL", help="The session store every worker shares (also FLOWER_STORE_URL)."),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root", metavar="PATH", help="The fleet root (also FLOWER_FLEET_ROOT) [default: ~/flower-fleet]."
        ),
    ] = None,
    heartbeat_every: Annotated[
        float, typer.Option("--heartbeat-every", min=0.1, help="Seconds between a running step's heartbeats.")
    ] = 5.0,
    checkpoint_every: Annotated[
        float,
        typer.Option(
            "--checkpoint-every", min=1.0, help="Seconds between the checkpoints of a --repo run's step while it runs."
        ),
    ] = 300.0,
) -> None:
    """Run steps of the fleet's runs on this machine until SIGTERM (which hands its running steps back)."""

    from ._client import Fleet  # why: it loads Temporal; flower --help loads this module
    from ._config import FleetConfigError

    url = store or os.environ.get("FLOWER_STORE_URL") or None
    if url is None or not url.startswith(("postgresql://", "postgres://")):
        raise _fail(_USAGE, "a worker needs the shared PostgreSQL store: --store postgresql://… or FLOWER_STORE_URL")

    async def go() -> None:
        fleet = await Fleet.connect(root=root)
        made = fleet.worker(slots=slots, store=url, heartbeat_every=heartbeat_every, checkpoint_every=checkpoint_every)
        sys.stderr.write(
            f"flower fleet: worker {made.config().get('identity')} polling {fleet.config.task_queue} "
            f"on {fleet.config.address} with {slots} slot(s)\n"
        )
        await fleet.run_worker(made)

    try:
        asyncio.run(go())
    except FleetConfigError as exc:
        raise _fail(_CONFIG, str(exc)) from None
    _leave(0)


def _is_workflow(target: str) -> bool:
    """``file.py:attr`` or ``module:attr`` (one word with a colon); anything else is a go ask."""

    return re.fullmatch(r"[\w./~-]+:[A-Za-z_]\w*", target.strip()) is not None


@app.command()
def submit(
    target: Annotated[
        str,
        typer.Argument(
            metavar="WORKFLOW|ASK",
            help="The workflow, as file.py:attr inside the run's workspace; or an ask in words: a go run.",
        ),
    ],
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="The run's id; submitting an existing id starts nothing.")
    ] = None,
    repo: Annotated[
        str, typer.Option("--repo", metavar="URL", help="The git remote the workspace is filled from.")
    ] = "",
    branch: Annotated[str, typer.Option("--branch", help="The branch of --repo to start from.")] = "",
    shared: Annotated[
        bool, typer.Option("--shared", help="The fleet root is one filesystem every worker sees: no checkpoints.")
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run to end; exit 1 unless it completed.")] = False,
    heartbeat_timeout: Annotated[
        float, typer.Option("--heartbeat-timeout", min=1.0, help="Seconds without a heartbeat before a step moves.")
    ] = 30.0,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Attempts of each step's task.")] = 10,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="A go run: judged work rounds in all.")] = 3,
    asks: Annotated[
        int | None, typer.Option("--asks", min=0, help="A go run: questions to the person at most [default: no limit].")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.0,
            help="A go run: seconds a question waits for `flower fleet answer` (0: nobody is asked; inf: forever).",
        ),
    ] = 1800.0,
    no_goal: Annotated[bool, typer.Option("--no-goal", help="A go run: no goal and no judge, one round.")] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="USD",
            min=0.01,
            help="What the whole run may spend, every step counted [default: no limit].",
        ),
    ] = None,
) -> None:
    """Submit a run — of a workflow (file.py:attr) or of an ask (a go run: clarify, goal, judged rounds) — and
    print its id (with --wait, its final status)."""

    if not repo and not shared:
        raise _fail(_USAGE, "say where the run's files come from: --repo URL, or --shared (one filesystem)")
    is_flow = _is_workflow(target)
    if not target.strip():
        raise _fail(_USAGE, 'give a workflow (flows.py:main) or an ask in quotes ("add a greeting")')

    async def go(fleet: Fleet) -> tuple[str, RunState | None]:
        rid = await fleet.submit(
            target if is_flow else "",
            ask="" if is_flow else target,
            run_id=run_id,
            repo=repo,
            branch=branch,
            shared=shared,
            heartbeat_timeout=heartbeat_timeout,
            max_attempts=attempts,
            rounds=rounds,
            asks=asks,
            question_timeout=None if math.isinf(timeout) else timeout,
            goal=not no_goal,
            budget_usd=budget,
        )
        return rid, (await fleet.result(rid) if wait else None)

    rid, state = _run(go)
    if state is None:
        print(rid)
        _leave(0)
    assert state is not None
    print("\n".join(_state_lines(state)))
    _leave(0 if state.status == "completed" else _NOT_DONE)


@app.command()
def status(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Argument(help="One run's id [default: every run, newest first].")] = None,
) -> None:
    """The fleet's runs: each step, the worker that ran it, its session, a pending question, the cost (with
    flower's global --json: one JSON object per run)."""
    as_json = bool(getattr(ctx.obj, "json", False))

    async def go(fleet: Fleet) -> list[RunState]:
        ids = [run] if run else [rid async for rid in fleet.runs()]
        return [await fleet.state(rid) for rid in ids]

    states = _run(go)
    for state in states:
        print(_as_json(state) if as_json else "\n".join(_state_lines(state)))
    _leave(0)


@app.command()
def answer(
    run: Annotated[str, typer.Argument(help="The run's id.")],
    text: Annotated[str, typer.Argument(help="The answer (empty: skip the question; the agent decides).")],
) -> None:
    """Answer the question a go run waits on (`flower fleet status` shows it); its phase continues with it."""

    async def go(fleet: Fleet) -> None:
        await fleet.answer(run, text)

    _run(go)
    _leave(0)


@app.command()
def cancel(run: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Cancel a run: its running step stops at its next heartbeat and is recorded."""

    async def go(fleet: Fleet) -> None:
        await fleet.cancel(run)

    _run(go)
    _leave(0)


@app.command()
def logs(run: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """A run's history: each step's attempts, the worker of each, how each ended."""

    async def go(fleet: Fleet) -> list[str]:
        return await fleet.logs(run)

    print("\n".join(_run(go)))
    _leave(0)
