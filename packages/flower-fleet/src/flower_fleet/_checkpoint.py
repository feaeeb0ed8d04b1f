"""Workspace checkpoints: a run's files move with its step from machine to machine through plain git.

The SDK keys a session by its workspace path, and the files the agent edited live only on the machine that
edited them. So a run's workspace is a fixed path under the fleet root (`workspace_path`, the same on every
machine), cloned from the run's git remote, and flower commits everything and pushes it to the branch
``flower/<run-id>`` at each step end, handoff, worker report and every few minutes (`checkpoint`,
`periodic_checkpoints`). An attempt on another machine fetches that branch and continues from its newest
commit (`prepare_workspace`); its resume prompt says so (`restored_note`), because whatever changed after that
checkpoint died with the other machine.

Rules that keep work from being lost:

- a checkpoint whose push fails keeps its local commit (the next checkpoint pushes it) and says what to do;
- uncommitted changes of this run found when a workspace is reused are kept in place when they are newer
  than the remote checkpoint, else stashed (``git stash list`` names them) before the checkpoint is checked out;
  uncommitted changes that are not this run's (another branch) are refused, never touched.

The rule that keeps a superseded attempt off the branch (a worker stopped past its heartbeat timeout — a paused
VM, a closed laptop lid — comes back and pushes what its Claude Code did meanwhile): **an attempt pushes only
onto the commit it last pushed or restored from** (a compare-and-swap push, ``--force-with-lease`` with that
commit). Each attempt of a step claims the branch as it starts (`claim_branch`: an empty commit pushed onto the
checkpoint it restored, `BranchClaim`), so from the moment a later attempt claims it, every push of an earlier
attempt is refused (`CheckpointRefused`): logged once, one line, and nothing changes on the remote; its files
stay in its own workspace. Temporal starts a later attempt only once it presumes the earlier one dead, so the
branch follows the attempts in that order, as the store's session lease does for the transcript. (The rule it
replaces, "the later checkpoint wins", let a stopped worker's late push replace a completed run's files.)

Plain ``git`` through subprocess (no dependency); every git failure is a `CheckpointError` with one line.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio
import anyio.to_thread

__all__ = [
    "BranchClaim",
    "CheckpointError",
    "CheckpointRefused",
    "Restored",
    "checkpoint",
    "claim_branch",
    "periodic_checkpoints",
    "prepare_workspace",
    "pushed_checkpoint",
    "restored_note",
    "workspace_path",
]

log = logging.getLogger("flower_fleet.checkpoint")

AUTHOR_NAME = "flower"
AUTHOR_EMAIL = "flower@localhost"
# A clone, fetch or push of a large repository on a slow link can take minutes; a hung one must still end.
NETWORK_TIMEOUT_S = 600.0
LOCAL_TIMEOUT_S = 120.0
# A run id becomes a directory name and a branch name: letters, digits, '.', '_', '-', starting with a letter or
# digit, so it is never '..', a hidden file, an option (-x) or a ref git refuses.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# git's words for a push refused because the remote branch is not at the commit the push expected (another
# attempt pushed or claimed it since).
_REJECTED = ("[rejected]", "stale info", "non-fast-forward", "fetch first", "Updates were rejected")
# One lock per workspace: a periodic checkpoint and a step-end checkpoint of one process never interleave.
_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


class CheckpointError(RuntimeError):
    """A workspace cannot be prepared or checkpointed; the message is one line saying what to do."""


class CheckpointRefused(CheckpointError):  # noqa: N818 - the name says what happened to the push: refused
    """A push refused because the run's branch is no longer at the commit this attempt last pushed or restored
    from: a later attempt has claimed it. Nothing changed on the remote; this attempt must stop."""


@dataclass
class BranchClaim:
    """One attempt's hold on its run's branch: ``base`` is the commit it last pushed (its claim, then each
    checkpoint), the only commit its next push may replace. ``refused`` says why a push was refused (""
    while none was): from then on the attempt pushes nothing more, and says so once."""

    run_id: str
    base: str | None
    refused: str = ""


@dataclass(frozen=True)
class Restored:
    """What `prepare_workspace` did: ``path`` is the workspace; ``commit`` and ``at`` name the checkpoint it was
    restored from (its full sha and commit time, UTC), both None when nothing was restored (a fresh checkout, or
    a workspace already at the run's newest checkpoint)."""

    path: Path
    commit: str | None
    at: datetime | None


def _branch(run_id: str) -> str:
    return f"flower/{run_id}"


def _check_run_id(run_id: str) -> str:
    if (
        not isinstance(run_id, str)
        or not _RUN_ID.fullmatch(run_id)
        or ".." in run_id
        or run_id.endswith((".", ".lock"))
    ):
        raise ValueError(
            f"run id {run_id!r} cannot name a workspace and a branch: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no '..', not ending in '.' or '.lock')"
        )
    return run_id


def workspace_path(root: Path, run_id: str) -> Path:
    """``<root>/runs/<run_id>``: the run's workspace, the same path on every machine with the same fleet root.

    ``root`` is made absolute but symlinks are not resolved: the path is what the SDK sees on every machine.
    Raises ValueError for a run id that could leave ``root`` or is not a valid branch name.
    """
    return Path(os.path.abspath(Path(root).expanduser())) / "runs" / _check_run_id(run_id)


# --- git ---------------------------------------------------------------------------------------------------


# Variables that would point git at another repository than the workspace (set when flower runs inside a git
# hook, say): left out of the environment of flower's own git commands.
_ELSEWHERE = frozenset(("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"))


def _env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _ELSEWHERE}
    # Never prompt for a password on a terminal nobody watches, and read git's messages in one language.
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C")
    return env


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    line = (fatal or lines or ["(no message)"])[-1]
    return line.removeprefix("fatal: ").removeprefix("error: ")


