"""Properties of is_ephemeral, checked by running what it accepts.

1. No accepted command changes the file system: generated command lines (inspection verbs mixed with writing
   options, redirections, substitutions and separators) that ``is_ephemeral`` accepts are *run* with bash in
   a scratch git repository, and the tree (HOME included) must be byte-for-byte the same afterwards — and
   the command must return within the time limit (``tail -f`` and friends would not).
2. Expiry and the coordinator's glance permission are one predicate: both follow ``is_ephemeral`` exactly,
   whatever it answers.

Only local, harmless-if-wrong verbs are generated: never ``date -s``/``hostname NAME`` (which would change
this machine if the predicate were wrong), nor network clients. The payloads that would prove a hole are
``touch``es inside the scratch tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from stores._transcripts import Transcript, tool_results

from flower_stores import EphemeralPolicy, expire, is_ephemeral, is_ephemeral_call

BASH = shutil.which("bash")

VERBS: dict[str, list[str]] = {
    "git": [
        "status", "log", "diff", "show", "branch", "remote", "config", "reflog", "stash", "worktree", "hash-object",
        "symbolic-ref", "rev-parse", "ls-files", "describe", "blame", "cat-file", "grep", "checkout", "tag", "add",
        "-c", "core.pager=touch", "-C", ".", "list", "show", "add", "new", "-d", "-m", "-w", "--output=pwned",
        "--out=pwned", "-v", "--get", "user.name", "someone", "--list", "expire", "--all", "HEAD", "HEAD~1",
        "--oneline", "-1", "--stat", "--", "a.txt", "--merged", "-a", "get-url", "origin", "--unset", "-e",
    ],  # fmt: skip
    "ls": ["-la", "-1", "-R", "sub", "*", "*.txt", "--color=never"],
    "cat": ["a.txt", "b.py", "-n", "*"],
    "head": ["-n", "2", "-c", "5", "a.txt", "*"],
    "tail": ["-n", "2", "-f", "-F", "--follow", "-qf", "a.txt", "-c", "3"],
    "wc": ["-l", "-c", "a.txt", "*"],
    "stat": ["a.txt", "-c", "%s"],
    "file": ["a.txt", "-C", "-m", "magic", "-b"],
    "find": [".", "-name", "'*.txt'", "*.txt", "-type", "f", "-newer", "a.txt", "-delete", "-fls", "pwned", "-fprint", "-exec", "touch", "pwned", "{}", "\\;", "-print", "-maxdepth", "1", "*"],
    "sort": ["-k", "2", "-n", "-r", "-o", "pwned", "--output=pwned", "--out=pwned", "-uo", "a.txt", "b.py", "*", "{-o,pwned}", "--compress-program=touch"],
    "uniq": ["-c", "a.txt", "pwned", "*", "--", "-u"],
    "sed": ["-n", "'1,2p'", "'p'", "-i", "-ni", "'w pwned'", "'s/a/b/w pwned'", "'s/a/b/e'", "'1e touch pwned'", "'s/a/b/g'", "-e", "a.txt", "'$p'", "--in-place", "-E"],
    "awk": ["'{print $1}'", "'{print > \"pwned\"}'", "'BEGIN{system(\"touch pwned\")}'", "'{print | \"cat > pwned\"}'", "-F:", "a.txt", "'NR > 1'", "-f", "'BEGIN{print 1 > \"pwned\"}'"],
    "grep": ["-n", "-r", "'a > b'", "a", ".", "a.txt", "-c", "'x|y'", "-l", "*"],
    "cut": ["-d:", "-f1", "a.txt"],
    "tr": ["a-z", "A-Z"],
    "nl": ["a.txt"],
    "rev": ["a.txt"],
    "comm": ["a.txt", "b.py"],
    "diff": ["a.txt", "b.py", "-u"],
    "jq": ["'.'", "data.json", "-r", "'.name'"],
    "column": ["-t", "a.txt"],
    "echo": ["hi", "'> pwned'", "--", "$HOME", "*"],
    "pwd": [],
    "env": ["touch", "pwned", "-0", "FOO=1"],
    "printenv": ["HOME", "PATH"],
    "which": ["git", "ls"],
    "type": ["ls"],
    "command": ["-v", "ls", "touch", "pwned"],
    "whoami": [],
    "id": ["-u"],
    "du": ["-sh", ".", "*"],
    "df": ["-h", "."],
    "free": ["-m"],
    "uptime": [],
    "ps": ["aux"],
    "touch": ["pwned"],  # never a glance: proves the runner would notice a write
    "tee": ["pwned"],
    "xargs": ["touch"],
}  # fmt: skip

SEPARATORS = [" ; ", " && ", " || ", " | ", "\n", " & ", ";", "|", "\n\n"]
REDIRECTS = [
    "",
    "",
    "",
    " 2>&1",
    " >/dev/null",
    " 2>/dev/null",
    " > pwned",
    " >> pwned",
    " 2> pwned",
    " &> pwned",
    " < a.txt",
    " >&2",
]
INJECTIONS = [
    "",
    "",
    "",
    "",
    " $(touch pwned)",
    " `touch pwned`",
    " <(touch pwned)",
    ' "$(touch pwned)"',
    " ${X:=pwned}",
    " $HOME",
]


# Arguments that write, execute, follow or expand into something else; the rest are plain inspection.
HOSTILE = {
    "-c", "core.pager=touch", "add", "new", "-d", "-m", "-w", "--output=pwned", "--out=pwned", "someone", "expire",
    "checkout", "tag", "--unset", "-e", "-f", "-F", "--follow", "-qf", "-C", "-delete", "-fls", "pwned", "-fprint",
    "-exec", "touch", "{}", "\\;", "-o", "-uo", "{-o,pwned}", "--compress-program=touch", "-i", "-ni", "'w pwned'",
    "'s/a/b/w pwned'", "'s/a/b/e'", "'1e touch pwned'", "--in-place", "'{print > \"pwned\"}'",
    "'BEGIN{system(\"touch pwned\")}'", "'{print | \"cat > pwned\"}'", "'BEGIN{print 1 > \"pwned\"}'", "*", "*.txt",
    "'> pwned'", "FOO=1",
}  # fmt: skip
SAFE_VERBS = sorted(v for v in VERBS if v not in ("touch", "tee", "xargs", "env", "command"))


@st.composite
def simple_commands(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 2)) == 0:  # a third hostile: anything goes
        verb = draw(st.sampled_from(sorted(VERBS)))
        args = draw(st.lists(st.sampled_from(VERBS[verb] or ["."]), max_size=5))
        return " ".join([verb, *args]) + draw(st.sampled_from(INJECTIONS)) + draw(st.sampled_from(REDIRECTS))
    # two thirds plausible glances, so that many accepted lines get run
    verb = draw(st.sampled_from(SAFE_VERBS))
    safe = [a for a in VERBS[verb] if a not in HOSTILE] or ["."]
    args = draw(st.lists(st.sampled_from(safe), max_size=4))
    return " ".join([verb, *args]) + draw(st.sampled_from(["", "", " 2>&1", " >/dev/null", " 2>/dev/null"]))


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(simple_commands(), min_size=1, max_size=3))
    line = parts[0]
    for part in parts[1:]:
        line += draw(st.sampled_from(SEPARATORS)) + part
    return line


def _scratch(root: Path) -> tuple[Path, dict[str, str]]:
    repo, home = root / "repo", root / "home"
    for d in (repo / "sub", home):
        d.mkdir(parents=True)
    (repo / "a.txt").write_text("alpha beta\ngamma a > b\nx|y\n")
    (repo / "b.py").write_text("print('b')\n")
    (repo / "sub" / "c.md").write_text("# c\n")
    (repo / "data.json").write_text('{"name": "flower"}\n')
    # File names that turn an unquoted glob into an option if the predicate let a glob through.
    (repo / "-delete").write_text("")
    (repo / "--output=pwned").write_text("")
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        # git status may refresh .git/index (a stat cache, not state); without optional locks it does not,
        # so any change to the tree below is a real write.
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "a.txt", "b.py", "sub"],
        ["git", "commit", "-q", "-m", "one"],
        ["git", "branch", "feature"],
    ):
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "a.txt").write_text("alpha beta\ngamma a > b\nx|y\nchanged\n")
    return repo, env


def _tree(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        st_ = path.lstat()
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir", st_.st_mode)
        else:
            out[rel] = (
                "file",
                st_.st_mode,
                st_.st_size,
                st_.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("glances")
    repo, env = _scratch(root)
    yield root, repo, env


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(
    max_examples=600,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(line=command_lines())
def test_accepted_commands_never_write_and_always_return(line: str, scratch: tuple[Path, Path, dict[str, str]]) -> None:
    root, repo, env = scratch
    accepted = is_ephemeral(line)
    event("accepted" if accepted else "rejected")
    if not accepted:
        return
    before = _tree(root)
    try:
        subprocess.run([BASH, "-c", line], cwd=repo, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)  # type: ignore[list-item]
    except subprocess.TimeoutExpired:
        pytest.fail(f"accepted command did not return: {line!r}")
    after = _tree(root)
    assert after == before, (
        f"accepted command changed the tree: {line!r}: {sorted(set(after.items()) ^ set(before.items()))[:5]}"
    )


def test_the_runner_notices_writes(scratch: tuple[Path, Path, dict[str, str]]) -> None:
    """The property above would catch a hole: the same runner sees a rejected writer's change."""
    root, repo, env = scratch
    before = _tree(root)
    assert not is_ephemeral("sort -o pwned-check a.txt")
    subprocess.run([BASH or "bash", "-c", "sort -o pwned-check a.txt"], cwd=repo, env=env, check=True)
    assert _tree(root) != before
    (repo / "pwned-check").unlink()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    lines=st.lists(command_lines(), min_size=1, max_size=12), verdicts=st.lists(st.booleans(), min_size=12, max_size=12)
)
def test_expiry_and_glance_permission_derive_from_the_same_function(
    lines: list[str], verdicts: list[bool], monkeypatch_module: Any
) -> None:
    """Replace the one predicate by an arbitrary one: both decisions follow it, and nothing else."""
    import flower_stores.glances._predicate as ephemeral_module

    decided = dict(zip(lines, verdicts, strict=False))
    with monkeypatch_module.context() as patch:
        patch.setattr(ephemeral_module, "is_ephemeral", lambda cmd: decided.get(cmd, False))
        transcript = Transcript()
        ids = {transcript.bash(line, "out"): line for line in lines}
        expired = {
            tid
            for tid, block in tool_results(expire(transcript.entries, EphemeralPolicy(keep_recent=0)).entries).items()
            if "expired" in block["content"]
        }
        glance_allowed = {tid for tid, line in ids.items() if is_ephemeral_call("Bash", {"command": line})}
        by_predicate = {tid for tid, line in ids.items() if decided[line]}
    assert expired == glance_allowed == by_predicate


@settings(max_examples=300, deadline=None, derandomize=True)
@given(lines=st.lists(command_lines(), min_size=1, max_size=12))
def test_expired_results_are_exactly_the_accepted_glances(lines: list[str]) -> None:
    transcript = Transcript()
    ids = {transcript.bash(line, "out"): line for line in lines}
    ids[transcript.call("Read", {"file_path": "/ws/a.txt"})] = "<read>"
    transcript.result(next(reversed(ids)), "file text")
    out = expire(transcript.entries, EphemeralPolicy(keep_recent=0)).entries
    expired = {
        tid for tid, block in tool_results(out).items() if block["content"] != "out" and block["content"] != "file text"
    }
    assert expired == {tid for tid, line in ids.items() if line != "<read>" and is_ephemeral(line)}


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch
