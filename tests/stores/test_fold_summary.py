"""`fold_summary` (the append path's fold) gives exactly the SDK's `fold_session_summary` on any batch."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import fold_session_summary
from hypothesis import given, settings
from hypothesis import strategies as st

from flower_stores.backends._summary import fold_summary

KEY: Any = {"project_key": "p", "session_id": "s"}

_text = st.sampled_from(["", "a", "b", "/clear", "<command-name>/x</command-name>", "hello there"])
_maybe_text = st.one_of(st.none(), _text, st.integers())
_entry = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["user", "assistant", "tag", "summary", "system"]),
        "timestamp": st.sampled_from(["2026-01-02T03:04:05.000Z", "2026-01-02T03:04:06Z", "not a time", 5]),
        "isSidechain": st.booleans(),
        "cwd": _maybe_text,
        "customTitle": _maybe_text,
        "aiTitle": _maybe_text,
        "lastPrompt": _maybe_text,
        "summary": _maybe_text,
        "gitBranch": _maybe_text,
        "tag": _maybe_text,
        "isMeta": st.booleans(),
        "message": st.one_of(
            st.fixed_dictionaries({"content": _text}),
            st.fixed_dictionaries(
                {
                    "content": st.lists(
                        st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_result"]), "text": _text}),
                        max_size=2,
                    )
                }
            ),
        ),
    },
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_entry, max_size=12), min_size=1, max_size=5))
def test_batch_by_batch_the_summary_is_the_sdks(batches: list[list[dict[str, Any]]]) -> None:
    ours: Any = None
    theirs: Any = None
    for batch in batches:
        ours = fold_summary(ours, KEY, batch)  # type: ignore[arg-type]
        theirs = fold_session_summary(theirs, KEY, batch)  # type: ignore[arg-type]
        assert ours == theirs


def test_a_settled_summary_folds_only_what_can_change_it() -> None:
    first: Any = [
        {
            "type": "user",
            "timestamp": "2026-01-02T03:04:05Z",
            "isSidechain": False,
            "cwd": "/w",
            "message": {"content": "build it"},
        }
    ]
    prev = fold_summary(None, KEY, first)
    batch: Any = [{"type": "assistant", "gitBranch": f"b{i}", "timestamp": "2026-01-02T03:04:05Z"} for i in range(100)]
    batch[40]["customTitle"] = "T"
    batch.append({"type": "tag", "tag": "x"})
    assert fold_summary(prev, KEY, batch) == fold_session_summary(prev, KEY, batch)
    assert fold_summary(prev, KEY, batch)["data"]["git_branch"] == "b99"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_entry, min_size=2, max_size=30), min_size=1, max_size=4))
def test_after_a_settled_start_the_summary_is_the_sdks(batches: list[list[dict[str, Any]]]) -> None:
    start: Any = [
        {
            "type": "user",
            "timestamp": "2026-01-02T03:04:05Z",
            "isSidechain": False,
            "cwd": "/w",
            "message": {"content": "go"},
        }
    ]
    ours: Any = fold_summary(None, KEY, start)
    theirs: Any = fold_session_summary(None, KEY, start)
    for batch in batches:
        ours = fold_summary(ours, KEY, batch)  # type: ignore[arg-type]
        theirs = fold_session_summary(theirs, KEY, batch)  # type: ignore[arg-type]
        assert ours == theirs