def _git(
    cwd: Path, *args: str, check: bool = True, timeout: float = LOCAL_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise CheckpointError("git is not installed on this machine; install git to use fleet workspaces") from None
    except subprocess.TimeoutExpired:
        raise CheckpointError(
            f"`git {args[0]}` in {cwd} took more than {timeout:.0f}s; check the network and the remote"
        ) from None
    if check and done.returncode != 0:
        raise CheckpointError(f"`git {' '.join(args[:2])}` in {cwd} failed: {_last_line(done.stderr or done.stdout)}")
    return done


def _out(cwd: Path, *args: str) -> str:
    return _git(cwd, *args).stdout.strip()


def _rev(cwd: Path, ref: str) -> str | None:
    done = _git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _is_ancestor(cwd: Path, older: str, newer: str) -> bool:
    return _git(cwd, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def _commit_time(cwd: Path, commit: str) -> datetime:
    return datetime.fromtimestamp(int(_out(cwd, "show", "-s", "--format=%ct", commit)), UTC)


def _lock(workspace: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(workspace, threading.Lock())


# --- prepare ---------------------------------------------------------------------------------------------


def _clone(repo: str, branch: str | None, path: Path) -> None:
    """Clone into a scratch directory beside ``path``, then rename: a clone cut short leaves no half workspace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.parent / f".{path.name}.cloning-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    args = ["clone", "--quiet", "--origin", "origin"]
    if branch:
        args += ["--branch", branch]
    done = _git(path.parent, *args, "--", repo, str(scratch), check=False, timeout=NETWORK_TIMEOUT_S)
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        what = f"{repo} (branch {branch})" if branch else repo
        raise CheckpointError(
            f"cannot clone {what} into {path}: {_last_line(done.stderr)}; check --repo and --branch, and that this "
            "machine reaches the remote"
        )
    scratch.rename(path)


def _reuse(repo: str, path: Path) -> None:
    """An existing workspace: the same remote, fetched now (so its checkpoint branch is the remote's newest)."""
    origin = _git(path, "remote", "get-url", "origin", check=False).stdout.strip()
    if origin != repo:
        raise CheckpointError(
            f"workspace {path} is a clone of {origin or 'no remote'}, not {repo}; remove it or give the run another id"
        )
    done = _git(path, "fetch", "--quiet", "--prune", "origin", check=False, timeout=NETWORK_TIMEOUT_S)
    if done.returncode != 0:
        raise CheckpointError(
            f"cannot fetch {repo} into {path}: {_last_line(done.stderr)}; check that this machine reaches the remote"
        )


def _current_branch(path: Path) -> str | None:
    done = _git(path, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def prepare_workspace(root: Path, run_id: str, repo: str, branch: str | None) -> Restored:
    """The run's workspace, ready for a step: cloned from ``repo`` (at ``branch``, else the remote's default) or
    an existing clone fetched, on the local branch ``flower/<run-id>`` — at the remote's newest checkpoint of
    the run when there is one.

    Returns `Restored` with the checkpoint's commit and time when files were restored from it, with None when
    the workspace was a fresh checkout or already at (or ahead of) that checkpoint. Raises `CheckpointError` for
    a repo that cannot be cloned or fetched, a branch the remote lacks, a workspace that is a clone of another
    remote or not a clone at all, and a workspace with uncommitted changes that are not this run's.
    """
    path = workspace_path(root, run_id)
    run_branch = _branch(run_id)
    if not repo:
        raise CheckpointError(f"run {run_id} has no git remote to fill {path} from; pass --repo URL (or --shared)")
    if (path / ".git").exists():
        _reuse(repo, path)
    elif path.exists() and any(path.iterdir()):
        raise CheckpointError(
            f"{path} is not empty and not a git clone; move it away so run {run_id}'s workspace can be cloned there"
        )
    else:
        if path.exists():
            path.rmdir()
        _clone(repo, branch, path)

    with _lock(path):
        current = _current_branch(path)
        dirty = bool(_out(path, "status", "--porcelain", "--untracked-files=all"))
        if dirty and current != run_branch:
            raise CheckpointError(
                f"workspace {path} has uncommitted changes on {current or 'a detached HEAD'}, not on {run_branch}, so "
                f"they are not run {run_id}'s; commit, stash or remove them (or the workspace) and try again"
            )
        remote = _rev(path, f"refs/remotes/origin/{run_branch}")
        local = _rev(path, f"refs/heads/{run_branch}")
        if remote is None:
            # No checkpoint yet: continue this machine's branch of the run if it has one, else start it here.
            if current != run_branch:
                _git(path, "checkout", "--quiet", *([run_branch] if local else ["-b", run_branch]))
            return Restored(path, None, None)
        if local is not None and _is_ancestor(path, remote, local):
            # This machine is at the checkpoint or ahead of it (a commit it could not push yet): nothing to restore.
            if current != run_branch:
                _git(path, "checkout", "--quiet", run_branch)
            return Restored(path, None, None)
        if dirty:
            # This run's own edits from an attempt here that stopped before its checkpoint; another machine has
            # checkpointed since, and its files are the newer ones. Kept, not thrown away.
            _git(
                path,
                "stash",
                "push",
                "--include-untracked",
                "--quiet",
                "--message",
                f"flower: uncommitted work of run {run_id} on {socket.gethostname()}, older than checkpoint {remote[:12]}",
            )
            log.warning("run %s: uncommitted older work in %s kept in `git stash list`", run_id, path)
        if local is not None and not _is_ancestor(path, local, remote):
            keep = f"{run_branch}-local-{datetime.now(UTC):%Y%m%dT%H%M%S}"
            _git(path, "branch", keep, local)
            log.warning("run %s: this machine's unpushed checkpoint %s kept as branch %s", run_id, local[:12], keep)
        _git(path, "checkout", "--quiet", "-B", run_branch, remote)
        return Restored(path, remote, _commit_time(path, remote))


# --- checkpoint -----------------------------------------------------------------------------------------


def _identity(path: Path) -> list[str]:
    """``-c`` options naming flower as the author unless the repository or the user configured someone."""
    name = _git(path, "config", "user.name", check=False).stdout.strip()
    email = _git(path, "config", "user.email", check=False).stdout.strip()
    out: list[str] = []
    if not name:
        out += ["-c", f"user.name={AUTHOR_NAME}"]
    if not email:
        out += ["-c", f"user.email={AUTHOR_EMAIL}"]
    return out


def _message(run_id: str, reason: str, when: datetime) -> str:
    reason = " ".join(reason.split()) or "checkpoint"
    return (
        f"flower checkpoint of run {run_id}: {reason} ({when:%Y-%m-%d %H:%M:%S} UTC)\n\n"
        f"Flower-Run: {run_id}\nFlower-Reason: {reason}\nFlower-Host: {socket.gethostname()}\n"
    )


def _push(path: Path, run_id: str, base: str | None) -> str:
    """Push HEAD to the run's branch only if the branch is still at ``base`` (None: only if it does not exist) —
    one compare-and-swap on the remote; HEAD's sha when it landed. A branch that moved on since is
    `CheckpointRefused`, nothing pushed; any other failure a `CheckpointError` that keeps the local commit."""
    run_branch = _branch(run_id)
    head = _out(path, "rev-parse", "HEAD")
    done = _git(
        path,
        "push",
        "--quiet",
        f"--force-with-lease=refs/heads/{run_branch}:{base or ''}",
        "origin",
        f"HEAD:refs/heads/{run_branch}",
        check=False,
        timeout=NETWORK_TIMEOUT_S,
    )
    if done.returncode == 0:
        _git(path, "update-ref", f"refs/remotes/origin/{run_branch}", head)
        return head
    said = done.stderr + done.stdout
    if any(word in said for word in _REJECTED):
        since = f"since {base[:12]}" if base else "since this attempt began"
        raise CheckpointRefused(
            f"checkpoint {head[:12]} of run {run_id} refused: {run_branch} moved on {since}, so a later attempt of "
            f"the run has claimed it; nothing was pushed (the files stay in {path})"
        )
    raise CheckpointError(
        f"checkpoint {head[:12]} of run {run_id} is committed in {path} but was not pushed to {run_branch}: "
        f"{_last_line(said)}; the next checkpoint pushes it, or run `git -C {path} push origin "
        f"HEAD:refs/heads/{run_branch}`"
    )


def _commit(path: Path, run_id: str, reason: str, *, empty: bool = False) -> bool:
    """Commit everything in ``path`` (an empty commit too with ``empty``); whether a commit was made."""
    identity = _identity(path)
    _git(path, "add", "--all")
    staged = _git(path, "diff", "--cached", "--quiet", check=False).returncode != 0
    if not (staged or empty):
        return False
    _git(
        path,
        *identity,
        "-c",
        "commit.gpgsign=false",
        "commit",
        "--quiet",
        "--no-verify",
        *(["--allow-empty"] if empty else []),
        "--message",
        _message(run_id, reason, datetime.now(UTC)),
    )
    return True


def _refused(claim: BranchClaim, exc: CheckpointRefused) -> CheckpointRefused:
    """Remember the refusal on the claim and log it — once per attempt: every later push is refused unsaid."""
    if not claim.refused:
        claim.refused = str(exc)
        log.warning("%s", exc)  # it names the run
    return exc


def checkpoint(workspace: Path, run_id: str, reason: str, claim: BranchClaim | None = None) -> str | None:
    """Commit everything in ``workspace`` (untracked files too, .gitignore respected) and push it to
    ``flower/<run-id>``; the commit's sha, or None when nothing changed and the branch is already pushed.

    The push lands only on the commit ``claim`` last pushed (an attempt's claim, see `claim_branch`; without
    one, on the commit this workspace last pushed or fetched). A branch that moved on since is
    `CheckpointRefused` (logged once per claim; nothing pushed, and with a refused claim nothing is committed
    either). The author is "flower <flower@localhost>" unless git is configured with one; commit hooks are not
    run (a checkpoint records the files as they are). A push that fails otherwise keeps the local commit and
    raises `CheckpointError` saying what to do. Blocking: call it from a worker thread in async code
    (`periodic_checkpoints` does).
    """
    run_branch = _branch(_check_run_id(run_id))
    path = Path(workspace)
    if claim is not None and claim.refused:
        raise CheckpointRefused(claim.refused)
    if not (path / ".git").exists():
        raise CheckpointError(f"{path} is not a git workspace; prepare it with prepare_workspace first")
    with _lock(path):
        staged = _commit(path, run_id, reason)
        head = _rev(path, "HEAD")
        if head is None:
            return None  # an empty repository with nothing to commit: nothing to checkpoint
        base = claim.base if claim is not None else _rev(path, f"refs/remotes/origin/{run_branch}")
        if not staged and base == head:
            return None
        try:
            pushed = _push(path, run_id, base)
        except CheckpointRefused as exc:
            raise exc if claim is None else _refused(claim, exc) from None
        if claim is not None:
            claim.base = pushed
        return pushed


def claim_branch(workspace: Path, run_id: str, reason: str) -> BranchClaim:
    """Claim ``flower/<run-id>`` for the attempt that just prepared ``workspace``: an empty commit (``reason``
    says whose) pushed onto the commit the workspace restored or last pushed, so every later push of an earlier
    attempt of the run is refused. Raises `CheckpointRefused` when the branch moved on since the workspace was
    prepared (prepare it again: another attempt pushed meanwhile), `CheckpointError` when it cannot be pushed.
    Blocking, as `checkpoint`."""
    run_branch = _branch(_check_run_id(run_id))
    path = Path(workspace)
    with _lock(path):
        base = _rev(path, f"refs/remotes/origin/{run_branch}")
        _commit(path, run_id, reason, empty=True)
        try:
            return BranchClaim(run_id, _push(path, run_id, base))
        except CheckpointError:
            # Unpushed, the empty commit would only stand between this workspace and the next restore.
            _git(path, "reset", "--quiet", "--soft", "HEAD^", check=False)
            raise


def pushed_checkpoint(workspace: Path, run_id: str) -> str | None:
    """The newest checkpoint of ``run_id`` this workspace pushed or fetched (its ``origin/flower/<run-id>``), None
    when it has none. After a `checkpoint` that returned None (nothing new), that is the workspace's HEAD."""
    return _rev(Path(workspace), f"refs/remotes/origin/{_branch(_check_run_id(run_id))}")


@asynccontextmanager
async def periodic_checkpoints(
    workspace: Path,
    run_id: str,
    every: float,
    claim: BranchClaim | None = None,
    on_refused: Callable[[str], object] | None = None,
) -> AsyncIterator[None]:
    """A checkpoint every ``every`` seconds while the block runs, each in a worker thread (git never blocks the
    event loop), pushed onto ``claim`` (see `checkpoint`). A failed checkpoint is logged and the next one tries
    again; a refused one (a later attempt claimed the branch) ends the checkpoints and calls ``on_refused`` with
    why, from the event loop (the attempt is superseded: stop it). Leaving the block waits for a checkpoint in
    progress (a commit is never cut in half) and takes none more — the caller's step-end checkpoint follows."""
    _check_run_id(run_id)
    if not every > 0:
        raise ValueError(f"every must be a positive number of seconds, not {every!r}")

    async def beat() -> None:
        while True:
            await anyio.sleep(every)
            try:
                # Not abandoned on cancellation: the block's exit waits for the git commands to finish.
                await anyio.to_thread.run_sync(checkpoint, workspace, run_id, "periodic", claim)
            except CheckpointRefused as exc:  # logged once by `checkpoint`; nothing of this attempt pushes again
                if on_refused is not None:
                    on_refused(str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - a failed periodic checkpoint must not stop the step
                log.warning("run %s: periodic checkpoint of %s failed: %s", run_id, workspace, exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


def restored_note(restored: Restored) -> str:
    """The sentence a resume prompt carries when the workspace was restored from a checkpoint; "" otherwise."""
    if restored.at is None or restored.commit is None:
        return ""
    return (
        f"Note: this workspace ({restored.path}) was restored on this machine from a checkpoint of "
        f"{restored.at:%Y-%m-%d %H:%M:%S} UTC (commit {restored.commit[:12]}) made on another machine; anything "
        "changed after that checkpoint is lost. Verify the files you were working on (git log, git status, read "
        "them) before going on."
    )
