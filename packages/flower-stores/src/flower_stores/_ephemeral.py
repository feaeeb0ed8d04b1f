"""`is_ephemeral`: is this Bash command a read-only glance whose result goes stale?

One predicate answers two questions, and they must never diverge:

- which Bash results the load-time expiry replaces with "[`cmd` result expired …]";
- which commands a coordinator may run itself instead of dispatching a subagent (flower-cli's glance guard).

If a command were allowed but never expired, its stale output would sit in the context forever; if it
expired but were not allowed, the coordinator would pay a subagent's start-up cost to run ``ls``. So adding
a command here says both things at once.

Because the coordinator runs these unattended, the predicate is a whitelist that errs towards "no": each
simple command of the line (``;``, ``&&``, ``||``, ``|`` and newlines separate them) must be an inspection
verb with no option that writes, executes or never returns, no redirection except to ``/dev/null`` and the
standard streams, and no shell syntax whose effect cannot be seen statically (see `._shell`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._shell import Redirect, SimpleCommand, Unsupported, Word, split_commands

__all__ = ["EPHEMERAL_COMMANDS", "is_ephemeral", "is_ephemeral_call"]

Args = Sequence[Word]
Rule = Callable[[Args], bool]

_SAFE_SINKS = {"/dev/null", "/dev/stdout", "/dev/stderr"}


# --- option helpers ---------------------------------------------------------------------------------------


def _long_hits(text: str, banned: Iterable[str]) -> bool:
    """``--out=x`` hits ``--output``: GNU getopt and git accept any unambiguous prefix of a long option."""
    name = text.split("=", 1)[0]
    return len(name) > 2 and any(b.startswith(name) for b in banned)


def _short_flags(text: str, takes_value: str) -> str:
    """The flag letters of a short-option cluster (``-nu`` → ``nu``); a value-taking letter ends the cluster."""
    out = []
    for ch in text[1:]:
        out.append(ch)
        if ch in takes_value:
            break
    return "".join(out)


def _is_option(word: Word) -> bool:
    return word.text.startswith("-") and word.text != "-"


def _touches_device(word: Word) -> bool:
    # /dev/zero, /dev/urandom, a tty: reading them never ends. /dev/null is the one harmless device.
    text = word.text
    return ("/dev/" in text or text.startswith("dev/")) and text != "/dev/null"


def _options(
    *,
    short_deny: str = "",
    long_deny: Sequence[str] = (),
    short_values: str = "",
    long_values: Sequence[str] = (),
    max_operands: int | None = None,
    check_operand: Callable[[Word], bool] | None = None,
) -> Rule:
    """A rule for a command whose danger lies in a few options (``sort -o``, ``tail -f``, ``date -s``).

    A command with anything to deny is *risky*: an argument the shell expands (``*``, ``{a,b}``, ``$X``) may
    become one of those options — a file named ``--output=x`` is enough — so such arguments are refused
    before ``--``; when operands themselves matter (``uniq IN OUT``, ``date MMDDhhmm``) they are refused
    everywhere.
    """
    risky = bool(short_deny or long_deny or max_operands is not None or check_operand)
    operands_matter = max_operands is not None or check_operand is not None

    def rule(args: Args) -> bool:
        operands = 0
        options_done = False
        skip_value = False
        for word in args:
            text = word.text
            if skip_value:  # the value of "-k 2" / "--key 2"
                skip_value = False
                if risky and word.expands:
                    return False
                continue
            if not options_done:
                if text == "--":
                    options_done = True
                    continue
                if risky and word.expands:
                    return False
                if _is_option(word):
                    if text.startswith("--"):
                        if _long_hits(text, long_deny):
                            return False
                        skip_value = "=" not in text and text in long_values
                    else:
                        flags = _short_flags(text, short_values)
                        if any(f in short_deny for f in flags):
                            return False
                        skip_value = flags[-1] in short_values and len(flags) == len(text) - 1
                    continue
            if operands_matter and word.expands:
                return False
            operands += 1
            if max_operands is not None and operands > max_operands:
                return False
            if check_operand is not None and not check_operand(word):
                return False
        return True

    return rule


def _any(args: Args) -> bool:
    return True


def _no_operands_from(allowed: frozenset[str]) -> Rule:
    """Only the listed options, no operands (``hostname -f`` reads; ``hostname NAME`` sets the name)."""

    def rule(args: Args) -> bool:
        return all(w.literal and w.text in allowed for w in args)

    return rule


def _subcommand(allowed: Mapping[str, Rule]) -> Rule:
    """The first argument picks a read-only subcommand (``docker ps``, ``systemctl status``)."""

    def rule(args: Args) -> bool:
        if not args or not args[0].literal or args[0].text not in allowed:
            return False
        return allowed[args[0].text](args[1:])

    return rule


# --- find ---------------------------------------------------------------------------------------------

_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")


def _find(args: Args) -> bool:
    # find's expression has no "--" and its primaries are whole words ("-newer" is a test, "-fls" writes).
    for word in args:
        if word.expands or word.text in _FIND_ACTIONS:
            return False
    return True


# --- sed ----------------------------------------------------------------------------------------------

_SED_SIMPLE = set("pPdDqQ=lnNgGhHxzF")


def _sed_script_ok(script: str) -> bool:
    """Whether a sed script only prints: no ``w``/``W`` file writes, no ``e`` execution, no ``s///w``/``e``."""
    s, i, n = script, 0, len(script)

    def skip_delimited(pos: int, delim: str, parts: int) -> int:
        """Skip ``parts`` delimited sections starting after the delimiter at ``pos``; -1 if unterminated."""
        for _ in range(parts):
            pos += 1
            while pos < n and s[pos] != delim:
                pos += 2 if s[pos] == "\\" else 1
            if pos >= n:
                return -1
        return pos + 1

    def address(pos: int) -> int:
        if pos < n and s[pos] == "/":
            pos = skip_delimited(pos, "/", 1)
            if pos == -1:
                return -1
            while pos < n and s[pos] in "IM":
                pos += 1
            return pos
        if pos < n and s[pos] == "\\" and pos + 1 < n:
            pos = skip_delimited(pos + 1, s[pos + 1], 1)
            return pos
        while pos < n and (s[pos].isdigit() or s[pos] in "$~+"):
            pos += 1
        return pos

    while i < n:
        while i < n and s[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        i = address(i)
        if i == -1:
            return False
        if i < n and s[i] == ",":
            i = address(i + 1)
            if i == -1:
                return False
        while i < n and s[i] in " \t!":
            i += 1
        if i >= n:
            return False
        cmd = s[i]
        if cmd in _SED_SIMPLE or cmd in "{}":
            i += 1
            while i < n and s[i].isdigit():  # q5, Q5: an exit code
                i += 1
        elif cmd in "sy":
            if i + 1 >= n or s[i + 1] in "\\\n":
                return False
            i = skip_delimited(i + 1, s[i + 1], 2)
            if i == -1:
                return False
            if cmd == "s":
                while i < n and s[i] not in " \t\n;}":
                    if s[i] not in "gpiImM0123456789":  # w FILE writes, e executes
                        return False
                    i += 1
        elif cmd in "btT:":
            while i < n and s[i] not in "\n;":
                i += 1
        elif cmd in "aicrR":
            # Text to print (a/i/c) or a file to read (r/R) runs to the end of the line.
            while i < n and s[i] != "\n":
                i += 1
        elif cmd == "#":
            while i < n and s[i] != "\n":
                i += 1
        else:
            return False  # w, W, e, v and anything unknown
    return True


def _sed(args: Args) -> bool:
    scripts: list[str] = []
    operands: list[Word] = []
    expect_script = False
    skip_value = False
    options_done = False
    for word in args:
        text = word.text
        if skip_value:  # "-l N": the line-wrap length
            skip_value = False
            continue
        if expect_script:
            if word.expands:
                return False
            scripts.append(text)
            expect_script = False
            continue
        if word.expands and not options_done:
            return False
        if not options_done and text == "--":
            options_done = True
            continue
        if not options_done and _is_option(word):
            if text.startswith("--"):
                if _long_hits(text, ("--in-place", "--file")):
                    return False
                if text.startswith("--expression="):
                    scripts.append(text.split("=", 1)[1])
                elif text == "--expression":
                    expect_script = True
                continue
            flags = _short_flags(text, "el")
            if any(f in "if" for f in flags):
                return False  # -i edits in place; -f reads a script we cannot see
            attached = text[len(flags) + 1 :]
            if flags.endswith("e"):
                if attached:
                    scripts.append(attached)
                else:
                    expect_script = True
            elif flags.endswith("l") and not attached:
                skip_value = True
            continue
        operands.append(word)
    if expect_script:
        return False
    if not scripts:
        if not operands or operands[0].expands:
            return False
        scripts.append(operands[0].text)
    return all(_sed_script_ok(script) for script in scripts)


# --- awk ----------------------------------------------------------------------------------------------


_AWK_PRINT = re.compile(r"\bprintf?\b")


def _awk_program_ok(program: str) -> bool:
    """Whether an awk program only computes and prints to stdout.

    Refused: ``system()``, pipes (``print | "cmd"``, ``"cmd" | getline``), output redirection after
    print/printf (``print > "f"``), and gawk's ``@include``/``@load``. Comparisons like ``$3 > 100`` stay
    allowed; a ``>`` inside a print statement is refused even when it is a comparison (``print (a > b)``).
    """
    code = _strip_awk_strings(program)
    if code is None:
        return False
    if "system" in code or "@" in code:
        return False
    if "|" in code.replace("||", ""):
        return False
    for statement in _split_awk_statements(code):
        found = _AWK_PRINT.search(statement)
        if found and ">" in statement[found.end() :]:
            return False
    return True


def _strip_awk_strings(program: str) -> str | None:
    """The program with string literals emptied (``"a|b"`` → ``""``), so their contents cannot mislead."""
    out, i, n = [], 0, len(program)
    while i < n:
        ch = program[i]
        if ch == '"':
            j = i + 1
            while j < n and program[j] != '"':
                j += 2 if program[j] == "\\" else 1
            if j >= n:
                return None
            out.append('""')
            i = j + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_awk_statements(code: str) -> list[str]:
    parts = [code]
    for sep in (";", "{", "}", "\n"):
        parts = [p for part in parts for p in part.split(sep)]
    return parts


def _awk(args: Args) -> bool:
    program: str | None = None
    skip_value = False
    options_done = False
    for word in args:
        text = word.text
        if skip_value:
            skip_value = False
            continue
        if program is None and not options_done and _is_option(word):
            if word.expands:
                return False
            if text == "--":
                options_done = True
                continue
            if text.startswith("--"):
                name = text.split("=", 1)[0]
                if name not in ("--field-separator", "--assign"):
                    return False  # --file, --include, --load, --exec, --dump-variables, --profile, …
                skip_value = "=" not in text
                continue
            if text[1] in "Fv":
                skip_value = len(text) == 2
                continue
            return False  # -f (a program we cannot see), gawk's -i inplace / -o / -p / -d, …
        if program is None:
            if word.expands:
                return False
            program = text
            continue
        # Operands after the program: input files, or "var=value" assignments; both only read.
    return program is not None and _awk_program_ok(program)


# --- git ----------------------------------------------------------------------------------------------

_GIT_GLOBAL_FLAGS = {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"}
_GIT_BANNED_LONG = ("--output",)  # "git diff/log/show --output=FILE" writes FILE


def _git_generic(extra_short_deny: str = "", extra_long_deny: Sequence[str] = ()) -> Rule:
    return _options(short_deny=extra_short_deny, long_deny=(*_GIT_BANNED_LONG, *extra_long_deny))


_GIT_READ = _git_generic()

_GIT_BRANCH_FLAGS = frozenset(
    "--all --remotes --verbose --list --show-current --ignore-case --no-color --no-column --omit-empty "
    "--no-abbrev --quiet --color --column --abbrev --format --sort --merged --no-merged --contains "
    "--no-contains --points-at".split()
)
_GIT_BRANCH_FILTERS = ("--merged", "--no-merged", "--contains", "--no-contains", "--points-at")


def _git_branch(args: Args) -> bool:
    """Only the listing forms: ``git branch NAME`` creates a branch, ``-d/-m/-c/-u/-f`` change refs."""
    listing = False
    operands = 0
    for word in args:
        text = word.text
        if word.expands:
            return False
        if text.startswith("--"):
            name = text.split("=", 1)[0]
            if name not in _GIT_BRANCH_FLAGS:
                return False
            listing |= name == "--list" or name in _GIT_BRANCH_FILTERS
        elif _is_option(word):
            if any(f not in "arvliq" for f in text[1:]):
                return False
            listing |= "l" in text
        else:
            operands += 1
    return operands == 0 or listing


def _git_remote(args: Args) -> bool:
    # "git remote show" asks the remote over the network; add/remove/rename/set-url/prune/update write.
    if any(w.expands for w in args):
        return False
    texts = [w.text for w in args]
    if all(t in ("-v", "--verbose") for t in texts):
        return True
    if texts and texts[0] == "get-url":
        rest = texts[1:]
        names = [t for t in rest if not t.startswith("-")]
        return len(names) == 1 and all(t in ("--push", "--all") for t in rest if t.startswith("-"))
    return False


def _git_reflog(args: Args) -> bool:
    first = next((w for w in args if not _is_option(w)), None)
    if first is not None and (first.expands or first.text in ("expire", "delete", "drop")):
        return False
    return _GIT_READ(args)


def _git_symbolic_ref(args: Args) -> bool:
    # One name reads the ref; "symbolic-ref NAME REF" rewrites it, "-d" deletes it.
    return _options(short_deny="dm", long_deny=("--delete",), max_operands=1)(args)


_GIT_CONFIG_READERS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list")
_GIT_CONFIG_WRITERS = (
    "--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit",
)  # fmt: skip


def _git_config(args: Args) -> bool:
    words = list(args)
    if any(w.expands for w in words):
        return False
    texts = [w.text for w in words]
    if any(_long_hits(t, _GIT_CONFIG_WRITERS) for t in texts if t.startswith("--")):
        return False
    if any(t.startswith("-") and not t.startswith("--") and ("e" in t[1:]) for t in texts):
        return False  # -e edits
    operands = [t for t in texts if not t.startswith("-")]
    if operands and operands[0] in ("get", "list"):
        return True  # the subcommand syntax of git ≥ 2.46
    if operands and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return False
    if any(t.split("=", 1)[0] in _GIT_CONFIG_READERS or t == "-l" for t in texts):
        return True
    return len(operands) == 1  # "git config NAME" reads; "git config NAME VALUE" writes


_GIT: dict[str, Rule] = {
    **dict.fromkeys(
        (
            "status",
            "diff",
            "log",
            "show",
            "blame",
            "shortlog",
            "describe",
            "ls-files",
            "ls-tree",
            "rev-parse",
            "rev-list",
            "cherry",
            "for-each-ref",
            "whatchanged",
            "cat-file",
            "count-objects",
            "check-ignore",
            "var",
            "merge-base",
            "name-rev",
            "show-ref",
        ),
        _GIT_READ,
    ),  # fmt: skip
    "branch": _git_branch,
    "stash": _subcommand({"list": _GIT_READ, "show": _GIT_READ}),
    "worktree": _subcommand({"list": _GIT_READ}),
    "remote": _git_remote,
    "reflog": _git_reflog,
    "symbolic-ref": _git_symbolic_ref,
    "hash-object": _options(short_deny="w"),
    "config": _git_config,
    "grep": _git_generic(extra_short_deny="O", extra_long_deny=("--open-files-in-pager",)),
}


def _git(args: Args) -> bool:
    i = 0
    while i < len(args) and _is_option(args[i]):
        word = args[i]
        if word.expands:
            return False
        if word.text == "-C" and i + 1 < len(args) and args[i + 1].literal:
            i += 2  # "-C DIR": run as if started in DIR
            continue
        if word.text not in _GIT_GLOBAL_FLAGS:
            return False  # -c NAME=VALUE can point diff.external or core.pager at any program
        i += 1
    if i >= len(args) or args[i].expands:
        return False
    rule = _GIT.get(args[i].text)
    return rule is not None and rule(args[i + 1 :])


# --- the whitelist --------------------------------------------------------------------------------------


def _date_operand(word: Word) -> bool:
    return word.text.startswith("+")  # a format; any other operand ("MMDDhhmm") sets the clock


def _lsof(args: Args) -> bool:
    # "-r"/"+r" repeat forever; lsof's option syntax is its own, so any option word holding an "r" is refused.
    return not any(w.expands or (w.text.startswith(("-", "+")) and "r" in w.text[1:]) for w in args)


def _command_v(args: Args) -> bool:
    # "command -v NAME" looks a name up; "command NAME" runs it.
    return (
        bool(args) and args[0].literal and args[0].text in ("-v", "-V", "-pv", "-pV") and all(w.literal for w in args)
    )


_HOSTNAME_READ = frozenset(
    "-a --alias -A --all-fqdns -d --domain -f --fqdn --long -i --ip-address -I --all-ip-addresses -s --short "
    "-y --yp --nis -V --version -h --help".split()
)

EPHEMERAL_COMMANDS: dict[str, Rule] = {
    "git": _git,
    # listing and reading
    **dict.fromkeys(
        ("ls", "dir", "pwd", "cat", "head", "wc", "stat", "nl", "rev", "comm", "cut", "tr", "column", "jq"), _any
    ),
    **dict.fromkeys(("grep", "egrep", "fgrep", "diff", "cmp", "echo", "which", "whereis", "type"), _any),
    **dict.fromkeys(("df", "du", "uptime", "whoami", "id", "printenv", "ps", "jobs", "pgrep"), _any),
    "tail": _options(
        short_deny="fF",
        long_deny=("--follow",),
        short_values="ncs",
        long_values=("--lines", "--bytes", "--sleep-interval", "--pid"),
    ),
    "file": _options(
        short_deny="C",
        long_deny=("--compile",),
        short_values="mfFeP",
        long_values=("--magic-file", "--files-from", "--separator", "--exclude", "--parameter"),
    ),
    "find": _find,
    "tree": _options(
        short_deny="oR",
        long_deny=("--output", "--fromfile"),
        short_values="LPIHT",
        long_values=("--charset", "--filelimit", "--timefmt"),
    ),
    "sort": _options(
        short_deny="o",
        long_deny=("--output", "--compress-program"),
        short_values="kStT",
        long_values=(
            "--key",
            "--buffer-size",
            "--field-separator",
            "--temporary-directory",
            "--parallel",
            "--batch-size",
            "--files0-from",
            "--random-source",
        ),
    ),
    "uniq": _options(
        max_operands=1, short_values="fsw", long_values=("--skip-fields", "--skip-chars", "--check-chars")
    ),
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "rg": _options(long_deny=("--pre", "--hostname-bin"), short_values="ABCEefgMmTtj"),
    "date": _options(
        short_deny="s",
        long_deny=("--set",),
        short_values="dfr",
        long_values=("--date", "--file", "--reference"),
        check_operand=_date_operand,
    ),
    "hostname": _no_operands_from(_HOSTNAME_READ),
    "env": _no_operands_from(frozenset({"-0", "--null"})),  # "env CMD" runs CMD
    "free": _options(short_deny="s", long_deny=("--seconds",), short_values="c", long_values=("--count",)),
    "command": _command_v,
    # processes, sockets, services (their continuous/"kill" modes are refused)
    "lsof": _lsof,
    "netstat": _options(short_deny="c", long_deny=("--continuous",)),
    "ss": _options(short_deny="EKD", long_deny=("--events", "--kill", "--diag"), short_values="fAFN"),
    "systemctl": _subcommand(
        {
            sub: _options(short_deny="HM", long_deny=("--host", "--machine"))
            for sub in (
                "status",
                "is-active",
                "is-enabled",
                "is-failed",
                "list-units",
                "list-unit-files",
                "show",
                "list-timers",
            )
        }
    ),
    "docker": _subcommand({"ps": _any, "images": _any}),
    "kubectl": _subcommand({"get": _options(short_deny="w", long_deny=("--watch", "--watch-only"))}),
}


def _redirect_ok(redirect: Redirect) -> bool:
    target = redirect.target
    if target.expands:
        return False
    if redirect.op in (">&", "<&"):
        return target.text.isdigit() or target.text == "-"  # 2>&1, >&2, 2>&-: descriptors, no files
    if redirect.op == "<":
        return not _touches_device(target)  # reading a file is fine; a device may never end
    return redirect.op in (">", ">>", "&>", "&>>") and target.text in _SAFE_SINKS


def _simple_command_ok(command: SimpleCommand) -> bool:
    if not all(_redirect_ok(r) for r in command.redirects):
        return False
    head, *args = command.words
    if head.expands or head.quoted or "/" in head.text or "=" in head.text:
        return False  # a path ("./ls"), an assignment ("GIT_EXTERNAL_DIFF=x git diff"), a computed name
    rule = EPHEMERAL_COMMANDS.get(head.text)
    if rule is None:
        return False
    if any(_touches_device(w) for w in args):
        return False
    return rule(args)


@functools.lru_cache(maxsize=8192)
def is_ephemeral(cmd: str) -> bool:
    """Whether ``cmd`` is a read-only inspection whose output goes stale (``git status``, ``ls``, ``grep``…).

    ``git status && git diff --stat`` is accepted segment by segment; ``git status && rm -rf x``,
    ``ls\\nrm x``, ``env rm x``, ``git branch new``, ``sort -o f``, ``tail -f log`` and ``find . -delete`` are
    not. Safe redirections (``2>&1``, ``>/dev/null``) are fine; a ``>`` inside quotes is just text.
    """
    if not isinstance(cmd, str) or not cmd.strip():
        return False
    try:
        commands = split_commands(cmd)
    except Unsupported:
        return False
    return bool(commands) and all(_simple_command_ok(c) for c in commands)


def is_ephemeral_call(tool_name: str, tool_input: Mapping[str, Any] | None) -> bool:
    """`is_ephemeral` for a tool call: a foreground ``Bash`` call whose command is a glance.

    This is the one predicate behind both the expiry of stale results and a coordinator's glance permission.
    """
    if tool_name != "Bash" or (
        type(tool_input) is not dict and not isinstance(tool_input, Mapping)
    ):  # dict: skip the ABC check
        return False
    if tool_input.get("run_in_background"):
        return False  # a background shell keeps running: not a glance
    command = tool_input.get("command")
    return isinstance(command, str) and is_ephemeral(command)
