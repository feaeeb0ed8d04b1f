"""Every layer and the store, run over real Claude Code transcripts from outside this project (``corpus/``).

The transcripts were written by Claude Code 1.0.31 … 2.1.198 on other people's machines (sources and licences in
``corpus/README.md``). Each is run through every rewrite step, the layered stores over SQLite and over the SDK's
in-memory store, and malformed variants of them; `_invariants.check_rewrite` (which knows nothing of
flower_stores) judges every output.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore
from stores._invariants import check_rewrite

from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    PruningSessionStore,
    SqliteSessionStore,
    TrimmingSessionStore,
    TrimPolicy,
    expire,
    heal_orphans,
    prune,
    relink,
    rewrite,
    trim,
)

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.rglob("*.jsonl"))
KEY: Any = {"project_key": "-corpus", "session_id": "5f0c8f0e-0000-4000-8000-0000000000c0"}
EPHEMERAL = EphemeralPolicy(keep_recent=0)
TRIM = TrimPolicy(keep_recent=0, min_chars=200)


def read(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def transcripts() -> dict[str, list[Any]]:
    """Each file on its own, each source's lines as one transcript, and the whole corpus as one."""
    out = {str(p.relative_to(CORPUS)): read(p) for p in FILES}
    for source in sorted({p.relative_to(CORPUS).parts[0] for p in FILES}):
        out[f"{source}/*"] = [e for p in FILES if p.relative_to(CORPUS).parts[0] == source for e in read(p)]
    out["*"] = [e for p in FILES for e in read(p)]
    return out


TRANSCRIPTS = transcripts()


