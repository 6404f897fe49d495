"""Records of the metadata table's ``files`` partition: ``HoodieMetadataRecord`` Avro values keyed
by partition, as Hudi writes them into HFiles.

One record per data-table partition (key: the partition path, ``.`` for a non-partitioned table;
type 2) maps each file name to its size and a deletion flag; one record (key
``__all_partitions__``, type 1) lists the partitions. A newer record of a key is merged over the
older one as Hudi's ``HoodieMetadataPayload`` does: a file deleted in the newer one goes, a file
in both keeps the larger size (a log file grows by appends), the others are added.

Example:
    >>> older = FilesRecord.for_partition("dt=1", {"a.parquet": 10, "b.parquet": 20})
    >>> newer = FilesRecord.for_partition("dt=1", {"c.parquet": 5}, deleted=["a.parquet"])
    >>> merged = older.merged(newer)
    >>> merged.live_files()
    {'b.parquet': 20, 'c.parquet': 5}
    >>> decode_value(merged.key, encode_value(merged), SCHEMA_JSON) == merged
    True
    >>> file_group_index("TXN-008", 10)  # the record index's group of a key of Hudi's sample table
    1
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import fastavro
from fastavro.schema import to_parsing_canonical_form

#: The partition of the metadata table that lists the data table's files.
FILES_PARTITION = "files"
#: Its one file group.
FILES_FILE_ID = "files-0000-0"
#: The key of the record that lists the data table's partitions.
ALL_PARTITIONS_KEY = "__all_partitions__"
#: The key a non-partitioned table's files are listed under.
NON_PARTITIONED_KEY = "."
PARTITION_LIST, FILE_LIST = 1, 2

_NAMESPACE = "org.apache.hudi.avro.model"


def _nullable(name: str, kind: object) -> dict:
    return {"name": name, "type": ["null", kind], "default": None}


_WRAPPERS = [
    {"type": "record", "name": name, "fields": [{"name": "value", "type": kind}]}
    for name, kind in [
        ("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"), ("FloatWrapper", "float"),
        ("DoubleWrapper", "double"), ("BytesWrapper", "bytes"), ("StringWrapper", "string"),
        ("DateWrapper", "int"),
        ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
        ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
        ("TimestampMicrosWrapper", "long"), ("LocalDateWrapper", "int"),
    ]
]
_WRAPPER_NAMES = [w["name"] for w in _WRAPPERS]

#: ``HoodieMetadataRecord`` as Hudi 1.1 writes it (the five meta fields first, as the HFiles of its
#: metadata table carry them), with every index's payload, so that the records of every partition
#: share one schema.
SCHEMA = {
    "type": "record", "name": "HoodieMetadataRecord", "namespace": _NAMESPACE,
    "fields": [
        *(_nullable(f"_hoodie_{name}", "string")
          for name in ("commit_time", "commit_seqno", "record_key", "partition_path", "file_name")),
        {"name": "key", "type": "string"},
        {"name": "type", "type": "int"},
        {"name": "filesystemMetadata", "type": ["null", {"type": "map", "values": {
            "type": "record", "name": "HoodieMetadataFileInfo",
            "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}]}}]},
        _nullable("BloomFilterMetadata", {
            "type": "record", "name": "HoodieMetadataBloomFilter",
            "fields": [{"name": "type", "type": "string"}, {"name": "timestamp", "type": "string"},
                       {"name": "bloomFilter", "type": "bytes"}, {"name": "isDeleted", "type": "boolean"}]}),
        _nullable("ColumnStatsMetadata", {
            "type": "record", "name": "HoodieMetadataColumnStats",
            "fields": [
                _nullable("fileName", "string"), _nullable("columnName", "string"),
                {"name": "minValue", "type": ["null", *_WRAPPERS, {
                    "type": "record", "name": "ArrayWrapper",
                    "fields": [_nullable("wrappedValues", {"type": "array", "items": ["null", *_WRAPPER_NAMES]})]}],
                 "default": None},
                {"name": "maxValue", "type": ["null", *_WRAPPER_NAMES, "ArrayWrapper"], "default": None},
                _nullable("valueCount", "long"), _nullable("nullCount", "long"), _nullable("totalSize", "long"),
                _nullable("totalUncompressedSize", "long"),
                {"name": "isDeleted", "type": "boolean"},
                {"name": "isTightBound", "type": "boolean", "default": False},
                _nullable("valueType", {"type": "record", "name": "HoodieValueTypeInfo", "fields": [
                    {"name": "typeOrdinal", "type": "int"}, _nullable("additionalInfo", "string")]}),
            ]}),
        _nullable("recordIndexMetadata", {
            "type": "record", "name": "HoodieRecordIndexInfo",
            "fields": [_nullable("partitionName", "string"), _nullable("fileIdHighBits", "long"),
                       _nullable("fileIdLowBits", "long"), _nullable("fileIndex", "int"),
                       _nullable("fileId", "string"), _nullable("instantTime", "long"),
                       {"name": "fileIdEncoding", "type": "int", "default": 0}, _nullable("position", "long")]}),
        _nullable("SecondaryIndexMetadata", {
            "type": "record", "name": "HoodieSecondaryIndexInfo",
            "fields": [{"name": "isDeleted", "type": "boolean"}]}),
    ],
}
SCHEMA_JSON = json.dumps(SCHEMA, separators=(",", ":"))
_PARSED = fastavro.parse_schema(SCHEMA)
_CANONICAL = to_parsing_canonical_form(SCHEMA)


@lru_cache(maxsize=16)
def encodes_as_ours(schema_text: str) -> bool:
    """Whether records of schema ``schema_text`` (JSON) are encoded exactly as hudiql encodes them:
    the same Avro schema in its parsing canonical form. Hudi 1.1's writers name strings with Java
    properties (the same encoding, another text); Hudi 1.0's schema lacks fields (another encoding).

    >>> encodes_as_ours(SCHEMA_JSON.replace('"name":"key","type":"string"',
    ...                                     '"name":"key","type":{"type":"string","avro.java.string":"String"}'))
    True
    >>> encodes_as_ours(SCHEMA_JSON.replace('{"name":"type","type":"int"},', ''))
    False
    """
    return to_parsing_canonical_form(json.loads(schema_text)) == _CANONICAL


@dataclass
class FilesRecord:
    """One record of the ``files`` partition: ``files`` maps a name (a file, or a partition in the
    ``__all_partitions__`` record) to its size and whether this record deletes it."""

    key: str
    type: int
    files: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @classmethod
    def for_partition(cls, partition_path: str, added: dict[str, int],
                      deleted: Iterable[str] = ()) -> FilesRecord:
        files = {name: (size, False) for name, size in added.items()}
        files.update((name, (0, True)) for name in deleted)
        return cls(partition_key(partition_path), FILE_LIST, files)

    @classmethod
    def partition_list(cls, added: Iterable[str], deleted: Iterable[str] = ()) -> FilesRecord:
        files = {partition_key(p): (0, False) for p in added}
        files.update((partition_key(p), (0, True)) for p in deleted)
        return cls(ALL_PARTITIONS_KEY, PARTITION_LIST, files)

    def merged(self, newer: FilesRecord) -> FilesRecord:
        """This record with ``newer`` (of the same key) merged over it, by Hudi's payload rule."""
        files = dict(self.files)
        for name, (size, deleted) in newer.files.items():
            if deleted:
                files.pop(name, None)
            else:
                files[name] = (max(size, files.get(name, (0, False))[0]), False)
        return FilesRecord(self.key, self.type, files)

    def live_files(self) -> dict[str, int]:
        """What the record lists as present: name -> size."""
        return {name: size for name, (size, deleted) in sorted(self.files.items()) if not deleted}


