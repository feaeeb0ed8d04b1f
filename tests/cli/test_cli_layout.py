"""The ``flower`` command's code stays findable: in ``cli/`` and ``view/`` no function runs past 80 lines, no
module past 500, and every import inside a function says why it is there (``# why:``) — the reason is
``flower --help``'s start-up (tests/cli/test_startup_imports.py), or a platform that lacks the module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import flower_cli

ROOT = Path(flower_cli.__file__).parent
FILES = sorted([*(ROOT / "cli").rglob("*.py"), *(ROOT / "view").rglob("*.py")])
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_functions_and_modules_stay_short(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{_name(path)}: split it by job"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: name the steps of {long}"


def _says_why(lines: list[str], lineno: int) -> bool:
    """Whether the import on ``lineno`` (1-based) carries ``# why``: on its line, or on the block of imports,
    comments and ``try:`` right above it (one reason for a group of imports)."""
    index = lineno - 1
    while index >= 0:
        line = lines[index].strip()
        if "# why" in line:
            return True
        if index != lineno - 1 and not line.startswith(("import ", "from ", "#", "try:")):
            return False
        index -= 1
    return False


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_function_level_import_says_why(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    silent = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, (ast.Import, ast.ImportFrom)) and not _says_why(lines, inner.lineno):
                silent.append(f"line {inner.lineno}: {lines[inner.lineno - 1].strip()}")
    assert not silent, f"{_name(path)}: import at the top, or say why it must wait: {silent}"
