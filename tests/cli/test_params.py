"""flower converts its paths, strings, flags and choices without pydantic (cli/_params.py), exactly as typer does:
the same value for every input, the same message for every bad one — checked against typer's own conversion,
parameter by parameter, over every command."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer.main

from flower_cli.cli._app import app
from flower_cli.cli._plugins import plugin_names

_coercion = pytest.importorskip("typer._coercion", reason="typer before 0.29 converts with click types, no pydantic")
if not hasattr(_coercion, "build_runtime_param"):
    pytest.skip("this typer converts values another way", allow_module_level=True)


def _params() -> list[tuple[Any, Any]]:
    """Every (command, parameter) of flower, --help and the completion options included."""
    root = typer.main.get_command(app)
    found: list[tuple[Any, Any]] = []

    def walk(command: Any) -> None:
        ctx = command.make_context(command.name, [], resilient_parsing=True)
        found.extend((command, p) for p in command.get_params(ctx))
        for name, sub in getattr(command, "commands", {}).items():
            if command is root and name in plugin_names():
                continue  # another distribution's typer app (flower fleet): it converts as its typer does
            walk(sub)

    walk(root)
    return found


def _outcome(convert: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "ok", convert(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the outcome compared is whatever either conversion raises
        return type(exc).__name__, getattr(exc, "message", str(exc))


def test_every_path_string_flag_and_choice_skips_pydantic() -> None:
    kinds = {}
    for command, param in _params():
        light = param._runtime_param is not None and type(param._runtime_param).__name__ == "_Light"
        kinds[f"{command.name} {param.name}"] = light
        annotation = param.type_descriptor.annotation
        simple = annotation in (str, bool, Path) or (isinstance(annotation, type) and issubclass(annotation, Enum))
        assert light == (simple and param.nargs == 1 and not param.multiple), (command.name, param.name)
    assert kinds["flower workspace"] and kinds["flower color"] and kinds["flower help"]
    assert kinds["flower install_completion"] and kinds["analyze run_dir"] and kinds["analyze html"]


def _inputs(tmp_path: Path) -> list[Any]:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    return [
        None,
        "",
        " ",
        "auto",
        "AUTO",
        "Never",
        "always ",
        "bogus",
        "plan",
        "acceptEdits",
        "acceptedits",
        "bad\x1b[31mred",
        "tab\there",
        "a//b/",
        "~",
        ".",
        str(tmp_path),
        str(tmp_path / "missing" / "x.html"),
        str(locked),
        "-",
        "true",
        "0",
        True,
        False,
        Path("."),
        Path(tmp_path),
    ]


def test_each_value_converts_to_what_typer_gives(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    compared = 0
    try:
        for command, param in _params():
            light = param._runtime_param
            if type(light).__name__ != "_Light":
                continue
            reference = _coercion.build_runtime_param(param.type_descriptor)  # typer's own: pydantic
            ctx = command.make_context(command.name, [], resilient_parsing=True)
            for value in inputs:
                if param.type_descriptor.annotation is Path and isinstance(value, bool):
                    continue  # typer itself fails on os.stat(True) differently per run; never a CLI value
                got = _outcome(light.coerce, value, param, ctx)
                expected = _outcome(reference.coerce, value, param, ctx)
                assert got == expected, (command.name, param.name, value)
                compared += 1
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert compared > 100


def test_bad_choice_reads_as_typer_words_it(tmp_path: Path) -> None:
    """The message a person sees for a mistyped --color, end to end."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "flower_cli", "--color", "bogus", "analyze", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        check=False,
    )
    assert done.returncode == 2
    assert "Invalid value for '--color': Value error, 'bogus' is not one of 'auto', 'always', 'never'." in done.stderr
