"""docs/configuration.md against the code: every environment variable flower reads or writes and every option
of the `flower` command is documented, and nothing documented is gone from the code.

The variables are found by reading the source (AST): string constants named like ours (ANTHROPIC_*, CLAUDE_*,
FLOWER_*, XDG_*, DISABLE_*) anywhere in packages/*/src, any name read through an environment mapping
(``os.environ.get("X")``, ``os.getenv("X")``, ``env["X"]``, ``"X" in os.environ``), the variables
docker/flowerbox reads and the ENV of docker/Dockerfile. The options come from the typer app itself.
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from flower_cli.cli._app import app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_", "XDG_", "DISABLE_")
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
_SHELL_VARIABLE = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")


def _ours(name: str) -> bool:
    return bool(_VARIABLE.match(name)) and name.startswith(PREFIXES)


def _reads_environment(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return "environ" in text or re.search(r"\benv\b", text) is not None


def _env_reads(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _ours(node.value):
            yield node.value, node.lineno
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            func, name = node.func, node.args[0].value
            if not _VARIABLE.match(name):
                continue
            if isinstance(func, ast.Attribute) and func.attr == "getenv":
                yield name, node.lineno
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "pop", "setdefault")
                and _reads_environment(func.value)
            ):
                yield name, node.lineno
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            if _VARIABLE.match(node.slice.value) and _reads_environment(node.value):
                yield node.slice.value, node.lineno
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            if _VARIABLE.match(node.left.value) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                if any(_reads_environment(c) for c in node.comparators):
                    yield node.left.value, node.lineno


def variables_in_code() -> dict[str, str]:
    """Every variable name → where it was first seen (file:line), for the failure message."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "packages").glob("*/src/**/*.py")):
        for name, line in _env_reads(ast.parse(path.read_text(encoding="utf-8"))):
            found.setdefault(name, f"{path.relative_to(ROOT)}:{line}")
    flowerbox = ROOT / "docker" / "flowerbox"
    for n, line in enumerate(flowerbox.read_text().splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        for name in _SHELL_VARIABLE.findall(line):
            if _ours(name) or name == "HOME":
                found.setdefault(name, f"docker/flowerbox:{n}")
    dockerfile = ROOT / "docker" / "Dockerfile"
    in_env = False
    for n, line in enumerate(dockerfile.read_text().splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("ENV "):
            in_env, stripped = True, stripped[4:]
        if in_env:
            for name in re.findall(r"([A-Z][A-Z0-9_]*)=", stripped):
                found.setdefault(name, f"docker/Dockerfile:{n}")
            in_env = stripped.endswith("\\")
    return found


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def variables_in_doc() -> set[str]:
    section = _section(DOC.read_text(encoding="utf-8"), "## Environment variables")
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, flags=re.M))


def test_every_variable_the_code_reads_is_documented() -> None:
    documented = variables_in_doc()
    missing = {name: where for name, where in variables_in_code().items() if name not in documented}
    assert not missing, "docs/configuration.md does not document " + "; ".join(
        f"`{name}` (read at {where}): add a row to a table under '## Environment variables'"
        for name, where in sorted(missing.items())
    )


def test_every_documented_variable_is_still_in_the_code() -> None:
    code = variables_in_code()
    gone = sorted(variables_in_doc() - set(code))
    assert not gone, (
        f"docs/configuration.md documents {', '.join(f'`{n}`' for n in gone)}, which no code reads or writes any more: remove the row"
    )


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, f"{path} {name}")


def _param_names(param: Any) -> list[str]:
    if param.param_type_name == "argument":
        return [param.name.upper()]
    return [*param.opts, *param.secondary_opts]


def options_in_code() -> dict[str, dict[str, Any]]:
    """``{"flower once": {"--tools": param, "-t": param, "PROMPT": param, …}}`` (help options left out)."""
    from flower_cli.cli._plugins import install_plugins

    install_plugins(app)  # the installed plugins' commands (flower fleet …) are documented like the others
    out: dict[str, dict[str, Any]] = {}
    for path, command in _commands(typer.main.get_command(app), "flower"):
        params = {name: p for p in command.params if p.name != "help" for name in _param_names(p)}
        if params:
            out[path] = params
    return out


def options_in_doc() -> dict[str, dict[str, str]]:
    """``{"flower once": {"--tools": "<default cell>", …}}`` from the tables under ``### `flower …` ``."""
    section = _section(DOC.read_text(encoding="utf-8"), "## Command options")
    out: dict[str, dict[str, str]] = {}
    for block in re.split(r"^### ", section, flags=re.M)[1:]:
        heading, _, body = block.partition("\n")
        command = heading.strip().strip("`")
        rows: dict[str, str] = {}
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0].startswith("`"):
                for name in re.findall(r"`([^`]+)`", cells[0]):
                    rows[name] = cells[1]
        out[command] = rows
    return out


def test_every_option_is_documented_and_nothing_else() -> None:
    code, doc = options_in_code(), options_in_doc()
    problems: list[str] = []
    for command, params in code.items():
        for name in sorted(set(params) - set(doc.get(command, {}))):
            problems.append(f"`{command} {name}` is not documented: add a row under ### `{command}`")
    for command, rows in doc.items():
        for name in sorted(set(rows) - set(code.get(command, {}))):
            problems.append(f"`{command} {name}` is documented but the command has no such option: remove the row")
    assert not problems, "docs/configuration.md and the `flower` command disagree:\n" + "\n".join(problems)


def test_documented_defaults_are_the_code_defaults() -> None:
    code, doc = options_in_code(), options_in_doc()
    wrong: list[str] = []
    for command, params in code.items():
        for name, param in params.items():
            default = param.default
            if isinstance(default, enum.Enum):
                default = default.value
            if default is None or isinstance(default, bool) or default == "" or not name.startswith("--"):
                continue
            cell = doc.get(command, {}).get(name)
            if cell is not None and f"`{default}`" not in cell:
                wrong.append(f"`{command} {name}`: the code's default is `{default}`, the doc says {cell!r}")
    assert not wrong, "docs/configuration.md has stale defaults:\n" + "\n".join(wrong)


def test_the_scanner_sees_the_kinds_of_reads_it_claims_to() -> None:
    tree = ast.parse(
        "import os\n"
        "a = os.environ.get('ZED_ONE')\nb = os.getenv('ZED_TWO')\nc = self.env.get('ZED_THREE')\n"
        "d = os.environ['ZED_FOUR']\ne = 'ZED_FIVE' in os.environ\nf = 'FLOWER_SOMETHING'\ng = {'k': 1}.get('ZED_NOT')\n"
    )
    assert {name for name, _ in _env_reads(tree)} == {
        "ZED_ONE",
        "ZED_TWO",
        "ZED_THREE",
        "ZED_FOUR",
        "ZED_FIVE",
        "FLOWER_SOMETHING",
    }
