"""python-dotenv's parser forms, and bad files that must never crash a load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flower_env import check_credentials, load_dotenv, load_notes


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        ("export A=1", "A", "1"),
        ('B="x y"', "B", "x y"),
        ("C='single quoted'", "C", "single quoted"),
        ("D=plain # a comment", "D", "plain"),
        ('E="kept # not a comment"', "E", "kept # not a comment"),
        ("F = spaced", "F", "spaced"),
        ("G=a=b", "G", "a=b"),
        ("H=${NOT_EXPANDED}", "H", "${NOT_EXPANDED}"),
    ],
)
def test_parser_forms(write_file, line: str, key: str, value: str) -> None:  # type: ignore[no-untyped-def]
    load_dotenv(write_file("forms.env", line + "\n"))
    assert os.environ[key] == value


def test_multi_line_quoted_value(write_file) -> None:  # type: ignore[no-untyped-def]
    load_dotenv(write_file("multi.env", 'CERT="line one\nline two"\nAFTER=1\n'))
    assert os.environ["CERT"] == "line one\nline two" and os.environ["AFTER"] == "1"


def test_comments_blank_lines_and_bare_words(write_file) -> None:  # type: ignore[no-untyped-def]
    assigned = load_dotenv(write_file("c.env", "# header\n\nBARE\nK=v\n"))
    assert assigned == {"K": "v"}


def test_unparseable_line_is_noted_and_the_rest_loads(write_file) -> None:  # type: ignore[no-untyped-def]
    path = write_file("bad-line.env", "GOOD=1\nthis is not an assignment\nALSO=2\n")
    load_dotenv(path)
    assert os.environ["GOOD"] == "1" and os.environ["ALSO"] == "2"
    assert any("line 2" in n for n in load_notes())


def test_non_utf8_file_is_skipped_with_file_and_line(write_file) -> None:  # type: ignore[no-untyped-def]
    path = write_file("latin1.env", "OK=1\nNAME=caf\xe9\n".encode("latin-1"))
    assert load_dotenv(path) == {}
    [note] = load_notes()
    assert str(path) in note and "not UTF-8" in note and "line 2" in note


def test_binary_file_is_skipped(write_file) -> None:  # type: ignore[no-untyped-def]
    path = write_file("bin.env", b"\x00\x01\x02PK\x03\x04")
    assert load_dotenv(path) == {}
    assert "binary" in load_notes()[0]


def test_directory_named_env_is_skipped(tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").mkdir()
    load_dotenv()
    assert any("is a directory" in n for n in load_notes())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of their mode")
def test_unreadable_file_is_skipped(write_file) -> None:  # type: ignore[no-untyped-def]
    path = write_file("secret.env", "K=v\n")
    path.chmod(0)
    assert load_dotenv(path) == {}
    assert "cannot read" in load_notes()[0]


def test_unreadable_file_is_skipped_even_as_root(write_file, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    path = write_file("secret2.env", "K=v\n")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert load_dotenv(path) == {}
    assert "cannot read" in load_notes()[0] and "permissions" in load_notes()[0]


def test_broken_claude_settings_are_skipped_silently(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    claude = isolated_home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text("{ not json")
    (claude / "settings.local.json").write_text('{"env": ["not", "a", "dict"]}')
    assert load_dotenv() == {}
    assert load_notes() == []


def test_empty_credential_in_a_higher_file_is_named(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("ANTHROPIC_AUTH_TOKEN=\n")
    user = isolated_home / ".config" / "flower"
    user.mkdir(parents=True)
    (user / ".env").write_text("ANTHROPIC_AUTH_TOKEN=good-token\n")
    load_dotenv()
    message = check_credentials()
    assert message is not None
    assert "flower setup" in message and "./.env" in message and "settings.json" in message
    assert f"ANTHROPIC_AUTH_TOKEN is set but empty (from {tmp_path / '.env'})" in message


def test_credentials_present(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "t")
    assert check_credentials() is None
