"""Compaction plans: the Avro content of a ``<t>.compaction.requested`` instant.

Example:
    >>> ops = [CompactionOperation("dt=1", "f-0", "001", "f-0_0-1-0_001.parquet", (".f-0_001.log.1_0-2-0",))]
    >>> decode_plan(encode_plan(ops)) == ops
    True
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "operations", "type": ["null", {"type": "array", "items": {
            "type": "record",
            "name": "HoodieCompactionOperation",
            "fields": [
                {"name": "baseInstantTime", "type": ["null", "string"], "default": None},
                {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": None},
                {"name": "dataFilePath", "type": ["null", "string"], "default": None},
                {"name": "fileId", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": None},
                {"name": "bootstrapFilePath", "type": ["null", "string"], "default": None},
            ],
        }}], "default": None},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
})


@dataclass(frozen=True)
class CompactionOperation:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]


def encode_plan(operations: list[CompactionOperation]) -> bytes:
    records = [{
        "operations": [{
            "baseInstantTime": op.base_instant, "deltaFilePaths": list(op.log_files), "dataFilePath": op.base_file,
            "fileId": op.file_id, "partitionPath": op.partition_path, "metrics": {}, "bootstrapFilePath": None,
        } for op in operations],
        "extraMetadata": {},
        "version": 2,
    }]
    buf = io.BytesIO()
    fastavro.writer(buf, PLAN_SCHEMA, records)
    return buf.getvalue()


def decode_plan(data: bytes) -> list[CompactionOperation]:
    if not data:
        return []
    records = list(fastavro.reader(io.BytesIO(data)))
    ops = (records[0].get("operations") or []) if records else []
    return [
        CompactionOperation(op.get("partitionPath") or "", op["fileId"], op.get("baseInstantTime") or "",
                            op.get("dataFilePath") or None, tuple(op.get("deltaFilePaths") or []))
        for op in ops
    ]
