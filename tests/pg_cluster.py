"""A throw-away PostgreSQL cluster for the tests and benchmarks: initdb into a temp dir, loopback only, a free
port, stopped and removed at the end. Standard library only, so ``.ci/run`` can run it with the system python.

Use it from a shell (this is the developer command the README gives; ``.ci/run`` does the same)::

    eval "$(python3 tests/pg_cluster.py start)"   # sets FLOWER_TEST_PG_URL and FLOWER_TEST_PG_DIR
    hatch run test tests/stores                    # the postgres tests use that server
    python3 tests/pg_cluster.py stop               # stops it and removes its directory

or from Python: ``with Cluster.start() as cluster: cluster.url``.

The server binaries come from Debian's ``postgresql`` package (``/usr/lib/postgresql/<major>/bin``), or
whatever ``pg_config --bindir`` / ``PATH`` offer. PostgreSQL refuses to run as root, so as root the cluster
belongs to the ``postgres`` user (which the Debian package creates) and its directory is made under the
system temp dir, where that user can reach it.
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = ["Cluster", "ClusterError", "find_bindir"]

URL_VAR = "FLOWER_TEST_PG_URL"
DIR_VAR = "FLOWER_TEST_PG_DIR"
USER = "flower"
DATABASE = "flower"

# Durability is irrelevant for a cluster that is deleted at the end; without fsync the tests go faster on a
# loaded machine. Benchmarks pass durable=True so commits cost what they cost in production.
_FAST = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


class ClusterError(RuntimeError):
    """The cluster cannot be created or started; the message says why and what to install."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` of the newest PostgreSQL on this machine, or None."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=True
            ).stdout.strip()
            candidates.append(Path(out))
        except (OSError, subprocess.SubprocessError):
            pass
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = sorted((p for p in debian.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True)
        candidates.extend(p / "bin" for p in versions)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file() and (bindir / "postgres").is_file():
            return bindir
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _owner() -> pwd.struct_passwd | None:
    """The user the server runs as: ``postgres`` when we are root (PostgreSQL refuses root), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterError(
            "running as root, but there is no `postgres` user to own the cluster; install Debian's `postgresql` package (it creates one)"
        ) from None


@dataclass
class Cluster:
    """A running throw-away cluster: ``url`` reaches database ``flower`` as superuser ``flower`` over TCP."""

    root: Path
    port: int
    password: str
    bindir: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    @classmethod
    def start(cls, root: Path | None = None, *, durable: bool = False, timeout: float = 120.0) -> Cluster:
        bindir = find_bindir()
        if bindir is None:
            raise ClusterError(
                "no PostgreSQL server binaries (initdb, pg_ctl) on this machine; install them with `apt-get install postgresql`"
            )
        owner = _owner()
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="flower-pg-", dir=None if owner is None else _reachable_tmp()))
        root.mkdir(parents=True, exist_ok=True)
        password = secrets.token_hex(12)
        (root / "pwfile").write_text(password + "\n")
        if owner is not None:
            for path in (root, root / "pwfile"):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        cluster = cls(root, 0, password, bindir)
        cluster._run(
            [
                str(bindir / "initdb"),
                "-D",
                str(cluster.data),
                "-U",
                USER,
                f"--pwfile={root / 'pwfile'}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            timeout=timeout,
        )
        (root / "pwfile").unlink()
        # A free port can be taken between our probe and the server's bind: try a few.
        last = ""
        for _ in range(5):
            cluster.port = _free_port()
            settings = [
                "listen_addresses=127.0.0.1",
                f"port={cluster.port}",
                f"unix_socket_directories={cluster.root}",
                "max_connections=200",
                "shared_buffers=64MB",
                *(() if durable else _FAST),
            ]
            options = " ".join(f"-c {s}" for s in settings)
            try:
                cluster._run(
                    [
                        str(bindir / "pg_ctl"),
                        "-D",
                        str(cluster.data),
                        "-l",
                        str(root / "server.log"),
                        "-o",
                        options,
                        "-w",
                        "-t",
                        str(int(timeout)),
                        "start",
                    ],
                    timeout=timeout + 10,
                )
                break
            except ClusterError as exc:
                last = str(exc)
        else:
            cluster.remove()
            raise ClusterError(f"the PostgreSQL server did not start: {last}")
        cluster._run(
            [str(bindir / "createdb"), "-h", str(cluster.root), "-p", str(cluster.port), "-U", USER, DATABASE],
            timeout=timeout,
        )
        return cluster

    def _run(self, argv: list[str], *, timeout: float) -> None:
        owner = _owner()
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=self.root,
                user=owner.pw_uid if owner else None,
                group=owner.pw_gid if owner else None,
                extra_groups=[] if owner else None,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClusterError(f"{Path(argv[0]).name} failed: {exc}") from exc
        if proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
            raise ClusterError(
                f"{Path(argv[0]).name} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-1500:]} {tail}".strip()
            )

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory. Idempotent."""
        if (self.data / "postmaster.pid").exists():
            try:
                self._run(
                    [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop"],
                    timeout=90,
                )
            except ClusterError:
                self._run(
                    [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"], timeout=90
                )
        self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _reachable_tmp() -> str:
    """A temp dir the ``postgres`` user can traverse (a root-only TMPDIR would hide the cluster from it)."""
    base = Path(tempfile.gettempdir())
    mode = base.stat().st_mode
    return str(base) if mode & 0o001 else "/tmp"


def _stop_dir(root: Path) -> None:
    bindir = find_bindir()
    if bindir is None:
        raise ClusterError("no PostgreSQL binaries to stop the cluster with")
    Cluster(root, 0, "", bindir).stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pg_cluster.py", description="A throw-away PostgreSQL cluster for flower's tests."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser(
        "start", help="start one and print shell lines that export its URL and directory (use with eval)"
    )
    start.add_argument("--durable", action="store_true", help="keep fsync on (for benchmarks)")
    stop = sub.add_parser("stop", help=f"stop the cluster in DIR (default ${DIR_VAR}) and remove it")
    stop.add_argument("dir", nargs="?", default=os.environ.get(DIR_VAR))
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            cluster = Cluster.start(durable=args.durable)
            print(f"export {URL_VAR}={shlex.quote(cluster.url)} {DIR_VAR}={shlex.quote(str(cluster.root))}")
            print(
                f"started PostgreSQL on 127.0.0.1:{cluster.port} in {cluster.root}; stop it with: python3 tests/pg_cluster.py stop",
                file=sys.stderr,
            )
        else:
            if not args.dir:
                parser.error(f"give the cluster directory, or set {DIR_VAR}")
            _stop_dir(Path(args.dir))
    except ClusterError as exc:
        print(f"pg_cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
