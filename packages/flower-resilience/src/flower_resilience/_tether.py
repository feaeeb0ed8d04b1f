"""The tether: Claude Code's own parent, which ends it and everything it started when *its* parent dies.

The SDK starts the launcher that `tethered_cli_path` writes instead of Claude Code; the launcher runs
``python -I -S _tether.py <real claude> <args>...``, and this process starts the real harness as its child,
on the same stdin, stdout and stderr (the SDK's JSON stream passes straight through, never through here).
Then it waits, and:

- **the harness exits**: it ends whatever the harness left running (SIGTERM, a short grace, SIGKILL), then
  exits the same way the harness did (its exit code, or its signal), so the SDK sees what it always saw;
- **a signal comes** (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): it passes it on to the harness;
- **its parent dies**, however (SIGKILL included): it SIGKILLs the harness at once (the harness is what talks
  to the model, and nobody is left to read it), SIGTERMs every other descendant, SIGKILLs what is left after
  a short grace, and exits.

How it hears its parent die, and finds the descendants:

- **Linux**: ``PR_SET_PDEATHSIG`` wakes it the moment the parent goes (the signal also fires when the parent
  *thread* that started it ends, e.g. trio's worker thread, so the signal only wakes it: ``getppid()``
  changing is the test). ``PR_SET_CHILD_SUBREAPER`` makes every orphaned descendant (a double-forked
  daemon, the children of a killed shell) its own child, so /proc holds the whole tree and "no child left"
  means "nothing left". The harness gets ``PR_SET_PDEATHSIG=SIGKILL`` too: if this process is SIGKILLed
  itself, the harness dies with it.
- **Elsewhere** (macOS, BSD): ``getppid()`` is polled every 0.1 s; at the parent's death the live tree is
  read from ``ps`` and SIGKILLed. A process already orphaned before then (a daemon) is out of reach.

This file imports nothing but the standard library, and only what it needs (``-S``: no site-packages):
it runs before Claude Code starts, so its start-up is added to every session's (about 20 ms, see the README).
"""

from __future__ import annotations

import errno
import os
import select
import sys
import time

# Start-up time is this module's budget, and `typing` (7 ms) and `signal` (its enums, 6 ms) are most of it:
# mypy reads the annotations and the public `signal` module, Python runs on the C module underneath it,
# which has the same functions and constants (as plain ints).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Iterable
    from types import FrameType
    from typing import NoReturn
else:
    import _signal as signal

LINUX = sys.platform.startswith("linux")

# Passed on to the harness. A signal the launcher was started with ignored (nohup's SIGHUP) stays ignored,
# for both, as it was before the tether.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# A real-time signal, so it is never confused with one somebody sends (and SIGUSR2 can still be passed on).
DEATH_SIGNAL: int = getattr(signal, "SIGRTMIN", signal.SIGUSR2) if LINUX else 0

GRACE_AT_DEATH_S = 0.2  # SIGTERM -> SIGKILL for the harness's descendants when the parent died: within 1 s
GRACE_AT_EXIT_S = 0.5  # the same for what a harness that exited left running (the SDK waits this long at most)
GIVE_UP_S = 2.0  # after the last SIGKILL round: something unkillable (D state) must not keep us forever
SAFETY_POLL_S = 1.0  # Linux, in case a sandbox accepts PR_SET_PDEATHSIG and never delivers it
POLL_S = 0.1  # elsewhere, or when prctl is refused: how often getppid() is checked

ORPHANED_EXIT = 125  # the parent died (nobody reads this status; it is for a human looking at a log)
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _say(text: str) -> None:
    try:
        os.write(2, f"flower tether: {text}\n".encode(errors="replace"))
    except OSError:
        pass


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where it is refused (a sandbox) or missing (not Linux)."""
    if not LINUX:
        return False
    import ctypes  # why: only on Linux, once per launch

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _linux_children() -> dict[int, list[int]]:
    """ppid -> pids, for every process /proc shows us."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _ps_children() -> dict[int, list[int]]:
    import subprocess  # why: only where /proc is missing (not Linux)

    try:
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            children.setdefault(int(parts[1]), []).append(int(parts[0]))
    return children


