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
    # The optional sixth: runs of flower-cli's workflows on Temporal, sessions in flower-stores' PostgreSQL store.
    "flower_fleet": {"flower_cli", "flower_stores"},
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


# --- inside a package: subpackages ("rooms") in layers ----------------------------------------------------------
# flower-cli and flower-stores are each split into rooms with one job. A table per package names each room and the
# rooms it may import (directly or not). Lower rooms never import higher ones; a room imports another only through
# its ``__init__`` (its documented surface), except ``_shared``, a set of plain helper modules. The package's
# ``__init__`` (its public surface) and ``__main__`` sit on top. The helpers below check any such package.
MAX_FLOORS = 6
SHARED_ROOM = "_shared"


def _room(src: Path, path: Path) -> str:
    parts = path.relative_to(src).parts
    return parts[0] if len(parts) > 1 else path.stem


def _internal_imports(src: Path, path: Path) -> list[tuple[int, list[str]]]:
    """The package's own modules a file imports (relative or absolute, at any depth: module-level, function-level
    and ``TYPE_CHECKING`` imports all count), as (line, path inside the package)."""
    package_name = src.name
    here = list(path.relative_to(src).with_suffix("").parts)
    package = here[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = anchor + (node.module.split(".") if node.module else [])
            if not target:  # `from . import x` at the top: x is a module or a name of the package surface
                found += [
                    (node.lineno, [a.name])
                    if (src / a.name).exists() or (src / f"{a.name}.py").exists()
                    else (node.lineno, ["__init__"])
                    for a in node.names
                ]
            else:
                found.append((node.lineno, target))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package_name:
            found.append((node.lineno, node.module.split(".")[1:] or ["__init__"]))
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name.split(".")[1:] or ["__init__"])
                for a in node.names
                if a.name.split(".")[0] == package_name
            ]
    return found


def _package_files(src: Path) -> list[Path]:
    return sorted(src.rglob("*.py"))


def _rooms_missing_from(src: Path, layers: dict[str, set[str]]) -> list[str]:
    rooms = {_room(src, p) for p in _package_files(src)}
    return sorted(rooms ^ set(layers))


def _layering_problems(src: Path, layers: dict[str, set[str]], table: str) -> list[str]:
    """Imports of a room that is not below it in ``layers``, or of another room's module past its surface."""
    problems = []
    for path in _package_files(src):
        room = _room(src, path)
        for line, target in _internal_imports(src, path):
            other = target[0]
            where = f"{path.relative_to(ROOT)}:{line}"
            if other == room:
                continue
            if other not in layers[room]:
                problems.append(f"{where}: {room}/ may not import {other} ({table}: lower rooms only)")
            elif other != SHARED_ROOM and len(target) > 1:
                problems.append(f"{where}: imports {'.'.join(target)}; use `from ..{other} import ...` (its surface)")
    return problems


def _check_room_floors(src: Path, layers: dict[str, set[str]]) -> None:
    """No circle between rooms, and at most `MAX_FLOORS` floors (a room's floor: 1 + the highest it imports)."""
    graph: dict[str, set[str]] = {room: set() for room in layers}
    for path in _package_files(src):
        room = _room(src, path)
        graph[room] |= {t[0] for _, t in _internal_imports(src, path) if t[0] != room and t[0] in layers}
    floors: dict[str, int] = {}

    def floor(room: str, trail: tuple[str, ...]) -> int:
        assert room not in trail, f"import circle: {' -> '.join((*trail, room))}"
        if room not in floors:
            floors[room] = 1 + max((floor(n, (*trail, room)) for n in graph[room]), default=0)
        return floors[room]

    highest = max(floor(room, ()) for room in graph)
    assert highest <= MAX_FLOORS, f"{src.name} has {highest} import floors (at most {MAX_FLOORS}): {floors}"


def _check_no_module_circle(src: Path) -> None:
    # Inside a room too: a circle between two modules means neither can be read (or imported) alone.
    modules = {tuple(p.relative_to(src).with_suffix("").parts): p for p in _package_files(src)}

    def resolve(target: list[str]) -> tuple[str, ...] | None:
        for candidate in (tuple(target), (*target, "__init__")):
            if candidate in modules:
                return candidate
        return None

    graph = {
        m: {r for _, t in _internal_imports(src, p) if (r := resolve(t)) is not None and r != m}
        for m, p in modules.items()
    }
    state: dict[tuple[str, ...], int] = {}

    def visit(m: tuple[str, ...], trail: list[str]) -> None:
        if state.get(m) == 2:
            return
        assert state.get(m) != 1, f"import circle: {' -> '.join([*trail, '/'.join(m)])}"
        state[m] = 1
        for n in graph[m]:
            visit(n, [*trail, "/".join(m)])
        state[m] = 2

    for m in graph:
        visit(m, [])


def _check_room_surface(src: Path, room: str) -> None:
    import importlib

    package = importlib.import_module(f"{src.name}.{room}")
    assert isinstance(package.__all__, list)
    missing = [n for n in package.__all__ if getattr(package, n, None) is None and n != "__version__"]
    assert not missing, f"{src.name}.{room}.__all__ names what it does not define: {missing}"
    if room != SHARED_ROOM:
        private = [p.name for p in (src / room).glob("*.py") if p.name != "__init__.py" and not p.name.startswith("_")]
        assert not private, f"{src.name}/{room}/ modules are not API: name them with a leading underscore: {private}"


