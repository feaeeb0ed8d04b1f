"""Workspace checkpoints with real git: a bare repository is the remote, two fleet roots are two machines."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

try:
    import flower_fleet  # noqa: F401 - only to learn whether flower-fleet is installed
except ImportError:  # not installed yet (a checkout without the package's environment): import it from its source
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "packages" / "flower-fleet" / "src"))

from flower_fleet._checkpoint import (
    CheckpointError,
    Restored,
    checkpoint,
    periodic_checkpoints,
    prepare_workspace,
    pushed_checkpoint,
    restored_note,
    workspace_path,
)

RUN = "run-7"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture(autouse=True)
def _home(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No git configuration but the test's own: the checkpoints' author is flower's default."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def remote(tmp_path: Path) -> str:
    """A bare repository with one commit on main: a tracked file and a .gitignore."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(seed)], check=True, capture_output=True)
    (seed / "app.py").write_text("print('v1')\n")
    (seed / ".gitignore").write_text("*.log\n")
    git(seed, "add", ".")
    git(seed, "-c", "user.name=seed", "-c", "user.email=seed@x", "commit", "-qm", "seed")
    git(seed, "push", "-q", "origin", "HEAD:main")
    return str(bare)


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "m1" / "fleet", tmp_path / "m2" / "fleet"


def remote_head(remote: str, run_id: str = RUN) -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/flower/{run_id}"],
        cwd=remote,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


# --- the path ----------------------------------------------------------------------------------------------


def test_the_workspace_path_is_fixed_under_the_root(tmp_path: Path) -> None:
    assert workspace_path(tmp_path, RUN) == tmp_path / "runs" / RUN
    assert workspace_path(tmp_path / "a" / ".." / "b", "x.1_2-3") == tmp_path / "b" / "runs" / "x.1_2-3"
    for bad in ("", "../x", "a/b", "/etc", ".hidden", "-rf", "a..b", "x.lock", "x.", "a b", "x" * 101, "é"):
        with pytest.raises(ValueError, match="cannot name a workspace"):
            workspace_path(tmp_path, bad)


# --- two machines -------------------------------------------------------------------------------------------


def test_machine_two_continues_from_machine_ones_checkpoint(remote: str, machines: tuple[Path, Path]) -> None:
    m1, m2 = machines
    first = prepare_workspace(m1, RUN, remote, "main")
    assert first == Restored(workspace_path(m1, RUN), None, None) and restored_note(first) == ""
    ws1 = first.path
    assert git(ws1, "branch", "--show-current") == f"flower/{RUN}"
    (ws1 / "app.py").write_text("print('v2')\n")
    (ws1 / "notes").mkdir()
    (ws1 / "notes" / "plan.md").write_text("untracked, new\n")
    (ws1 / "debug.log").write_text("ignored\n")
    before = datetime.now(UTC).replace(microsecond=0)
    sha = checkpoint(ws1, RUN, "step build ended")
    assert sha is not None and remote_head(remote) == sha == git(ws1, "rev-parse", "HEAD")
    assert git(Path(remote), "show", "-s", "--format=%an <%ae>", sha) == "flower <flower@localhost>"
    message = git(Path(remote), "show", "-s", "--format=%B", sha)
    assert RUN in message and "step build ended" in message and "UTC" in message
    assert git(ws1, "status", "--porcelain") == ""  # everything committed but the ignored file
    assert checkpoint(ws1, RUN, "nothing new") is None  # unchanged and pushed

    restored = prepare_workspace(m2, RUN, remote, "main")
    ws2 = restored.path
    assert ws2 == workspace_path(m2, RUN) and ws2.relative_to(m2) == ws1.relative_to(m1)
    assert restored.commit == sha and restored.at is not None and restored.at >= before - timedelta(seconds=1)
    assert (ws2 / "app.py").read_text() == "print('v2')\n" and (ws2 / "notes" / "plan.md").is_file()
    assert not (ws2 / "debug.log").exists()  # .gitignore respected
    note = restored_note(restored)
    assert sha[:12] in note and f"{restored.at:%Y-%m-%d %H:%M:%S}" in note and "another machine" in note
    assert "Verify" in note and "\n" not in note

    # Machine two goes on; machine one, preparing again (the step came back), restores machine two's files.
    (ws2 / "app.py").write_text("print('v3')\n")
    sha2 = checkpoint(ws2, RUN, "handoff")
    back = prepare_workspace(m1, RUN, remote, "main")
    assert back.commit == sha2 and (ws1 / "app.py").read_text() == "print('v3')\n"
    # ... and preparing again where the workspace already is at the newest checkpoint restores nothing.
    assert prepare_workspace(m1, RUN, remote, "main") == Restored(ws1, None, None)


