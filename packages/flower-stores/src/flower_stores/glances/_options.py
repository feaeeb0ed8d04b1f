"""The building blocks of the glance whitelist: what an argument is, and rules for commands whose danger lies in a
few options (``sort -o``, ``tail -f``) or in their first argument (``docker ps``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ._shell import Word

__all__ = [
    "Args",
    "Rule",
    "any_args",
    "is_option",
    "long_hits",
    "no_operands_from",
    "option_rule",
    "short_flags",
    "subcommand",
    "touches_device",
]

Args = Sequence[Word]
Rule = Callable[[Args], bool]

# --- option helpers ---------------------------------------------------------------------------------------


def long_hits(text: str, banned: Iterable[str]) -> bool:
    """``--out=x`` hits ``--output``: GNU getopt and git accept any unambiguous prefix of a long option."""
    name = text.split("=", 1)[0]
    return len(name) > 2 and any(b.startswith(name) for b in banned)


def short_flags(text: str, takes_value: str) -> str:
    """The flag letters of a short-option cluster (``-nu`` → ``nu``); a value-taking letter ends the cluster."""
    out = []
    for ch in text[1:]:
        out.append(ch)
        if ch in takes_value:
            break
    return "".join(out)


def is_option(word: Word) -> bool:
    return word.text.startswith("-") and word.text != "-"


def touches_device(word: Word) -> bool:
    # /dev/zero, /dev/urandom, a tty: reading them never ends. /dev/null is the one harmless device.
    text = word.text
    return ("/dev/" in text or text.startswith("dev/")) and text != "/dev/null"


def option_rule(
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
                if is_option(word):
                    if text.startswith("--"):
                        if long_hits(text, long_deny):
                            return False
                        skip_value = "=" not in text and text in long_values
                    else:
                        flags = short_flags(text, short_values)
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


def any_args(args: Args) -> bool:
    return True


def no_operands_from(allowed: frozenset[str]) -> Rule:
    """Only the listed options, no operands (``hostname -f`` reads; ``hostname NAME`` sets the name)."""

    def rule(args: Args) -> bool:
        return all(w.literal and w.text in allowed for w in args)

    return rule


def subcommand(allowed: Mapping[str, Rule]) -> Rule:
    """The first argument picks a read-only subcommand (``docker ps``, ``systemctl status``)."""

    def rule(args: Args) -> bool:
        if not args or not args[0].literal or args[0].text not in allowed:
            return False
        return allowed[args[0].text](args[1:])

    return rule
