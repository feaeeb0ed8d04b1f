"""``sed`` and ``awk``: glances only while their script merely prints (no file writes, no commands run)."""

from __future__ import annotations

import re

from ._options import Args, is_option, long_hits, short_flags
from ._shell import Word

__all__ = ["awk_rule", "sed_rule"]

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


def sed_rule(args: Args) -> bool:
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
        if not options_done and is_option(word):
            if text.startswith("--"):
                if long_hits(text, ("--in-place", "--file")):
                    return False
                if text.startswith("--expression="):
                    scripts.append(text.split("=", 1)[1])
                elif text == "--expression":
                    expect_script = True
                continue
            flags = short_flags(text, "el")
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


def awk_rule(args: Args) -> bool:
    program: str | None = None
    skip_value = False
    options_done = False
    for word in args:
        text = word.text
        if skip_value:
            skip_value = False
            continue
        if program is None and not options_done and is_option(word):
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
