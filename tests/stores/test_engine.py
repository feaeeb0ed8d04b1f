"""rewrite (one scan, what every layered load runs) equals the reference steps composed: prune(trim(expire(x)))."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stores._transcripts import Transcript
from stores.test_chain import STEPS, _build

from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    TrimPolicy,
    expire,
    prune,
    rewrite,
    rewrite_report,
    trim,
)
from flower_stores.rewrite import rewrite_once

ROOT = Path(__file__).resolve().parents[2]


def _reference(
    entries: list[dict[str, Any]], workspace: Path, ephemeral: Any, trim_policy: Any, prune_policy: Any
) -> tuple[list[Any], LoadReport]:
    report = LoadReport()
    current = list(entries)
    if ephemeral is not None and ephemeral.enabled:
        current, step = expire(current, ephemeral)
        report += step
    if trim_policy is not None:  # (disabled, it still masks a long session: see TrimPolicy.mask_over)
        current, step = trim(current, trim_policy, workspace)
        report += step
    if prune_policy is not None:
        current, step = prune(current, prune_policy)
        report += step
    return current, report


def _extra(t: Transcript, extras: list[str]) -> None:
    """Shapes the base builder lacks: legacy interrupts, a glance of exactly max_chars, split calls with a denial."""
    for n, kind in enumerate(extras):
        if kind == "legacy_interrupt":
            tid = t.call("Bash", {"command": "git status"})
            t.result(tid, "[Request interrupted by user for tool use]", is_error=True)
        elif kind == "edge_glance":
            t.bash("ls -R", "x" * 2000)
        elif kind == "denied_in_split":
            t.assistant(
                {"type": "text", "text": "trying"},
                {"type": "tool_use", "id": f"d{n}", "name": "Bash", "input": {"command": "rm q"}},
            )
            t.result(
                f"d{n}",
                "denied",
                is_error=True,
                toolDenialKind="permission-rule",
                permissionDecision={"decision": "reject"},
            )
        elif kind == "image":
            tid = t.call("Read", {"file_path": "/ws/p.png"})
            t.result(
                tid,
                [{"type": "text", "text": "y" * 3000}, {"type": "image", "source": {"type": "base64", "data": "AA"}}],
            )
        elif kind == "split_across_errors":
            # One assistant message whose two pieces are separated by removed entries: its unanswered calls
            # are healed once, after the last piece, however many removals sit in between.
            mid = f"msg_split{n}"
            for piece, errors in ((0, 2), (1, 0)):
                t.add(
                    {
                        "type": "assistant",
                        "message": {
                            "id": mid,
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": f"s{n}-{piece}",
                                    "name": "Bash",
                                    "input": {"command": "make"},
                                }
                            ],
                        },
                    }
                )
                for _ in range(errors):
                    t.api_error()
        elif kind == "boundary":
            t.add(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"b{n}",
                    "parentUuid": None,
                    "logicalParentUuid": t.leaf,
                },
                chain=False,
            )


policies = st.fixed_dictionaries(
    {
        "ephemeral": st.one_of(
            st.none(),
            st.builds(
                EphemeralPolicy,
                enabled=st.booleans(),
                keep_recent=st.integers(0, 4),
                max_chars=st.sampled_from([50, 2000]),
            ),
        ),
        "trim_policy": st.one_of(
            st.none(),
            st.builds(
                TrimPolicy,
                enabled=st.booleans(),
                keep_recent=st.integers(0, 3),
                min_chars=st.sampled_from([40, 1000, 2000]),
                mask_over=st.sampled_from([None, 0, 3000, 50_000]),
            ),
        ),
        "prune_policy": st.one_of(
            st.none(),
            st.builds(
                PrunePolicy,
                drop_api_errors=st.booleans(),
                neutralize_interrupts=st.booleans(),
                heal_orphans=st.booleans(),
                keep_denials=st.integers(0, 3),
            ),
        ),
    }
)


@settings(
    max_examples=500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(st.sampled_from(STEPS), max_size=25),
    extras=st.lists(
        st.sampled_from(
            ["legacy_interrupt", "edge_glance", "denied_in_split", "image", "boundary", "split_across_errors"]
        ),
        max_size=4,
    ),
    chosen=policies,
)
def test_one_scan_equals_the_composed_steps(
    steps: list[str], extras: list[str], chosen: dict[str, Any], tmp_path: Path
) -> None:
    t = _build(steps)
    _extra(t, extras)
    _build(steps[:3], t)  # more after the extras, so they are not always the newest
    before = copy.deepcopy(t.entries)
    expected, expected_report = _reference(copy.deepcopy(t.entries), tmp_path, **chosen)
    got, report = rewrite(t.entries, tmp_path, **chosen)
    assert got == expected
    assert report == expected_report
    assert t.entries == before
    # The layers' in-place path over a fresh parse of our own SQLite store gives the same.
    owned = rewrite_once(
        copy.deepcopy(t.entries),
        tmp_path,
        chosen["ephemeral"],
        chosen["trim_policy"],
        chosen["prune_policy"],
        owned=True,
    )
    assert owned == (expected, expected_report)
    # The report alone (no transcript built, no parent links kept) is the full rewrite's, notes included; from
    # a generator too, read once, as `flower analyze` feeds it.
    assert rewrite_report(t.entries, tmp_path, **chosen) == expected_report
    assert rewrite_report(iter(copy.deepcopy(t.entries)), tmp_path, **chosen) == expected_report
    assert t.entries == before


def test_a_message_split_by_a_run_of_removed_entries_is_healed_once_after_its_last_piece(tmp_path: Path) -> None:
    t = Transcript()
    t.user("go")
    _extra(t, ["split_across_errors"])
    t.user("next")
    expected, expected_report = _reference(t.entries, tmp_path, None, None, PrunePolicy())
    got, report = rewrite(t.entries, tmp_path, prune_policy=PrunePolicy())
    assert got == expected and report == expected_report
    heals = [e for e in got if e.get("sourceToolAssistantUUID")]
    assert len(heals) == 1 and [b["tool_use_id"] for b in heals[0]["message"]["content"]] == ["s0-0", "s0-1"]


def _orphan_piece(t: Transcript, message_id: str, tool_id: str) -> None:
    t.add(
        {
            "type": "assistant",
            "message": {
                "id": message_id,
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "make"}}],
            },
        }
    )


@pytest.mark.parametrize(
    "pieces",
    [
        [("m1", "x"), ("m1", "x")],  # one message repeats its call id: healed once
        [("m1", "x"), ("m2", "x")],  # two messages orphan the same id: each heal carries it
        [("m1", "x"), ("m1", "y"), ("m2", "x"), ("m2", "y"), ("m1", "x")],
    ],
)
def test_the_report_alone_counts_heals_of_an_id_orphaned_twice_as_the_rewrite_does(
    pieces: list[tuple[str, str]], tmp_path: Path
) -> None:
    """The one count the report cannot take from the scan alone when a call id repeats: which pieces share a
    message (and so one heal entry) follows the parent links, which the report then looks up."""
    t = Transcript()
    t.user("go")
    for message_id, tool_id in pieces:
        _orphan_piece(t, message_id, tool_id)
        t.add({"type": "assistant", "isApiErrorMessage": True, "message": {"model": "<synthetic>", "content": []}})
    t.user("next")
    for chosen in ({"prune_policy": PrunePolicy()}, {"prune_policy": PrunePolicy(drop_api_errors=False)}):
        expected = rewrite(t.entries, tmp_path, **chosen).report
        assert expected.orphans_healed > 0
        assert rewrite_report(t.entries, tmp_path, **chosen) == expected


def test_the_report_alone_notes_a_removed_uuid_a_survivor_shares_as_the_rewrite_does(tmp_path: Path) -> None:
    """The scan of a report keeps no uuids; a removal looks them up, to note the one a survivor also carries."""
    t = Transcript()
    t.user("go")
    error = t.add({"type": "assistant", "isApiErrorMessage": True, "message": {"model": "<synthetic>", "content": []}})
    t.user("again")["uuid"] = error["uuid"]
    t.user("next")
    expected = rewrite(t.entries, tmp_path, prune_policy=PrunePolicy()).report
    assert expected.notes and expected.api_errors_dropped == 1
    assert rewrite_report(t.entries, tmp_path, prune_policy=PrunePolicy()) == expected


def test_equal_on_the_benchmark_session(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("flower_bench_stores", ROOT / "benchmarks" / "stores.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    session = bench.synthetic_session(3000, seed=3)
    chosen = {"ephemeral": EphemeralPolicy(), "trim_policy": TrimPolicy(), "prune_policy": PrunePolicy()}
    expected, expected_report = _reference(session, tmp_path, **chosen)
    got, report = rewrite(session, tmp_path, **chosen)
    assert got == expected and report == expected_report
    assert rewrite_report(session, tmp_path, **chosen) == expected_report
    assert (
        report.trimmed
        and report.expired
        and report.denials_dropped
        and report.api_errors_dropped
        and report.orphans_healed
    )


@pytest.mark.parametrize(
    "template", [EphemeralPolicy().text, "[{cmd} ran {age:,} results ago]", "{age}: {cmd} ({age})"]
)
def test_expiry_notes_equal_the_policys_placeholder_for_any_template(template: str, tmp_path: Path) -> None:
    t = Transcript()
    for n in range(12):
        t.bash(["git status", "ls -la\nwc -l x", "grep -n '{a}' f"][n % 3], f"output {n}")
    policy = EphemeralPolicy(keep_recent=1, text=template)
    assert rewrite(t.entries, tmp_path, ephemeral=policy) == expire(t.entries, policy)