def descendants(root: int) -> list[int]:
    """Every live process whose parent chain leads to ``root``, parents before their children."""
    children = _linux_children() if LINUX else _ps_children()
    found: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _kill_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:  # already gone (or not ours any more)
            pass


class Tether:
    def __init__(self, real: str, args: list[str]) -> None:
        self.real, self.args = real, args
        self.me = os.getpid()
        self.parent = os.getppid()
        self.harness = 0
        self.status: int | None = None  # the harness's wait status, once reaped
        self.watched = False  # PR_SET_PDEATHSIG took
        self.adopts = False  # PR_SET_CHILD_SUBREAPER took: every orphaned descendant is our child
        self.wake_r = self.wake_w = -1

    # --- start ----------------------------------------------------------------------------------------

    def run(self) -> NoReturn:
        # If the parent died between its fork and our first line, `parent` is already its reaper and nothing
        # tells us (1 is no sign: flower may be PID 1 in a container). Harmless: the SDK never wrote the
        # request, so the harness reads EOF on stdin and exits, and so do we.
        self.adopts = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        self.watched = _prctl(_PR_SET_PDEATHSIG, DEATH_SIGNAL)
        if os.getppid() != self.parent:  # it died before the watch was set: nothing would ever wake us
            os._exit(ORPHANED_EXIT)
        self._spawn()
        self._wait()
        self._exit_like_harness()

    def _spawn(self) -> None:
        # Only signals that were not ignored when we started are handled (and so reset to default for the
        # harness by exec); an ignored one stays ignored for it, as it was without the tether.
        forwarded: list[int] = [s for s in FORWARDED if signal.getsignal(s) != signal.SIG_IGN]
        wakers: list[int] = [signal.SIGCHLD, *([DEATH_SIGNAL] if self.watched else [])]
        handled = [*forwarded, *wakers]
        # Blocked until the harness's pid is known, so a handler never runs without it (nor in the child).
        original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, handled)
        self.wake_r, self.wake_w = os.pipe()  # close-on-exec (PEP 446): the harness never sees them
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        for s in forwarded:
            signal.signal(s, self._forward)
        for s in wakers:
            signal.signal(s, _wake)
        # A Ctrl-C at a terminal goes to the foreground process group: the harness must get it once, as it
        # did before, not once from the terminal and once more from us. So we leave that group and the
        # harness stays in it; a signal sent to *us* is still passed on.
        group = os.getpgrp()
        try:
            os.setpgid(0, 0)
        except OSError:  # a session leader (the SDK may one day start it so): then nothing to avoid
            pass
        harness_group = group if os.getpgrp() != group else None
        pid = os.fork()
        if pid == 0:
            self._become_harness(handled, original_mask, harness_group)
        self.harness = pid
        signal.pthread_sigmask(signal.SIG_UNBLOCK, handled)
        # The pipes' ends are the harness's business: the SDK must see stdout's EOF when the harness (and
        # what it started) closes it, and a write to stdin fail when it is gone, whatever we do meanwhile.
        # stderr stays: a launcher failure must be visible somewhere.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)

    def _become_harness(self, handled: list[int], mask: Iterable[int], group: int | None) -> NoReturn:
        """In the forked child: undo what is ours, then exec the real harness (never return from here)."""
        try:
            signal.set_wakeup_fd(-1)
            # SIGPIPE and SIGXFSZ: Python ignores them and the SDK's Popen had restored them for its child.
            for s in (*handled, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(s, signal.SIG_DFL)
            if LINUX:
                # If the tether itself is SIGKILLed (the SDK's last resort in close()), the harness goes too.
                _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
                if os.getppid() != self.me:
                    os._exit(ORPHANED_EXIT)
            if group is not None:
                try:
                    os.setpgid(0, group)
                except OSError:  # the group is gone (its members died): stay in ours
                    pass
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.execv(self.real, [self.real, *self.args])
        except OSError as exc:
            _say(f"cannot run {self.real}: {exc.strerror or exc}")
            os._exit(127 if exc.errno == errno.ENOENT else 126)
        except BaseException:  # noqa: BLE001 - nothing may unwind into the launcher's code in the child
            os._exit(127)

    # --- wait -----------------------------------------------------------------------------------------

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        # Only until the harness is reaped: after that its pid may belong to somebody else.
        if self.harness > 0 and self.status is None:
            try:
                os.kill(self.harness, signum)
            except OSError:
                pass

    def _reap(self) -> bool:
        """Reap every child that ended (orphans we adopted included); False once no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.harness:
                self.status = status

    def _parent_gone(self) -> bool:
        return os.getppid() != self.parent

    def _sleep(self, timeout: float | None) -> None:
        """Until a signal arrives (SIGCHLD, the parent's death, one to pass on) or ``timeout`` passes."""
        try:
            select.select([self.wake_r], [], [], timeout)
        except InterruptedError:
            pass
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _wait(self) -> None:
        poll = SAFETY_POLL_S if self.watched else POLL_S
        while True:
            self._reap()
            if self.status is not None:
                self._end(None, GRACE_AT_EXIT_S)
                return
            if self._parent_gone():
                self._end_at_parent_death()
            self._sleep(poll)

    # --- end ------------------------------------------------------------------------------------------

    def _end_at_parent_death(self) -> NoReturn:
        if not self.adopts:
            # No subreaper: a process orphaned from here on would leave our reach, so read the tree first
            # and kill it whole, at once.
            tree = descendants(self.me)
            _kill_all([self.harness, *tree], signal.SIGKILL)
            os._exit(ORPHANED_EXIT)
        if self.status is None:
            _kill_all([self.harness], signal.SIGKILL)
        self._end([p for p in descendants(self.me) if p != self.harness], GRACE_AT_DEATH_S)
        os._exit(ORPHANED_EXIT)

    def _end(self, pids: list[int] | None, grace: float) -> None:
        """SIGTERM ``pids`` (None: our whole tree), SIGKILL what is left after ``grace``, until no child is left.

        With the subreaper, each round re-reads the tree: whatever a dying process started meanwhile has
        become our child by then, and "no child" means "no descendant".
        """
        if not self.adopts or not self._reap():  # the usual end: nothing left, and no /proc walk for it
            return
        if pids is None:
            pids = descendants(self.me)
        _kill_all(pids, signal.SIGTERM)
        # SIGCONT: a stopped process (Ctrl-Z) would keep a SIGTERM pending until the grace ran out.
        _kill_all(pids, signal.SIGCONT)
        start = time.monotonic()
        while self._reap():
            elapsed = time.monotonic() - start
            if elapsed >= grace:
                _kill_all(descendants(self.me), signal.SIGKILL)
            if elapsed >= grace + GIVE_UP_S:
                return
            self._sleep(0.01)

    def _exit_like_harness(self) -> NoReturn:
        status = self.status if self.status is not None else 0
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        signum = os.WTERMSIG(status)
        # Die of the same signal, so the SDK sees the same returncode (-15, not 143). Without a core file:
        # the harness wrote its own, if any.
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        except (ImportError, OSError, ValueError):
            pass
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        except (OSError, ValueError):  # SIGKILL and SIGSTOP cannot be caught, nor need to be reset
            pass
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)


def _wake(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD and the parent-death signal only wake the loop (through the wakeup fd), which then looks."""


def main(argv: list[str] | None = None) -> NoReturn:
    argv = sys.argv if argv is None else argv
    if len(argv) < 2:
        _say("usage: python -I -S _tether.py REAL_CLAUDE [ARGS...]")
        os._exit(2)
    Tether(argv[1], argv[2:]).run()


if __name__ == "__main__":
    main()
