"""`# desc:` extraction: comment styles, the fallbacks, and what is never a description."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_workbench import describe_file


def write(tmp_path: Path, text: str, name: str = "f") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# desc: fetch the nightly data\nimport os\n", "fetch the nightly data"),
        ("// desc: a JavaScript helper\n", "a JavaScript helper"),
        ("-- desc: the report query\nSELECT 1;\n", "the report query"),
        ("; desc: an ini file\n", "an ini file"),
        ("/* desc: a C helper */\n", "a C helper"),
        ("<!-- desc: a page -->\n", "a page"),
        ("#DESC:   spaces and case   \n", "spaces and case"),
        ("# desc： full-width colon\n", "full-width colon"),
        ("import os\n# desc: later, but within the first lines\n", "later, but within the first lines"),
    ],
)
def test_desc_line_in_any_comment_style(tmp_path: Path, text: str, expected: str) -> None:
    assert describe_file(write(tmp_path, text)) == expected


def test_a_shebang_is_never_the_description(tmp_path: Path) -> None:
    assert describe_file(write(tmp_path, "#!/usr/bin/env python3\n# desc: rebuild the cache\n")) == "rebuild the cache"
    assert describe_file(write(tmp_path, "#!/bin/sh\n# Rebuild the cache\nmake\n")) == "Rebuild the cache"
    assert describe_file(write(tmp_path, "#!/bin/sh\nmake\n")) == ""


def test_encoding_and_modelines_are_skipped(tmp_path: Path) -> None:
    assert (
        describe_file(write(tmp_path, "# -*- coding: utf-8 -*-\n# vim: set ts=4:\n# Parse the logs\n"))
        == "Parse the logs"
    )


def test_fallbacks_markdown_heading_and_docstring(tmp_path: Path) -> None:
    assert describe_file(write(tmp_path, "# Why we chose SQLite\n\nBecause.\n")) == "Why we chose SQLite"
    assert describe_file(write(tmp_path, '"""Summarise the test run."""\n')) == "Summarise the test run."


def test_no_description(tmp_path: Path) -> None:
    assert describe_file(write(tmp_path, "import os\nprint(1)\n# a comment after code\n")) == ""
    assert describe_file(write(tmp_path, "")) == ""
    assert describe_file(write(tmp_path, "\n\n#\n")) == ""


def test_only_the_first_eight_lines_count(tmp_path: Path) -> None:
    assert describe_file(write(tmp_path, "\n" * 8 + "# desc: too late\n")) == ""


def test_descriptions_are_cut_to_100_characters(tmp_path: Path) -> None:
    assert describe_file(write(tmp_path, "# desc: " + "x" * 300 + "\n")) == "x" * 100


def test_binary_and_unreadable_files_do_not_crash(tmp_path: Path) -> None:
    binary = tmp_path / "blob"
    binary.write_bytes(b"\x00\xff\xfe# desc: \xc3\x28 broken\n")
    assert isinstance(describe_file(binary), str)
    assert describe_file(tmp_path / "missing") == ""
    assert describe_file(tmp_path) == ""  # a directory
