"""What the demo's scripted model says: one `flower go` told as a story, every reply keyed to the role asking.

The clarifier asks a question (nobody answers: the run decides on its own and records the assumption) and
writes the brief; the goal-setter turns it into two checks; the coordinator sends a worker to write the
greeting (its 13,892-character count is spilled to a file, not kept in context) and ends round one; the
judge says "not yet" (no README); round two is cut off by a SIGTERM while the model is thinking; the next
`flower` picks the same session up from the store, a second worker writes the README, and the judge says
"achieved". The replies are keyed by the roles' own rules, so the story holds whatever order the requests
come in.
"""

from __future__ import annotations

from ..roles import CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES
from ..testing import (
    Hang,
    ScriptedServer,
    Text,
    ToolUse,
    Turn,
    bash,
    dispatch,
    keyed,
    when,
    when_main,
    when_notified,
    when_prompt,
    when_system,
)

__all__ = ["ASK", "round_two_started", "script_story"]

ASK = "a greeter: hello.txt greets the reader, and a README.md explains it"

QUESTION = "Should the greeting be in English or in French?"
BRIEF = """## Goal
A greeter: hello.txt greets the reader and README.md explains it.

## Acceptance criteria
- hello.txt exists and says hello
- README.md exists and explains hello.txt

## Boundaries
- no web page, no network

## Unknowns and assumptions
- Assumption: the greeting is in English (nobody answered the question).
"""
GOAL = """## Goal
hello.txt greets the reader and README.md explains it.

## Checks
- hello.txt exists and contains "hello"
- README.md exists
"""
ROUND_TWO = "README-MISSING"  # the judge's gap, fed back to the coordinator as round two's prompt
WAKE_WORDS = "Carry on from where you stopped"  # the go flow's prompt to a session picked up again
_COUNT = "seq 1 3000"  # 13,892 characters of output: over the workbench's 4,000-character spill threshold

_CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
_LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
_GOAL_SETTER = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode A")
_JUDGE = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode B")


def _verdict(state: str, reason: str, *failed: str) -> Turn:
    items = "\n".join(f"- {f}" for f in failed) or "- none"
    return Text(f"## Verdict\n{state}\n\n## Reason\n{reason}\n\n## Failed checks\n{items}")


def script_story(server: ScriptedServer, *, hang_s: float = 600.0) -> None:
    """Queue the whole story on ``server``. Round two hangs for ``hang_s`` seconds: the demo stops the
    process there (a reboot, a closed laptop) and starts `flower` again."""
    greet = dispatch(
        "write the greeting",
        bash(f"echo hello > hello.txt && {_COUNT}", text="Writing hello.txt, then counting to 3,000."),
        Text("WROTE-HELLO: hello.txt says hello; the count's 13,892 characters were spilled to a file."),
        subagent_type="coder",
    )
    readme = dispatch(
        "write the README",
        bash("printf '# Greeter\\n\\nhello.txt greets the reader.\\n' > README.md"),
        Text("WROTE-README: README.md explains hello.txt."),
        subagent_type="coder",
    )
    server.script(
        *keyed(_CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["English", "French"]})),
        *keyed(_CLARIFIER, Text(BRIEF)),
        *keyed(_GOAL_SETTER, Text(GOAL)),
        *keyed(_LEAD & ~when_notified(), Turn(["One worker writes the greeting.", greet]), Text("Waiting for it.")),
        *keyed(_LEAD & when_notified("WROTE-HELLO"), Text("Round one: hello.txt is written.")),
        *keyed(_JUDGE, _verdict("not yet", f"{ROUND_TWO}: there is no README.md", "README.md exists")),
        *keyed(_LEAD & when(lambda r: ROUND_TWO in r.last_user_text), Hang(hang_s)),
        *keyed(
            _LEAD & ~when_notified() & when(lambda r: WAKE_WORDS in r.text),
            Turn(["Picking up round two: a worker writes the README.", readme]),
            Text("Waiting for the README."),
        ),
        *keyed(_LEAD & when_notified("WROTE-README"), Text("Round two: README.md is written too. Done.")),
        *keyed(_JUDGE, _verdict("achieved", "hello.txt says hello and README.md explains it")),
    )


def round_two_started(server: ScriptedServer) -> bool:
    """Whether the coordinator's round two has reached the model (the moment the demo stops the process)."""
    return any(_LEAD(r) and ROUND_TWO in r.last_user_text for r in server.message_requests)
