"""The dependency ranges the packages declare are the ones the tests ran on — and CI runs the newest of them.

How "newest" is proved without asking an index from a test (tests stay off the network):
- the hatch environment lives inside the checkout (``path = ".hatch/default"`` in the root pyproject.toml),
  so CI's clean clone always creates it anew, and pip resolves every requirement to the newest release
  the declared ranges (and the other packages' own requirements) allow at that moment;
- no pip constraints file holds any of our dependencies back (checked below);
- every installed version lies inside its declared range (checked below);
- the versions a run used are printed in pytest's header (tests/conftest.py), so every CI log says which
  versions were tested.

The other end of each range: the ``lowest`` hatch environment pins exactly the declared lower bounds
(checked below), so ``hatch run lowest:test ...`` shows they work.

Run from any other environment (a venv of your own, the system Python), the checks that are about the
environment cannot say anything: locally they are skipped, and the reason says to run the suite with
``hatch run test``; under CI (``CI`` set) they fail, since CI must prove the newest versions were tested.
The checks of the declared ranges themselves run anywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import pytest

UNDER_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
HOW = "run the suite with `hatch run test`, which installs the newest versions the ranges allow into .hatch/default"

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # the hatch environment installs it (root pyproject.toml): this is another environment
    if UNDER_CI:
        raise
    pytest.skip(f"`packaging` is not installed in {sys.prefix}: {HOW}", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PYPROJECTS = sorted((ROOT / "packages").glob("*/pyproject.toml"))
HATCH_ENVS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]
ENV_DIRS = {name: (ROOT / env["path"]).resolve() for name, env in HATCH_ENVS.items()}
IN_CHECKOUT_ENV = Path(sys.prefix).resolve() in ENV_DIRS.values()


def _outside_the_checkout_environment() -> NoReturn:
    """What an environment check does when the tests run from elsewhere: skip locally, fail under CI."""
    message = f"the tests run from {sys.prefix}, not from one of the checkout's own environments: {HOW}"
    if UNDER_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _requirements() -> list[tuple[str, Requirement]]:
    found = []
    for pyproject in PYPROJECTS:
        project = tomllib.loads(pyproject.read_text())["project"]
        found.extend((project["name"], Requirement(line)) for line in project.get("dependencies", []))
        # An extra's dependencies (flower-stores[postgres]) are installed by users just the same: same rules.
        for extra, lines in project.get("optional-dependencies", {}).items():
            found.extend((f"{project['name']}[{extra}]", Requirement(line)) for line in lines)
    return found


REQUIREMENTS = _requirements()


def test_every_package_is_covered() -> None:
    assert [p.parent.name for p in PYPROJECTS] == [
        "flower-cli",
        "flower-env",
        "flower-fleet",
        "flower-resilience",
        "flower-stores",
        "flower-workbench",
    ]
    assert REQUIREMENTS


@pytest.mark.parametrize(("dist", "requirement"), REQUIREMENTS, ids=[f"{d}:{r.name}" for d, r in REQUIREMENTS])
def test_each_dependency_declares_a_lower_and_an_upper_bound(dist: str, requirement: Requirement) -> None:
    # Every one of them can break us in a future release (a protocol change, a vendored parser, an API
    # removal), so each range stops before the next release line we have not run on.
    operators = {spec.operator for spec in requirement.specifier}
    assert operators & {">=", "~=", "=="}, f"{dist}: {requirement} has no lower bound"
    assert operators & {"<", "~=", "=="}, f"{dist}: {requirement} has no upper bound"


@pytest.mark.parametrize(("dist", "requirement"), REQUIREMENTS, ids=[f"{d}:{r.name}" for d, r in REQUIREMENTS])
def test_the_installed_version_is_inside_the_declared_range(dist: str, requirement: Requirement) -> None:
    if not IN_CHECKOUT_ENV:
        _outside_the_checkout_environment()  # elsewhere, what is installed says nothing about the ranges
    installed = metadata.version(requirement.name)
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"{dist} declares {requirement}, the tests run on {installed}"
    )


def test_the_environment_is_the_checkout_own_so_a_clean_clone_resolves_it_fresh() -> None:
    assert all(path.is_relative_to(ROOT / ".hatch") for path in ENV_DIRS.values()), ENV_DIRS
    if not IN_CHECKOUT_ENV:
        _outside_the_checkout_environment()


def test_the_lowest_environment_pins_exactly_the_declared_lower_bounds() -> None:
    pinned: dict[str, Version] = {}
    for line in HATCH_ENVS["lowest"]["extra-dependencies"]:
        requirement = Requirement(line)
        [spec] = requirement.specifier
        assert spec.operator == "==", line
        pinned[canonicalize_name(requirement.name)] = Version(spec.version)
    lower: dict[str, set[Version]] = {}
    for _, requirement in REQUIREMENTS:
        if requirement.name.startswith("flower-"):
            continue  # the siblings are this checkout
        floors = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
        lower.setdefault(canonicalize_name(requirement.name), set()).update(floors)
    assert all(len(floors) == 1 for floors in lower.values()), f"packages disagree on a lower bound: {lower}"
    assert {name: floors.pop() for name, floors in lower.items()} == pinned


def test_no_pip_constraint_holds_a_dependency_back() -> None:
    files = [f for f in os.environ.get("PIP_CONSTRAINT", "").split() if f]
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60)
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith(".constraint"):
            files.extend(value.strip().strip("'\"").split())
    ours = {canonicalize_name(r.name) for _, r in REQUIREMENTS}
    held = []
    for name in files:
        path = Path(name)
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            try:
                name_held = canonicalize_name(Requirement(line).name)
            except InvalidRequirement:  # an option line (-r, -c, a URL): not a pin of a name
                continue
            if name_held in ours:
                held.append(f"{path}: {line}")
    assert not held, f"a pip constraint keeps the tests off the newest allowed versions: {held}"
