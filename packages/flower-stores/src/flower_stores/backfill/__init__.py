"""`import_transcript`: fill a store's gaps from a session's local JSONL files — what the harness wrote that the
store lacks — idempotent by uuid, beneath any layer (`import_entries`, `ImportReport`, `transcript_files`)."""

from ._import import ImportReport, import_entries, import_transcript, transcript_files

__all__ = ["ImportReport", "import_entries", "import_transcript", "transcript_files"]
