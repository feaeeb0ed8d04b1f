"""relink and heal_orphans, and the red lines of the whole rewrite on generated transcripts."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stores._transcripts import Transcript, ancestry, chain_ok, tool_results, tool_uses

from flower_stores import EphemeralPolicy, PrunePolicy, TrimPolicy, heal_orphans, prune, relink, rewrite

HEAL_NAMESPACE = uuid.UUID("6f1d3c0e-5b1a-4f0e-9a53-2f8f6e3c1d47")


def _by_uuid(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["uuid"]: e for e in entries if "uuid" in e}


# --- relink ------------------------------------------------------------------------------------------


def test_relink_walks_through_runs_of_removed_entries() -> None:
    t = Transcript()
    root = t.user("a")
    gone = [t.user("b"), t.user("c"), t.user("d")]
    child = t.user("e")
    logical = t.add(
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "logicalParentUuid": gone[-1]["uuid"]},
        chain=False,
    )
    logical["uuid"] = "boundary"
    out = relink(t.entries, {g["uuid"] for g in gone})
    assert [e.get("uuid") for e in out] == [root["uuid"], child["uuid"], "boundary"]
    assert _by_uuid(out)[child["uuid"]]["parentUuid"] == root["uuid"]
    assert _by_uuid(out)["boundary"]["logicalParentUuid"] == root["uuid"]


def test_relink_needs_the_full_list_and_says_why() -> None:
    t = Transcript()
    t.user("a")
    middle = t.user("b")
    last = t.user("c")
    prefiltered = [e for e in t.entries if e is not middle]
    # Given a pre-filtered list, relink cannot know where "b" pointed: the chain breaks at "c".
    assert relink(prefiltered, {middle["uuid"]})[-1]["parentUuid"] is None
    assert relink(t.entries, {middle["uuid"]})[-1]["parentUuid"] == t.entries[0]["uuid"]
    assert last["parentUuid"] == middle["uuid"]  # and the input stays as it was


def test_relink_roots_orphaned_chains_and_survives_cycles() -> None:
    a = {"type": "user", "uuid": "a", "parentUuid": "b"}
    b = {"type": "user", "uuid": "b", "parentUuid": "a"}
    c = {"type": "user", "uuid": "c", "parentUuid": "a"}
    out = relink([a, b, c], {"a", "b"})
    assert out == [{"type": "user", "uuid": "c", "parentUuid": None}]


def test_relink_shares_unchanged_entries() -> None:
    t = Transcript()
    t.user("a")
    t.user("b")
    out = relink(t.entries, set())
    assert out == t.entries and all(x is y for x, y in zip(out, t.entries, strict=True))


# --- heal_orphans ------------------------------------------------------------------------------------------


def test_heal_inserts_one_answer_right_after_the_call_and_repoints_every_child() -> None:
    t = Transcript()
    t.user("go")
    orphan = t.call("Bash", {"command": "sleep 100"})
    assistant = t.entries[-1]
    child_1 = t.user("[Request interrupted by user]")
    t.leaf = assistant["uuid"]
    child_2 = t.add({"type": "attachment", "attachment": {"type": "date"}})
    t.add({"type": "last-prompt", "leafUuid": assistant["uuid"]}, chain=False)
    before = copy.deepcopy(t.entries)
    out = heal_orphans(t.entries, "[cut off]")
    at = next(i for i, e in enumerate(out) if e.get("uuid") == assistant["uuid"])
    heal = out[at + 1]
    assert heal["uuid"] == str(uuid.uuid5(HEAL_NAMESPACE, assistant["uuid"]))
    assert heal["parentUuid"] == assistant["uuid"] and heal["type"] == "user"
    assert heal["message"] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": orphan, "content": "[cut off]", "is_error": False}],
    }
    assert heal["sessionId"] == assistant["sessionId"] and heal["cwd"] == assistant["cwd"]
    by = _by_uuid(out)
    assert by[child_1["uuid"]]["parentUuid"] == heal["uuid"]
    assert by[child_2["uuid"]]["parentUuid"] == heal["uuid"]  # ALL children, not only the first
    assert out[-1]["leafUuid"] == heal["uuid"]
    assert chain_ok(out)
    assert t.entries == before  # the input is never mutated
    assert heal_orphans(t.entries, "[cut off]") == out  # and the heal's uuid is the same on every load


def test_one_heal_per_message_even_when_the_calls_are_split_across_entries() -> None:
    t = Transcript()
    t.user("go")
    t.assistant(
        {"type": "text", "text": "Running both."},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "a"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "b"}},
    )
    tail = t.entries[-1]
    t.result("t2", "b done")  # one call answered, one not
    out = heal_orphans(t.entries)
    heals = [e for e in out if e.get("uuid") == str(uuid.uuid5(HEAL_NAMESPACE, tail["uuid"]))]
    assert len(heals) == 1
    assert [b["tool_use_id"] for b in heals[0]["message"]["content"]] == ["t1"]
    assert out.index(heals[0]) == out.index(tail) + 1
    results = tool_results(out)
    assert set(results) == {"t1", "t2"} and results["t1"]["content"] == PrunePolicy().orphan_text


def test_heal_leaves_an_answered_transcript_alone() -> None:
    t = Transcript()
    t.bash("ls", "a")
    out = heal_orphans(t.entries)
    assert out == t.entries


# --- the red lines of the whole rewrite, on generated transcripts ------------------------------------------

STEPS = [
    "glance",
    "big",
    "denial",
    "headless",
    "api_error",
    "api_error_no_uuid",
    "interrupt",
    "orphan",
    "meta",
    "summary",
    "text",
    "split",
]


def _build(steps: list[str], t: Transcript | None = None) -> Transcript:
    if t is None:
        t = Transcript()
        t.user("start")
    for n, step in enumerate(steps):
        if step == "glance":
            t.bash("git status", f"status {n} {len(t.entries)}")
        elif step == "big":
            t.bash(f"cat log{n}", f"line {n}\n" * 400)
        elif step == "denial":
            t.denied(f"rm {n}")
        elif step == "headless":
            t.denied(f"Write {n}", kind="user-rejected")
        elif step == "api_error":
            t.api_error()
        elif step == "api_error_no_uuid":
            t.api_error(with_uuid=False)
        elif step == "interrupt":
            t.interrupted(f"job {n}")
        elif step == "orphan":
            t.call("Bash", {"command": f"long {n}"})
        elif step == "meta":
            t.user(f"<meta {n}>", isMeta=True)
        elif step == "summary":
            t.user(f"summary {n}", isCompactSummary=True)
        elif step == "text":
            t.user(f"prompt {n}")
        elif step == "split":
            t.assistant(
                {"type": "text", "text": f"two calls {n}"},
                {"type": "tool_use", "id": f"s{n}a", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": f"s{n}b", "name": "Bash", "input": {"command": "rm z"}},
            )
            t.result(f"s{n}a", "x")
    return t


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.sampled_from(STEPS), max_size=25), keep=st.integers(0, 3))
def test_red_lines_hold_on_any_transcript(steps: list[str], keep: int, tmp_path: Path) -> None:
    t = _build(steps)
    before = copy.deepcopy(t.entries)
    policies: dict[str, Any] = {
        "ephemeral": EphemeralPolicy(keep_recent=keep),
        "trim_policy": TrimPolicy(keep_recent=keep, min_chars=1000),
        "prune_policy": PrunePolicy(keep_denials=keep),
    }
    out, _ = rewrite(t.entries, tmp_path, **policies)

    assert t.entries == before, "the input was modified"
    assert rewrite(copy.deepcopy(before), tmp_path, **policies).entries == out, "same input, different output"
    uses, results = tool_uses(out), tool_results(out)
    # Red line 1: no tool_result without its tool_use; and every tool_use answered (healed if need be).
    assert set(results) == set(uses)
    for tid in tool_results(before):
        if tid in uses:
            assert tid in results, "a tool_result was removed while its tool_use stayed"
    # Red line 2: compact summaries and meta entries are all there, content unchanged.
    links = ("parentUuid", "leafUuid", "logicalParentUuid")
    protected = [
        {k: v for k, v in e.items() if k not in links} for e in before if e.get("isMeta") or e.get("isCompactSummary")
    ]
    kept = [{k: v for k, v in e.items() if k not in links} for e in out if e.get("isMeta") or e.get("isCompactSummary")]
    assert kept == protected
    # Red line 3: every link names a surviving entry, and it is the nearest surviving ancestor.
    assert chain_ok(out)
    survivors = {e["uuid"] for e in out if "uuid" in e}
    original = {e["uuid"] for e in before if "uuid" in e}
    heal_parent = {e["uuid"]: e["parentUuid"] for e in out if "uuid" in e and e["uuid"] not in original}
    for entry in out:
        uid = entry.get("uuid")
        if uid not in original:
            continue
        expected = next((u for u in ancestry(before, uid)[1:] if u in survivors), None)
        parent = entry.get("parentUuid")
        if parent in heal_parent:  # a heal entry now sits between this entry and its old parent
            parent = heal_parent[parent]
        assert parent == expected
    # Nothing synthetic reaches the model.
    assert not any(e.get("isApiErrorMessage") for e in out)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(steps=st.lists(st.sampled_from(STEPS), max_size=25), keep=st.integers(0, 3))
def test_prune_heals_exactly_as_heal_orphans_does(steps: list[str], keep: int) -> None:
    """prune fuses relink and heal into its passes for speed; the public functions are the reference."""
    t = _build(steps)
    fused = prune(t.entries, PrunePolicy(keep_denials=keep)).entries
    unhealed = prune(t.entries, PrunePolicy(keep_denials=keep, heal_orphans=False)).entries
    assert fused == heal_orphans(unhealed, PrunePolicy().orphan_text)
