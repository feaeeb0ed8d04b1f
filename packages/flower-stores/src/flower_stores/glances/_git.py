"""``git``: the read-only subcommands, and the read-only forms of those that can also write (``branch``, ``config``)."""

from __future__ import annotations

from collections.abc import Sequence

from ._options import Args, Rule, is_option, long_hits, option_rule, subcommand

__all__ = ["git_rule"]

# --- git ----------------------------------------------------------------------------------------------

_GIT_GLOBAL_FLAGS = {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"}
_GIT_BANNED_LONG = ("--output",)  # "git diff/log/show --output=FILE" writes FILE


def _git_generic(extra_short_deny: str = "", extra_long_deny: Sequence[str] = ()) -> Rule:
    return option_rule(short_deny=extra_short_deny, long_deny=(*_GIT_BANNED_LONG, *extra_long_deny))


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
        elif is_option(word):
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
    first = next((w for w in args if not is_option(w)), None)
    if first is not None and (first.expands or first.text in ("expire", "delete", "drop")):
        return False
    return _GIT_READ(args)


def _git_symbolic_ref(args: Args) -> bool:
    # One name reads the ref; "symbolic-ref NAME REF" rewrites it, "-d" deletes it.
    return option_rule(short_deny="dm", long_deny=("--delete",), max_operands=1)(args)


_GIT_CONFIG_READERS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list")
_GIT_CONFIG_WRITERS = (
    "--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit",
)  # fmt: skip


def _git_config(args: Args) -> bool:
    words = list(args)
    if any(w.expands for w in words):
        return False
    texts = [w.text for w in words]
    if any(long_hits(t, _GIT_CONFIG_WRITERS) for t in texts if t.startswith("--")):
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
    "stash": subcommand({"list": _GIT_READ, "show": _GIT_READ}),
    "worktree": subcommand({"list": _GIT_READ}),
    "remote": _git_remote,
    "reflog": _git_reflog,
    "symbolic-ref": _git_symbolic_ref,
    "hash-object": option_rule(short_deny="w"),
    "config": _git_config,
    "grep": _git_generic(extra_short_deny="O", extra_long_deny=("--open-files-in-pager",)),
}


def git_rule(args: Args) -> bool:
    i = 0
    while i < len(args) and is_option(args[i]):
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
