"""expire, trim and prune as pure functions: what they change, what they never touch, and the mistakes listed
in docs/compatibility.md that they must not make."""

from __future__ import annotations

import copy
import os
from pathlib import Path

from stores._transcripts import Transcript, ancestry, chain_ok, tool_results, tool_uses

from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    TrimPolicy,
    expire,
    prune,
    rewrite,
    spill_path,
    trim,
    trim_report,
)

BIG = "line of output\n" * 300  # 4,500 characters


# --- expire -----------------------------------------------------------------------------------------


def test_expire_keeps_the_newest_glances_and_ages_the_rest() -> None:
    t = Transcript()
    ids = [t.bash("git status", f"status {n}") for n in range(5)]
    read = t.call("Read", {"file_path": "/ws/a.txt"})
    t.result(read, "file text")
    before = t.snapshot()
    out, report = expire(t.entries, EphemeralPolicy(keep_recent=2))
    results = tool_results(out)
    assert [results[i]["content"] for i in ids] == [
        "[`git status` result expired 5 results ago; the state may have changed — rerun it if needed]",
        "[`git status` result expired 4 results ago; the state may have changed — rerun it if needed]",
        "[`git status` result expired 3 results ago; the state may have changed — rerun it if needed]",
        "status 3",
        "status 4",
    ]
    assert results[read]["content"] == "file text"  # Read results never expire
    assert report == LoadReport(expired=3)
    assert t.entries == before  # the input is not modified


def test_expire_leaves_long_results_to_trim_and_skips_protected_entries() -> None:
    t = Transcript()
    long_id = t.bash("git log", "x" * 2001)
    edge_id = t.bash("git log -1", "y" * 2000)
    meta_id = t.call("Bash", {"command": "ls"})
    t.result(meta_id, "a.txt", isMeta=True)
    out, report = expire(t.entries, EphemeralPolicy(keep_recent=0))
    results = tool_results(out)
    assert results[long_id]["content"] == "x" * 2001
    assert "expired" in results[edge_id]["content"]
    assert results[meta_id]["content"] == "a.txt"
    assert report.expired == 1


def test_expire_shows_the_first_line_of_a_long_command_cut_to_60() -> None:
    t = Transcript()
    first = "git log --oneline --graph --decorate --all --date-order --max-count=500 --no-merges"
    tid = t.bash(first + "\ngit status", "x")
    block = tool_results(expire(t.entries, EphemeralPolicy(keep_recent=0)).entries)[tid]
    assert block["content"].startswith(f"[`{first[:60]}…` result expired 1 results ago")


def test_expire_disabled_changes_nothing() -> None:
    t = Transcript()
    t.bash("ls", "a")
    out, report = expire(t.entries, EphemeralPolicy(enabled=False, keep_recent=0))
    assert out == t.entries and not report


# --- trim ---------------------------------------------------------------------------------------------


def test_trim_spills_old_large_results_and_leaves_a_pointer(tmp_path: Path) -> None:
    t = Transcript()
    ids = [t.bash(f"cat big{n}.log", BIG + str(n)) for n in range(3)]
    small = t.bash("echo hi", "hi")
    before = t.snapshot()
    out, report = trim(t.entries, TrimPolicy(keep_recent=1), tmp_path)
    results = tool_results(out)
    for n, tid in enumerate(ids[:2]):
        text = BIG + str(n)
        path = spill_path(text, TrimPolicy(), tmp_path)
        assert path.parent == tmp_path / ".flower" / "spill" and len(path.stem) == 16
        assert path.read_text() == text
        assert results[tid]["content"] == (
            f"[Earlier tool result trimmed: {len(text):,} characters saved to .flower/spill/{path.name}; Read that file if you need it again.]"
        )
        assert results[tid]["tool_use_id"] == tid and results[tid]["is_error"] is False  # the block itself stays
    assert results[ids[2]]["content"] == BIG + "2"
    assert results[small]["content"] == "hi"
    assert report.trimmed == 2 and report.kept == 1 and report.chars_saved > 8000
    assert t.entries == before


