"""What the root README and docs/ claim, checked against the repository and the command (issue 32): the quick
start's two commands, the distributions it names, the links it gives, the exit-code table, `--json`'s error
object on failures, and that the credential probe runs at `flower setup` on a terminal only."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from e2e._runs import flower

from flower_cli._shared.exits import ExitCode

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_first_command_puts_flower_on_path_and_plays_the_demo() -> None:
    quick = README.read_text(encoding="utf-8").split("\n## ")[1]
    assert quick.startswith("Quick start"), "the README's first section is the quick start"
    first, second = _bash_blocks(quick)[:2]
    assert "flower demo" in first, "the first command ends in the demo, which needs no account"
    # on PATH for this shell and the next ones of it: an activated venv (pipx and uv are not on a fresh machine)
    assert re.search(r"(^|&& )(\. |source )\.venv/bin/activate\b", first), first
    assert "pip install" in first and "./packages/" in first, "installed from the checkout"
    assert second.endswith("hatch run test"), "the second command runs the tests"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert second in ci, "CI runs exactly the README's test command"


def test_the_readme_names_every_distribution_and_counts_them_right() -> None:
    text = README.read_text(encoding="utf-8")
    shipped = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
    words = {5: "five", 6: "six", 7: "seven"}
    assert f"## The {words[len(shipped)]} distributions" in text
    assert "The five distributions" not in text or len(shipped) == 5
    for name in shipped:
        assert f"[`{name}`](packages/{name})" in text, f"{name} is missing from the README's table"


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_exit_code_table_has_every_code_the_command_uses() -> None:
    table = (ROOT / "docs" / "durability.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| (\d+) \|", table, flags=re.M))
    assert {str(int(code)) for code in ExitCode} <= rows, sorted({str(int(c)) for c in ExitCode} - rows)
    assert "143" in rows, "a run stopped by SIGTERM dies of it (143 to the shell)"


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "sesions"],  # a misnamed command
        ["--json", "once"],  # no prompt and no pipe
        ["--json", "-w", "/nonexistent/flower-workspace", "once", "hi"],  # a missing workspace
        ["--json", "once", "--model", "two words", "hi"],  # a bad option value
        ["--json", "doctor", "--no-probe"],  # no credential
    ],
    ids=lambda a: " ".join(a[1:3]),
)
def test_json_failures_end_stdout_with_the_error_object(args: list[str], isolated_home: Path, tmp_path: Path) -> None:
    done = flower(*args, cwd=tmp_path, env={**os.environ, "FLOWER_NO_UPDATE": "1"})
    assert done.returncode != 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["kind"] == "error" and last["exit"] == done.returncode and last["message"], last


def test_setup_without_a_terminal_sends_no_probe(isolated_home: Path, tmp_path: Path) -> None:
    from flower_cli.testing import ScriptedServer

    with ScriptedServer() as api:
        env = {**os.environ, "FLOWER_NO_UPDATE": "1", "ANTHROPIC_BASE_URL": api.url}
        done = flower("setup", "--token", "sk-ant-test-0000000000000000", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert api.requests == [], "the probe runs at setup only on a terminal"
    assert (isolated_home / ".config" / "flower" / ".env").exists()
