"""Driving a ``flower go`` run: what the person types while it works, Ctrl-C, side questions.

Input comes from one reader thread on stdin and is handled on the event loop, one item at a time:

- a line while a question is pending answers it (a number picks an option; an empty line skips it);
- a line with nothing pending is mail: appended to the brief, delivered at the coordinator's next ``inbox()``;
- ``?question`` (or ``？question``) is an aside, answered beside the run by a read-only side runtime;
- with ``--json`` every line is a JSON object (`flower_cli.go._routing.route_json`), so a program can drive a run;
- end of input declines what is pending and makes every later question fall through at once (no hang).

Ctrl-C in a terminal: the first one asks what to say; the words interrupt the current round and the same
session goes on with them (an empty line: nothing is interrupted, the run goes on). A second Ctrl-C ends the
run with exit 130, the step recorded in the manifest. In a pipe (or with ``--json``) the first Ctrl-C does.

Why the terminal's own Ctrl-C signal is turned off while a run works: the terminal sends SIGINT to the whole
foreground process group, Claude Code's processes included, which would kill the session mid-turn. The
terminal stays in line mode (the kernel echoes and edits the line) with Ctrl-C made a line end, so the reader
sees it as a character and only flower hears it. A SIGINT from elsewhere (``kill -INT``) counts as a Ctrl-C.
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..runtime import Event
from ._aside import answer_aside, aside_context, progress_line
from ._routing import Answer, Aside, Decline, Ignore, Invalid, SendMail, route_eof, route_json, route_line

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ..runtime import Runtime
    from ..view import Renderer
    from ..workflow import RunResult, Workflow
    from ._human import HumanChannel

__all__ = ["CtrlC", "EndOfInput", "GoDriver", "Line", "ask_aside", "line_mode_terminal", "split_input"]

_ASIDE_WAIT_S = 120.0
_RECENT = 60


@dataclass(frozen=True)
class Line:
    text: str


@dataclass(frozen=True)
class CtrlC:
    """Ctrl-C typed at the terminal (or a SIGINT from elsewhere)."""


@dataclass(frozen=True)
class EndOfInput:
    """stdin reached its end (Ctrl-D in a terminal, the end of a pipe or file)."""


InputItem = Line | CtrlC | EndOfInput


def split_input(buffer: str, *, ctrl_c: bool) -> tuple[list[InputItem], str]:
    """Complete items in ``buffer`` (lines; ``\\x03`` as Ctrl-C when ``ctrl_c``) and the unfinished rest.

    Text typed before a Ctrl-C on the same line is dropped: Ctrl-C means "never mind this line".
    """
    items: list[InputItem] = []
    while True:
        ends = [i for i in (buffer.find("\n"), buffer.find("\x03") if ctrl_c else -1) if i >= 0]
        if not ends:
            return items, buffer
        cut = min(ends)
        piece, mark, buffer = buffer[:cut], buffer[cut], buffer[cut + 1 :]
        items.append(CtrlC() if mark == "\x03" else Line(piece.rstrip("\r")))


@contextlib.contextmanager
def line_mode_terminal(fd: int) -> Iterator[bool]:
    """Keep the terminal in line mode but make Ctrl-C a line end instead of a signal (see the module doc).

    Yields whether the terminal was changed; it is restored on the way out, whatever happens.
    """
    try:
        # Imported here: POSIX only; the import is the platform check
        import termios
    except ImportError:  # not a POSIX terminal: Ctrl-C stays a signal
        yield False
        return
    try:
        saved = termios.tcgetattr(fd)
    except (termios.error, OSError):
        yield False
        return
    changed = termios.tcgetattr(fd)
    changed[3] &= ~termios.ISIG  # lflag: Ctrl-C, Ctrl-\ and Ctrl-Z no longer signal the process group
    changed[6][termios.VEOL] = b"\x03"  # ...and Ctrl-C ends the line, so the reader sees it at once
    try:
        termios.tcsetattr(fd, termios.TCSANOW, changed)
    except (termios.error, OSError):
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _read_stdin(fd: int, push: Callable[[InputItem], bool], *, ctrl_c: bool) -> None:
    """The reader thread: raw reads (a Ctrl-C arrives without a newline), decoded and split into items."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    buffer = ""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            rest = buffer + decoder.decode(b"", final=True)
            if rest.strip() and not push(Line(rest)):
                return
            push(EndOfInput())
            return
        items, buffer = split_input(buffer + decoder.decode(chunk), ctrl_c=ctrl_c)
        for item in items:
            if not push(item):
                return


