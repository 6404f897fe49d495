"""The ``column_stats`` partition of the metadata table: each data file's value range per indexed
column, as Hudi 1.x keeps it (``hoodie.metadata.index.column.stats.enable``), so that queries skip
the files whose ranges exclude their filter; and the ``partition_stats`` partition, the same records
of whole data partitions (type 6, keyed by column and partition, the partition's path as the name),
so that queries skip partitions.

A record (type 3, ``HoodieMetadataColumnStats``) is keyed by the column, the data partition and
the file, each hashed (``column_id``, ``partition_id``: XXHash64; ``file_id``: MD5) and Base64
encoded, so a column's records sort together and a prefix finds them. Its value is the file name,
the column, the min and max values in Avro wrappers, and the counts. A deleted file's records are
stubs with ``isDeleted``; a newer record of a key widens the older one (``merged``).

Table version 9 writes the ``V2`` layout (a ``valueType`` names each value's logical type; dates
are ``IntWrapper`` days, decimals the unscaled bytes in a ``BytesWrapper``), version 8 the ``V1``
layout (no ``valueType``; ``DateWrapper``, ``DecimalWrapper``).

Example:
    >>> stats_key("currency", "region=us", "c7bbe63e-fa43-40ba-94a9-03158165edc6-0_1-27-53_20260307162434124.parquet")
    '/m6lxu4Dh5w=431THTTwO5Q=W7RhzS2IFnrW7FlqIkFJUw=='
    >>> from hudiql.metadata.records import SCHEMA_JSON
    >>> kind = ValueKind.of(T.DecimalType(10, 2))
    >>> value = encode_range(ColumnRange("f.parquet", "fee", Decimal("0.00"), Decimal("25.00"), 3, 0), kind, 9)
    >>> decode_range(value, SCHEMA_JSON, {"fee": kind}).max
    Decimal('25.00')
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pyspark.sql import types as T

from hudiql.metadata.records import _NAMESPACE, _PARSED, index_file_id, partition_key, read_datum

#: The metadata table's partition of the column ranges of data files.
COLUMN_STATS_PARTITION = "column_stats"
#: ``HoodieMetadataRecord.type`` of a column_stats record.
COLUMN_STATS_TYPE = 3
#: What the file ids of its file groups begin with; Hudi's default number of them.
FILE_GROUP_PREFIX, FILE_GROUP_COUNT = "col-stats-", 2
#: The metadata table's partition of the column ranges of data partitions, its record type, and
#: its file groups' id prefix and number (Hudi's default).
PARTITION_STATS_PARTITION, PARTITION_STATS_TYPE = "partition_stats", 6
PARTITION_GROUP_PREFIX, PARTITION_GROUP_COUNT = "partition-stats-", 1
#: The meta columns Hudi always indexes (when the table keeps meta fields), then the first
#: ``MAX_COLUMNS`` data columns of a supported type.
META_COLUMNS_INDEXED = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
MAX_COLUMNS = 32
#: ``HoodieIndexDefinition.version`` of the layout each table version writes.
LAYOUT_VERSION = {8: "V1", 9: "V2"}

_HASH_SEED = 0xFFFFFFFFDABADABA  # Hudi's int seed 0xdabadaba, sign-extended to the long XXHash64 takes


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


@lru_cache(maxsize=4096)
def column_id(name: str) -> str:
    """A column's or a data partition's key part: its XXHash64, Base64 (Hudi's ``ColumnIndexID``
    and ``PartitionIndexID``)."""
    return _b64(xxhash.xxh64(name.encode(), seed=_HASH_SEED).digest())


def partition_id(partition_path: str) -> str:
    return column_id(partition_key(partition_path))


def file_id(file_name: str) -> str:
    """A file's key part: the MD5 of its name, Base64 (Hudi's ``FileIndexID``)."""
    return _b64(hashlib.md5(file_name.encode()).digest())


def stats_key(column: str, partition_path: str, file_name: str) -> str:
    return column_id(column) + partition_id(partition_path) + file_id(file_name)


def file_group_id(index: int) -> str:
    return index_file_id(FILE_GROUP_PREFIX, index)


def partition_stats_key(column: str, partition_path: str) -> str:
    """The key of a data partition's range of ``column`` in ``partition_stats``."""
    return column_id(column) + partition_id(partition_path)


