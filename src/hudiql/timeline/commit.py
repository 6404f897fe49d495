"""Commit metadata: the content of a completed commit / deltacommit / replacecommit: JSON on
timeline layout 1 (table version 6), an Avro container of Hudi's ``HoodieCommitMetadata``
(``HoodieReplaceCommitMetadata`` for a replacecommit) on layout 2 (versions 8 and 9).

Example:
    >>> meta = CommitMetadata(operation_type="UPSERT")
    >>> meta.add(WriteStat("f-0", "dt=1", "dt=1/f-0_0-1-0_20240101000000000.parquet", num_writes=2, num_inserts=2))
    >>> json.loads(meta.to_json())["partitionToWriteStats"]["dt=1"][0]["numInserts"]
    2
    >>> CommitMetadata.decode(meta.to_json()).total("num_inserts")
    2
    >>> CommitMetadata.decode(meta.encode(2)).total("num_inserts")    # layout 2: Avro
    2
    >>> CommitMetadata.decode(b"{", "20240101000000000.commit")
    Traceback (most recent call last):
    hudiql.errors.FormatError: 20240101000000000.commit is corrupt (JSONDecodeError: ...); the table needs it: ...
"""

from __future__ import annotations

import copy
import io
import json
from dataclasses import asdict, dataclass, field, fields

import fastavro
import pyarrow as pa

from hudiql.errors import damaged_file


