"""A small, conservative lexer for the bash command lines the Bash tool runs.

It understands just enough of bash to split a line into simple commands and to know each argument's final
text after quote removal — and it refuses (raises `Unsupported`) on anything whose effect it cannot see
statically: command/process substitution, arithmetic, here-documents, subshells, ANSI-C quoting. A refusal
means "not a read-only glance", so every gap in this lexer errs on the safe side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Redirect", "SimpleCommand", "Unsupported", "Word", "split_commands"]


class Unsupported(ValueError):  # noqa: N818 - a verdict, not an error the user sees
    """The line uses shell syntax whose effect cannot be judged statically."""


@dataclass(slots=True)
class Word:
    """One shell word: ``text`` is the argument the program receives (quotes removed).

    ``expands`` is true when the shell would replace part of it before the program sees it (an unquoted glob
    or brace, a ``$VAR``): then ``text`` is *not* what the program gets, and the word may turn into any
    string — an option like ``--output=FILE`` included, if a file or a variable is named so.
    """

    text: str = ""
    expands: bool = False
    quoted: bool = False
    _started: bool = field(default=False, repr=False)

    @property
    def literal(self) -> bool:
        return not self.expands


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str  # ">", ">>", "<", "&>", "&>>", ">&", "<&", ">|", "<<", "<<<", "<>"
    fd: str  # the explicit descriptor before the operator ("2" in "2>"), or ""
    target: Word


@dataclass(frozen=True, slots=True)
class _RedirOp:
    fd: str
    op: str


@dataclass(slots=True)
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


# Operators that separate simple commands. "&" (a background job) is reported separately: never a glance.
_SEPARATORS = {";", "&&", "||", "|", "|&", "\n"}
_GLOB = set("*?[")
_PLAIN_BRACE = re.compile(r"\{[A-Za-z0-9_@^~:+-]*\}")
_SPECIAL_PARAMS = set("@*#?$!-0123456789")


def _is_name_start(ch: str) -> bool:
    return ch.isascii() and (ch.isalpha() or ch == "_")


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


class _Lexer:
    def __init__(self, line: str) -> None:
        self.s = line
        self.i = 0
        self.tokens: list[Word | _RedirOp | str] = []  # a str token is a control operator
        self.word = Word()

    # --- words --------------------------------------------------------------------------------------

    def _add(self, text: str, *, quoted: bool = False, expands: bool = False) -> None:
        self.word.text += text
        self.word.quoted |= quoted
        self.word.expands |= expands
        self.word._started = True

    def _end_word(self) -> None:
        if self.word._started:
            self.tokens.append(self.word)
        self.word = Word()

    def _dollar(self, *, in_double: bool) -> None:
        """At a ``$``: a parameter expansion (fine, but its value is unknown) or something we refuse."""
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "(":
            raise Unsupported("command substitution or arithmetic")
        if nxt == "{":
            end = s.find("}", i + 2)
            body = s[i + 2 : end] if end != -1 else ""
            simple = body and (
                (_is_name_start(body[0]) and all(_is_name_char(c) for c in body)) or body in _SPECIAL_PARAMS
            )
            if end == -1 or not simple:
                raise Unsupported("parameter expansion with operators")  # ${X:=v} assigns, ${X:-$(cmd)} runs
            self._add(s[i : end + 1], expands=True)
            self.i = end + 1
            return
        if nxt and (_is_name_start(nxt)):
            j = i + 1
            while j < len(s) and _is_name_char(s[j]):
                j += 1
            self._add(s[i:j], expands=True)
            self.i = j
            return
        if nxt and nxt in _SPECIAL_PARAMS:
            self._add(s[i : i + 2], expands=True)
            self.i = i + 2
            return
        if not in_double and nxt in ("'", '"'):
            raise Unsupported("ANSI-C or locale quoting")
        self._add("$")  # a lone dollar is literal
        self.i = i + 1

    def _single_quoted(self) -> None:
        end = self.s.find("'", self.i + 1)
        if end == -1:
            raise Unsupported("unterminated single quote")
        self._add(self.s[self.i + 1 : end], quoted=True)
        self.i = end + 1

    def _double_quoted(self) -> None:
        s = self.s
        self.i += 1
        self._add("", quoted=True)
        while True:
            if self.i >= len(s):
                raise Unsupported("unterminated double quote")
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "`":
                raise Unsupported("command substitution")
            if ch == "$":
                self._dollar(in_double=True)
                continue
            if ch == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    self._add(s[self.i + 1], quoted=True)
                self.i += 2
                continue
            self._add(ch, quoted=True)
            self.i += 1

    def _brace(self) -> None:
        """``{a,b}`` and ``{1..3}`` expand into several words; a plain ``{0}`` (``stash@{0}``) stays literal.

        Only that plain form is taken as literal: a brace holding quotes, ``$`` or anything unusual might
        hide a comma bash would expand on (``{"--output=x",y}``), so it counts as an expansion.
        """
        plain = _PLAIN_BRACE.match(self.s, self.i)
        if plain:
            self._add(plain.group())
            self.i = plain.end()
        else:
            self._add("{", expands=True)
            self.i += 1

    # --- operators ----------------------------------------------------------------------------------

    def _operator(self) -> bool:
        """Lex an operator at ``self.i``; return False if there is none."""
        s, i = self.s, self.i
        ch = s[i]
        two, three = s[i : i + 2], s[i : i + 3]
        if ch in "<>":
            if two in ("<(", ">("):
                raise Unsupported("process substitution")
            fd = ""
            # "2>": a word made only of digits directly before the operator is its file descriptor.
            w = self.word
            if w._started and not w.quoted and not w.expands and w.text.isdigit():
                fd, self.word = w.text, Word()
            else:
                self._end_word()
            for op in ("<<<", "<<", "<&", "<>", ">>", ">&", ">|", "<", ">"):
                if s.startswith(op, i):
                    self.tokens.append(_RedirOp(fd, op))
                    self.i = i + len(op)
                    return True
        self._end_word()
        if three == "&>>":
            self.tokens.append(_RedirOp("", "&>>"))
            self.i += 3
            return True
        if two == "&>":
            self.tokens.append(_RedirOp("", "&>"))
            self.i += 2
            return True
        for op in ("&&", "||", "|&", ";;", ";&", "|", "&", ";", "(", ")"):
            if s.startswith(op, i):
                self.tokens.append(op)
                self.i = i + len(op)
                return True
        return False  # pragma: no cover - only called on operator characters

    # --- main loop ------------------------------------------------------------------------------------

    def run(self) -> list[Word | _RedirOp | str]:
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if ch in " \t\r":
                self._end_word()
                self.i += 1
            elif ch == "\n":
                self._end_word()
                self.tokens.append("\n")
                self.i += 1
            elif ch == "#" and not self.word._started:
                end = s.find("\n", self.i)
                self.i = len(s) if end == -1 else end  # a comment runs to the end of the line
            elif ch == "\\":
                if self.i + 1 >= len(s):
                    raise Unsupported("trailing backslash")
                if s[self.i + 1] == "\n":  # line continuation
                    self.i += 2
                    continue
                self._add(s[self.i + 1], quoted=True)
                self.i += 2
            elif ch == "'":
                self._single_quoted()
            elif ch == '"':
                self._double_quoted()
            elif ch == "`":
                raise Unsupported("command substitution")
            elif ch == "$":
                self._dollar(in_double=False)
            elif ch in "|&;<>()":
                self._operator()
            elif ch in _GLOB:
                self._add(ch, expands=True)  # a glob: the program gets the matching file names instead
                self.i += 1
            elif ch == "{":
                self._brace()
            else:
                self._add(ch)
                self.i += 1
        self._end_word()
        return self.tokens


def split_commands(line: str) -> list[SimpleCommand]:
    """The simple commands of ``line`` (joined by ``;``, ``&&``, ``||``, ``|``, ``|&`` or newlines).

    Raises `Unsupported` for background jobs, subshells, here-documents, dangling operators and anything
    else this module does not model.
    """
    commands: list[SimpleCommand] = []
    current = SimpleCommand()
    pending: _RedirOp | None = None
    last_separator: str | None = None
    for token in _Lexer(line).run():
        if isinstance(token, Word):
            if pending is not None:
                current.redirects.append(Redirect(pending.op, pending.fd, token))
                pending = None
            else:
                current.words.append(token)
            continue
        if pending is not None:
            raise Unsupported("redirection without a target")
        if isinstance(token, _RedirOp):
            if token.op in ("<<", "<<<", "<>"):
                raise Unsupported("here-document or read-write redirection")
            pending = token
            continue
        if token in _SEPARATORS:
            if not current.words:
                if current.redirects:
                    raise Unsupported("redirection without a command")
                if token == "\n":
                    continue  # blank lines, and bash's line continuation after "&&", "||" and "|"
                raise Unsupported(f"empty command before {token!r}")
            commands.append(current)
            current = SimpleCommand()
            last_separator = token
            continue
        if token == "&":
            raise Unsupported("background job")
        raise Unsupported(f"shell syntax {token!r}")  # ( ) ;; ;&
    if pending is not None:
        raise Unsupported("redirection without a target")
    if current.words:
        commands.append(current)
    elif current.redirects:
        raise Unsupported("redirection without a command")
    elif last_separator in ("&&", "||", "|", "|&"):
        raise Unsupported(f"line ends with {last_separator!r}")
    return commands
