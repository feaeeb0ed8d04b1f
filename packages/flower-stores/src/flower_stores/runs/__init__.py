"""`RunRecords`: a run's manifest rows and step lineage, kept in the store beside its transcripts — the protocol,
its rules and async surface over a backend's primitives (`RunRecordMethods`), and `RunRecordsThrough` for the
wrappers that pass it on."""

from ._run_records import EncodedRow, RunRecordMethods, RunRecords, RunRecordsThrough, encode_rows

__all__ = ["EncodedRow", "RunRecordMethods", "RunRecords", "RunRecordsThrough", "encode_rows"]