@dataclass
class WriteStat:
    """What one task wrote to one file group: one entry of ``partitionToWriteStats``."""

    file_id: str
    partition_path: str
    path: str
    prev_commit: str = "null"
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    file_size_in_bytes: int = 0
    base_file: str = ""
    log_files: list[str] = field(default_factory=list)
    log_version: int = 0
    log_offset: int = 0
    total_log_records: int = 0
    total_log_files: int = 0
    total_log_blocks: int = 0
    total_upsert_time_ms: int = 0
    total_create_time_ms: int = 0
    num_skipped_older: int = 0  # hudiql's count, not Hudi's: incoming rows older than the stored ones
    #: The file's value ranges (``metadata.column_stats.encode_ranges``), for the metadata table's
    #: column stats; handed from the write task to the driver, not written in the commit metadata.
    column_stats: str = ""
    #: The base file's bloom filter, as its footer holds it (type code, Base64 text), for the
    #: metadata table's bloom_filters; handed to the driver as ``column_stats`` is.
    bloom_filter_type: str = ""
    bloom_filter: str = ""

    _JSON_NAMES = {
        "file_id": "fileId", "partition_path": "partitionPath", "path": "path", "prev_commit": "prevCommit",
        "num_writes": "numWrites", "num_deletes": "numDeletes", "num_update_writes": "numUpdateWrites",
        "num_inserts": "numInserts", "total_write_bytes": "totalWriteBytes",
        "total_write_errors": "totalWriteErrors", "file_size_in_bytes": "fileSizeInBytes",
        "base_file": "baseFile", "log_files": "logFiles", "log_version": "logVersion", "log_offset": "logOffset",
        "total_log_records": "totalLogRecords", "total_log_files": "totalLogFiles",
        "total_log_blocks": "totalLogBlocks",
    }

    def to_json_dict(self) -> dict:
        out = {json_name: getattr(self, name) for name, json_name in self._JSON_NAMES.items()}
        out.update({
            "tempPath": None, "cdcStats": None, "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0,
            "totalUpdatedRecordsCompacted": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0,
            "minEventTime": None, "maxEventTime": None,
            "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": self.total_upsert_time_ms,
                             "totalCreateTime": self.total_create_time_ms},
        })
        return out

    @classmethod
    def from_json_dict(cls, data: dict) -> WriteStat:
        kwargs = {name: data[json_name] for name, json_name in cls._JSON_NAMES.items() if data.get(json_name) is not None}
        return cls(**kwargs)

    def as_row(self) -> dict:
        """The stats row a write task returns to the driver (``STATS_SCHEMA``)."""
        return asdict(self)

    @classmethod
    def from_row(cls, row: dict) -> WriteStat:
        """From a stats row a Spark task returned (column names are the dataclass field names)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names and v is not None})


_ROW_TYPES = {"str": ("string", pa.string()), "int": ("long", pa.int64()), "list[str]": ("array<string>", pa.list_(pa.string()))}
#: The stats rows write tasks return, one ``WriteStat`` each: as Spark DDL and as Arrow.
STATS_SCHEMA = ", ".join(f"{f.name} {_ROW_TYPES[f.type][0]}" for f in fields(WriteStat))
STATS_ARROW_SCHEMA = pa.schema([(f.name, _ROW_TYPES[f.type][1]) for f in fields(WriteStat)])


#: The operations of a replacecommit (``operationType``).
REPLACE_OPERATIONS = ("INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "DELETE_PARTITION", "CLUSTER")


_NAMESPACE = "org.apache.hudi.avro.model"


def _nullable(name: str, kind: object) -> dict:
    return {"name": name, "type": ["null", kind], "default": None}


# Hudi's Avro models of commit metadata, as its .avsc files define them: the content of a completed
# instant on timeline layout 2, and of an archived entry (``timeline.archived``).
_RUNTIME_STATS = {"type": "record", "name": "HoodieRuntimeStats", "fields": [
    _nullable("totalScanTime", "long"), _nullable("totalCreateTime", "long"), _nullable("totalUpsertTime", "long"),
]}
_WRITE_STAT = {"type": "record", "name": "HoodieWriteStat", "fields": [
    *(_nullable(n, "string") for n in ("fileId", "path", "prevCommit")),
    *(_nullable(n, "long") for n in (
        "numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes", "totalWriteErrors")),
    _nullable("partitionPath", "string"),
    *(_nullable(n, "long") for n in (
        "totalLogRecords", "totalLogFiles", "totalUpdatedRecordsCompacted", "numInserts", "totalLogBlocks",
        "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes")),
    _nullable("logVersion", "int"),
    _nullable("logOffset", "long"),
    _nullable("baseFile", "string"),
    _nullable("logFiles", {"type": "array", "items": "string"}),
    _nullable("cdcStats", {"type": "map", "values": "long"}),
    _nullable("prevBaseFile", "string"),
    _nullable("minEventTime", "long"),
    _nullable("maxEventTime", "long"),
    _nullable("runtimeStats", _RUNTIME_STATS),
    *(_nullable(n, "long") for n in ("totalLogFilesCompacted", "totalLogReadTimeMs", "totalLogSizeCompacted")),
    _nullable("tempPath", "string"),
    _nullable("numUpdates", "long"),
]}
COMMIT_METADATA_SCHEMA = {"type": "record", "name": "HoodieCommitMetadata", "namespace": _NAMESPACE, "fields": [
    _nullable("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": _WRITE_STAT}}),
    _nullable("compacted", "boolean"),
    _nullable("extraMetadata", {"type": "map", "values": "string"}),
    {"name": "version", "type": ["int", "null"], "default": 1},
    _nullable("operationType", "string"),
]}
REPLACE_COMMIT_METADATA_SCHEMA = {"type": "record", "name": "HoodieReplaceCommitMetadata", "namespace": _NAMESPACE, "fields": [
    _nullable("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": "HoodieWriteStat"}}),
    _nullable("extraMetadata", {"type": "map", "values": "string"}),
    {"name": "version", "type": ["int", "null"], "default": 1},
    _nullable("operationType", "string"),
    _nullable("partitionToReplaceFileIds", {"type": "map", "values": {"type": "array", "items": "string"}}),
]}
#: A replacecommit's on its own: its write stats' record defined in it (an archived entry defines it
#: once, in its commit metadata, and names it in its replace metadata).
_STANDALONE_REPLACE = {**REPLACE_COMMIT_METADATA_SCHEMA, "fields": [
    {**f, "type": ["null", {"type": "map", "values": {"type": "array", "items": _WRITE_STAT}}]}
    if f["name"] == "partitionToWriteStats" else f for f in REPLACE_COMMIT_METADATA_SCHEMA["fields"]]}


_AVRO_SCHEMAS = {False: fastavro.parse_schema(copy.deepcopy(COMMIT_METADATA_SCHEMA)),
                 True: fastavro.parse_schema(copy.deepcopy(_STANDALONE_REPLACE))}


@dataclass
class CommitMetadata:
    """The metadata of a completed write: write stats by partition, ``extraMetadata`` (the schema),
    the operation, and for a replacecommit the file groups it replaced."""

    operation_type: str = "UPSERT"
    schema: str | None = None
    write_stats: list[WriteStat] = field(default_factory=list)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    partition_to_replace_file_ids: dict[str, list[str]] = field(default_factory=dict)

    def add(self, stat: WriteStat) -> None:
        self.write_stats.append(stat)

    def encode(self, layout_version: int) -> bytes:
        """The completed instant's content on timeline layout ``layout_version``: JSON (1) or Avro (2)."""
        if layout_version < 2:
            return self.to_json()
        doc = self._doc()
        doc["version"] = 1
        out = io.BytesIO()
        fastavro.writer(out, _AVRO_SCHEMAS[self.operation_type in REPLACE_OPERATIONS], [doc])
        return out.getvalue()

    def to_json(self) -> bytes:
        return json.dumps(self._doc(), indent=2).encode()

    def _doc(self) -> dict:
        by_partition: dict[str, list[dict]] = {}
        for stat in self.write_stats:
            by_partition.setdefault(stat.partition_path, []).append(stat.to_json_dict())
        extra = dict(self.extra_metadata)
        if self.schema is not None:
            extra["schema"] = self.schema
        doc = {
            "partitionToWriteStats": by_partition,
            "compacted": self.compacted,
            "extraMetadata": extra,
            "operationType": self.operation_type,
        }
        if self.operation_type in REPLACE_OPERATIONS:  # Hudi's readers need the key, even empty
            doc["partitionToReplaceFileIds"] = self.partition_to_replace_file_ids
        return doc

    @classmethod
    def decode(cls, data: bytes, path: str = "commit metadata") -> CommitMetadata:
        """Parse a completed instant's content: JSON (layout 1) or an Avro container (layout 2).
        Empty content is empty metadata, as for Hudi; content that does not parse is an error
        naming ``path``."""
        try:
            if data.startswith(b"Obj\x01"):
                records = list(fastavro.reader(io.BytesIO(data)))
                return cls._from_doc(records[0] if records else {})
            doc = json.loads(data.decode() or "{}")
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            return cls._from_doc(doc)
        except (ValueError, TypeError, AttributeError, EOFError, KeyError, IndexError) as exc:
            raise damaged_file(path, f"is corrupt ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") from None

    @classmethod
    def _from_doc(cls, doc: dict) -> CommitMetadata:
        extra = dict(doc.get("extraMetadata") or {})
        stats = [
            WriteStat.from_json_dict(s)
            for partition_stats in (doc.get("partitionToWriteStats") or {}).values()
            for s in partition_stats or []
        ]
        return cls(
            operation_type=doc.get("operationType") or "UNKNOWN",
            schema=extra.pop("schema", None),
            write_stats=stats,
            compacted=bool(doc.get("compacted")),
            extra_metadata=extra,
            partition_to_replace_file_ids=doc.get("partitionToReplaceFileIds") or {},
        )

    def total(self, attr: str) -> int:
        return sum(getattr(s, attr) for s in self.write_stats)
