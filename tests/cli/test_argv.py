from __future__ import annotations

import pytest

from flower_cli.cli._argv import rewrite_argv


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], ["go"]),
        (["-v"], ["-v", "go"]),
        (["build X"], ["go", "build X"]),
        (["-w", "D", "build X"], ["-w", "D", "go", "build X"]),
        (["build X", "--asks", "2"], ["go", "build X", "--asks", "2"]),
        (["once", "-v", "hi"], ["-v", "once", "hi"]),
        (["once", "hi", "--json", "-w", "/tmp/x"], ["--json", "-w", "/tmp/x", "once", "hi"]),
        (["--workspace=/a", "setup", "--token", "t"], ["--workspace=/a", "setup", "--token", "t"]),
        (["setup"], ["setup"]),
        (["--help"], ["--help"]),
        (["-h"], ["-h"]),
        (["doctor", "-T"], ["-T", "doctor"]),
        (["once", "--", "-v"], ["once", "--", "-v"]),
        (["sessions", "show", "abc", "-r", "runs2"], ["-r", "runs2", "sessions", "show", "abc"]),
        # a valued global option without its value is left alone, so the parser reports the missing value
        (["-w"], ["-w"]),
        (["once", "hi", "-r"], ["-r"]),
        (["-v", "once", "hi", "-w"], ["-v", "-w"]),
        (["-r", "-w", "once", "hi"], ["-r", "-w", "once", "hi"]),
    ],
)
def test_rewrite(given: list[str], expected: list[str]) -> None:
    assert rewrite_argv(given) == expected