def test_the_configured_author_is_kept(remote: str, machines: tuple[Path, Path]) -> None:
    ws = prepare_workspace(machines[0], RUN, remote, None).path
    git(ws, "config", "user.name", "Ada")
    git(ws, "config", "user.email", "ada@example.org")
    (ws / "a.txt").write_text("a\n")
    sha = checkpoint(ws, RUN, "step end")
    assert sha is not None and git(ws, "show", "-s", "--format=%an <%ae>", sha) == "Ada <ada@example.org>"


def test_a_later_checkpoint_of_another_attempt_wins_and_keeps_the_earlier_in_history(
    remote: str, machines: tuple[Path, Path]
) -> None:
    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    (ws1 / "app.py").write_text("print('one')\n")
    base = checkpoint(ws1, RUN, "step a ended")
    ws2 = prepare_workspace(m2, RUN, remote, "main").path
    # Machine one was thought dead but is not: both go on from the same checkpoint and both checkpoint.
    (ws2 / "app.py").write_text("print('two')\n")
    (ws2 / "two.txt").write_text("two\n")
    theirs = checkpoint(ws2, RUN, "periodic")
    (ws1 / "app.py").write_text("print('one, later')\n")
    ours = checkpoint(ws1, RUN, "periodic")
    assert ours is not None and theirs is not None and base is not None
    head = remote_head(remote)
    assert head == ours
    # The later checkpoint's files win ...
    assert git(Path(remote), "show", f"{head}:app.py") == "print('one, later')"
    assert git(Path(remote), "ls-tree", "--name-only", head).split() == [".gitignore", "app.py"]
    # ... and the other attempt's commit stays reachable from the branch, nothing deleted.
    subprocess.run(["git", "merge-base", "--is-ancestor", theirs, head], cwd=remote, check=True)
    assert "wins over" in git(Path(remote), "show", "-s", "--format=%s", head)


# --- failures: refused clearly, never losing work -----------------------------------------------------------


def test_a_push_that_fails_keeps_the_commit_and_the_next_checkpoint_pushes_it(
    remote: str, machines: tuple[Path, Path]
) -> None:
    ws = prepare_workspace(machines[0], RUN, remote, "main").path
    (ws / "app.py").write_text("print('precious')\n")
    away = Path(remote + ".away")
    Path(remote).rename(away)
    with pytest.raises(CheckpointError) as caught:
        checkpoint(ws, RUN, "step end")
    message = str(caught.value)
    assert "\n" not in message and "is committed in" in message and "the next checkpoint pushes it" in message
    assert git(ws, "status", "--porcelain") == "" and "precious" in git(ws, "show", "HEAD:app.py")
    away.rename(remote)
    sha = checkpoint(ws, RUN, "retry")  # nothing new to commit, but not pushed yet: pushed now
    assert sha == git(ws, "rev-parse", "HEAD") == remote_head(remote)
    assert checkpoint(ws, RUN, "again") is None


def test_prepare_refuses_a_missing_repo_branch_or_unreachable_remote(
    remote: str, machines: tuple[Path, Path], tmp_path: Path
) -> None:
    m1, _ = machines
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: prepare_workspace(m1, "a", str(tmp_path / "nope.git"), None), "cannot clone"),
        (lambda: prepare_workspace(m1, "b", remote, "no-such-branch"), "cannot clone"),
        (lambda: prepare_workspace(m1, "c", "", None), "pass --repo"),
    ]
    for call, words in cases:
        with pytest.raises(CheckpointError, match=words) as caught:
            call()
        assert "\n" not in str(caught.value)
    assert not (m1 / "runs" / "a").exists() and not any((m1 / "runs").glob(".*cloning*"))  # no half clone left
    prepare_workspace(m1, RUN, remote, "main")
    away = Path(remote + ".away")
    Path(remote).rename(away)
    try:
        with pytest.raises(CheckpointError, match="cannot fetch .* check that this machine reaches the remote"):
            prepare_workspace(m1, RUN, remote, "main")
    finally:
        away.rename(remote)


def test_prepare_refuses_changes_that_are_not_this_runs_and_a_foreign_directory(
    remote: str, machines: tuple[Path, Path], tmp_path: Path
) -> None:
    m1, _ = machines
    ws = prepare_workspace(m1, RUN, remote, "main").path
    git(ws, "checkout", "-q", "main")
    (ws / "app.py").write_text("someone's edit\n")
    with pytest.raises(CheckpointError, match=r"uncommitted changes on main, not on flower/run-7, so they are not"):
        prepare_workspace(m1, RUN, remote, "main")
    assert (ws / "app.py").read_text() == "someone's edit\n"  # untouched
    other = tmp_path / "other.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", remote, str(other)], check=True)
    with pytest.raises(CheckpointError, match="is a clone of .*remote.git, not .*other.git"):
        prepare_workspace(m1, RUN, str(other), "main")
    foreign = workspace_path(m1, "foreign")
    foreign.mkdir(parents=True)
    (foreign / "x").write_text("x")
    with pytest.raises(CheckpointError, match="not empty and not a git clone"):
        prepare_workspace(m1, "foreign", remote, None)


