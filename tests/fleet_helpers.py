"""What the fleet's end-to-end tests share: `flower` as a subprocess, worker processes (each optionally on a
"machine" of its own: its own fleet root at the common path), a run's workspace."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flower_cli import CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES
from harness import Text, when_main, when_prompt, when_system

FLOWS_ONE_STEP = (
    "from flower_cli import AgentSpec, Step, Workflow\n"
    "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
    "def main():\n"
    "    return Workflow([Step('hello', writer, 'say hello')], name='one-step')\n"
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
_UNDER_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def flows_one_step(prompt: str) -> str:
    """A flows.py whose workflow is one step ``work`` asked ``prompt`` (a script keys its replies on it)."""
    return (
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
        "def main():\n"
        f"    return Workflow([Step('work', writer, {prompt!r})], name='one-step')\n"
    )


# --- a go run's roles, as ONE scripted Messages API plays them (each reply picked by the role's system prompt) ---
CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
GOAL_SETTER = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode A")
JUDGE = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode B")

QUESTION = "Should the greeting be in English or in French?"
ANSWER = "FRENCH-PLEASE"
BRIEF = """## Goal
Build the greeter: a hello.txt that greets the reader.

## Acceptance criteria
- hello.txt exists and says hello

## Boundaries
- no web page

## Unknowns and assumptions
- none
"""
GOAL = """## Goal
hello.txt greets the reader.

## Checks
- hello.txt exists and contains "hello"
"""


def verdict(state: str, reason: str, *failed: str) -> Text:
    """The judge's reply: ``state`` (achieved, not_yet …), its reason, the failed checks."""
    items = "\n".join(f"- {f}" for f in failed) or "- none"
    return Text(f"## Verdict\n{state}\n\n## Reason\n{reason}\n\n## Failed checks\n{items}")


# Run inside a private mount namespace: the worker's own root directory ($1) mounted over the common fleet root
# ($2), then the worker itself. unshare and sh exec, so the worker's pid is the Popen's (its identity names it).
_MOUNT_OWN_ROOT = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'


