"""The Avro content of rollback and restore instants, in Hudi's format.

- ``<t>.rollback.requested`` holds a ``HoodieRollbackPlan``: the instant to roll back and, per file
  group it wrote, the files to delete (full paths, as Hudi writes them); ``<t>.rollback.inflight``
  is empty; ``<t>.rollback`` holds a ``HoodieRollbackMetadata``: what was deleted.
- ``<t>.restore.requested`` holds a ``HoodieRestorePlan`` (the instants to roll back, newest first,
  and the savepoint); ``<t>.restore`` a ``HoodieRestoreMetadata`` with the rollback metadata of each.

Example:
    >>> plan = RollbackPlan("20240101000000000", "commit", [RollbackRequest("dt=1", "f-0", "20240101000000000",
    ...                                                                     ["file:///t/dt=1/f-0_0-1-0_20240101000000000.parquet"])])
    >>> decode_plan(encode_plan(plan)) == plan
    True
    >>> meta = RollbackMetadata("20240102000000000", 5, "20240101000000000", "commit",
    ...                         {"dt=1": ["file:///t/dt=1/f-0_0-1-0_20240101000000000.parquet"]})
    >>> decode_metadata(encode_metadata(meta)) == meta, meta.total_files_deleted
    (True, 1)
    >>> restore = RestorePlan("20231231000000000", [("20240101000000000", "commit")])
    >>> decode_restore_plan(encode_restore_plan(restore)) == restore
    True
    >>> decode_restore_metadata(encode_restore_metadata("20240102000000001", 7, [meta]))
    ['20240101000000000']
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

from hudiql.errors import damaged_file
from hudiql.timeline.archived import ROLLBACK_METADATA_SCHEMA

_NAMESPACE = "org.apache.hudi.avro.model"
_INSTANT_INFO = {"type": "record", "name": "HoodieInstantInfo", "fields": [
    {"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"},
]}

PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRollbackPlan", "namespace": _NAMESPACE, "fields": [
        {"name": "instantToRollback", "type": ["null", _INSTANT_INFO], "default": None},
        {"name": "RollbackRequests", "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieRollbackRequest", "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "fileId", "type": ["null", "string"], "default": None},
                {"name": "latestBaseInstant", "type": ["null", "string"], "default": None},
                {"name": "filesToBeDeleted", "type": {"type": "array", "items": "string"}, "default": []},
                {"name": "logBlocksToBeDeleted", "type": ["null", {"type": "map", "values": "long"}], "default": None},
            ]}}], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
})
METADATA_SCHEMA = fastavro.parse_schema(ROLLBACK_METADATA_SCHEMA)
RESTORE_PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRestorePlan", "namespace": _NAMESPACE, "fields": [
        {"name": "instantsToRollback", "type": {"type": "array", "items": _INSTANT_INFO}, "default": []},
        {"name": "version", "type": ["int", "null"], "default": 2},
        {"name": "savepointToRestoreTimestamp", "type": ["string", "null"], "default": None},
    ],
})
# The rollback metadata's definition comes first: it defines HoodieInstantInfo, which restoreInstantInfo names.
RESTORE_METADATA_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRestoreMetadata", "namespace": _NAMESPACE, "fields": [
        {"name": "startRestoreTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "instantsToRollback", "type": {"type": "array", "items": "string"}},
        {"name": "hoodieRestoreMetadata", "type": {"type": "map", "values": {
            "type": "array", "items": ["null", ROLLBACK_METADATA_SCHEMA]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "restoreInstantInfo", "type": {"type": "array", "items": "HoodieInstantInfo"}, "default": []},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None},
    ],
})


@dataclass(frozen=True)
class RollbackRequest:
    """The files of one file group (``file_id`` None: of a partition) that a rollback deletes."""

    partition_path: str
    file_id: str | None
    latest_base_instant: str | None
    files: list[str]  # full paths


@dataclass(frozen=True)
class RollbackPlan:
    instant_time: str  # the instant rolled back
    action: str
    requests: list[RollbackRequest]


@dataclass(frozen=True)
class RollbackMetadata:
    start_rollback_time: str
    time_taken_ms: int
    instant_time: str  # the instant rolled back
    action: str
    deleted: dict[str, list[str]]  # partition -> full paths deleted

    @property
    def total_files_deleted(self) -> int:
        return sum(len(paths) for paths in self.deleted.values())


@dataclass(frozen=True)
class RestorePlan:
    savepoint: str
    instants: list[tuple[str, str]]  # (instant time, action), newest first


def _write(schema: dict, record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [record])
    return buf.getvalue()


def _read(schema: dict, data: bytes, what: str) -> dict:
    try:
        return next(iter(fastavro.reader(io.BytesIO(data), reader_schema=schema)))
    except (ValueError, StopIteration, EOFError, TypeError, KeyError) as exc:
        raise damaged_file(what, f"is not a readable {schema['name']} ({type(exc).__name__})") from None


def encode_plan(plan: RollbackPlan) -> bytes:
    return _write(PLAN_SCHEMA, {
        "instantToRollback": {"commitTime": plan.instant_time, "action": plan.action},
        "RollbackRequests": [
            {"partitionPath": r.partition_path, "fileId": r.file_id, "latestBaseInstant": r.latest_base_instant,
             "filesToBeDeleted": list(r.files), "logBlocksToBeDeleted": None}
            for r in plan.requests
        ],
        "version": 1,
    })


def decode_plan(data: bytes, what: str = "rollback plan") -> RollbackPlan:
    record = _read(PLAN_SCHEMA, data, what)
    target = record["instantToRollback"] or {}
    requests = [
        RollbackRequest(r["partitionPath"], r["fileId"], r["latestBaseInstant"], list(r["filesToBeDeleted"] or []))
        for r in record["RollbackRequests"] or []
    ]
    return RollbackPlan(target.get("commitTime", ""), target.get("action", ""), requests)


def _metadata_record(meta: RollbackMetadata) -> dict:
    return {
        "startRollbackTime": meta.start_rollback_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "commitsRollback": [meta.instant_time],
        "partitionMetadata": {
            p: {"partitionPath": p, "successDeleteFiles": paths, "failedDeleteFiles": [],
                "rollbackLogFiles": {}, "writtenLogFiles": {}}
            for p, paths in meta.deleted.items()
        },
        "version": 1,
        "instantsRollback": [{"commitTime": meta.instant_time, "action": meta.action}],
    }


def encode_metadata(meta: RollbackMetadata) -> bytes:
    return _write(METADATA_SCHEMA, _metadata_record(meta))


def decode_metadata(data: bytes, what: str = "rollback metadata") -> RollbackMetadata:
    record = _read(METADATA_SCHEMA, data, what)
    infos = record.get("instantsRollback") or []
    commits = record["commitsRollback"] or [""]
    return RollbackMetadata(
        record["startRollbackTime"], record["timeTakenInMillis"], commits[0], infos[0]["action"] if infos else "",
        {p: list(m["successDeleteFiles"]) for p, m in record["partitionMetadata"].items()},
    )


def encode_restore_plan(plan: RestorePlan) -> bytes:
    return _write(RESTORE_PLAN_SCHEMA, {
        "instantsToRollback": [{"commitTime": t, "action": a} for t, a in plan.instants],
        "version": 2,
        "savepointToRestoreTimestamp": plan.savepoint,
    })


def decode_restore_plan(data: bytes, what: str = "restore plan") -> RestorePlan:
    record = _read(RESTORE_PLAN_SCHEMA, data, what)
    return RestorePlan(record["savepointToRestoreTimestamp"] or "",
                       [(i["commitTime"], i["action"]) for i in record["instantsToRollback"]])


def encode_restore_metadata(start_time: str, time_taken_ms: int, rollbacks: list[RollbackMetadata]) -> bytes:
    return _write(RESTORE_METADATA_SCHEMA, {
        "startRestoreTime": start_time,
        "timeTakenInMillis": time_taken_ms,
        "instantsToRollback": [m.instant_time for m in rollbacks],
        "hoodieRestoreMetadata": {m.instant_time: [_metadata_record(m)] for m in rollbacks},
        "version": 1,
        "restoreInstantInfo": [{"commitTime": m.instant_time, "action": m.action} for m in rollbacks],
        "extraMetadata": None,
    })


def decode_restore_metadata(data: bytes, what: str = "restore metadata") -> list[str]:
    """The instants a completed restore rolled back."""
    return list(_read(RESTORE_METADATA_SCHEMA, data, what)["instantsToRollback"])
