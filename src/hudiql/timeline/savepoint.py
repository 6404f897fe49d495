"""The Avro content of a completed ``<t>.savepoint``: Hudi's ``HoodieSavepointMetadata``, the
base files a savepoint keeps, per partition. Cleaning never deletes them.

Example:
    >>> data = encode_savepoint("admin", 1700000000, "before the backfill", {"dt=1": ["f-0_0-1-0_001.parquet"]})
    >>> savepointed_files(data), savepointed_paths(data)
    ({'f-0_0-1-0_001.parquet'}, {'dt=1/f-0_0-1-0_001.parquet'})
"""

from __future__ import annotations

import io

import fastavro

from hudiql.layout import join_partition

SAVEPOINT_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieSavepointMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "savepointedBy", "type": "string"},
        {"name": "savepointedAt", "type": "long"},
        {"name": "comments", "type": "string"},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record",
            "name": "HoodieSavepointPartitionMetadata",
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "savepointDataFile", "type": {"type": "array", "items": "string"}},
            ],
        }}},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
})


def encode_savepoint(by: str, at_seconds: int, comments: str, files: dict[str, list[str]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, SAVEPOINT_SCHEMA, [{
        "savepointedBy": by, "savepointedAt": at_seconds, "comments": comments,
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names} for p, names in files.items()},
        "version": 1,
    }])
    return buf.getvalue()


def _partition_files(data: bytes) -> dict[str, list[str]]:
    record = next(iter(fastavro.reader(io.BytesIO(data))))
    return {p: meta["savepointDataFile"] for p, meta in (record.get("partitionMetadata") or {}).items()}


def savepointed_files(data: bytes) -> set[str]:
    """The names of the data files a savepoint keeps."""
    return {name for names in _partition_files(data).values() for name in names}


def savepointed_paths(data: bytes) -> set[str]:
    """The data files a savepoint keeps, as paths relative to the table."""
    return {join_partition(p, name) for p, names in _partition_files(data).items() for name in names}