# --- inside flower-cli -----------------------------------------------------------------------------------------
CLI_LAYERS: dict[str, set[str]] = {
    "_shared": set(),
    "analyze": {"_shared"},
    # The scripted Messages API for testing offline (and the pytest plugin): the standard library only.
    "testing": {"_shared"},
    "runtime": {"_shared"},
    # Talk to a run from anywhere: the run log's publisher and the Control API (over flower-stores only).
    "control": {"_shared"},
    "roles": {"_shared", "runtime"},
    "workflow": {"_shared", "runtime"},
    "view": {"_shared", "runtime"},
    "go": {"_shared", "runtime", "roles", "workflow", "view"},
    # `flower ui`'s page: the web application and its run sources (this workspace's through `Control`).
    "ui": {"_shared", "control"},
    # `flower demo`'s story and its player: the scripted server plays the roles (their rules key the replies).
    "demo": {"_shared", "roles", "testing"},
    "cli": {"_shared", "runtime", "roles", "workflow", "view", "go", "analyze", "control", "ui", "demo"},
    "__init__": {"_shared", "runtime", "roles", "workflow", "view", "go", "analyze", "control", "cli", "ui"},
    "__main__": {"_shared", "cli", "__init__"},
}
CLI_SRC = PACKAGES / "flower-cli" / "src" / "flower_cli"


def test_every_flower_cli_room_is_in_the_layer_table() -> None:
    missing = _rooms_missing_from(CLI_SRC, CLI_LAYERS)
    assert not missing, f"rooms not in CLI_LAYERS: {missing}"


def test_flower_cli_rooms_import_only_downward_and_through_their_surface() -> None:
    problems = _layering_problems(CLI_SRC, CLI_LAYERS, "CLI_LAYERS")
    assert not problems, "\n".join(problems)


def test_flower_cli_has_no_circle_and_at_most_six_floors() -> None:
    _check_room_floors(CLI_SRC, CLI_LAYERS)


def test_no_circle_between_flower_cli_modules() -> None:
    _check_no_module_circle(CLI_SRC)


@pytest.mark.parametrize("room", sorted(r for r in CLI_LAYERS if (CLI_SRC / r).is_dir()))
def test_each_flower_cli_subpackage_declares_its_surface(room: str) -> None:
    _check_room_surface(CLI_SRC, room)


# --- inside flower-stores --------------------------------------------------------------------------------------
STORES_LAYERS: dict[str, set[str]] = {
    "_shared": set(),  # StoreError, JSON text, the usage sum, the passthrough that wrappers are built with
    "report": set(),  # LoadReport, Rewritten: what a rewrite returns (a fenced view passes a layer's on)
    "entries": set(),  # reading transcript entries and the harness's refusals
    "glances": set(),  # is_ephemeral and the shell reader behind it
    "rewrite": {"report", "entries", "glances"},  # expire, trim, prune, relink/heal, the fused rewrite
    "index": {"_shared"},  # SessionIndex and the index computed over any store
    "runs": {"_shared"},  # RunRecords
    "events": {"_shared"},  # RunEventLog, RunInbox: what a run publishes and the messages sent to it
    "lease": {"_shared", "report", "index"},  # the lease, its backend half, the fenced view, take/hold
    "backends": {"_shared", "lease", "runs", "events"},  # SQLite, PostgreSQL, store URLs
    "backfill": {"_shared", "lease"},  # import_transcript: a store filled from the harness's files
    "layers": {"_shared", "report", "rewrite", "index", "runs", "events", "lease", "backends"},
    "upkeep": {"_shared", "runs", "lease", "backends"},  # StoreUpkeep: delete, prune, compact, size
    "__init__": {
        "_shared",
        "report",
        "entries",
        "glances",
        "rewrite",
        "index",
        "runs",
        "events",
        "lease",
        "backends",
        "backfill",
        "layers",
        "upkeep",
    },  # fmt: skip
}
STORES_SRC = PACKAGES / "flower-stores" / "src" / "flower_stores"


def test_every_flower_stores_room_is_in_the_layer_table() -> None:
    missing = _rooms_missing_from(STORES_SRC, STORES_LAYERS)
    assert not missing, f"rooms not in STORES_LAYERS: {missing}"


def test_flower_stores_rooms_import_only_downward_and_through_their_surface() -> None:
    problems = _layering_problems(STORES_SRC, STORES_LAYERS, "STORES_LAYERS")
    assert not problems, "\n".join(problems)


def test_flower_stores_has_no_circle_and_at_most_six_floors() -> None:
    _check_room_floors(STORES_SRC, STORES_LAYERS)


def test_no_circle_between_flower_stores_modules() -> None:
    _check_no_module_circle(STORES_SRC)


@pytest.mark.parametrize("room", sorted(r for r in STORES_LAYERS if (STORES_SRC / r).is_dir()))
def test_each_flower_stores_subpackage_declares_its_surface(room: str) -> None:
    _check_room_surface(STORES_SRC, room)