def partition_group_id(index: int) -> str:
    return index_file_id(PARTITION_GROUP_PREFIX, index)


@dataclass(frozen=True)
class ValueKind:
    """How one column's values are kept: Hudi's ``ValueType`` ordinal, its Avro wrapper in each
    layout, and its ``additionalInfo`` (a decimal's ``precision,scale``)."""

    ordinal: int
    wrapper: str
    v1_wrapper: str
    info: str | None = None

    @staticmethod
    def of(dtype: T.DataType) -> ValueKind | None:
        """The kind of a Spark column type; None for types Hudi does not index (nested ones)."""
        if isinstance(dtype, T.DecimalType):
            return ValueKind(10, "BytesWrapper", "DecimalWrapper", f"{dtype.precision},{dtype.scale}")
        for spark_type, kind in _KINDS:
            if isinstance(dtype, spark_type):
                return kind
        return None

    @property
    def scale(self) -> int:
        return int(self.info.split(",")[1]) if self.info else 0


_KINDS: list[tuple[tuple[type, ...], ValueKind]] = [
    ((T.BooleanType,), ValueKind(2, "BooleanWrapper", "BooleanWrapper")),
    ((T.ByteType, T.ShortType, T.IntegerType), ValueKind(3, "IntWrapper", "IntWrapper")),
    ((T.LongType,), ValueKind(4, "LongWrapper", "LongWrapper")),
    ((T.FloatType,), ValueKind(5, "FloatWrapper", "FloatWrapper")),
    ((T.DoubleType,), ValueKind(6, "DoubleWrapper", "DoubleWrapper")),
    ((T.StringType,), ValueKind(7, "StringWrapper", "StringWrapper")),
    ((T.BinaryType,), ValueKind(8, "BytesWrapper", "BytesWrapper")),
    ((T.DateType,), ValueKind(12, "IntWrapper", "DateWrapper")),
    ((T.TimestampType,), ValueKind(16, "LongWrapper", "LongWrapper")),
    ((T.TimestampNTZType,), ValueKind(19, "LongWrapper", "LongWrapper")),
]


@dataclass(frozen=True)
class ColumnRange:
    """One file's range of one column: min and max as stored (dates as epoch days, timestamps as
    epoch microseconds, decimals as ``Decimal``; None when unknown), and its counts. ``name`` is
    the file's name (a partition's path in ``partition_stats``)."""

    name: str
    column: str
    min: object
    max: object
    value_count: int
    null_count: int
    total_size: int = 0
    total_uncompressed_size: int = 0
    is_deleted: bool = False
    #: Computed from all of a partition's files (``partition_stats``), not widened over older ones.
    tight: bool = False

    @classmethod
    def deleted(cls, name: str, column: str) -> ColumnRange:
        """The stub that removes a file's range (a cleaned or rolled back file)."""
        return cls(name, column, None, None, -1, -1, -1, -1, is_deleted=True)

    def widened(self, other: ColumnRange) -> ColumnRange:
        """The range that covers this one and ``other`` (the files of one slice or partition)."""
        def pick(a: object, b: object, f) -> object:
            return b if a is None else a if b is None else f(a, b)
        return replace(self, min=pick(self.min, other.min, min), max=pick(self.max, other.max, max),
                       value_count=self.value_count + other.value_count, null_count=self.null_count + other.null_count,
                       total_size=self.total_size + other.total_size,
                       total_uncompressed_size=self.total_uncompressed_size + other.total_uncompressed_size)

    @property
    def bounded(self) -> bool:
        """Whether min and max bound every non-null value (they are absent only when a file has
        none, or when its writer left them out)."""
        return self.min is not None or self.null_count == self.value_count


