"""Reading Claude Code transcript entries: their blocks, copy-on-write edits of them (`_blocks`), and the
harness's own words for a call that did not run — denied, rejected or interrupted, in every harness version
(`_refusals`: `refusal`, `INTERRUPT`, `USER_FEEDBACK`)."""

from ._blocks import (
    REMOVE,
    Entry,
    all_but_newest,
    block_text,
    blocks,
    is_protected,
    replace_blocks,
    replaced_content,
    tool_result_blocks,
    tool_use_blocks,
)
from ._refusals import INTERRUPT, USER_FEEDBACK, refusal, result_text

__all__ = [
    "INTERRUPT",
    "REMOVE",
    "USER_FEEDBACK",
    "Entry",
    "all_but_newest",
    "block_text",
    "blocks",
    "is_protected",
    "refusal",
    "replace_blocks",
    "replaced_content",
    "result_text",
    "tool_result_blocks",
    "tool_use_blocks",
]