def test_trim_never_touches_images_documents_or_protected_entries(tmp_path: Path) -> None:
    t = Transcript()
    image = t.call("Read", {"file_path": "/ws/p.png"})
    t.result(
        image,
        [
            {"type": "text", "text": BIG},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        ],
    )
    doc = t.call("Read", {"file_path": "/ws/d.pdf"})
    t.result(doc, [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "AAAA"}}])
    summary = t.call("Bash", {"command": "cat x"})
    t.result(summary, BIG, isCompactSummary=True)
    listed = t.call("Bash", {"command": "cat y"})
    t.result(listed, [{"type": "text", "text": BIG}, {"type": "text", "text": "tail"}])
    out, report = trim(t.entries, TrimPolicy(keep_recent=0), tmp_path)
    results = tool_results(out)
    assert results[image] == tool_results(t.entries)[image]
    assert results[doc] == tool_results(t.entries)[doc]
    assert results[summary]["content"] == BIG
    assert results[listed]["content"].startswith("[Earlier tool result trimmed: 4,504 characters")
    assert report.trimmed == 1


def test_trim_with_an_absolute_spill_dir(tmp_path: Path) -> None:
    t = Transcript()
    tid = t.bash("cat big.log", BIG)
    outside = tmp_path / "elsewhere" / "spill"
    out, _ = trim(
        t.entries, TrimPolicy(keep_recent=0, spill_dirname=str(outside)), tmp_path / "ws"
    )  # absolute and outside the workspace: no crash, the pointer shows the absolute path
    pointer = tool_results(out)[tid]["content"]
    path = spill_path(BIG, TrimPolicy(spill_dirname=str(outside)), tmp_path / "ws")
    assert str(path) in pointer and path.read_text() == BIG
    inside = tmp_path / "ws" / "spill-here"
    out, _ = trim(t.entries, TrimPolicy(keep_recent=0, spill_dirname=str(inside)), tmp_path / "ws")
    assert f"saved to spill-here/{path.name}" in tool_results(out)[tid]["content"]


def test_a_spill_that_cannot_be_written_leaves_the_result_in_place(tmp_path: Path) -> None:
    t = Transcript()
    tid = t.bash("cat big.log", BIG)
    (tmp_path / "blocker").write_text("a file where the spill directory should go")
    out, report = trim(t.entries, TrimPolicy(keep_recent=0, spill_dirname="blocker/spill"), tmp_path)
    assert tool_results(out)[tid]["content"] == BIG
    assert report.trimmed == 0


def test_spill_files_are_written_once_and_write_spill_false_writes_nothing(tmp_path: Path) -> None:
    t = Transcript()
    tid = t.bash("cat big.log", BIG)
    dry, _ = trim(t.entries, TrimPolicy(keep_recent=0), tmp_path, write_spill=False)
    assert not (tmp_path / ".flower").exists()
    first, _ = trim(t.entries, TrimPolicy(keep_recent=0), tmp_path)
    assert first == dry
    path = spill_path(BIG, TrimPolicy(), tmp_path)
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))
    again, _ = trim(t.entries, TrimPolicy(keep_recent=0), tmp_path)
    assert again == first and path.stat().st_mtime_ns == stamp - 10**9
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left behind
    assert tool_results(again)[tid]["content"].startswith("[Earlier tool result trimmed")


# --- prune ---------------------------------------------------------------------------------------------


def test_api_errors_are_dropped_and_their_children_relinked() -> None:
    t = Transcript()
    t.user("go")
    done = t.bash("ls", "a.txt")
    before_error = t.leaf
    error = t.api_error()
    t.last_prompt()
    resumed = t.user("continue")
    t.api_error(with_uuid=False)  # dropped too: a synthetic error goes, uuid or not
    out, report = prune(t.entries, PrunePolicy())
    assert error not in out and not any(e.get("isApiErrorMessage") for e in out)
    new_resumed = next(e for e in out if e.get("uuid") == resumed["uuid"])
    assert new_resumed["parentUuid"] == before_error
    last_prompt = next(e for e in out if e["type"] == "last-prompt")
    assert last_prompt["leafUuid"] == before_error  # a leaf pointer follows the chain too
    assert chain_ok(out) and done in tool_results(out)
    assert report.api_errors_dropped == 2 and report.pruned == 2