def ranges_of(file_name: str, rows: pa.Table, columns: Iterable[str]) -> list[ColumnRange]:
    """The ranges of ``columns`` over the rows written to ``file_name`` (in the write's task); a
    column the rows lack is all null. Sizes are the columns' in-memory sizes: Hudi's readers use the
    ranges and counts only."""
    out = []
    for column in columns:
        if column not in rows.column_names:  # written before the column was added: all null
            out.append(ColumnRange(file_name, column, None, None, rows.num_rows, rows.num_rows))
            continue
        values = rows.column(column)
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.int64())  # epoch microseconds, as stored
        elif pa.types.is_date32(values.type):
            values = values.cast(pa.int32())
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if isinstance(low, float) and (low != low or high != high):  # NaN ranges exclude nothing
            low = high = None
        size = values.nbytes
        out.append(ColumnRange(file_name, column, low, high, len(values), values.null_count, size, size))
    return out


def ranges_text(file_name: str, rows: pa.Table, columns: tuple[str, ...]) -> str:
    """What a write task reports of a file it wrote (``WriteStat.column_stats``): the ranges of
    ``columns`` over its rows; nothing when no column is ranged."""
    return encode_ranges(ranges_of(file_name, rows, columns)) if columns else ""


def widened_ranges(older: list[ColumnRange], newer: list[ColumnRange]) -> list[ColumnRange]:
    """Ranges of one file that cover both lists (of the rows of its blocks, written one by one)."""
    by_column = {r.column: r for r in older}
    for r in newer:
        by_column[r.column] = by_column[r.column].widened(r) if r.column in by_column else r
    return list(by_column.values())


def encode_ranges(ranges: list[ColumnRange]) -> str:
    """``ranges`` as text, for a write task's stats row (decimals and bytes as text)."""
    def plain(value: object) -> object:
        if isinstance(value, Decimal):
            return str(value)
        if isinstance(value, bytes):
            return base64.b64encode(value).decode()
        return value
    return json.dumps([[r.column, plain(r.min), plain(r.max), r.value_count, r.null_count, r.total_size,
                        r.total_uncompressed_size] for r in ranges], separators=(",", ":"))


def decode_ranges(file_name: str, text: str, kinds: dict[str, ValueKind]) -> list[ColumnRange]:
    """The ranges ``encode_ranges`` wrote, of the columns in ``kinds``."""
    def typed(value: object, kind: ValueKind) -> object:
        if value is None:
            return None
        if kind.ordinal == 10:
            return Decimal(value)
        return base64.b64decode(value) if kind.ordinal == 8 else value
    out = []
    for column, low, high, count, nulls, size, raw in json.loads(text) if text else []:
        kind = kinds.get(column)
        if kind is not None:
            out.append(ColumnRange(file_name, column, typed(low, kind), typed(high, kind), count, nulls, size, raw))
    return out


