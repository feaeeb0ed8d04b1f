"""How the `flower` command names what a user can fix (the subprocess view is in tests/e2e/test_cli_errors.py)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
import typer

from flower_cli._shared.exits import ExitCode
from flower_cli.cli._app import app
from flower_cli.cli._usage import explain, usage_error_type
from flower_cli.cli.actions.credentials import base_url_problem
from flower_cli.cli.actions.exit_codes import exit_code_for
from flower_cli.runtime import StepResult, describe_os_error
from flower_cli.runtime._failures import describe_store_error


def test_the_usage_error_class_is_the_one_the_installed_typer_raises() -> None:
    usage = usage_error_type()
    assert usage.__name__ == "UsageError" and issubclass(typer.BadParameter, usage)
    with pytest.raises(usage) as caught:
        app(args=["once", "--bogus", "hi"], prog_name="flower", standalone_mode=False)
    assert explain(caught.value) == (ExitCode.USAGE, "flower once: No such option: --bogus (see `flower once --help`)")


def test_a_usage_error_without_a_context_names_the_command_given() -> None:
    with pytest.raises(usage_error_type()) as caught:
        app(args=["setup", "--token"], prog_name="flower", standalone_mode=False)
    code, line = explain(caught.value, command="flower setup") or (None, "")
    assert code == ExitCode.USAGE and "--token" in line and "`flower setup --help`" in line


def _sqlite_error(db: Path) -> sqlite3.Error:
    try:
        with sqlite3.connect(db) as conn:
            conn.execute("select * from sqlite_master").fetchall()
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("SQLite accepted the file")


def test_a_file_that_is_not_a_database_is_named_and_kept(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    db.write_text("hello\n")
    line = describe_store_error(_sqlite_error(db), db)
    assert str(db) in line and "not a usable SQLite database" in line and "left it as it is" in line


def test_store_errors_wrapping_an_os_error_say_what_the_disk_needs() -> None:
    class Wrapped(RuntimeError):
        pass

    wrapped = Wrapped("cannot create the directory")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device", "/x/runs")
    assert describe_store_error(wrapped).startswith("no space left for the session store /x/runs")


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        (errno.ENOSPC, "no space left"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "no permission"),
        (errno.ENOTDIR, "is a file, not a directory"),
        (errno.EEXIST, "is a file, not a directory"),
        (errno.ENOENT, "does not exist"),
        (errno.EIO, "cannot use"),
    ],
)
def test_os_errors_name_the_path_and_a_way_out(code: int, fragment: str) -> None:
    line = describe_os_error(OSError(code, "reason", "/some/where"), "the run dir", elsewhere="point -r elsewhere")
    assert fragment in line and "/some/where" in line and "point -r elsewhere" in line and "\n" not in line


def test_a_bug_keeps_its_traceback() -> None:
    assert explain(KeyError("x")) is None
    assert explain(ValueError("y")) is None


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://api.anthropic.com", True),
        ("http://127.0.0.1:8080", True),
        ("https://gw.example.com/anthropic", True),
        ("not a url", False),
        ("127.0.0.1:8080", False),
        ("api.anthropic.com", False),
        ("ftp://x.example.com", False),
        ("http://127.0.0.1:99999", False),
        ("http://host:port", False),
        ("https://", False),
    ],
)
def test_base_url_problem(url: str, ok: bool) -> None:
    problem = base_url_problem(url)
    assert (problem is None) is ok, problem


def test_a_full_disk_during_a_step_is_exit_3() -> None:
    result = StepResult(step="s", ok=False, error="OperationalError: database or disk is full")
    assert exit_code_for(result) == ExitCode.CONFIG
    assert exit_code_for(StepResult(step="s", ok=False, error="the model gave up")) == ExitCode.NOT_DONE
