"""Commands other distributions bring (`flower_cli.commands` entry points): `flower fleet` with flower-fleet
installed, one line saying what to install without it."""

from __future__ import annotations

import pytest

from flower_cli.cli import _plugins, main


def test_without_flower_fleet_flower_fleet_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_plugins, "_entry_points", dict)  # as if flower-fleet were not installed
    assert main(["fleet", "status"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "`flower fleet` comes with flower-fleet, which is not installed: in a checkout of flower, "
        "pip install ./packages/flower-fleet (it is not on PyPI yet)"
    ]


def test_a_prompt_word_fleet_is_not_taken_for_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plugins, "_entry_points", dict)
    assert _plugins.missing_plugin("go") is None
    # `flower go fleet …`: the command is `go`; the word is the ask's (no install hint).
    from flower_cli.cli._argv import split_globals

    assert split_globals(["-v", "go", "fleet", "things"])[1][0] == "go"


def test_with_flower_fleet_installed_its_commands_are_flower_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("flower_fleet")
    assert "fleet" in _plugins.plugin_names()
    assert main(["fleet", "--help"]) == 0
    out = capsys.readouterr().out
    for command in ("worker", "submit", "status", "answer", "cancel", "logs"):
        assert command in out
