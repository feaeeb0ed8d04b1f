"""`fit`: a transcript brought under a size budget — pure, idempotent, never breaking a call from its result,
never touching a prompt, within the budget whenever moving every movable output and input can get it there."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stores._transcripts import Transcript
from stores.test_chain import STEPS, _build
from stores.test_engine import _reference

from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    PruningSessionStore,
    SqliteSessionStore,
    TrimPolicy,
    fit,
    history_chars,
    rewrite,
    rewrite_report,
)

POINTER = re.compile(r"saved to (\S+?\.txt);")


def _with_bulky_inputs(t: Transcript, writes: list[int]) -> None:
    """Calls whose input is the bulk (a Write's content), answered with a short result."""
    for n, size in enumerate(writes):
        tid = t.call("Write", {"file_path": f"/ws/f{n}.py", "content": f"w{n} " * size})
        t.result(tid, "File written")
        t.user(f"then {n}")


def _ids(entries: list[Any], kind: str, field: str) -> list[str]:
    return [
        b[field]
        for e in entries
        for b in (e.get("message", {}).get("content") if isinstance(e.get("message", {}).get("content"), list) else [])
        if isinstance(b, dict) and b.get("type") == kind
    ]


def _texts(entries: list[Any]) -> list[Any]:
    """Everything fitting must leave alone: string prompts, text and thinking blocks, block order and kinds."""
    out: list[Any] = []
    for e in entries:
        content = e.get("message", {}).get("content") if isinstance(e.get("message"), dict) else None
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append([(b.get("type"), b.get("text"), b.get("thinking")) for b in content if isinstance(b, dict)])
    return out


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(st.sampled_from(STEPS), max_size=20),
    writes=st.lists(st.integers(0, 400), max_size=4),
    budget=st.integers(1, 30_000),
)
def test_fit_keeps_pairs_and_prompts_meets_the_budget_when_it_can_and_is_idempotent(
    steps: list[str], writes: list[int], budget: int, tmp_path: Path
) -> None:
    t = _build(steps)
    _with_bulky_inputs(t, writes)
    _build(steps[:3], t)
    before = copy.deepcopy(t.entries)
    policy = TrimPolicy(spill_dirname="spill")
    out, report = fit(t.entries, budget, policy, tmp_path)

    assert t.entries == before, "the input was modified"
    # Pairs: the same calls and results, in the same places; fitting only replaces content.
    assert _ids(out, "tool_use", "id") == _ids(before, "tool_use", "id")
    assert _ids(out, "tool_result", "tool_use_id") == _ids(before, "tool_result", "tool_use_id")
    assert len(out) == len(before)
    # Prompts and the model's words (the first prompt among them) are never touched.
    assert _texts(out) == _texts(before)
    assert out[0] == before[0]
    # Within the budget whenever moving everything movable gets there; the report says the size either way.
    floor = history_chars(fit(before, 1, policy, tmp_path, write_spill=False).entries)
    size = history_chars(out)
    assert report.sent_chars == size and report.budget == budget
    if floor <= budget:
        assert size <= budget and not report.over_budget
    else:
        assert size == floor and report.over_budget == size - budget
    # Idempotent: fitting what was fitted changes nothing.
    again = fit(out, budget, policy, tmp_path)
    assert again.entries == out and again.report.fitted == 0
    # Every moved text is one Read away, whole.
    originals = {
        b2 if isinstance(b2, str) else "": True
        for e in before
        for b in (e["message"]["content"] if isinstance(e.get("message", {}).get("content"), list) else [])
        for b2 in ([b.get("content")] + list((b.get("input") or {}).values()) if isinstance(b, dict) else [])
    }
    for path in POINTER.findall(str(out)):
        assert (tmp_path / path).read_text(encoding="utf-8") in originals


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(st.sampled_from(STEPS), max_size=20),
    writes=st.lists(st.integers(0, 400), max_size=3),
    budget=st.integers(1, 20_000),
    enabled=st.booleans(),
)
def test_a_budget_in_the_rewrite_is_fit_after_the_reference_steps(
    steps: list[str], writes: list[int], budget: int, enabled: bool, tmp_path: Path
) -> None:
    t = _build(steps)
    _with_bulky_inputs(t, writes)
    chosen: dict[str, Any] = {
        "ephemeral": EphemeralPolicy(keep_recent=1),
        "trim_policy": TrimPolicy(keep_recent=1, min_chars=1000, enabled=enabled, budget=budget),
        "prune_policy": PrunePolicy(),
    }
    unbounded = {**chosen, "trim_policy": TrimPolicy(keep_recent=1, min_chars=1000, enabled=enabled)}
    expected, expected_report = _reference(copy.deepcopy(t.entries), tmp_path, **unbounded)
    fitted = fit(expected, budget, chosen["trim_policy"], tmp_path)
    got = rewrite(t.entries, tmp_path, **chosen)
    assert got.entries == fitted.entries
    assert got.report == expected_report + fitted.report
    assert rewrite_report(iter(copy.deepcopy(t.entries)), tmp_path, **chosen) == got.report


