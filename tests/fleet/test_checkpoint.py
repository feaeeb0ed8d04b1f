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
    CheckpointRefused,
    Restored,
    checkpoint,
    claim_branch,
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


def test_a_push_lands_only_on_the_commit_this_workspace_last_pushed_or_restored(
    remote: str, machines: tuple[Path, Path]
) -> None:
    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    (ws1 / "app.py").write_text("print('one')\n")
    base = checkpoint(ws1, RUN, "step a ended")
    ws2 = prepare_workspace(m2, RUN, remote, "main").path
    # Machine one was thought dead but is not: both go on from the same checkpoint and both checkpoint.
    (ws2 / "app.py").write_text("print('two')\n")
    theirs = checkpoint(ws2, RUN, "periodic")
    (ws1 / "app.py").write_text("print('one, later')\n")
    with pytest.raises(CheckpointRefused, match=r"refused: flower/run-7 moved on since [0-9a-f]{12}") as caught:
        checkpoint(ws1, RUN, "periodic")
    assert "\n" not in str(caught.value) and base is not None and base[:12] in str(caught.value)
    # Nothing changed on the remote: the branch is the checkpoint that landed first, nothing merged into it.
    assert remote_head(remote) == theirs
    assert git(Path(remote), "show", f"{theirs}:app.py") == "print('two')"
    assert git(ws1, "show", "HEAD:app.py") == "print('one, later')"  # kept on its machine, committed


def test_a_superseded_attempts_pushes_are_refused_once_logged_and_change_nothing(
    remote: str, machines: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="flower_fleet.checkpoint")
    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    first = claim_branch(ws1, RUN, "step a, attempt 1")
    assert first.base == remote_head(remote) == git(ws1, "rev-parse", "HEAD") and first.refused == ""
    assert git(ws1, "diff", "HEAD^", "HEAD") == "", "a claim is an empty commit"
    (ws1 / "app.py").write_text("print('attempt 1')\n")
    pushed = checkpoint(ws1, RUN, "periodic", first)
    assert pushed == first.base == remote_head(remote)

    # Attempt 1 stops (SIGSTOP); attempt 2 restores its checkpoint on machine two and claims the branch.
    restored = prepare_workspace(m2, RUN, remote, "main")
    assert restored.commit == pushed
    second = claim_branch(restored.path, RUN, "step a, attempt 2")
    (restored.path / "app.py").write_text("print('attempt 2 completed the run')\n")
    completed = checkpoint(restored.path, RUN, "step a ended", second)
    assert completed == remote_head(remote)

    # Attempt 1 runs again with what its Claude Code did meanwhile: its push is refused, said once, in one line.
    (ws1 / "app.py").write_text("print('stale')\n")
    with pytest.raises(CheckpointRefused):
        checkpoint(ws1, RUN, "periodic", first)
    assert first.refused and first.base == pushed
    (ws1 / "late.txt").write_text("later still\n")
    with pytest.raises(CheckpointRefused):
        checkpoint(ws1, RUN, "step a ended", first)
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and "\n" not in refusals[0] and RUN in refusals[0], refusals
    assert remote_head(remote) == completed, "the completed run's branch is untouched"
    assert git(Path(remote), "show", f"{completed}:app.py") == "print('attempt 2 completed the run')"
    # Its files stay on its machine (the refused claim commits nothing more).
    assert (ws1 / "app.py").read_text() == "print('stale')\n" and (ws1 / "late.txt").is_file()
    assert "late.txt" in git(ws1, "status", "--porcelain")
    # Attempt 2 goes on pushing onto its own last checkpoint.
    (restored.path / "next.txt").write_text("next\n")
    assert checkpoint(restored.path, RUN, "periodic", second) == remote_head(remote) == second.base


def test_a_claim_on_a_branch_that_moved_since_the_restore_is_refused_and_prepare_claims_again(
    remote: str, machines: tuple[Path, Path]
) -> None:
    from flower_fleet import RunSpec
    from flower_fleet._workspace import prepare

    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    before = git(ws1, "rev-parse", "HEAD")
    # Another attempt pushes between this workspace's fetch and its claim.
    ws2 = prepare_workspace(m2, RUN, remote, "main").path
    (ws2 / "app.py").write_text("print('meanwhile')\n")
    meanwhile = checkpoint(ws2, RUN, "periodic")
    with pytest.raises(CheckpointRefused, match="since this attempt began"):
        claim_branch(ws1, RUN, "step a, attempt 2")
    assert git(ws1, "rev-parse", "HEAD") == before, "the refused claim's empty commit is undone"
    assert remote_head(remote) == meanwhile
    # Preparing with a claim fetches again, restores what was pushed meanwhile, and claims on it.
    spec = RunSpec(run_id=RUN, workflow="flows.py:main", repo=remote, branch="main")
    prepared = prepare(m1, spec, claim="step a, attempt 2")
    assert prepared.commit == meanwhile and prepared.claim is not None
    assert prepared.claim.base == remote_head(remote) == git(ws1, "rev-parse", "HEAD")
    assert git(ws1, "rev-parse", "HEAD^") == meanwhile
    assert (ws1 / "app.py").read_text() == "print('meanwhile')\n"
    assert "step a, attempt 2 claims the branch" in git(ws1, "show", "-s", "--format=%s", "HEAD")


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


async def test_a_refused_periodic_checkpoint_ends_the_checkpoints_and_says_why_once(
    remote: str, machines: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="flower_fleet.checkpoint")
    m1, m2 = machines
    ws1 = prepare_workspace(m1, RUN, remote, "main").path
    first = claim_branch(ws1, RUN, "attempt 1")
    ws2 = prepare_workspace(m2, RUN, remote, "main").path
    later = claim_branch(ws2, RUN, "attempt 2")
    heard: list[str] = []
    async with periodic_checkpoints(ws1, RUN, 0.05, first, heard.append):
        (ws1 / "app.py").write_text("print('stale')\n")
        await _until(lambda: bool(heard), "the refusal heard")
        (ws1 / "app.py").write_text("print('staler')\n")
        await anyio.sleep(0.3)  # six more periods: none of them may push, commit or log again
    assert len(heard) == 1 and "refused" in heard[0]
    assert remote_head(remote) == later.base
    assert sum("refused" in r.getMessage() for r in caplog.records) == 1, caplog.text
    assert "app.py" in git(ws1, "status", "--porcelain"), "nothing committed after the refusal"


def test_the_step_end_checkpoint_names_the_branchs_commit_when_a_periodic_one_pushed_everything(
    remote: str, machines: tuple[Path, Path]
) -> None:
    from flower_fleet import RunSpec
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
