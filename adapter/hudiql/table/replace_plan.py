"""The Avro content of a ``<t>.replacecommit.requested`` instant: Hudi's ``HoodieRequestedReplaceMetadata``.

An overwrite or a dropped partition requests its replacecommit with every field null (what it
replaces is known when it completes); a clustering's request holds its plan and the operation
``CLUSTER``, which is how Hudi's readers tell the two apart.

Example:
    >>> decode_requested(encode_requested())
    {'operationType': None, 'clusteringPlan': None, 'extraMetadata': None, 'version': None}
"""

from __future__ import annotations

import io
from typing import Any

import fastavro

_STRING = ["null", "string"]
_STRING_MAP = ["null", {"type": "map", "values": "string"}]

REQUESTED_REPLACE_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieRequestedReplaceMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "operationType", "type": _STRING, "default": None},
        {"name": "clusteringPlan", "type": ["null", {
            "type": "record",
            "name": "HoodieClusteringPlan",
            "fields": [
                {"name": "inputGroups", "type": ["null", {"type": "array", "items": {
                    "type": "record",
                    "name": "HoodieClusteringGroup",
                    "fields": [
                        {"name": "slices", "type": ["null", {"type": "array", "items": {
                            "type": "record",
                            "name": "HoodieSliceInfo",
                            "fields": [
                                {"name": "dataFilePath", "type": _STRING, "default": None},
                                {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": None},
                                {"name": "fileId", "type": _STRING},
                                {"name": "partitionPath", "type": _STRING, "default": None},
                                {"name": "bootstrapFilePath", "type": _STRING, "default": None},
                                {"name": "version", "type": ["int", "null"], "default": 1},
                            ],
                        }}], "default": None},
                        {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": None},
                        {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
                        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
                        {"name": "version", "type": ["int", "null"], "default": 1},
                    ],
                }}], "default": None},
                {"name": "strategy", "type": ["null", {
                    "type": "record",
                    "name": "HoodieClusteringStrategy",
                    "fields": [
                        {"name": "strategyClassName", "type": _STRING, "default": None},
                        {"name": "strategyParams", "type": _STRING_MAP, "default": None},
                        {"name": "version", "type": ["int", "null"], "default": 1},
                    ],
                }], "default": None},
                {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
                {"name": "version", "type": ["int", "null"], "default": 1},
                {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": None},
            ],
        }], "default": None},
        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
})


def encode_requested() -> bytes:
    """The request of an overwrite or a dropped partition: every field null, as Hudi writes it."""
    buf = io.BytesIO()
    fastavro.writer(buf, REQUESTED_REPLACE_SCHEMA, [
        {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}
    ])
    return buf.getvalue()


def decode_requested(data: bytes) -> dict[str, Any] | None:
    """The request's record; ``None`` for an empty file (Hudi writes some requests empty)."""
    if not data:
        return None
    return next(iter(fastavro.reader(io.BytesIO(data))))
