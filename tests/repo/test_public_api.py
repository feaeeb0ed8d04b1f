"""Every distribution's public surface, held against a recorded copy: a layout change moves code, never a name.

``public_api.json`` lists each package's ``__all__``. A change to a surface is a deliberate act: add or remove
the name here in the same commit, and say so in that package's CHANGELOG.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

RECORDED = json.loads((Path(__file__).with_name("public_api.json")).read_text(encoding="utf-8"))


@pytest.mark.parametrize("module", sorted(RECORDED))
def test_public_names_are_the_recorded_ones(module: str) -> None:
    names = sorted(importlib.import_module(module).__all__)
    added = sorted(set(names) - set(RECORDED[module]))
    removed = sorted(set(RECORDED[module]) - set(names))
    assert not added and not removed, f"{module}.__all__ changed: added {added}, removed {removed} (public_api.json)"


@pytest.mark.parametrize("module", sorted(RECORDED))
def test_every_public_name_resolves(module: str) -> None:
    package = importlib.import_module(module)
    missing = [name for name in RECORDED[module] if not hasattr(package, name)]
    assert not missing, f"{module} does not define {missing}"
