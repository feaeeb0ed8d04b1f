"""Lazy package surfaces (``flower_cli/_shared/lazy.py`` and flower-fleet's copy): a surface writes each public
name once, as ``from ._x import A as A`` under ``if TYPE_CHECKING:``, and gets ``__all__``, ``__dir__`` and a
``__getattr__`` that imports the name's module on first use."""

from __future__ import annotations

import ast
import importlib
import py_compile
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_INIT = '''
"""A surface."""

from __future__ import annotations

from typing import TYPE_CHECKING

IMPORT_LAZY_SURFACE
from ._version import VERSION as VERSION
from ._version import build

if TYPE_CHECKING:
    from pathlib import Path

    from ._heavy import Heavy as Heavy
    from ._heavy import helper as helper
    from ._heavy import not_exported

__all__ = lazy_surface(__name__)


def describe(path: Path) -> str:
    return str(path) + build


class Thing:
    pass


def _private() -> None:
    pass
'''


@pytest.fixture(params=["flower_cli._shared.lazy", "flower_fleet._lazy"])
def surface(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A package ``surfacepkg`` in tmp_path whose __init__ uses one of the two copies of ``lazy_surface``."""
    package = tmp_path / "surfacepkg"
    package.mkdir()
    init = _INIT.replace("IMPORT_LAZY_SURFACE", f"from {request.param} import lazy_surface")
    (package / "__init__.py").write_text(init, encoding="utf-8")
    (package / "_version.py").write_text('VERSION = "1"\nbuild = "+b"\n', encoding="utf-8")
    (package / "_heavy.py").write_text(
        "class Heavy:\n    pass\n\ndef helper() -> int:\n    return 7\n\nnot_exported = 1\n", encoding="utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield "surfacepkg"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == "surfacepkg"]:
            del sys.modules[name]


def test_all_is_the_reexports_and_public_definitions(surface: str) -> None:
    package = importlib.import_module(surface)
    assert package.__all__ == ["Heavy", "Thing", "VERSION", "describe", "helper"]
    assert f"{surface}._heavy" not in sys.modules  # nothing lazy is imported by the import of the package


def test_a_name_is_imported_on_first_use_and_kept(surface: str) -> None:
    package = importlib.import_module(surface)
    assert package.helper() == 7
    assert f"{surface}._heavy" in sys.modules
    assert vars(package)["helper"] is sys.modules[f"{surface}._heavy"].helper  # the next lookup is a plain one
    assert package.Heavy is sys.modules[f"{surface}._heavy"].Heavy


def test_names_not_exported_are_missing_attributes(surface: str) -> None:
    package = importlib.import_module(surface)
    for name in ("not_exported", "Path", "nope"):
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(package, name)


def test_dir_lists_every_public_name_before_use(surface: str) -> None:
    package = importlib.import_module(surface)
    assert set(package.__all__) <= set(dir(package))
    assert "_private" in dir(package)  # and what the namespace holds, as a module's dir() does


def test_flower_fleet_carries_flower_cli_s_functions() -> None:
    """flower-fleet may import flower-cli only through its public names, so it carries a copy of the helper;
    the copy must not drift (comments and layout aside)."""

    def functions(path: Path) -> dict[str, str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        return {node.name: ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)}

    cli = functions(ROOT / "packages/flower-cli/src/flower_cli/_shared/lazy.py")
    fleet = functions(ROOT / "packages/flower-fleet/src/flower_fleet/_lazy.py")
    assert fleet == cli


def test_every_lazy_surface_writes_its_names_once() -> None:
    """No surface keeps a second listing (an ``__all__`` list or a table of homes) beside its imports."""
    faces = [p for p in (ROOT / "packages").glob("*/src/*/**/__init__.py") if "lazy_surface" in p.read_text()]
    assert len(faces) >= 9, faces  # flower_cli, its seven rooms that have names, flower_fleet
    for path in faces:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listings = [
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name) and not isinstance(node.value, ast.Call)
        ]
        assert not listings, f"{path.relative_to(ROOT)} lists names again in {listings}"


def test_a_bytecode_only_install_is_told_it_needs_the_source(surface: str, tmp_path: Path) -> None:
    init = tmp_path / surface / "__init__.py"
    py_compile.compile(str(init), cfile=str(init.with_suffix(".pyc")), doraise=True)  # the legacy, sourceless place
    init.unlink()
    with pytest.raises(ImportError, match="reads its own source"):
        importlib.import_module(surface)