def index_file_id(prefix: str, index: int) -> str:
    """The file id of file group ``index`` of a metadata table partition whose ids begin with
    ``prefix`` (``record-index-``, ``col-stats-``, ...), as Hudi names them: ``<prefix>0003-0``."""
    return f"{prefix}{index:04d}-0"


def index_file_number(file_id: str) -> int:
    """The number of a metadata table file group from its id (``record-index-0003-0``: 3)."""
    return int(file_id.rsplit("-", 2)[1])


def file_group_index(record_key: str, count: int) -> int:
    """The file group (of ``count``) of a metadata table partition that holds ``record_key``:
    Hudi's ``mapRecordKeyToFileGroupIndex``, over Java's ``String.hashCode()`` of its UTF-16 units."""
    units = record_key.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    # abs(abs(h) % n) as Java computes it: abs(Integer.MIN_VALUE) stays negative, and % truncates.
    return abs(h - (1 << 32) if h >= 1 << 31 else h) % count


def partition_key(partition_path: str) -> str:
    return partition_path or NON_PARTITIONED_KEY


def partition_of_key(key: str) -> str:
    return "" if key == NON_PARTITIONED_KEY else key


def encode_value(record: FilesRecord, file_name: str | None = None) -> bytes:
    """The record's HFile value: its Avro datum (the key lives in the HFile's key, so ``key`` is
    empty, as in Hudi's files); ``file_name`` for records of a base file, which name it."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, {
        "_hoodie_file_name": file_name, "key": "", "type": record.type,
        "filesystemMetadata": {name: {"size": size, "isDeleted": deleted} for name, (size, deleted) in record.files.items()},
    })
    return out.getvalue()


def decode_value(key: str, value: bytes, writer_schema: str) -> FilesRecord:
    """A ``files`` record from its HFile key and value, written with ``writer_schema`` (JSON)."""
    datum = read_datum(value, writer_schema)
    files = {name: (info["size"], info["isDeleted"]) for name, info in (datum["filesystemMetadata"] or {}).items()}
    return FilesRecord(key, datum["type"], files)


def read_datum(value: bytes, writer_schema: str) -> dict:
    """A ``HoodieMetadataRecord`` HFile value written with ``writer_schema`` (JSON; each file and
    log block names its own), read as hudiql's (Hudi 1.1's) schema."""
    return fastavro.schemaless_reader(io.BytesIO(value), _writer(writer_schema), _PARSED)


@lru_cache(maxsize=16)
def _writer(writer_schema: str) -> dict:
    return fastavro.parse_schema(json.loads(writer_schema))
