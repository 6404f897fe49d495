"""The Avro content of clean instants: Hudi's ``HoodieCleanerPlan`` (``<t>.clean.requested`` and
``<t>.clean.inflight``) and ``HoodieCleanMetadata`` (``<t>.clean``).

A plan (version 2) names the files to delete by their full paths, per partition; the metadata
names the deleted files by name, per partition, with the earliest commit the clean retained.

Example:
    >>> plan = CleanerPlan("KEEP_LATEST_COMMITS", "002", "003", {"dt=1": ["/t/dt=1/f-0_0-1-0_001.parquet"]})
    >>> decode_plan(encode_plan(plan)) == plan
    True
    >>> meta = CleanMetadata("004", 12, "002", "003", "KEEP_LATEST_COMMITS", {"dt=1": ["f-0_0-1-0_001.parquet"]})
    >>> decode_metadata(encode_metadata(meta)) == meta, meta.total_files_deleted
    (True, 1)
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import fastavro

from hudiql.timeline.active import COMMIT, State

_STRING_MAP = ["null", {"type": "map", "values": "string"}]

PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieCleanerPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "earliestInstantToRetain", "type": ["null", {
            "type": "record",
            "name": "HoodieActionInstant",
            "fields": [
                {"name": "timestamp", "type": "string"},
                {"name": "action", "type": "string"},
                {"name": "state", "type": "string"},
            ],
        }], "default": None},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {"name": "policy", "type": "string"},
        {"name": "filesToBeDeletedPerPartition",
         "type": ["null", {"type": "map", "values": {"type": "array", "items": "string"}}], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "filePathsToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": {
            "type": "array",
            "items": {
                "type": "record",
                "name": "HoodieCleanFileInfo",
                "fields": [
                    {"name": "filePath", "type": ["null", "string"], "default": None},
                    {"name": "isBootstrapBaseFile", "type": ["null", "boolean"], "default": None},
                ],
            },
        }}], "default": None},
        {"name": "partitionsToBeDeleted", "type": ["null", {"type": "array", "items": "string"}], "default": None},
        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
    ],
})

_PARTITION_METADATA = {
    "type": "record",
    "name": "HoodieCleanPartitionMetadata",
    "fields": [
        {"name": "partitionPath", "type": "string"},
        {"name": "policy", "type": "string"},
        {"name": "deletePathPatterns", "type": {"type": "array", "items": "string"}},
        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "isPartitionDeleted", "type": ["null", "boolean"], "default": None},
    ],
}

METADATA_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieCleanMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "policy", "type": "string", "default": ""},
        {"name": "startCleanTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": "string"},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {"name": "partitionMetadata", "type": {"type": "map", "values": _PARTITION_METADATA}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "bootstrapPartitionMetadata",
         "type": ["null", {"type": "map", "values": "HoodieCleanPartitionMetadata"}], "default": None},
    ],
})

#: The plan and metadata versions hudiql writes (v2: full paths in the plan, as Hudi 0.10+).
VERSION = 2


def _avro(schema: dict, record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [record])
    return buf.getvalue()


def _record(data: bytes) -> dict:
    return next(iter(fastavro.reader(io.BytesIO(data))))


@dataclass(frozen=True)
class CleanerPlan:
    """What one clean deletes: full paths per partition; ``earliest_commit_to_retain`` is
    ``None`` for KEEP_LATEST_FILE_VERSIONS (and when no commit is old enough)."""

    policy: str
    earliest_commit_to_retain: str | None
    last_completed_commit: str
    files: dict[str, list[str]] = field(default_factory=dict)
    earliest_action: str = COMMIT

    @property
    def is_empty(self) -> bool:
        return not any(self.files.values())


def encode_plan(plan: CleanerPlan) -> bytes:
    earliest = plan.earliest_commit_to_retain
    return _avro(PLAN_SCHEMA, {
        "earliestInstantToRetain": (
            {"timestamp": earliest, "action": plan.earliest_action, "state": State.COMPLETED.name} if earliest else None
        ),
        "lastCompletedCommitTimestamp": plan.last_completed_commit,
        "policy": plan.policy,
        "filesToBeDeletedPerPartition": {},
        "version": VERSION,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": f, "isBootstrapBaseFile": False} for f in files] for p, files in plan.files.items()
        },
        "partitionsToBeDeleted": [],
        "extraMetadata": None,
    })


def decode_plan(data: bytes) -> CleanerPlan:
    """A plan of version 1 (file names) or 2 (full paths); version 1 names are returned as written,
    relative to their partition."""
    record = _record(data)
    earliest = record.get("earliestInstantToRetain")
    files = {p: [f["filePath"] for f in infos if f.get("filePath")]
             for p, infos in (record.get("filePathsToBeDeletedPerPartition") or {}).items()}
    if not any(files.values()):
        files = {p: list(names) for p, names in (record.get("filesToBeDeletedPerPartition") or {}).items()}
    return CleanerPlan(record["policy"], earliest["timestamp"] if earliest else None,
                       record.get("lastCompletedCommitTimestamp") or "", files,
                       earliest["action"] if earliest else COMMIT)


@dataclass(frozen=True)
class CleanMetadata:
    """What a completed clean deleted (file names per partition)."""

    start_clean_time: str
    time_taken_ms: int
    earliest_commit_to_retain: str
    last_completed_commit: str
    policy: str
    deleted: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    version: int = VERSION

    @property
    def total_files_deleted(self) -> int:
        return sum(len(names) for names in self.deleted.values())


def encode_metadata(meta: CleanMetadata) -> bytes:
    partitions = sorted(set(meta.deleted) | set(meta.failed))
    return _avro(METADATA_SCHEMA, {
        "policy": meta.policy,
        "startCleanTime": meta.start_clean_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "earliestCommitToRetain": meta.earliest_commit_to_retain,
        "lastCompletedCommitTimestamp": meta.last_completed_commit,
        "partitionMetadata": {p: {
            "partitionPath": p, "policy": meta.policy,
            "deletePathPatterns": meta.deleted.get(p, []) + meta.failed.get(p, []),
            "successDeleteFiles": meta.deleted.get(p, []), "failedDeleteFiles": meta.failed.get(p, []),
            "isPartitionDeleted": False,
        } for p in partitions},
        "version": meta.version,
        "bootstrapPartitionMetadata": {},
    })


def decode_metadata(data: bytes) -> CleanMetadata:
    record = _record(data)
    partitions = record.get("partitionMetadata") or {}
    return CleanMetadata(
        record["startCleanTime"], record["timeTakenInMillis"], record.get("earliestCommitToRetain") or "",
        record.get("lastCompletedCommitTimestamp") or "", record.get("policy") or "",
        {p: list(m["successDeleteFiles"]) for p, m in partitions.items() if m["successDeleteFiles"]},
        {p: list(m["failedDeleteFiles"]) for p, m in partitions.items() if m["failedDeleteFiles"]},
        record.get("version") or 1,
    )