def test_oldest_outputs_go_first_then_inputs_and_the_newest_stay(tmp_path: Path) -> None:
    t = Transcript()
    t.user("The brief: " + "b" * 5000)
    tid = t.call("Write", {"file_path": "/ws/a.py", "content": "a" * 20_000})
    t.result(tid, "ok")
    old = t.bash("cat old.log", "o" * 30_000)
    new = t.bash("cat new.log", "n" * 30_000)
    total = history_chars(t.entries)

    out, report = fit(t.entries, total - 20_000, TrimPolicy(), tmp_path)
    results: dict[str, Any] = {}
    for e in out:
        content = e["message"]["content"]
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_result":
                results[b["tool_use_id"]] = b["content"]
    assert results[old].startswith("[Earlier tool result trimmed") and results[new] == "n" * 30_000
    assert report.fitted == 1 and not report.over_budget
    assert out[0] == t.entries[0]

    out, report = fit(t.entries, 8_000, TrimPolicy(), tmp_path)
    write = next(b for e in out for b in e["message"]["content"] if isinstance(b, dict) and b.get("name") == "Write")
    assert write["input"]["file_path"] == "/ws/a.py"
    assert write["input"]["content"].startswith("[Earlier tool input trimmed: 20,000 characters saved to ")
    assert report.fitted == 3 and report.sent_chars <= 8_000
    assert out[0] == t.entries[0]  # the brief stays whole

    # Below the floor: everything movable moved, and the report says by how much it is still over.
    out, report = fit(t.entries, 1_000, TrimPolicy(), tmp_path)
    assert report.over_budget == report.sent_chars - 1_000 > 0
    assert "over the budget of 1,000" in report.summary()


def test_the_layered_load_fits_its_budget_and_reports_it(tmp_path: Path) -> None:
    import anyio

    t = Transcript()
    t.user("go")
    for n in range(30):
        t.bash(f"cat {n}.log", f"{n} " * 5000)
    key: Any = {"project_key": "p", "session_id": "s"}
    backend = SqliteSessionStore(tmp_path / "s.db")
    anyio.run(backend.append, key, t.entries)
    layers = PruningSessionStore(backend, tmp_path, policy=TrimPolicy(enabled=False, mask_over=None, budget=50_000))
    loaded = anyio.run(layers.load, key)
    assert loaded is not None and history_chars(loaded) <= 50_000
    report = layers.last_report
    assert report.budget == 50_000 and report.sent_chars == history_chars(loaded) and report.fitted > 0
    assert report.trimmed == 0  # the count rule is off; only the budget moved outputs
    backend.close()


def test_a_report_without_a_budget_is_unchanged_in_truth_and_summary() -> None:
    assert not LoadReport(sent_chars=5, budget=10)
    assert LoadReport(sent_chars=15, budget=10).over_budget == 5
    assert LoadReport(sent_chars=15).over_budget == 0
    with pytest.raises(ValueError, match="budget"):
        TrimPolicy(budget=0)


def test_a_long_session_is_masked_by_default_and_a_short_one_is_not(tmp_path: Path) -> None:
    """Observation masking: past ``mask_over`` characters of tool output the count rule runs even when trimming
    is off (the default resume); below it, and with ``mask_over=None``, nothing is trimmed."""
    t = Transcript()
    t.user("go")
    for n in range(14):
        t.bash(f"cat {n}.log", f"{n} " * 2500)  # 5,000 characters each: 70,000 in all
    off = TrimPolicy(enabled=False)
    assert trim_report_of(t.entries[:10], off, tmp_path).trimmed == 0  # 4 outputs: 20,000, a short session
    long = trim_report_of(t.entries, off, tmp_path)
    assert long.trimmed == 4 and long.kept == 10
    assert trim_report_of(t.entries, TrimPolicy(enabled=False, mask_over=None), tmp_path).trimmed == 0


def trim_report_of(entries: list[Any], policy: TrimPolicy, workspace: Path) -> LoadReport:
    return rewrite(entries, workspace, ephemeral=None, trim_policy=policy, prune_policy=None, write_spill=False).report