def test_only_the_newest_denial_stays_and_a_dropped_one_takes_exactly_its_two_blocks() -> None:
    t = Transcript()
    t.user("clean up")
    old = t.call("Bash", {"command": "rm -rf build"}, text="I'll remove the build directory.")
    t.result(
        old,
        "Permission to use Bash with command rm -rf build has been denied.",
        is_error=True,
        toolDenialKind="permission-rule",
        permissionDecision={"decision": "reject"},
    )
    glance = t.bash("ls", "build")
    headless = t.denied("Write /ws/x", kind="user-rejected")
    newest = t.denied("rm x")
    before = t.snapshot()
    out, report = prune(t.entries, PrunePolicy(keep_denials=1))
    uses, results = tool_uses(out), tool_results(out)
    assert old not in uses and old not in results
    assert headless not in uses and headless not in results  # "user-rejected" refusals are pruned too
    assert newest in uses and newest in results
    assert glance in results
    assert any(
        b.get("text") == "I'll remove the build directory."
        for e in out
        for b in (e.get("message") or {}).get("content") or []
        if isinstance(b, dict)
    )
    assert chain_ok(out)
    assert report.denials_dropped == 2
    assert t.entries == before


def test_keep_denials_zero_drops_all_and_denial_kinds_can_be_narrowed() -> None:
    t = Transcript()
    rule = t.denied("rm a")
    headless = t.denied("Write b", kind="user-rejected")
    out, _ = prune(t.entries, PrunePolicy(keep_denials=0))
    assert not tool_uses(out) and not tool_results(out)
    out, _ = prune(t.entries, PrunePolicy(keep_denials=0, denial_kinds=frozenset({"permission-rule"})))
    assert rule not in tool_uses(out) and headless in tool_uses(out)


def test_a_denial_inside_a_shared_entry_drops_only_its_blocks_and_the_tool_use_result() -> None:
    t = Transcript()
    t.assistant(
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "rm a"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
    )
    t.add(
        {
            "type": "user",
            "toolDenialKind": "permission-rule",
            "permissionDecision": {"decision": "reject"},
            "toolUseResult": "Error: denied",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "denied", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "a.txt"},
                ],
            },
        }
    )
    t.denied("rm newer")
    out, _ = prune(t.entries, PrunePolicy(keep_denials=1))
    shared = next(
        e
        for e in out
        if any(
            b["tool_use_id"] == "t2"
            for b in (e["message"]["content"] if isinstance(e["message"]["content"], list) else [])
            if b.get("type") == "tool_result"
        )
    )
    assert [b["tool_use_id"] for b in shared["message"]["content"]] == ["t2"]
    assert "toolUseResult" not in shared
    assert "t1" not in tool_uses(out) and "t2" in tool_uses(out)


def test_interrupted_calls_are_neutralised_not_dropped() -> None:
    t = Transcript()
    modern = t.interrupted("python3 long_job.py")
    legacy = t.call("Bash", {"command": "make"})
    t.result(legacy, "[Request interrupted by user for tool use]", is_error=True)
    out, report = prune(t.entries, PrunePolicy())
    results = tool_results(out)
    for tid in (modern, legacy):
        assert results[tid]["content"] == PrunePolicy().interrupt_text and results[tid]["is_error"] is False
        assert tid in tool_uses(out)
    assert report.interrupts_neutralized == 2 and report.denials_dropped == 0
    assert not any("STOP what you are doing" in str(e.get("message")) for e in out)  # what the model reads


