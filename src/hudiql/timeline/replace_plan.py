"""The Avro content of a ``<t>.replacecommit.requested`` instant: Hudi's ``HoodieRequestedReplaceMetadata``.

An overwrite or a dropped partition requests its replacecommit with every field null (what it
replaces is known when it completes); a clustering's request holds its plan
(``HoodieClusteringPlan``) and the operation ``CLUSTER``, which is how Hudi's readers tell the two
apart.

Example:
    >>> decode_requested(encode_requested())
    {'operationType': None, 'clusteringPlan': None, 'extraMetadata': None, 'version': None}
    >>> plan = ClusteringPlan((ClusteringGroup((ClusteringSlice("dt=1", "f-0", "f-0_0-1-0_001.parquet", ()),), 1, 1.0),),
    ...                       ("id",))
    >>> decode_clustering(encode_clustering(plan, "file:///wh/t")) == plan, decode_clustering(encode_requested())
    (True, None)
"""

from __future__ import annotations

import io
import posixpath
from dataclasses import dataclass
from typing import Any

import fastavro

from hudiql.timeline.active import REPLACE_COMMIT, Instant, Timeline, as_layout_1

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


#: The operation of a clustering's request and commit.
CLUSTER = "CLUSTER"
#: Hudi's default executor of a size-based plan, named in the plan as Hudi names it.
_EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
_SORT_COLUMNS_PARAM = "hoodie.clustering.plan.strategy.sort.columns"


@dataclass(frozen=True)
class ClusteringSlice:
    """A file slice a clustering reads: its base file and log files (names, in its partition)."""

    partition_path: str
    file_id: str
    base_file: str | None
    log_files: tuple[str, ...]


@dataclass(frozen=True)
class ClusteringGroup:
    """Slices of one partition rewritten together into ``num_output_groups`` new file groups."""

    slices: tuple[ClusteringSlice, ...]
    num_output_groups: int
    size_mb: float  # the bytes it reads, base and log files, in MB (Hudi's TOTAL_IO_READ_MB)

    @property
    def partition_path(self) -> str:
        return self.slices[0].partition_path


@dataclass(frozen=True)
class ClusteringPlan:
    groups: tuple[ClusteringGroup, ...]
    sort_columns: tuple[str, ...]

    def file_groups(self) -> set[tuple[str, str]]:
        """(partition path, file id) of every file group the plan replaces."""
        return {(s.partition_path, s.file_id) for g in self.groups for s in g.slices}

    def partitions(self) -> list[str]:
        return sorted({g.partition_path for g in self.groups})


def encode_clustering(plan: ClusteringPlan, base_uri: str) -> bytes:
    """The request of a clustering (``base_uri``: Hudi's plans name files by their full path).
    Commit metadata is preserved (each record keeps its commit time), as Hudi's plans say."""
    def path(partition: str, name: str) -> str:
        return posixpath.join(base_uri, partition, name) if partition else posixpath.join(base_uri, name)

    groups = [{
        "slices": [{
            "dataFilePath": path(s.partition_path, s.base_file) if s.base_file else None,
            "deltaFilePaths": [path(s.partition_path, log) for log in s.log_files],
            "fileId": s.file_id, "partitionPath": s.partition_path, "bootstrapFilePath": None, "version": 1,
        } for s in g.slices],
        "metrics": {"TOTAL_IO_READ_MB": g.size_mb, "TOTAL_IO_WRITE_MB": g.size_mb, "TOTAL_IO_MB": 2 * g.size_mb,
                    "TOTAL_LOG_FILES": float(sum(len(s.log_files) for s in g.slices))},
        "numOutputFileGroups": g.num_output_groups, "extraMetadata": None, "version": 1,
    } for g in plan.groups]
    params = {_SORT_COLUMNS_PARAM: ",".join(plan.sort_columns)} if plan.sort_columns else {}
    record = {
        "operationType": CLUSTER,
        "clusteringPlan": {
            "inputGroups": groups,
            "strategy": {"strategyClassName": _EXECUTION_STRATEGY, "strategyParams": params, "version": 1},
            "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True,
        },
        "extraMetadata": {}, "version": 1,
    }
    buf = io.BytesIO()
    fastavro.writer(buf, REQUESTED_REPLACE_SCHEMA, [record])
    return buf.getvalue()


def decode_clustering(data: bytes) -> ClusteringPlan | None:
    """The plan of a clustering's request; ``None`` for the request of any other replacecommit."""
    record = decode_requested(data)
    if record is None or (record.get("operationType") or "").upper() != CLUSTER or not record.get("clusteringPlan"):
        return None
    plan = record["clusteringPlan"]
    groups = []
    for g in plan.get("inputGroups") or []:
        slices = tuple(
            ClusteringSlice(s.get("partitionPath") or "", s["fileId"],
                            posixpath.basename(s["dataFilePath"]) if s.get("dataFilePath") else None,
                            tuple(posixpath.basename(p) for p in s.get("deltaFilePaths") or []))
            for s in g.get("slices") or []
        )
        if slices:
            groups.append(ClusteringGroup(slices, g.get("numOutputFileGroups") or 1,
                                          (g.get("metrics") or {}).get("TOTAL_IO_READ_MB", 0.0)))
    params = (plan.get("strategy") or {}).get("strategyParams") or {}
    sort_columns = tuple(c.strip() for c in (params.get(_SORT_COLUMNS_PARAM) or "").split(",") if c.strip())
    return ClusteringPlan(tuple(groups), sort_columns)


def clustering_plan(timeline: Timeline, instant: Instant) -> ClusteringPlan | None:
    """The plan of ``instant`` when it is a clustering (a replacecommit whose request holds one)."""
    if as_layout_1(instant.action) != REPLACE_COMMIT or not timeline.storage.exists(timeline.requested_path(instant)):
        return None
    return decode_clustering(timeline.read_requested(instant))


def pending_clusterings(timeline: Timeline) -> list[tuple[Instant, ClusteringPlan]]:
    """The clusterings planned and not completed, oldest first, with their plans."""
    out = []
    for instant in timeline.pending((REPLACE_COMMIT,)):
        plan = clustering_plan(timeline, instant)
        if plan is not None:
            out.append((instant, plan))
    return out
