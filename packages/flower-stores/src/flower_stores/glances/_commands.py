"""`EPHEMERAL_COMMANDS`: the whitelist of glance commands, each with the rule its arguments must pass."""

from __future__ import annotations

from ._git import git_rule
from ._options import Args, Rule, any_args, no_operands_from, option_rule, subcommand
from ._programs import awk_rule, sed_rule
from ._shell import Word

__all__ = ["EPHEMERAL_COMMANDS"]

# --- find ---------------------------------------------------------------------------------------------

_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")


def _find(args: Args) -> bool:
    # find's expression has no "--" and its primaries are whole words ("-newer" is a test, "-fls" writes).
    for word in args:
        if word.expands or word.text in _FIND_ACTIONS:
            return False
    return True


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
    "git": git_rule,
    # listing and reading
    **dict.fromkeys(
        ("ls", "dir", "pwd", "cat", "head", "wc", "stat", "nl", "rev", "comm", "cut", "tr", "column", "jq"), any_args
    ),
    **dict.fromkeys(("grep", "egrep", "fgrep", "diff", "cmp", "echo", "which", "whereis", "type"), any_args),
    **dict.fromkeys(("df", "du", "uptime", "whoami", "id", "printenv", "ps", "jobs", "pgrep"), any_args),
    "tail": option_rule(
        short_deny="fF",
        long_deny=("--follow",),
        short_values="ncs",
        long_values=("--lines", "--bytes", "--sleep-interval", "--pid"),
    ),
    "file": option_rule(
        short_deny="C",
        long_deny=("--compile",),
        short_values="mfFeP",
        long_values=("--magic-file", "--files-from", "--separator", "--exclude", "--parameter"),
    ),
    "find": _find,
    "tree": option_rule(
        short_deny="oR",
        long_deny=("--output", "--fromfile"),
        short_values="LPIHT",
        long_values=("--charset", "--filelimit", "--timefmt"),
    ),
    "sort": option_rule(
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
    "uniq": option_rule(
        max_operands=1, short_values="fsw", long_values=("--skip-fields", "--skip-chars", "--check-chars")
    ),
    "sed": sed_rule,
    "awk": awk_rule,
    "gawk": awk_rule,
    "rg": option_rule(long_deny=("--pre", "--hostname-bin"), short_values="ABCEefgMmTtj"),
    "date": option_rule(
        short_deny="s",
        long_deny=("--set",),
        short_values="dfr",
        long_values=("--date", "--file", "--reference"),
        check_operand=_date_operand,
    ),
    "hostname": no_operands_from(_HOSTNAME_READ),
    "env": no_operands_from(frozenset({"-0", "--null"})),  # "env CMD" runs CMD
    "free": option_rule(short_deny="s", long_deny=("--seconds",), short_values="c", long_values=("--count",)),
    "command": _command_v,
    # processes, sockets, services (their continuous/"kill" modes are refused)
    "lsof": _lsof,
    "netstat": option_rule(short_deny="c", long_deny=("--continuous",)),
    "ss": option_rule(short_deny="EKD", long_deny=("--events", "--kill", "--diag"), short_values="fAFN"),
    "systemctl": subcommand(
        {
            sub: option_rule(short_deny="HM", long_deny=("--host", "--machine"))
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
    "docker": subcommand({"ps": any_args, "images": any_args}),
    "kubectl": subcommand({"get": option_rule(short_deny="w", long_deny=("--watch", "--watch-only"))}),
}
