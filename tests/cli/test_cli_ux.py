"""What a `claude -p` user expects of `flower`, below the real binary: typos, versions, session-id prefixes,
help that says what to type, refused tools in words for people, and the closing line."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from claude_agent_sdk import ToolResultBlock, UserMessage

from flower_cli import Event, normalize
from flower_cli._shared.exits import Exit, ExitCode
from flower_cli.cli import main
from flower_cli.cli._argv import misnamed_command, rewrite_argv
from flower_cli.cli._versions import DISTRIBUTIONS, version_report
from flower_cli.cli.actions.session_ids import match_session
from flower_cli.view import Renderer

# --- 1. a mistyped command is a usage error, not a paid `go` request ------------------------------------------


@pytest.mark.parametrize(
    ("args", "suggestion", "anyway"),
    [
        (["sesions"], "'flower sessions'", "flower go sesions"),
        (["analyse"], "'flower analyze'", "flower go analyse"),
        (["docter", "--no-probe"], "'flower doctor'", "flower go docter --no-probe"),
        (["onec", "hi there"], "'flower once'", "flower go onec 'hi there'"),
        (["-v", "session", "show", "ab"], "'flower sessions'", "flower -v go session show ab"),
        (["help"], "'flower --help'", "flower go help"),
        (["list"], "'flower sessions'", "flower go list"),
        (["Sessions"], "'flower sessions'", "flower go Sessions"),
    ],
)
def test_a_word_next_to_a_command_is_named_with_the_fix(args: list[str], suggestion: str, anyway: str) -> None:
    message = misnamed_command(args)
    assert message is not None
    assert message.startswith(f"flower: {args[1] if args[0] == '-v' else args[0]!r} is not a command")
    assert f"did you mean {suggestion}?" in message
    assert message.endswith(f"To ask it as a task: {anyway}")


@pytest.mark.parametrize(
    "args",
    [
        ["refactor"],
        ["done"],
        ["docs"],
        ["test"],
        ["rerun"],
        ["deploy"],
        ["fix", "the", "bug"],
        ["refactor the parser"],  # one quoted ask
        ["sessions"],
        ["version"],
        ["go", "sesions"],  # asked as a task on purpose
        ["-w", "sesions", "once", "hi"],  # a value, not a command
        [],
        ["-"],
    ],
)
def test_real_asks_and_commands_are_left_alone(args: list[str]) -> None:
    assert misnamed_command(args) is None


def test_a_mistyped_command_exits_2_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sesions"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err == (
        "flower: 'sesions' is not a command; did you mean 'flower sessions'? To ask it as a task: flower go sesions\n"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["-V"], ["-V"]),
        (["-v", "--version"], ["-v", "--version"]),
        (["version"], ["version"]),
        (["--install-completion"], ["--install-completion"]),
        (["--show-completion", "bash"], ["--show-completion", "bash"]),
        (["-"], ["go", "-"]),
        (["once", "-"], ["once", "-"]),
    ],
)
def test_app_options_are_not_asks(given: list[str], expected: list[str]) -> None:
    assert rewrite_argv(given) == expected


@pytest.mark.parametrize("args", [["--version"], ["-V"], ["version"]])
def test_versions_of_every_part(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 0
    out = capsys.readouterr().out
    from importlib import metadata

    for name in (*DISTRIBUTIONS, "claude-agent-sdk"):
        assert re.search(rf"^  {re.escape(name)} +{re.escape(metadata.version(name))}$", out, flags=re.M), out
    assert re.search(r"^  Claude Code +\d+\.\d+\.\d+ \(bundled with claude-agent-sdk\)$", out, flags=re.M), out
    assert out.startswith("flower ")


def test_the_version_report_starts_no_session_and_imports_no_sdk() -> None:
    probe = (
        "import sys\n"
        "from flower_cli.cli._versions import version_report\n"
        "text = version_report()\n"
        "assert 'claude_agent_sdk' not in sys.modules, 'imported the SDK'\n"
        "print(text)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Claude Code" in done.stdout and version_report() == done.stdout.rstrip("\n") + "\n"


# --- 2. session ids: the full id or any unique prefix ---------------------------------------------------------

IDS = ["0a1b2c3d-1111-4000-8000-000000000001", "0a1b9999-2222-4000-8000-000000000002", "ffee0000-3333-4000-8000-3"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (IDS[0], IDS[0]),
        ("0a1b2c3d", IDS[0]),
        ("0a1b9", IDS[1]),
        ("f", IDS[2]),
        ("FFEE", IDS[2]),
        (f"  {IDS[1]} ", IDS[1]),
    ],
)
def test_a_unique_prefix_names_its_session(given: str, expected: str) -> None:
    assert match_session(given, IDS, where="for /ws in runs/sessions.db") == expected


def test_an_ambiguous_prefix_lists_the_candidates() -> None:
    with pytest.raises(Exit) as caught:
        match_session("0a1b", IDS, where="here")
    assert caught.value.code == ExitCode.USAGE
    assert "ambiguous" in caught.value.message and IDS[0] in caught.value.message and IDS[1] in caught.value.message
    assert IDS[2] not in caught.value.message
    many = [f"abc{i:02d}" for i in range(12)]
    with pytest.raises(Exit) as caught:
        match_session("abc", many, where="here")
    assert "12 sessions" in caught.value.message and "and 7 more" in caught.value.message


@pytest.mark.parametrize("given", ["0a1c", "zzz", "   "])
def test_an_unknown_or_empty_id_is_a_usage_error(given: str) -> None:
    with pytest.raises(Exit) as caught:
        match_session(given, IDS, where="for /ws in runs/sessions.db")
    assert caught.value.code == ExitCode.USAGE and "flower sessions" in caught.value.message


# --- 4. help that says what to type ---------------------------------------------------------------------------

COMMAND_HELP = [
    ["go"],
    ["once"],
    ["run"],
    ["setup"],
    ["doctor"],
    ["analyze"],
    ["version"],
    ["sessions"],
    ["sessions", "show"],
    ["sessions", "import"],
    ["demo"],
    ["status"],
    ["watch"],
    ["answer"],
    ["mail"],
    ["stop"],
    ["ui"],
]


def test_every_command_of_flower_cli_has_its_help_checked() -> None:
    # flower-fleet's commands are its own (the README's claim covers them: tests/fleet checks their examples)
    from flower_cli.cli._argv import COMMANDS

    assert {c for c in COMMANDS if c != "fleet"} == {command[0] for command in COMMAND_HELP}


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main([*args, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", COMMAND_HELP, ids=" ".join)
def test_each_command_help_has_an_example_and_points_at_the_global_options(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(capsys, *command)
    example = re.search(r"^  Examples?:\n    (flower .+)$", text, flags=re.M)
    assert example, text
    assert example.group(1).startswith(("flower " + " ".join(command), "flower --version")), example.group(1)
    if command != ["version"]:
        assert "see `flower --help`" in text and "-w PATH, -r PATH, -v, -W, -T, --json, --store URL" in text


@pytest.mark.parametrize("command", [[], *COMMAND_HELP], ids=lambda c: " ".join(c) or "flower")
def test_help_names_what_to_type_not_python_types(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, *command)
    assert not re.search(r"<(str|int|float|path|list\[str\])>|\{\w+\}", text), text
    assert not re.search(
        r" (TEXT|INTEGER|FLOAT)\b", text.replace("-i, --instructions TEXT", "").replace("[RUN] TEXT", "")
    ), text


def test_the_metavars_say_what_to_type(capsys: pytest.CaptureFixture[str]) -> None:
    once = _help(capsys, "once")
    assert "Usage: flower once [OPTIONS] [PROMPT]" in once
    for shown in (
        "-t, --tools TOOLS",
        "-b, --budget USD",
        "--resume SESSION_ID",
        "--window TOKENS",
        "-p, --permission-mode MODE",
    ):
        assert shown in once, shown
    go = _help(capsys, "go")
    for shown in ("[ASK]...", "--asks N", "--rounds N", "--timeout SECONDS"):
        assert shown in go, shown
    assert "Usage: flower sessions show [OPTIONS] SESSION_ID" in _help(capsys, "sessions", "show")
    root = _help(capsys)
    for shown in ("-w, --workspace PATH", "-r, --run-dir PATH", "--store URL", "-V, --version", "--install-completion"):
        assert shown in root, shown
    assert "--html PATH" in _help(capsys, "analyze")
    assert "--base-url URL" in _help(capsys, "setup")


# --- 5. a refused tool, in words for a person -----------------------------------------------------------------


def _result(text: str, tool_use_result: object, *, parent: str | None = None) -> Event:
    message = UserMessage(
        content=[ToolResultBlock("toolu_1", text, is_error=True)],
        tool_use_result=tool_use_result,  # type: ignore[arg-type]  # the harness sends a string for these
        parent_tool_use_id=parent,
    )
    [event] = normalize(message)
    return event


WHITELIST = (
    "PreToolUse:Bash hook error: ad-hoc has no Bash. This is deliberate, not a missing setting: put your "
    "conclusion in your reply text, the runtime takes it from there. Do not try another way around it."
)
NOT_GRANTED = "Claude requested permissions to use WebFetch, but you haven't granted it yet."
RULE = "Permission to use Bash with command rm -f x has been denied."
COORDINATOR = "PreToolUse:Write hook error: The coordinator does not use Write itself. Dispatch a worker …"
OTHER_HOOK = "PreToolUse:Edit hook error: Edits to vendor/ are frozen until Friday."


@pytest.mark.parametrize(
    ("text", "denied"),
    [
        (WHITELIST, {"kind": "not-allowed", "tool": "Bash"}),
        (NOT_GRANTED, {"kind": "not-allowed", "tool": "WebFetch"}),
        (RULE, {"kind": "rule", "tool": "Bash"}),
        (COORDINATOR, {"kind": "delegated", "tool": "Write"}),
        (OTHER_HOOK, {"kind": "hook", "tool": "Edit", "reason": "Edits to vendor/ are frozen until Friday."}),
        ("The user doesn't want to proceed with this tool use. Use pytest instead.", {"kind": "rejected"}),
    ],
)
def test_the_event_stream_marks_refused_calls(text: str, denied: dict[str, str]) -> None:
    event = _result(text, "Error: " + text)
    assert event.kind == "tool_result" and event.payload["is_error"] is True
    got = dict(event.payload["denied"])
    if denied["kind"] != "hook":
        got.pop("reason", None)
    assert got == denied


@pytest.mark.parametrize(
    ("text", "tool_use_result"),
    [
        (RULE, {"stdout": RULE, "stderr": ""}),  # a tool's own output that quotes the harness: it ran
        ("Exit code 1\nboom", "Error: Exit code 1\nboom"),  # a failed command: it ran
        ("[Request interrupted by user for tool use]", "Error: [Request interrupted by user for tool use]"),
    ],
)
def test_failures_and_interruptions_are_not_refusals(text: str, tool_use_result: object) -> None:
    assert "denied" not in _result(text, tool_use_result).payload


def _rendered(*events: Event, hint: bool = True, verbose: bool = False, session: str | None = "sid-1") -> str:
    out = io.StringIO()
    view = Renderer(
        out, color=False, verbose=verbose, allow_hint=(lambda t: f"add it with -t Read,{t}") if hint else None
    )
    view(Event("tool_call", "echo hi", tool="Bash", payload={"id": "toolu_1", "input": {"command": "echo hi"}}))
    for event in events:
        view(event)
    view.closing(0.25, "/ws/runs/manifest.json", session)
    return out.getvalue()


def test_a_refusal_says_which_tool_and_the_flag_that_allows_it_and_is_counted() -> None:
    shown = _rendered(_result(WHITELIST, "Error: " + WHITELIST), _result(NOT_GRANTED, "Error: " + NOT_GRANTED))
    assert "  ! Bash was refused (not in the allowed tools): add it with -t Read,Bash\n" in shown
    assert "  ! WebFetch was refused (not in the allowed tools): add it with -t Read,WebFetch\n" in shown
    assert "This is deliberate" not in shown and "hook error" not in shown, "the model's words are for the model"
    assert shown.endswith(
        "\ntotal cost $0.2500 · session sid-1 · manifest /ws/runs/manifest.json · 2 tool calls refused\n"
    )


def test_refusals_without_a_flag_to_name_say_why() -> None:
    shown = _rendered(
        _result(RULE, "Error: " + RULE),
        _result(COORDINATOR, "Error: " + COORDINATOR),
        _result(OTHER_HOOK, "Error: " + OTHER_HOOK),
        _result(WHITELIST, "Error: " + WHITELIST, parent="toolu_agent"),
        hint=False,
    )
    assert "  ! Bash was refused by a deny rule\n" in shown
    assert "  ! Write was refused: the coordinator leaves hands-on work to its workers (by design)\n" in shown
    assert "  ! Edit was refused by a PreToolUse hook: Edits to vendor/ are frozen until Friday.\n" in shown
    assert "  ! Bash was refused (not in the allowed tools) (in a worker)\n" in shown
    assert "4 tool calls refused" in shown


def test_verbose_also_shows_what_the_model_was_told() -> None:
    shown = _rendered(_result(WHITELIST, "Error: " + WHITELIST), verbose=True)
    assert "the model was told: PreToolUse:Bash hook error: ad-hoc has no Bash." in shown


def test_the_closing_line_without_refusals_or_session() -> None:
    assert _rendered(session=None).endswith("\ntotal cost $0.2500 · manifest /ws/runs/manifest.json\n")
    assert "1 tool call refused" in _rendered(_result(RULE, "Error: " + RULE))