def _wrapped(value: object, kind: ValueKind, version: int) -> tuple[str, dict] | None:
    if value is None:
        return None
    if version >= 9:
        if kind.ordinal == 10:
            unscaled = int(value.scaleb(kind.scale))
            value = unscaled.to_bytes((unscaled + (unscaled < 0)).bit_length() // 8 + 1, "big", signed=True)
        return f"{_NAMESPACE}.{kind.wrapper}", {"value": value}
    if kind.ordinal == 10:
        value = value.quantize(Decimal("1e-15"))
    return f"{_NAMESPACE}.{kind.v1_wrapper}", {"value": value}


def encode_range(stats: ColumnRange, kind: ValueKind | None, version: int, base_file_name: str | None = None,
                 record_type: int = COLUMN_STATS_TYPE) -> bytes:
    """The HFile value of a range (a deleted file's stub when ``stats.is_deleted``) in the layout of
    table ``version``; ``base_file_name`` for the records of a base HFile, which name it;
    ``record_type``: ``PARTITION_STATS_TYPE`` for a data partition's range."""
    value_type = None
    if version >= 9:
        value_type = {"typeOrdinal": 1, "additionalInfo": None} if stats.is_deleted or kind is None else \
            {"typeOrdinal": kind.ordinal, "additionalInfo": kind.info}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, {
        "_hoodie_file_name": base_file_name, "key": "", "type": record_type,
        "ColumnStatsMetadata": {
            "fileName": stats.name, "columnName": stats.column,
            "minValue": None if kind is None else _wrapped(stats.min, kind, version),
            "maxValue": None if kind is None else _wrapped(stats.max, kind, version),
            "valueCount": stats.value_count, "nullCount": stats.null_count, "totalSize": stats.total_size,
            "totalUncompressedSize": stats.total_uncompressed_size, "isDeleted": stats.is_deleted,
            "isTightBound": stats.tight, "valueType": value_type,
        },
    })
    return out.getvalue()


def decode_range(value: bytes, writer_schema: str, kinds: Mapping[str, ValueKind | None]) -> ColumnRange:
    """A range from its HFile value, min and max as stored for a column of the kind ``kinds`` gives
    it (a V2 decimal's unscaled bytes at its ``valueType`` scale; a V1 one's decimal(30,15)); the
    values of a column of another kind (its type changed since), or of none, are left unknown."""
    stats = read_datum(value, writer_schema)["ColumnStatsMetadata"]
    kind = kinds.get(stats["columnName"] or "")
    value_type = stats.get("valueType")
    known = kind is not None and (value_type is None or value_type["typeOrdinal"] in (kind.ordinal, 1))

    def plain(wrapped: dict | None) -> object:
        if wrapped is None or not known:
            return None
        raw = wrapped["value"]
        if kind.ordinal == 10 and isinstance(raw, bytes):
            scale = int((value_type or {}).get("additionalInfo", "0,0").split(",")[1]) if value_type else kind.scale
            return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)
        return raw

    return ColumnRange(stats["fileName"] or "", stats["columnName"] or "", plain(stats["minValue"]),
                       plain(stats["maxValue"]), stats["valueCount"] or 0, stats["nullCount"] or 0,
                       stats["totalSize"] or 0, stats["totalUncompressedSize"] or 0, stats["isDeleted"],
                       stats.get("isTightBound") or False)


def indexed_columns(schema: T.StructType, meta_fields: bool, listed: Iterable[str] = ()) -> list[str]:
    """The columns Hudi indexes by default: the meta columns it always indexes (when the table
    keeps meta fields), then the first ``MAX_COLUMNS`` top-level data columns of a supported type;
    or the ``listed`` ones (``hoodie.metadata.index.column.stats.column.list``)."""
    names = {f.name.lower(): f for f in schema.fields}
    if listed:
        return [names[c.lower()].name for c in listed if c.lower() in names and ValueKind.of(names[c.lower()].dataType)]
    data = [f.name for f in schema.fields if not f.name.startswith("_hoodie_") and ValueKind.of(f.dataType)]
    return [*(META_COLUMNS_INDEXED if meta_fields else ()), *data[:MAX_COLUMNS]]


def value_kinds(schema: T.StructType, columns: Iterable[str]) -> dict[str, ValueKind]:
    """Each indexed column's kind (the meta columns are strings)."""
    types = {f.name: f.dataType for f in schema.fields}
    return {c: ValueKind.of(types.get(c, T.StringType())) for c in columns}


def merged(older: ColumnRange, newer: ColumnRange) -> ColumnRange:
    """A key's range after a newer record of it, by Hudi's rule: a deletion or a tight range
    replaces the older one; any other range widens it (a log file's appends)."""
    if newer.is_deleted or older.is_deleted or newer.tight:
        return newer
    return replace(older.widened(newer), name=newer.name)