def test_this_runs_older_uncommitted_work_is_stashed_not_lost(remote: str, machines: tuple[Path, Path]) -> None:
    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    (ws1 / "app.py").write_text("print('checkpointed')\n")
    checkpoint(ws1, RUN, "step a ended")
    (ws1 / "app.py").write_text("print('never checkpointed: machine one died')\n")
    ws2 = prepare_workspace(m2, RUN, remote, "main").path
    (ws2 / "app.py").write_text("print('machine two went on')\n")
    newer = checkpoint(ws2, RUN, "step b ended")
    back = prepare_workspace(m1, RUN, remote, "main")  # machine one is back, with its stale edit
    assert back.commit == newer and (ws1 / "app.py").read_text() == "print('machine two went on')\n"
    assert "older than checkpoint" in git(ws1, "stash", "list")
    assert "machine one died" in git(ws1, "stash", "show", "-p")


def test_uncommitted_work_of_this_run_newer_than_the_checkpoint_stays(remote: str, machines: tuple[Path, Path]) -> None:
    ws = prepare_workspace(machines[0], RUN, remote, "main").path
    checkpoint(ws, RUN, "start")
    (ws / "app.py").write_text("print('in progress')\n")
    assert prepare_workspace(machines[0], RUN, remote, "main") == Restored(ws, None, None)
    assert (ws / "app.py").read_text() == "print('in progress')\n"


# --- periodic ---------------------------------------------------------------------------------------------


async def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await anyio.sleep(0.05)


async def test_periodic_checkpoints_push_while_the_block_runs(remote: str, machines: tuple[Path, Path]) -> None:
    ws = prepare_workspace(machines[0], RUN, remote, "main").path

    def pushed(text: str) -> bool:
        head = remote_head(remote)
        if head is None:
            return False
        shown = subprocess.run(["git", "show", f"{head}:app.py"], cwd=remote, capture_output=True, text=True)
        return shown.stdout == text

    async with periodic_checkpoints(ws, RUN, 0.1):
        (ws / "app.py").write_text("print('tick 1')\n")
        await _until(lambda: pushed("print('tick 1')\n"), "the first edit checkpointed")
        (ws / "app.py").write_text("print('tick 2')\n")
        await _until(lambda: pushed("print('tick 2')\n"), "the second edit checkpointed")
    reasons = git(ws, "log", "--format=%s", "-2")
    assert reasons.count("periodic") == 2


async def test_a_failing_periodic_checkpoint_is_logged_not_raised(
    remote: str, machines: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    ws = prepare_workspace(machines[0], RUN, remote, "main").path
    Path(remote).rename(remote + ".away")
    caplog.set_level(logging.WARNING, logger="flower_fleet.checkpoint")
    async with periodic_checkpoints(ws, RUN, 0.05):
        (ws / "app.py").write_text("print('cannot be pushed')\n")
        await _until(lambda: "periodic checkpoint" in caplog.text, "a failure logged")
    assert "was not pushed" in caplog.text
    assert git(ws, "status", "--porcelain") == ""  # committed locally all the same
    with pytest.raises(ValueError, match="positive"):
        async with periodic_checkpoints(ws, RUN, 0):
            pass


def test_the_step_end_checkpoint_names_the_branchs_commit_when_a_periodic_one_pushed_everything(
    remote: str, machines: tuple[Path, Path]
) -> None:
    from flower_fleet._model import RunSpec
    from flower_fleet._workspace import checkpoint as step_end_checkpoint
    from flower_fleet._workspace import prepare

    spec = RunSpec(run_id=RUN, workflow="flows.py:main", repo=remote, branch="main")
    prepared = prepare(machines[0], spec)
    assert pushed_checkpoint(prepared.path, RUN) is None, "nothing pushed yet"
    (prepared.path / "app.py").write_text("print('periodic')\n")
    periodic = checkpoint(prepared.path, RUN, "periodic")
    assert periodic is not None and pushed_checkpoint(prepared.path, RUN) == periodic == remote_head(remote)
    # Nothing changed since: the step's result is the periodic checkpoint, and the step end says so.
    assert step_end_checkpoint(prepared, spec, "step work ended") == periodic