def test_protected_entries_are_never_dropped_or_rewritten() -> None:
    t = Transcript()
    meta_error = t.api_error()
    meta_error["isMeta"] = True
    protected_use = t.call("Bash", {"command": "rm a"})
    t.entries[-1]["isCompactSummary"] = True
    t.result(protected_use, "denied", is_error=True, toolDenialKind="permission-rule", permissionDecision={})
    t.denied("rm b")
    summary = t.user("Summary of the conversation so far", isCompactSummary=True)
    before = t.snapshot()
    out, _ = prune(t.entries, PrunePolicy(keep_denials=0))

    def unlinked(entry: dict) -> dict:
        return {k: v for k, v in entry.items() if k not in ("parentUuid", "leafUuid", "logicalParentUuid")}

    # Present and unchanged; only a link may be re-pointed when the entry it named was removed.
    assert unlinked(meta_error) in map(unlinked, out) and unlinked(summary) in map(unlinked, out)
    # The denied call's tool_use sits in a protected entry, so its result must stay as well (red line 1).
    assert protected_use in tool_uses(out) and protected_use in tool_results(out)
    assert t.entries == before


def test_prune_is_deterministic_and_does_not_mutate(tmp_path: Path) -> None:
    t = Transcript()
    t.user("go")
    t.bash("git status", "clean")
    t.denied("rm a")
    t.denied("rm b")
    t.api_error()
    t.call("Bash", {"command": "sleep 100"})  # an orphan
    t.user("resumed")
    before = copy.deepcopy(t.entries)
    first = prune(t.entries, PrunePolicy())
    second = prune(copy.deepcopy(t.entries), PrunePolicy())
    assert first == second
    assert t.entries == before


def test_every_surviving_entry_keeps_its_nearest_surviving_ancestor() -> None:
    t = Transcript()
    t.user("go")
    for n in range(3):
        t.denied(f"rm {n}")
        t.api_error()
        t.bash("ls", str(n))
    out, _ = prune(t.entries, PrunePolicy(keep_denials=0))
    kept = {e["uuid"] for e in out if "uuid" in e}
    for entry in out:
        if "uuid" not in entry:
            continue
        expected = next((u for u in ancestry(t.entries, entry["uuid"])[1:] if u in kept), None)
        assert entry.get("parentUuid") == expected


# --- the report -------------------------------------------------------------------------------------------


def test_fewer_sites_than_keep_recent_change_nothing(tmp_path: Path) -> None:
    """3 of each with room for 5: nothing goes (``sites[: 3 - 5]`` would have taken the first one)."""
    t = Transcript()
    for n in range(3):
        t.bash("git status", f"status {n}")
        t.bash("python big.py", BIG + str(n))
        t.denied(f"rm -rf build{n}")
    assert expire(t.entries, EphemeralPolicy(keep_recent=5)).report.expired == 0
    trimmed = trim(t.entries, TrimPolicy(keep_recent=5), tmp_path).report
    assert trimmed.trimmed == 0 and trimmed.kept == 3
    assert prune(t.entries, PrunePolicy(keep_denials=5)).report.denials_dropped == 0
    everything = rewrite(
        t.entries,
        tmp_path,
        ephemeral=EphemeralPolicy(keep_recent=5),
        trim_policy=TrimPolicy(keep_recent=5),
        prune_policy=PrunePolicy(keep_denials=5),
    )
    assert everything.entries == t.entries and not everything.report
    assert not (tmp_path / ".flower").exists()


def test_trim_report_lines() -> None:
    assert trim_report(LoadReport()) == "nothing trimmed"
    assert trim_report(LoadReport(expired=5)) == "expired 5 stale results"
    both = LoadReport(trimmed=12, kept=20, chars_saved=192_000, expired=5, pruned=3)
    # When both happened, both counts are reported.
    assert (
        trim_report(both)
        == "trimmed 12 tool results (kept 20), saved ~48k tokens; expired 5 stale results; pruned 3 entries"
    )
    assert trim_report(LoadReport(trimmed=1, kept=0, chars_saved=400, pruned=1, orphans_healed=1)) == (
        "trimmed 1 tool result (kept 0), saved ~100 tokens; pruned 1 entry; repaired 1 interrupted call"
    )
    assert trim_report(object()) == "nothing trimmed"


def test_reports_add_up() -> None:
    total = LoadReport(expired=1, trimmed=2) + LoadReport(expired=3, pruned=1)
    assert total == LoadReport(expired=4, trimmed=2, pruned=1)
    assert total.as_dict()["expired"] == 4
    assert not LoadReport(kept=5)
