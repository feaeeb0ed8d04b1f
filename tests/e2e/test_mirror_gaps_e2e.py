"""No silent gaps: a store that cannot take the transcript mid-run never ends in exit 0 with entries missing.

Either the run ends with every entry of the harness's local transcript in the store, or it exits 3 with one
line (which store, why, where the local copy is, the command that imports it); ``flower sessions import``
then fills the gap, and a second import adds nothing. A disk that fills mid-run says so in that one line, with
nothing of the harness's own output on the terminal, and the session stays resumable.

Real `flower`, real Claude Code, the scripted server, real SQLite on a real (tiny) tmpfs, a real PostgreSQL
cluster of this test's own that is stopped and started again; every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import ScriptedServer, Text, bash

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mounts a tmpfs; Linux only"),
]

SETUP_S = 150.0  # for things to happen on a loaded machine; not what is under test
SLOW_TOOL = "touch started; until [ -e go ]; do sleep 0.05; done; echo released"


def _wait_until(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        reason = f"cannot mount a tmpfs here (root and CAP_SYS_ADMIN needed): {mounted.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(disk: Path) -> Path:
    """Write zeros until the file system says it is full (ENOSPC): the real thing, not a simulation."""
    filler = disk / "filler"
    chunk = b"\0" * (64 * 1024)
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(chunk)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _flower(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


class _Lines:
    """A process's stderr, read as it comes (a test waits for a line without blocking the process)."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line)

    def text(self) -> str:
        self._thread.join(timeout=30)
        return "".join(self.lines)


def _local_transcript(session_id: str) -> Path:
    (found,) = Path(os.environ["HOME"]).glob(f".claude/projects/*/{session_id}.jsonl")
    return found