async def ask_aside(question: str, *, workspace: Path, run_dir: Path, context: str) -> tuple[bool, str, float]:
    """A side question, answered by the read-only side runtime under ``<run_dir>/aside``: (answered, text, cost)."""
    answer = await answer_aside(question, workspace=workspace, run_dir=run_dir, context=context)
    return bool(answer.ok), str(answer.text), float(answer.cost_usd)


class GoDriver:
    """Runs a workflow while handling input, signals and asides. ``interactive``: a person at a terminal."""

    def __init__(
        self,
        runtime: Runtime,
        channel: HumanChannel,
        *,
        view: Renderer,
        sink: Callable[[Event], Any],
        json_mode: bool,
        interactive: bool,
        stdin_fd: int | None = None,
        notes_dir: Path | None = None,
    ) -> None:
        self.runtime = runtime
        self.channel = channel
        self.view = view
        self.sink = sink
        self.json_mode = json_mode
        self.interactive = interactive and not json_mode
        self.stdin_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
        self.notes_dir = notes_dir  # the brief and the goal, for a side question's context
        self.interrupted = False  # quit by Ctrl-C: the command exits 130
        self.awaiting_words = False
        self.recent: deque[str] = deque(maxlen=_RECENT)
        self._work: anyio.CancelScope | None = None
        self._asides: TaskGroup | None = None
        self._asides_running = 0

    # --- output -------------------------------------------------------------------------------------

    def _event(self, event: Event) -> None:
        line = progress_line(event)
        if line is not None:
            self.recent.append(line)
        self.sink(event)

    def say(self, text: str, style: str = "dim", **payload: Any) -> None:
        """A line from flower itself: on the terminal view, or a ``notice`` event with ``--json``."""
        if self.json_mode:
            self.sink(Event("notice", text, payload=payload))
        else:
            self.view.line(text, style, wrap=True)

    # --- the run ------------------------------------------------------------------------------------

    async def run(self, workflow: Workflow) -> RunResult | None:
        """Run ``workflow``; returns its result, or None after a Ctrl-C quit (then ``interrupted`` is set)."""
        token = anyio.lowlevel.current_token()
        send, receive = anyio.create_memory_object_stream[InputItem](max_buffer_size=math.inf)

        def push(item: InputItem) -> bool:
            try:
                anyio.from_thread.run_sync(send.send_nowait, item, token=token)
            except Exception:  # noqa: BLE001 - the loop is gone: the run is over, stop reading
                return False
            return True

        failure: Exception | None = None
        outcome: RunResult | None = None
        reader = threading.Thread(
            target=_read_stdin,
            args=(self.stdin_fd, push),
            kwargs={"ctrl_c": self.interactive},
            name="flower-stdin",
            daemon=True,
        )
        with line_mode_terminal(self.stdin_fd) if self.interactive else contextlib.nullcontext(False):
            reader.start()
            async with anyio.create_task_group() as background:
                background.start_soon(self._handle_input, receive)
                background.start_soon(self._handle_signals)
                async with anyio.create_task_group() as asides:
                    self._asides = asides
                    with anyio.CancelScope() as work:
                        self._work = work
                        try:
                            outcome = await workflow.run(self.runtime, on_event=self._event)
                        except Exception as exc:  # noqa: BLE001 - raised below, outside the task groups
                            failure = exc
                    if self._asides_running:
                        self.say(
                            f"(waiting for {self._asides_running} side answer{'s' if self._asides_running != 1 else ''} to finish…)"
                        )
                        asides.cancel_scope.deadline = anyio.current_time() + _ASIDE_WAIT_S
                    else:
                        asides.cancel_scope.cancel()
                background.cancel_scope.cancel()
        if failure is not None:
            # Raised here, not inside the task groups, which would wrap it in an ExceptionGroup: the command
            # turns a WorkflowError into one line.
            raise failure
        return outcome

    def quit(self) -> None:
        """End the run now (the step in flight is recorded as interrupted); the command exits 130."""
        self.interrupted = True
        self.awaiting_words = False
        if self._work is not None:
            self._work.cancel()

    # --- input --------------------------------------------------------------------------------------

    async def _handle_signals(self) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except (NotImplementedError, AttributeError):
            return
        try:
            with receiver as signals:
                async for _ in signals:
                    self.ctrl_c()
        except (ValueError, RuntimeError, NotImplementedError):
            return  # not the main thread, or a platform without signal handlers on the loop

    async def _handle_input(self, receive: Any) -> None:
        async with receive:
            async for item in receive:
                if isinstance(item, CtrlC):
                    self.ctrl_c()
                elif isinstance(item, EndOfInput):
                    self.end_of_input()
                    return
                else:
                    self.line(item.text)

    def ctrl_c(self) -> None:
        if not self.interactive or self.awaiting_words:
            self.say("! interrupted: stopping the run", "red")
            self.quit()
            return
        self.awaiting_words = True
        self.view.line(
            "\n! Ctrl-C: what do you want to tell it? Your words interrupt this round and the same session goes on "
            "with them. (Enter = say nothing, it goes on; Ctrl-C again = quit)",
            "yellow",
        )
        waiting = len(self.channel.pending())
        if waiting:
            self.view.line(
                f"  ({waiting} question{'s' if waiting != 1 else ''} still wait{'' if waiting != 1 else 's'} for you; this does not touch them)",
                "dim",
            )

    def end_of_input(self) -> None:
        for decline in route_eof(self.channel.pending()):
            self.channel.decline(decline.id, decline.reason)
        self.channel.stop_listening("input closed")
        self.awaiting_words = False

    def line(self, text: str) -> None:
        if self.awaiting_words:
            self.awaiting_words = False
            words = text.strip()
            if words:
                self.runtime.interrupt(words)
                self.view.line("  + interrupting this round; the same session goes on with your words", "green")
            else:
                self.view.line("  . nothing said; it goes on", "dim")
            return
        pending = self.channel.pending()
        route = route_json(text, pending) if self.json_mode else route_line(text, pending)
        if isinstance(route, Answer):
            if not self.channel.answer(route.id, route.text):
                self.say(f"  . {route.id} is no longer waiting for an answer", id=route.id)
        elif isinstance(route, Decline):
            self.channel.decline(route.id, route.reason)
        elif isinstance(route, SendMail):
            self.channel.send(route.text)  # the channel's own event says it was received
        elif isinstance(route, Aside):
            self.start_aside(route.question)
        elif isinstance(route, Invalid):
            if self.json_mode:
                self.sink(Event("notice", route.error, payload={"input_error": True, "line": text[:500]}))
            else:
                self.view.line(f"  ! {route.error}", "yellow", wrap=True)
        elif isinstance(route, Ignore) and route.note:
            self.say(f"  . {route.note}")

    # --- asides -------------------------------------------------------------------------------------

    def start_aside(self, question: str) -> None:
        """Answer a side question in its own task: the run never waits for it."""
        if self._asides is None:
            return
        budget = getattr(self.runtime, "budget", None)  # a runtime stand-in (a test's) may have none
        if budget is not None and budget.over:  # a spent budget starts no new session, a side one included
            said = f"not asked: {budget.stop_reason()}"
            if self.json_mode:
                self.sink(Event("aside", said, payload={"question": question, "ok": False, "cost_usd": 0.0}))
            else:
                self.view.line(f"# aside: {said}", "red", wrap=True)
            return
        self._asides_running += 1
        self._asides.start_soon(self._aside, question)

    async def _aside(self, question: str) -> None:
        context = (
            aside_context(self.notes_dir, list(self.recent)) if self.notes_dir is not None else "\n".join(self.recent)
        )
        try:
            ok, text, cost = await ask_aside(
                question, workspace=self.runtime.workspace, run_dir=self.runtime.run_dir, context=context
            )
        except Exception as exc:  # noqa: BLE001 - a side question must never disturb the run
            ok, text, cost = False, f"{type(exc).__name__}: {exc}", 0.0
        finally:
            self._asides_running -= 1
        budget = getattr(self.runtime, "budget", None)
        if budget is not None:  # the aside's own runtime is paid from the same run budget
            budget.charge("aside", cost)
        if self.json_mode:
            self.sink(Event("aside", text, payload={"question": question, "ok": ok, "cost_usd": cost}))
            return
        if ok:
            self.view.line(f"\n# aside: {question}", "magenta")
            self.view.line("  " + text.strip().replace("\n", "\n  "), wrap=True)
            self.view.line(f"  (${cost:.4f}; the run was not disturbed)", "dim")
        else:
            self.view.line(f"# aside: {text}", "red", wrap=True)