def entry_with(predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return copy.deepcopy(next(e for e in TRANSCRIPTS["*"] if isinstance(e, dict) and predicate(e)))


def results_of(entries: list[Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for entry in entries:
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found[block["tool_use_id"]] = block
    return found


# --- the corpus itself ----------------------------------------------------------------------------------------


def test_the_corpus_spans_harness_versions_and_every_file_is_documented() -> None:
    versions = {e["version"] for e in TRANSCRIPTS["*"] if isinstance(e, dict) and isinstance(e.get("version"), str)}
    assert len(versions) >= 12, sorted(versions)
    assert {v.split(".")[0] + "." + v.split(".")[1] for v in versions} >= {"1.0", "2.0", "2.1"}
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    for path in FILES:
        assert path.name in readme, f"{path} is not listed (with its source and licence) in corpus/README.md"


def test_the_checker_is_not_vacuous_it_flags_the_raw_corpus() -> None:
    # Fed back unchanged, the raw corpus breaks what a resume needs: two rejections still say "STOP … wait".
    problems = check_rewrite(TRANSCRIPTS["*"], TRANSCRIPTS["*"], pruned=True)
    assert sum("stop and wait" in p for p in problems) == 2, problems


# --- every step and the whole rewrite -------------------------------------------------------------------------


def _text_only_replies(entries: list[Any]) -> list[str]:
    """Assistant entries that hold text only: what `relink` is asked to remove in these runs."""
    return [
        e["uuid"]
        for e in entries
        if isinstance(e, dict)
        and e.get("type") == "assistant"
        and isinstance(e.get("uuid"), str)
        and not e.get("isMeta")
        and isinstance(e.get("message"), dict)
        and isinstance(e["message"].get("content"), list)
        and all(isinstance(b, dict) and b.get("type") == "text" for b in e["message"]["content"])
    ]


STEPS: dict[str, tuple[Callable[[list[Any], Path], Any], bool]] = {
    "expire": (lambda x, ws: expire(x, EPHEMERAL).entries, False),
    "trim": (lambda x, ws: trim(x, TRIM, ws).entries, False),
    "prune": (lambda x, ws: prune(x, PrunePolicy()).entries, True),
    "prune-all-denials": (lambda x, ws: prune(x, PrunePolicy(keep_denials=0)).entries, True),
    "heal_orphans": (lambda x, ws: heal_orphans(x), False),
    "relink": (lambda x, ws: relink(x, _text_only_replies(x)), False),
    "rewrite": (
        lambda x, ws: rewrite(x, ws, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy()).entries,
        True,
    ),
}


@pytest.mark.parametrize("step", sorted(STEPS))
@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_every_step_keeps_every_invariant_on_every_transcript(name: str, step: str, tmp_path: Path) -> None:
    raw = TRANSCRIPTS[name]
    before = copy.deepcopy(raw)
    run, pruned = STEPS[step]
    out = run(raw, tmp_path)
    assert raw == before, "the input was modified"
    assert check_rewrite(raw, out, pruned=pruned, workspace=tmp_path) == []
    assert run(copy.deepcopy(raw), tmp_path) == out, "not deterministic"


def test_rewrite_equals_the_composed_steps_on_the_corpus(tmp_path: Path) -> None:
    for raw in TRANSCRIPTS.values():
        got = rewrite(raw, tmp_path, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy())
        first = expire(raw, EPHEMERAL)
        second = trim(first.entries, TRIM, tmp_path)
        third = prune(second.entries, PrunePolicy())
        assert got.entries == third.entries
        assert got.report == first.report + second.report + third.report


def test_the_report_counts_exactly_what_the_model_no_longer_sees(tmp_path: Path) -> None:
    prune_policy = PrunePolicy(keep_denials=0)
    for raw in TRANSCRIPTS.values():
        out, report = rewrite(raw, tmp_path, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=prune_policy)
        texts = [json.dumps(b.get("content")) for b in results_of(out).values()]
        assert report.trimmed == sum("Earlier tool result trimmed" in t for t in texts)
        assert report.expired == sum(bool(re.search(r"result expired \d+ results ago", t)) for t in texts)
        assert report.interrupts_neutralized == sum(json.dumps(prune_policy.interrupt_text) in t for t in texts)
        assert report.orphans_healed == sum(json.dumps(prune_policy.orphan_text) in t for t in texts)
        heal_entries = sum(
            1
            for e in out
            if isinstance(e, dict) and json.dumps(prune_policy.orphan_text) in json.dumps(e.get("message"))
        )
        assert len(out) == len(raw) - report.pruned + heal_entries


# --- the stores -----------------------------------------------------------------------------------------------


def stored_form(raw: list[Any], backend: str) -> list[Any]:
    """What a backend holds after appending ``raw``: SQLite skips an entry whose uuid it already has (the SDK
    retries batches; the real corpus has such pairs), the SDK's in-memory store keeps everything."""
    if backend != "sqlite":
        return raw
    seen: set[str] = set()
    out = []
    for entry in raw:
        uid = entry.get("uuid") if isinstance(entry, dict) else None
        if isinstance(uid, str):
            if uid in seen:
                continue
            seen.add(uid)
        out.append(entry)
    return out


async def _append_in_batches(store: Any, entries: list[Any], size: int = 7) -> None:
    for start in range(0, len(entries), size):
        await store.append(KEY, entries[start : start + size])


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
async def test_layered_stores_over_the_corpus_keep_the_raw_copy_and_every_invariant(
    backend: str, tmp_path: Path
) -> None:
    for n, (name, raw) in enumerate(sorted(TRANSCRIPTS.items())):
        key = {**KEY, "session_id": f"{KEY['session_id'][:-3]}{n:03d}"}
        store: Any = SqliteSessionStore(tmp_path / "sessions.db") if backend == "sqlite" else InMemorySessionStore()
        try:
            for start in range(0, len(raw), 7):
                await store.append(key, copy.deepcopy(raw[start : start + 7]))
            workspace = tmp_path / "ws"
            layered = PruningSessionStore(store, workspace, policy=TRIM, ephemeral=EPHEMERAL, prune=PrunePolicy())
            trimming = TrimmingSessionStore(store, workspace, policy=TRIM, ephemeral=EPHEMERAL)
            held = stored_form(raw, backend)
            assert await store.load(key) == held
            first = await layered.load(key)
            second = await layered.load(key)
            assert first == second, f"{name}: two loads differ"
            assert (
                first
                == rewrite(held, workspace, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy()).entries
            )
            assert check_rewrite(held, first, pruned=True, workspace=workspace) == [], name
            assert check_rewrite(held, await trimming.load(key), pruned=False, workspace=workspace) == [], name
            assert await store.load(key) == held, f"{name}: the stored copy changed"
        finally:
            if backend == "sqlite":
                store.close()


# --- malformed input never stops a resume -----------------------------------------------------------------------

ODD_LINES: list[Any] = ["a stray string", 42, None, [1, "two"], True]


def _with_odd_lines(raw: list[Any]) -> list[Any]:
    out = list(raw)
    for n, odd in enumerate(ODD_LINES):
        out.insert(min(len(out), n * 3), odd)
    return out


def _with_bad_parents(raw: list[Any]) -> list[Any]:
    out = copy.deepcopy(raw)
    dicts = [e for e in out if isinstance(e, dict) and isinstance(e.get("parentUuid"), str)]
    if dicts:
        dicts[0]["parentUuid"] = [dicts[0]["parentUuid"]]
        dicts[-1]["parentUuid"] = {"uuid": dicts[-1]["parentUuid"]}
    return out


def _api_error_twin(entry: dict[str, Any]) -> dict[str, Any]:
    """A synthetic API error entry (the shape Claude Code writes) that carries ``entry``'s uuid: a retried write."""
    twin = {
        k: entry[k]
        for k in ("parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "uuid", "timestamp")
        if k in entry
    }
    twin.update(
        type="assistant",
        isApiErrorMessage=True,
        message={
            "id": "00000000-0000-4000-8000-000000000000",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": "API Error: Connection error."}],
        },
    )
    return twin


def _with_duplicate_uuid(raw: list[Any]) -> list[Any]:
    out = list(raw)
    named = {e.get("parentUuid") for e in raw if isinstance(e, dict)}
    for i, entry in enumerate(raw):
        if isinstance(entry, dict) and entry.get("uuid") in named and entry.get("type") in ("user", "assistant"):
            out.insert(i + 1, _api_error_twin(entry))
            break
    return out


VARIANTS = {
    "odd lines": _with_odd_lines,
    "parentUuid list/dict": _with_bad_parents,
    "uuid shared with an API error": _with_duplicate_uuid,
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize(
    "name",
    ["*", "daaain-claude-code-log/*", "d-kimuson-claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.head.jsonl"],
)
async def test_malformed_input_passes_through_or_is_repaired_with_a_note(
    name: str, variant: str, tmp_path: Path
) -> None:
    raw = VARIANTS[variant](TRANSCRIPTS[name])
    for step, (run, pruned) in STEPS.items():
        out = run(raw, tmp_path)  # never raises
        assert check_rewrite(raw, out, pruned=pruned, workspace=tmp_path) == [], step
    got = rewrite(raw, tmp_path, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy())
    reference = prune(trim(expire(raw, EPHEMERAL).entries, TRIM, tmp_path).entries, PrunePolicy())
    assert got.entries == reference.entries, "rewrite() and prune() disagree"
    assert got.report.notes == reference.report.notes and got.report.notes, "no note says what was odd"
    # The SDK's own in-memory store raises on a line that is not an object (its summary fold reads every line as
    # one); ours stores it, so that variant runs over SQLite only.
    for backend in ("sqlite",) if variant == "odd lines" else ("sqlite", "memory"):
        store: Any = SqliteSessionStore(tmp_path / f"{backend}.db") if backend == "sqlite" else InMemorySessionStore()
        await _append_in_batches(store, raw)
        held = stored_form(raw, backend)
        layered = PruningSessionStore(store, tmp_path / "ws", policy=TRIM, ephemeral=EPHEMERAL)
        expected = rewrite(held, tmp_path / "ws", ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy())
        assert await layered.load(KEY) == expected.entries
        assert layered.last_report == expected.report
        assert await store.load(KEY) == held
        if backend == "sqlite":
            store.close()


def test_a_uuid_shared_with_a_removed_api_error_keeps_its_entry_and_its_children(tmp_path: Path) -> None:
    raw = _with_duplicate_uuid(TRANSCRIPTS["*"])
    twin = next(e for e in raw if isinstance(e, dict) and e.get("isApiErrorMessage"))
    original = next(
        e for e in raw if isinstance(e, dict) and e.get("uuid") == twin["uuid"] and not e.get("isApiErrorMessage")
    )
    children = [e for e in raw if isinstance(e, dict) and e.get("parentUuid") == twin["uuid"]]
    for out, report in (prune(raw), rewrite(raw, tmp_path, prune_policy=PrunePolicy())):
        assert original in out and twin not in out
        assert all(child in out for child in children)  # still linked to the surviving copy, not re-pointed
        assert report.api_errors_dropped == 1 and report.pruned == 1
        assert any(twin["uuid"] in note for note in report.notes)


# --- the defects of issue 16, on real lines -----------------------------------------------------------------------

STOPPED = {"toolu_01X3AHK9hmPmJqASckfkMLmu": "1.0.51", "toolu_017mbHLs6TBUKmPTEbgKUZtH": "1.0.128"}


def test_rejections_without_a_marker_are_neutralised_in_every_version(tmp_path: Path) -> None:
    raw = TRANSCRIPTS["daaain-claude-code-log/*"]
    before = results_of(raw)
    assert all("STOP what you are doing" in before[t]["content"] and before[t]["is_error"] for t in STOPPED)
    assert not any("toolDenialKind" in e for e in raw if isinstance(e, dict))
    for out, report in (
        prune(raw),
        rewrite(raw, tmp_path, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy()),
    ):
        after = results_of(out)
        assert report.interrupts_neutralized == 2
        for tool_id in STOPPED:
            assert after[tool_id]["content"] == PrunePolicy().interrupt_text and after[tool_id]["is_error"] is False
        # Real errors are left alone: a missing tool, a file not read yet, the user's own words in a rejection.
        for tool_id in (
            "toolu_013Cho8SURc4ESongaWZu4d7",
            "toolu_01LsK8An4morbFYkB3fejkoX",
            "toolu_01YKFv5mcsGBX463DAn2h9YD",
        ):
            assert after[tool_id] == before[tool_id]


def _holds(entry: dict[str, Any], field: str, value: str) -> bool:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get(field) == value for b in content)


def _bash_call(command: str, tool_id: str, uid: str, parent: str | None) -> dict[str, Any]:
    """The real 2.0.5 Bash call of the corpus, re-aimed at ``command`` (ids changed so each call is its own)."""
    call = entry_with(lambda e: _holds(e, "id", "toolu_01T1SrbUgaSJkHWJd5outNgr"))
    block = call["message"]["content"][0]
    block.update(id=tool_id, input={**block["input"], "command": command})
    call.update(uuid=uid, parentUuid=parent)
    return call


def _result(
    template_tool: str,
    tool_id: str,
    uid: str,
    parent: str,
    content: str,
    is_error: bool,
    tool_use_result: Any,
    **extra: Any,
) -> dict[str, Any]:
    entry = entry_with(lambda e: _holds(e, "tool_use_id", template_tool))
    entry["message"]["content"] = [
        {"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": is_error}
    ]
    entry.update(uuid=uid, parentUuid=parent, toolUseResult=tool_use_result, **extra)
    return entry


def _denied_glances(marked: bool) -> list[dict[str, Any]]:
    """Two denied `git status` calls and one that ran: the harness's denial sentence (from the bundled binary's
    text) on the real corpus entries, marked as Claude Code after 2.1.39 writes it, or unmarked as before."""
    out: list[dict[str, Any]] = []
    parent = None
    for n, (command, denied) in enumerate(
        (("git status", True), ("git status --short", False), ("git status -s", True))
    ):
        tool_id = f"toolu_glance{n}"
        out.append(_bash_call(command, tool_id, f"00000000-0000-4000-8000-00000000a{n:03d}", parent))
        text = (
            f"Permission to use Bash with command {command} has been denied."
            if denied
            else "On branch main\nnothing to commit"
        )
        extra = (
            {"toolDenialKind": "permission-rule", "permissionDecision": {"decision": "reject"}}
            if marked and denied
            else {}
        )
        out.append(
            _result(
                "toolu_01T1SrbUgaSJkHWJd5outNgr",
                tool_id,
                f"00000000-0000-4000-8000-00000000b{n:03d}",
                out[-1]["uuid"],
                text,
                denied,
                f"Error: {text}" if denied else {"stdout": text, "stderr": "", "interrupted": False, "isImage": False},
                **extra,
            )
        )
        parent = out[-1]["uuid"]
    return out


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "unmarked"])
def test_the_kept_denial_of_a_glance_is_never_expired_and_older_denials_go(marked: bool, tmp_path: Path) -> None:
    raw = _denied_glances(marked)
    out, report = rewrite(
        raw, tmp_path, ephemeral=EPHEMERAL, trim_policy=TRIM, prune_policy=PrunePolicy(keep_denials=1)
    )
    after = results_of(out)
    assert "toolu_glance0" not in after and report.denials_dropped == 1  # the older denial: call and result gone
    assert after["toolu_glance2"] == results_of(raw)["toolu_glance2"]  # the kept one still says "denied"
    assert "expired" in after["toolu_glance1"]["content"] and report.expired == 1  # the glance that ran expires
    assert check_rewrite(raw, out, pruned=True, workspace=tmp_path) == []


def test_an_unmarked_headless_refusal_is_a_denial_too(tmp_path: Path) -> None:
    raw = _denied_glances(False)
    text = "Claude requested permissions to use Bash, but you haven't granted it yet."
    raw[1]["message"]["content"][0]["content"] = text
    raw[1]["toolUseResult"] = f"Error: {text}"
    out, report = prune(raw, PrunePolicy(keep_denials=1))
    assert report.denials_dropped == 1 and "toolu_glance0" not in results_of(out)
    narrowed, _ = prune(raw, PrunePolicy(keep_denials=1, denial_kinds=frozenset({"permission-rule"})))
    assert "toolu_glance0" in results_of(narrowed)  # the headless kind is "user-rejected", as the marker would say


def test_a_tool_output_that_merely_quotes_the_harness_is_not_a_refusal(tmp_path: Path) -> None:
    raw = _denied_glances(False)
    quoted = "The user doesn't want to proceed with this tool use. STOP what you are doing and wait for the user to tell you how to proceed."
    raw[3]["message"]["content"][0].update(content=quoted, is_error=True)  # e.g. `grep -r STOP logs/` that failed
    raw[3]["toolUseResult"] = {"stdout": quoted, "stderr": "", "interrupted": False, "isImage": False}
    out, report = rewrite(raw, tmp_path, prune_policy=PrunePolicy())
    assert results_of(out)["toolu_glance1"] == results_of(raw)["toolu_glance1"] and report.interrupts_neutralized == 0


def test_trim_keeps_the_parts_it_cannot_spill_as_text(tmp_path: Path) -> None:
    raw = copy.deepcopy(TRANSCRIPTS["daaain-claude-code-log/*"])
    task = next(b for b in results_of(raw).values() if isinstance(b["content"], list))  # the real Task result
    text = "".join(p["text"] for p in task["content"])
    reference = {
        "type": "tool_reference",
        "tool_name": "mcp__github__create_issue",
    }  # as the harness writes ToolSearch results
    found = {
        "type": "search_result",
        "source": "https://example.invalid/doc",
        "title": "Doc",
        "content": [{"type": "text", "text": "cited passage"}],
    }
    task["content"] = [*task["content"], reference, found]
    for run in (lambda: trim(raw, TRIM, tmp_path), lambda: rewrite(raw, tmp_path, trim_policy=TRIM)):
        out, report = run()
        after = results_of(out)[task["tool_use_id"]]["content"]
        assert after[1:] == [reference, found] and after[0]["text"].startswith("[Earlier tool result trimmed")
        spill = tmp_path / re.search(r"saved to (\S+\.txt);", after[0]["text"])[1]  # type: ignore[index]
        assert spill.read_text(encoding="utf-8") == text
        assert check_rewrite(raw, out, pruned=False, workspace=tmp_path) == []
        assert report.trimmed >= 1


def test_the_report_never_counts_a_dropped_denial_as_trimmed_or_expired(tmp_path: Path) -> None:
    raw = _denied_glances(True)
    raw[1]["message"]["content"][0]["content"] = (
        "Permission to use Bash has been denied. " + "x" * 3000
    )  # large and stale
    out, report = rewrite(
        raw,
        tmp_path,
        ephemeral=EPHEMERAL,
        trim_policy=TrimPolicy(keep_recent=0, min_chars=100),
        prune_policy=PrunePolicy(keep_denials=1),
    )
    assert report == LoadReport(expired=1, denials_dropped=1, pruned=2)