def _uuids(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
            out.append(entry["uuid"])
    return out


def _sqlite_uids(db: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        return [(k, u) for k, u in conn.execute("SELECT store_key, uid FROM entries WHERE uid IS NOT NULL")]


def _import_command(line: str) -> list[str]:
    found = re.search(r"`(flower sessions import [^`]+)`", line)
    assert found, line
    return shlex.split(found.group(1))[1:]


def _no_javascript(stderr: str) -> None:
    assert "[TranscriptMirrorBatcher]" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
    for line in stderr.splitlines():
        # Minified JavaScript comes in lines of kilobytes; flower's longest line names a few temp paths.
        assert len(line) < 3000, f"a line of {len(line)} characters on the terminal: {line[:200]}…"
        assert not re.search(r"\bat .+\.(js|mjs|cjs):\d+|function\s*\(|=>\s*\{", line), line


def test_a_store_whose_disk_fills_mid_run_exits_3_and_the_import_fills_the_gap(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    with _tmpfs(tmp_path / "store-disk", "3m") as disk:
        db = disk / "sessions.db"
        claude_env.script(bash(SLOW_TOOL), Text("All done."))
        flower = _start(["--store", f"sqlite://{db}", "once", "-t", "Bash", "run the slow step"], workspace)
        err = _Lines(flower.stderr)
        _wait_until(lambda: (workspace / "started").exists(), SETUP_S, "the Bash tool starts")
        _wait_until(lambda: db.exists() and len(_sqlite_uids(db)) >= 2, SETUP_S, "the first turn is stored")
        filler = _fill(disk)  # sessions.db can take nothing more from here on
        (workspace / "go").touch()
        assert flower.wait(SETUP_S) == 3, err.text()
        stderr = err.text()
        _no_javascript(stderr)
        last = stderr.strip().splitlines()[-1]
        assert "transcript not stored" in last and "database or disk is full" in last, last
        assert str(db) in last and "flower sessions import" in last, last
        command = _import_command(last)
        session = command[2]
        local = _local_transcript(session)
        assert f"--from {local}" in last, last
        wanted = set(_uuids(local))
        assert wanted - {u for _, u in _sqlite_uids(db)}, "the gap this test is about: the store lacks entries"

        filler.unlink()  # the disk has room again
        imported = _flower(*command, cwd=workspace)
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout.startswith("imported ") and session in imported.stdout
        stored = _sqlite_uids(db)
        assert wanted <= {u for _, u in stored}, "every entry of the local transcript is in the store"
        again = _flower(*command, "--json", cwd=workspace)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["added"] == 0
        assert sorted(_sqlite_uids(db)) == sorted(stored), "a second import duplicates nothing"

        claude_env.script(Text("Picked up."))
        woke = _flower("--store", f"sqlite://{db}", "once", "-t", "Bash", "--resume", session, "go on", cwd=workspace)
        assert woke.returncode == 0, woke.stderr
        assert "released" in claude_env.message_requests[-1].text, "the resumed request carries the lost turn"
        assert not claude_env.rejected, claude_env.rejected


def test_a_disk_filling_mid_run_is_one_line_and_the_session_resumes(claude_env: ScriptedServer, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "disk", "4m") as disk:
        workspace = disk / "ws"  # the workspace and its run dir (sessions.db, manifest) on the disk that fills
        workspace.mkdir()
        claude_env.script(bash("head -c 20M /dev/zero > fill; echo filled"), Text("All done."))
        done = _flower("once", "-t", "Bash", "fill the disk", cwd=workspace)
        assert done.returncode == 3, done.stderr
        _no_javascript(done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert "transcript not stored" in last and "database or disk is full" in last, last
        assert "sessions are kept" not in done.stderr, "nothing may claim the store holds the session"
        command = _import_command(last)
        session = command[2]

        (workspace / "fill").unlink()
        imported = _flower(*command, cwd=workspace)
        assert imported.returncode == 0, imported.stderr
        held = {u for _, u in _sqlite_uids(workspace / "runs" / "sessions.db")}
        assert set(_uuids(_local_transcript(session))) <= held

        claude_env.script(Text("Picked up."))
        woke = _flower("once", "-t", "Bash", "--resume", session, "go on", cwd=workspace)
        assert woke.returncode == 0, woke.stderr
        assert woke.stdout.strip() == "Picked up."
        assert "fill the disk" in claude_env.message_requests[-1].text
        assert not claude_env.rejected, claude_env.rejected


def _pg_ctl(cluster: object, action: str) -> None:
    c: object = cluster
    bindir, data, root, port = c.bindir, c.data, c.root, c.port  # type: ignore[attr-defined]
    if action == "stop":
        argv = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
    else:
        opts = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root}"
        argv = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", opts, "-w", "start"]
    c._run(argv, timeout=120)  # type: ignore[attr-defined]


def _pg_uids(url: str) -> list[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url, connect_timeout=10) as conn:
        return [tuple(r) for r in conn.execute("SELECT store_key, uid FROM flower.entries WHERE uid IS NOT NULL")]


@pytest.mark.timeout(600)  # the server stays down past the pool's 30 s timeout, twice over
def test_postgresql_stopped_longer_than_the_pool_timeout_mid_run_loses_nothing(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    from pg_cluster import Cluster, ClusterError

    try:
        cluster = Cluster.start()  # this test's own: it is stopped mid-run, which no other test may see
    except ClusterError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with cluster:
        url = cluster.url

        def stored() -> list[tuple[str, str]]:
            try:
                return _pg_uids(url)
            except Exception:  # noqa: BLE001 - the schema appears with the first append
                return []

        claude_env.script(bash(SLOW_TOOL), Text("All done."))
        flower = _start(["--store", url, "once", "-t", "Bash", "run the slow step"], workspace)
        err = _Lines(flower.stderr)
        _wait_until(lambda: (workspace / "started").exists(), SETUP_S, "the Bash tool starts")
        _wait_until(lambda: len(stored()) >= 2, SETUP_S, "the first turn is stored")
        _pg_ctl(cluster, "stop")
        stopped = time.monotonic()
        (workspace / "go").touch()
        _wait_until(
            lambda: any("is unreachable" in line for line in err.lines) or flower.poll() is not None,
            240,
            "flower says it waits for the store",
        )
        assert flower.poll() is None, err.text()
        assert time.monotonic() - stopped > 30, "down for longer than the pool's timeout"
        _pg_ctl(cluster, "start")
        assert flower.wait(240) == 0, err.text()
        stderr = err.text()
        _no_javascript(stderr)
        assert sum("is unreachable" in line for line in stderr.splitlines()) == 1, "said once"
        assert url.split("@")[0].rsplit(":", 1)[-1] not in stderr, "the password is never printed"

        [row] = json.loads((workspace / "runs" / "manifest.json").read_text())
        session = row["session_id"]
        assert row["ok"] is True
        local = _local_transcript(session)
        held = _pg_uids(url)
        assert set(_uuids(local)) <= {u for _, u in held}, "every entry of the local transcript is in the store"

        again = _flower("--store", url, "sessions", "import", session, "--json", cwd=workspace)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["added"] == 0
        assert sorted(_pg_uids(url)) == sorted(held), "an import after that duplicates nothing"
