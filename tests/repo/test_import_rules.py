"""The design's package rules, enforced: siblings only through their public API, no cycles, declared deps."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "packages"

# The package table of ../shared/spec/00-design.md: which siblings each distribution may import.
ALLOWED_SIBLINGS: dict[str, set[str]] = {
    "flower_env": set(),
    "flower_stores": set(),
    "flower_resilience": set(),
    "flower_workbench": set(),
    "flower_cli": {"flower_env", "flower_stores", "flower_resilience", "flower_workbench"},
}


def _source_files(module: str) -> list[Path]:
    dist = PACKAGES / module.replace("_", "-")
    return sorted((dist / "src" / module).rglob("*.py"))


def _flower_imports(path: Path) -> list[tuple[int, str]]:
    """Absolute imports of any ``flower_*`` module in a file, as (line, dotted name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0].startswith("flower_")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0].startswith("flower_"):
                found.append((node.lineno, node.module))
    return found


def test_every_table_package_exists() -> None:
    assert sorted(p.name for p in PACKAGES.iterdir() if p.is_dir()) == sorted(
        m.replace("_", "-") for m in ALLOWED_SIBLINGS
    )


@pytest.mark.parametrize("module", sorted(ALLOWED_SIBLINGS))
def test_siblings_only_through_public_api(module: str) -> None:
    problems = []
    for path in _source_files(module):
        for line, name in _flower_imports(path):
            top = name.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{line}"
            if top == module:
                continue  # a package may import itself absolutely
            if top not in ALLOWED_SIBLINGS[module]:
                problems.append(f"{where}: {module} may not import {top} (not in the design's package table)")
            elif name != top:
                problems.append(f"{where}: imports {name}; use the public API `from {top} import ...`")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", sorted(ALLOWED_SIBLINGS))
def test_declared_dependencies_match_the_table(module: str) -> None:
    project = tomllib.loads((PACKAGES / module.replace("_", "-") / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].replace("-", "_") for d in project.get("dependencies", [])}
    siblings = {d for d in declared if d.startswith("flower_")}
    assert siblings == ALLOWED_SIBLINGS[module]
    imported = {name.split(".")[0] for path in _source_files(module) for _, name in _flower_imports(path)} - {module}
    assert imported <= siblings, f"{module} imports undeclared siblings: {sorted(imported - siblings)}"


def test_no_cycles() -> None:
    graph = {
        m: {n.split(".")[0] for p in _source_files(m) for _, n in _flower_imports(p)} - {m} for m in ALLOWED_SIBLINGS
    }
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in done:
            return
        assert node not in visiting, f"import cycle: {' -> '.join(trail + [node])}"
        visiting.add(node)
        for nxt in graph.get(node, ()):
            visit(nxt, trail + [node])
        visiting.discard(node)
        done.add(node)

    for module in graph:
        visit(module, [])


@pytest.mark.parametrize("module", sorted(ALLOWED_SIBLINGS))
def test_package_declares_all_and_ships_py_typed(module: str) -> None:
    src = PACKAGES / module.replace("_", "-") / "src" / module
    assert (src / "py.typed").is_file()
    tree = ast.parse((src / "__init__.py").read_text())
    names = [
        t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
    ]
    assert "__all__" in names, f"{module}/__init__.py must declare __all__"
    imported = __import__(module)
    missing = [n for n in imported.__all__ if not hasattr(imported, n)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"
