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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLOWS_ONE_STEP = (
    "from flower_cli import AgentSpec, Step, Workflow\n"
    "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
    "def main():\n"
    "    return Workflow([Step('hello', writer, 'say hello')], name='one-step')\n"
)


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


@dataclass
class Fleet:
    """One fleet of a test: its server, queue, store and root; each worker is a `flower fleet worker` process."""

    tmp: Path
    temporal: str
    store: str
    queue: str = field(default_factory=lambda: f"q-{uuid.uuid4().hex[:8]}")
    workers: list[subprocess.Popen[str]] = field(default_factory=list)

    def env(self, name: str = "client", root: Path | None = None) -> dict[str, str]:
        home = self.tmp / f"home-{name}"
        home.mkdir(exist_ok=True)
        return {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "FLOWER_NO_UPDATE": "1",
            "FLOWER_TEMPORAL": self.temporal,
            "FLOWER_FLEET_TASK_QUEUE": self.queue,
            "FLOWER_FLEET_ROOT": str(root or self.tmp / "root"),
            "FLOWER_STORE_URL": self.store,
        }

    def flower(self, *args: str, timeout: float = 240, name: str = "client") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=self.tmp,
            env=self.env(name),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
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
        logged = self.tmp / f"worker-{name}.log"
        wait_for(
            lambda: process.poll() is not None or "polling" in logged.read_text(),
            120,
            f"worker {name} polling",
        )
        assert process.poll() is None, logged.read_text()
        return process

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


def verdict(state: str, reason: str, *failed: str) -> Any:
    """The judge's reply: a verdict in go's format."""
    from harness import Text

    items = "\n".join(f"- {f}" for f in failed) or "- none"
    return Text(f"## Verdict\n{state}\n\n## Reason\n{reason}\n\n## Failed checks\n{items}")
