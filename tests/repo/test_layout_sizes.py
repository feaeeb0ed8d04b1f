"""Every distribution stays findable: no module past about 500 lines (500 exactly in flower-cli's cli/ and view/,
the rooms a reader enters first), no function past 80 (except the fused rewrite's hot path, measured in
benchmarks/ and property-tested in tests/stores), and every import inside a function says why (a comment on it or on
the block of imports above it: ``# why: …``, ``# lazy: …``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(path for path in (REPO / "packages").glob("*/src/**/*.py"))
MAX_MODULE_LINES = 520  # "about 500": a module a few lines over is not worth a split of its job
STRICT_ROOMS = ("flower-cli/src/flower_cli/cli/", "flower-cli/src/flower_cli/view/")  # held to 500
MAX_FUNCTION_LINES = 80
# The one long function by design: a single pass over a transcript's entries, kept in one frame for speed.
HOT_PATHS = {("flower-stores/src/flower_stores/rewrite/_fused.py", "rewrite_once")}


def _name(path: Path) -> str:
    return str(path.relative_to(REPO / "packages"))


def _reason(line: str) -> bool:
    """A comment that gives a reason (``# why: …``, ``# lazy: …``): not a linter's or type checker's pragma."""
    comment = line.partition("#")[2].strip()
    return bool(comment) and not comment.startswith(("noqa", "type:", "pragma", "fmt:"))


def _says_why(lines: list[str], lineno: int) -> bool:
    """The import on ``lineno`` carries a reason on its line or on the block of imports/comments/``try:`` above."""
    index = lineno - 1
    while index >= 0:
        line = lines[index].strip()
        if "#" in line and _reason(line):
            return True
        if index != lineno - 1 and not line.startswith(("import ", "from ", "#", "try:")):
            return False
        index -= 1
    return False


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_modules_and_functions_stay_short(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    most = 500 if _name(path).startswith(STRICT_ROOMS) else MAX_MODULE_LINES
    assert len(source.splitlines()) <= most, f"{_name(path)}: split it by job"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        and (_name(path), node.name) not in HOT_PATHS
    ]
    assert not long, f"{_name(path)}: name the steps of {long}"


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_function_level_import_says_why(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    silent = [
        f"line {inner.lineno}: {lines[inner.lineno - 1].strip()}"
        for node in ast.walk(ast.parse("\n".join(lines)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(node)
        if isinstance(inner, (ast.Import, ast.ImportFrom)) and not _says_why(lines, inner.lineno)
    ]
    assert not silent, f"{_name(path)}: import at the top, or say why it must wait: {sorted(set(silent))}"