def on_own_machine(own: Path, common: Path, argv: list[str]) -> list[str]:
    """``argv`` run where ``common`` shows the files of ``own``: two machines with the same fleet root path and
    different disks, emulated on one (the SDK keys sessions by the workspace path, so the path must be one)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", _MOUNT_OWN_ROOT, "machine", str(own), str(common), *argv]  # fmt: skip


def own_roots_unsupported(tmp: Path) -> str | None:
    """Why workers cannot have fleet roots of their own here (unshare/mount not permitted), None when they can:
    a probe mounts a directory with a marker over an empty one in a namespace of its own, and looks."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare(1) and mount(8) (util-linux) are needed to give each worker a fleet root of its own"
    own, common = tmp / "probe-own", tmp / "probe-common"
    own.mkdir(exist_ok=True)
    common.mkdir(exist_ok=True)
    (own / "marker").write_text("own\n")
    try:
        done = subprocess.run(
            on_own_machine(own, common, ["cat", str(common / "marker")]),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        leaked = any(common.iterdir())
    if done.returncode != 0 or done.stdout != "own\n":
        said = (done.stderr or done.stdout).strip().splitlines() or ["(no message)"]
        return (
            f"a private mount namespace with a bind mount is not permitted here ({said[-1]}); run the tests as root "
            "or in a container with CAP_SYS_ADMIN to give each worker a fleet root of its own"
        )
    if leaked:
        return "the probe's bind mount showed outside its mount namespace (mount propagation is shared here)"
    return None


def require_own_roots(tmp: Path) -> None:
    """Skip the test, with the probe's reason, where workers cannot have fleet roots of their own; under CI a
    failure instead (the two-machine tests must run there)."""
    reason = own_roots_unsupported(tmp)
    if reason is None:
        return
    if _UNDER_CI:
        pytest.fail(f"CI must run the two-machine fleet tests, but {reason}", pytrace=False)
    pytest.skip(reason)


def bare_remote(tmp: Path, branches: Mapping[str, Mapping[str, str]]) -> Path:
    """A bare repository ``<tmp>/remote.git`` with a branch per entry of ``branches`` (its files: name -> text),
    each with a .gitignore that keeps ``scratch-*`` out of every checkpoint."""
    remote = tmp / "remote.git"
    subprocess.run([*GIT, "init", "--quiet", "--bare", str(remote)], check=True)
    for branch, files in branches.items():
        seed = tmp / f"seed-{branch}"
        subprocess.run([*GIT, "init", "--quiet", str(seed)], check=True)
        for name, text in {".gitignore": "scratch-*\n", **files}.items():
            (seed / name).write_text(text)
        subprocess.run([*GIT, "-C", str(seed), "add", "--all"], check=True)
        subprocess.run([*GIT, "-C", str(seed), "commit", "--quiet", "-m", f"seed {branch}"], check=True)
        subprocess.run([*GIT, "-C", str(seed), "push", "--quiet", str(remote), f"HEAD:{branch}"], check=True)
    return remote


def remote_git(remote: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git`` on the bare remote (``show flower/<run>:file``, ``rev-parse`` …), not checked."""
    return subprocess.run(["git", "--git-dir", str(remote), *args], capture_output=True, text=True)


def files_under(root: Path) -> set[str]:
    """The files under ``root``, relative, leaving out git's own."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def stored_entries(pg_url: str, workspace: Path, session_id: str) -> list[Any]:
    """A session's entries in the PostgreSQL store, keyed as the SDK keys them: by the workspace path."""
    import anyio
    from claude_agent_sdk import project_key_for_directory

    from flower_stores import store_from_url

    store = store_from_url(pg_url)
    try:
        key = {"project_key": project_key_for_directory(str(workspace)), "session_id": session_id}
        return list(anyio.run(store.load, key) or [])
    finally:
        store.close()


def most_at_once(spans: Path) -> tuple[int, int]:
    """From lines ``start|end <run> <time>`` (each step's bash appends them): how many lines, and the most steps
    that ran at once."""
    events = []
    for line in spans.read_text().splitlines():
        kind, _, at = line.split()
        events.append((float(at), 1 if kind == "start" else -1))
    live = most = 0
    for _, delta in sorted(events):
        live += delta
        most = max(most, live)
    return len(events), most


@dataclass
class Fleet:
    """One fleet of a test: its server, queue, store and root; each worker is a `flower fleet worker` process."""

    tmp: Path
    temporal: str
    store: str
    namespace: str = "default"  # the server's namespace the fleet's processes use
    queue: str = field(default_factory=lambda: f"q-{uuid.uuid4().hex[:8]}")
    workers: list[subprocess.Popen[str]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # each worker's name, as workers

    def env(self, name: str = "client", root: Path | None = None, *, machine: bool = True) -> dict[str, str]:
        """The environment of a process ``name`` (its own HOME); not on a ``machine`` of the fleet, it has neither
        FLOWER_FLEET_ROOT nor FLOWER_STORE_URL (it is told the store with --store)."""
        home = self.tmp / f"home-{name}"
        home.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "FLOWER_NO_UPDATE": "1",
            "FLOWER_TEMPORAL": self.temporal,
            "FLOWER_TEMPORAL_NAMESPACE": self.namespace,
            "FLOWER_FLEET_TASK_QUEUE": self.queue,
            "FLOWER_FLEET_ROOT": str(root or self.tmp / "root"),
            "FLOWER_STORE_URL": self.store,
        }
        if not machine:
            del env["FLOWER_FLEET_ROOT"], env["FLOWER_STORE_URL"]
        return env

    def flower(
        self, *args: str, timeout: float = 240, name: str = "client", machine: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=self.tmp,
            env=self.env(name, machine=machine),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start_flower(self, *args: str) -> subprocess.Popen[str]:
        """`flower` started, not waited for (several submits at once); read it with ``communicate``."""
        return subprocess.Popen(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=self.tmp,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start_worker(
        self, name: str, *args: str, root: Path | None = None, own_root: Path | None = None
    ) -> subprocess.Popen[str]:
        """A worker process, polling when this returns. With ``own_root`` it is a machine of its own: its fleet
        root is the common path (``root``, else ``<tmp>/root``) showing ``own_root``'s files, in a mount namespace
        of its own (`on_own_machine`; see `own_roots_unsupported`)."""
        log = (self.tmp / f"worker-{name}.log").open("w")
        argv = [sys.executable, "-m", "flower_cli", "fleet", "worker", "--heartbeat-every", "1", *args]
        if own_root is not None:
            common = root or self.tmp / "root"
            common.mkdir(parents=True, exist_ok=True)
            own_root.mkdir(parents=True, exist_ok=True)
            argv = on_own_machine(own_root, common, argv)
        process = subprocess.Popen(
            argv,
            cwd=self.tmp,
            env=self.env(name, root),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own group: a SIGKILL of the group takes its Claude Code too, like a dead machine
        )
        self.workers.append(process)
        self.names.append(name)
        logged = self.tmp / f"worker-{name}.log"
        wait_for(
            lambda: process.poll() is not None or "polling" in logged.read_text(),
            120,
            f"worker {name} polling",
        )
        assert process.poll() is None, logged.read_text()
        return process

    def own_root(self, machine: str) -> Path:
        """The disk of machine ``machine`` (`start_machine`): what it sees at the common fleet root."""
        return self.tmp / f"root-{machine}"

    def start_machine(self, name: str, *args: str) -> subprocess.Popen[str]:
        """A worker on a machine of its own (`own_root` of ``name``, seen at the common ``<tmp>/root``)."""
        return self.start_worker(name, *args, own_root=self.own_root(name))

    def machine_of(self, identity: str) -> str:
        """The name of the worker (``worker-<name>.log``) whose identity (``host/pid``) is ``identity``."""
        process = self.worker_by_identity(identity)
        return self.names[self.workers.index(process)]

    def logs(self) -> str:
        """Every worker's log, for a failure's message."""
        return "".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(self.tmp.glob("worker-*.log")))

    def workspace(self, run_id: str, flows: str, root: Path | None = None) -> Path:
        """A shared run's workspace, with its flows.py (a --shared run finds its files under the root)."""
        ws = (root or self.tmp / "root") / "runs" / run_id
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "flows.py").write_text(flows)
        return ws

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for process in self.workers:  # whatever a worker left behind (its harness subprocesses)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def worker_by_identity(self, identity: str) -> subprocess.Popen[str]:
        """The worker process whose identity (``host/pid``) is ``identity``."""
        pid = int(identity.rpartition("/")[2])
        return next(p for p in self.workers if p.pid == pid)


def kill_machine(process: subprocess.Popen[str]) -> None:
    """SIGKILL a worker and everything it started, as if its machine died."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``condition`` until it is truthy (its value) or ``timeout`` seconds pass (an AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.2)


def status_json(fleet: Fleet, run_id: str) -> dict[str, Any]:
    done = fleet.flower("fleet", "status", run_id, "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return parsed


def worker_logs(fleet: Fleet) -> str:
    """Every worker's log, for a failure's message."""
    return "".join(p.read_text() for p in sorted(fleet.tmp.glob("worker-*.log")))


def cancel_took(fleet: Fleet, run_id: str, row: dict[str, Any], asked: float) -> float:
    """Seconds from the server's record of the run's cancel (whole seconds) to the end of the cancelled step's
    manifest ``row``; printed with the time from ``asked`` (before the cancel command started)."""
    from datetime import UTC, datetime

    logs = fleet.flower("fleet", "logs", run_id)
    [requested] = [line for line in logs.stdout.splitlines() if line.endswith("work: cancel requested")]
    at = datetime.strptime(requested[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    took = float(row["ended_at"]) - at
    print(
        f"cancel requested -> step ended: {took:.1f} s; cancel command started -> step ended: {row['ended_at'] - asked:.1f} s"
    )
    return took
