"""Every `flower fleet` command's failures: a non-zero exit code and one line on stderr (no Temporal internals,
no traceback), the same on every try (no abort at interpreter shutdown), the reason a run failed where a person
looks for it, and an example at the end of each command's help."""

from __future__ import annotations

import re
import socket
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest
from fleet_helpers import Fleet, wait_for

from flower_cli.cli import main

COMMANDS = ["worker", "submit", "status", "answer", "cancel", "logs"]
TRIES = 20  # the abort came in 2 of 6 tries before the fix: 20 clean tries make a lucky pass unlikely (0.67^20)


def _closed_port() -> str:
    """A loopback host:port where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, f"exit {done.returncode}, stderr:\n{done.stderr}"
    assert lines[0].startswith("flower fleet: "), lines[0]
    for internal in ("tonic", "Traceback", "Error(", "Os {"):
        assert internal not in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def serverless(tmp_path: Path) -> Fleet:
    """A fleet whose Temporal address has no server (and whose store is never reached)."""
    return Fleet(tmp_path, _closed_port(), "postgresql://fleet@127.0.0.1:9/flower")


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "some-run"],
        ["logs", "some-run"],
        ["answer", "some-run", "yes"],
        ["cancel", "some-run"],
        ["submit", "flows.py:main", "--shared"],
        ["worker"],
    ],
    ids=" ".join,
)
def test_with_no_server_each_command_exits_3_with_one_line(serverless: Fleet, args: list[str]) -> None:
    done = serverless.flower("fleet", *args, timeout=120)
    assert done.returncode == 3, done.stderr
    line = _one_line(done)
    assert f"cannot reach the Temporal server at {serverless.temporal}" in line
    assert "connection refused" in line and "FLOWER_TEMPORAL=host:port" in line
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["submit", "flows.py:main", "--run-id", "x9"], "--repo URL, or --shared"),
        (["submit", "  ", "--shared"], "give a workflow"),
        (["worker", "--store", "sqlite:///fleet.db"], "a fleet's store is PostgreSQL"),
    ],
    ids=["submit without --repo or --shared", "submit nothing", "worker on sqlite"],
)
def test_usage_mistakes_exit_2_with_one_line_before_any_connection(
    serverless: Fleet, args: list[str], says: str
) -> None:
    done = serverless.flower("fleet", *args, timeout=120)
    assert done.returncode == 2, done.stderr
    assert says in _one_line(done)


def test_a_worker_without_a_store_says_to_give_one(serverless: Fleet) -> None:
    done = serverless.flower("fleet", "worker", machine=False, timeout=120)  # no FLOWER_STORE_URL
    assert done.returncode == 2, done.stderr
    assert "--store postgresql://" in _one_line(done)


@pytest.mark.timeout(900)  # 23 processes, each importing the SDK: a loaded 2-core machine takes minutes
def test_an_unknown_run_exits_2_with_one_line_on_every_try(fleet: Fleet) -> None:
    codes: Counter[int] = Counter()
    for _ in range(TRIES):
        done = fleet.flower("fleet", "status", "no-such-run", timeout=120)
        codes[done.returncode] += 1
        if done.returncode != 2:
            break  # the first bad try says enough (and its stderr is in the message below)
    assert codes == Counter({2: TRIES}), f"exit codes {dict(codes)}; last stderr: {done.stderr}"
    assert "no run 'no-such-run'" in _one_line(done)
    for args in (["logs", "no-such-run"], ["cancel", "no-such-run"], ["answer", "no-such-run", "yes"]):
        done = fleet.flower("fleet", *args, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "no-such-run" in _one_line(done)


@pytest.mark.e2e
def test_a_run_whose_flows_py_is_missing_or_broken_fails_and_every_view_says_why(fleet: Fleet) -> None:
    """No model is needed: the run fails at reading its plan, on a real worker."""
    missing, broken = f"missing-{uuid.uuid4().hex[:6]}", f"broken-{uuid.uuid4().hex[:6]}"
    (fleet.tmp / "root" / "runs" / missing).mkdir(parents=True)
    fleet.workspace(broken, "import no_such_module_anywhere\n")
    fleet.start_worker("a")

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", missing, "--wait")
    assert done.returncode == 1, done.stderr + fleet.logs()
    assert done.stdout.startswith(f"{missing}  failed"), done.stdout
    assert re.search(r"^  error: no file .*flows\.py in the run's workspace", done.stdout, flags=re.M), done.stdout
    assert f"run {missing} failed: no file" in _one_line(done)

    status = fleet.flower("fleet", "status", missing)
    assert status.returncode == 0, status.stderr
    assert "error: no file" in status.stdout, status.stdout
    logs = fleet.flower("fleet", "logs", missing)
    assert logs.returncode == 0, logs.stderr
    assert re.search(r"run failed: no file .*flows\.py", logs.stdout), logs.stdout

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", broken, "--wait")
    assert done.returncode == 1, done.stderr + fleet.logs()
    assert "ModuleNotFoundError: No module named 'no_such_module_anywhere'" in _one_line(done)

    # The worker said each mistake in one line, without a traceback, and kept polling.
    log = wait_for(
        lambda: (t := fleet.logs()).count("in the run's workspace") and "no_such_module" in t and t, 60, "log"
    )
    assert "Traceback" not in log, log
    assert sum("no file" in line for line in log.splitlines()) == 1, log
    assert all(w.poll() is None for w in fleet.workers)


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)], ids=lambda c: " ".join(c) or "fleet")
def test_each_fleet_command_help_ends_with_an_example(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", *command, "--help"]) == 0
    text = capsys.readouterr().out
    block = re.search(r"^  Examples?:\n((?:    .+\n?)+)\Z", text, flags=re.M)
    assert block, text
    for example in block.group(1).splitlines():
        assert re.match(rf"    flower (--json )?fleet {' '.join(command) or '(worker|submit)'}\b", example), example
