"""Secondary indexes of a table (``metadata.secondary_index``), which live beside its record index:
``CREATE INDEX`` builds one from the table's rows (a Spark job, one task per index file group
writing its base HFile), every write that records keys in the record index adds the entries of the
rows it writes (log files its tasks write in the same Spark job as its data files), ``DROP INDEX``
removes one, and a query ``WHERE column = v`` finds the record keys of ``v`` here, then their file
groups in the record index.

A write adds an entry for each row it writes and removes none: an entry whose row changed value
or went stays until the index is built again. A lookup may so name a file group that no longer
holds the value, which the query's filter then reads in vain; it never misses a row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.config import registry as K
from hudiql.config.table_config import INDEX_DEFS_PATH, TableConfig
from hudiql.errors import ColumnError, HudiqlError
from hudiql.formats import hfile
from hudiql.formats import log_file as L
from hudiql.index import groups
from hudiql.index.groups import GROUP, base_info, by_group, group_stat
from hudiql.index.record_index import group_column
from hudiql.io.storage import Storage
from hudiql.layout import HFILE_EXTENSION, base_file_name, join_partition, log_file_name, write_token
from hudiql.metadata.index_definitions import IndexDefinitions
from hudiql.metadata.record_index import log_blocks
from hudiql.metadata.records import SCHEMA_JSON
from hudiql.metadata.secondary_index import (
    INDEX_FUNCTION,
    INDEX_TYPE,
    LAYOUT_VERSION,
    PARTITION_PREFIX,
    encode_entry,
    file_group_id,
    group_of,
    is_live,
    parse_key,
    partition_of,
    value_prefix,
)
from hudiql.record.schema import RECORD_KEY
from hudiql.table.metadata_table import MetadataSlice, MetadataTable, remove_partition, valid_instants
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, STATS_SCHEMA, WriteStat

#: The column of an index's frames that holds each entry's key.
KEY = "__si_key"
#: Hudi's estimate of an entry's size, and the headroom it builds with (as for the record index).
_ENTRY_BYTES, _GROWTH, _GROUP_BYTES = 64, 2.0, 1 << 30
#: The column types an index takes: those whose value text is Hudi's (not floats, binary, nested).
_INDEXABLE = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.DateType,
              T.TimestampType, T.BooleanType)


@dataclass(frozen=True)
class SecondaryIndex:
    """One secondary index of a table, as its metadata table has it: ``count`` file groups, keys in
    the layout of table ``version``."""

    name: str
    column: str
    count: int
    version: int

    @property
    def partition(self) -> str:
        return partition_of(self.name)

    def keyed(self, rows: DataFrame, dtype: T.DataType) -> DataFrame:
        """``rows`` (``RECORD_KEY`` and the indexed column) as entry keys and file groups."""
        prefix = F.concat(F.coalesce(_escaped(_value_text(F.col(f"`{self.column}`"), dtype)), F.lit("\0")), F.lit("$"))
        key = F.concat(prefix, _escaped(F.col(RECORD_KEY)))
        group = group_column(prefix if self.version >= 9 else key, self.count)
        return rows.select(key.alias(KEY), group.alias(GROUP))

    def change_logs(self, rows: DataFrame, dtype: T.DataType, mdt: MetadataTable, instant_time: str) -> DataFrame:
        """The stats rows of the log files that add the entries of written ``rows`` (lazy: the
        write collects them with its own), one per index file group they fall in."""
        writer = _EntryWriter(mdt.storage.base_uri, self.partition, instant_time, False, mdt.record_schema())
        return by_group(self.keyed(rows, dtype), self.count).groupBy(GROUP).applyInArrow(writer.udf(), STATS_SCHEMA)


def _value_text(column: Column, dtype: T.DataType) -> Column:
    """A value's text, as Hudi's engine gives it (a date's epoch days, a timestamp's microseconds)."""
    if isinstance(dtype, T.DateType):
        return F.unix_date(column).cast("string")
    if isinstance(dtype, T.TimestampType):
        return F.unix_micros(column).cast("string")
    return column.cast("string")


def _escaped(text: Column) -> Column:
    return F.regexp_replace(F.regexp_replace(text, r"\\", r"\\\\"), r"\$", r"\\\$")


def value_text(value: object, dtype: T.DataType) -> str | None:
    """The text of a Python value of a column of ``dtype`` (a query's literal, already of the
    column's type), as ``_value_text`` gives it in Spark."""
    if value is None:
        return None
    if isinstance(dtype, T.DateType):
        return str(value.toordinal() - 719163)
    if isinstance(dtype, T.BooleanType):
        return "true" if value else "false"
    return str(value)


def indexes(table: HudiTable, mdt: MetadataTable | None = None) -> list[SecondaryIndex]:
    """The secondary indexes the table's properties name (none on a table without any: nothing
    is read then)."""
    partitions = [p for p in table.config.metadata_partitions if p.startswith(PARTITION_PREFIX)]
    if not partitions:
        return []
    defs = IndexDefinitions.load(table.storage, table.config)
    mdt = mdt or MetadataTable.load(table.storage, table.config, table.timeline)
    out = []
    for partition in partitions:
        fields = defs.source_fields(partition)
        if len(fields) != 1:
            raise HudiqlError(f"the secondary index {partition} of table {table.config.name} has no definition of one "
                              f"column in the table's index definitions ({INDEX_DEFS_PATH}); DROP INDEX "
                              f"{partition[len(PARTITION_PREFIX):]} ON {table.config.name} and create it again")
        out.append(SecondaryIndex(partition[len(PARTITION_PREFIX):], fields[0],
                                  len(mdt.listed_file_groups(partition)), table.config.version))
    return out


def check_creatable(table: HudiTable, name: str, column: str) -> str:
    """Refuse an index hudiql cannot build (a column the table lacks or whose values it cannot
    index, a name in use); the column as the table spells it."""
    fields = {f.name.lower(): f for f in table.schema.fields}
    field = fields.get(column.lower())
    if field is None:
        raise ColumnError(f"CREATE INDEX {name}: table {table.config.name} has no column {column}; its columns are "
                          f"{', '.join(f.name for f in table.schema.fields)}")
    if not isinstance(field.dataType, _INDEXABLE):
        raise ColumnError(f"CREATE INDEX {name}: column {field.name} is {field.dataType.simpleString()}; a secondary "
                          "index takes a string, integer, decimal, boolean, date or timestamp column")
    return field.name


def build(table: HudiTable, mdt: MetadataTable, name: str, column: str, stored: DataFrame) -> TableConfig:
    """Build index ``name`` of ``column`` from ``stored``, the table's rows (``RECORD_KEY`` and the
    column), as a new partition of its metadata table ``mdt``, and define it in the table's index
    definitions; returns the table's config as it now is. The caller holds the table lock."""
    index_partition = partition_of(name)
    mdt.storage.delete_dir(index_partition)  # what a build that crashed left
    rows = stored.persist()
    try:
        entries = rows.count()
        low, high = table.settings.number(K.RECORD_INDEX_MIN_FILE_GROUPS), table.settings.number(K.RECORD_INDEX_MAX_FILE_GROUPS)
        count = max(low, min(high, math.ceil(entries * _GROWTH * _ENTRY_BYTES / _GROUP_BYTES)))
        index = SecondaryIndex(name, column, count, table.config.version)
        instant_time = mdt.timeline.new_instant_time()
        writer = _EntryWriter(mdt.storage.base_uri, index_partition, instant_time, True, mdt.record_schema())
        keyed = by_group(index.keyed(rows, table.schema[column].dataType), count)
        stats = [WriteStat.from_row(r.asDict())
                 for r in keyed.groupBy(GROUP).applyInArrow(writer.udf(), STATS_SCHEMA).collect()]
    finally:
        rows.unpersist()
    written = {s.file_id for s in stats}
    stats += [WriteStat.from_row(writer.write_file(i, [])) for i in range(count)
              if file_group_id(index_partition, i) not in written]  # every group has a base file
    defs = IndexDefinitions.load(table.storage, table.config).with_index(
        index_partition, INDEX_TYPE, INDEX_FUNCTION, [column], LAYOUT_VERSION[table.config.version])
    return mdt.add_partition(index_partition, instant_time, sorted(stats, key=lambda s: s.file_id),
                             defs.save(table.storage, table.config))


def drop(table: HudiTable, name: str) -> TableConfig:
    """Remove index ``name``: from the table's properties first (readers stop using it), then its
    definition and files. The caller holds the table lock."""
    config = remove_partition(table.storage, partition_of(name))
    defs = IndexDefinitions.load(table.storage, config)
    if partition_of(name) in defs.definitions:
        defs.without(partition_of(name)).save(table.storage, config)
    return config


@dataclass(frozen=True)
class _EntryWriter:
    """What a task writes for one index file group: its base HFile (a build) or a log file (a
    write's entries)."""

    mdt_uri: str
    partition: str
    instant_time: str
    base: bool
    schema: str  # the metadata table's record schema (text)

    def udf(self):
        def write_group(rows: pa.Table) -> pa.Table:
            keys = sorted(set(rows.column(KEY).to_pylist()))
            return pa.Table.from_pylist([self.write_file(rows.column(GROUP)[0].as_py(), keys)], schema=STATS_ARROW_SCHEMA)

        return write_group

    def write_file(self, index: int, keys: list[str]) -> dict:
        """Write group ``index``'s file of entry ``keys`` (sorted)."""
        file_id = file_group_id(self.partition, index)
        token = write_token(index, 0, 0)  # a retried task writes the same file again
        if self.base:
            name = base_file_name(file_id, token, self.instant_time, HFILE_EXTENSION)
            encoded = [k.encode() for k in keys]
            content = hfile.write_hfile([(k, encode_entry(False, name)) for k in encoded],
                                        file_info=base_info(encoded[:1] + encoded[-1:], self.schema))
        else:
            name = log_file_name(file_id, self.instant_time, 1, token)
            content = log_blocks(self.instant_time, [(k.encode(), encode_entry()) for k in keys], [], self.schema)
        path = join_partition(self.partition, name)
        Storage(self.mdt_uri).write(path, content)
        return group_stat(self.partition, file_id, path, len(content), len(keys), self.base, self.instant_time).as_row()


def _live(data: hfile.HFile, schema: str, prefixes: list[bytes] | None, merged: dict[bytes, bool]) -> None:
    """Merge the entries of ``data`` (those beginning with one of ``prefixes``, when given) over
    ``merged`` (key -> whether present)."""
    found = data.entries() if prefixes is None else (e for p in prefixes for e in data.with_prefix(p))
    for key, value in found:
        merged[key] = is_live(value, schema)


def _merge_slice(base: hfile.HFile | None, logs: list[tuple[str, bytes]],
                 prefixes: list[bytes] | None) -> dict[bytes, bool]:
    merged: dict[bytes, bool] = {}
    if base is not None:
        _live(base, (base.file_info.get("schema") or SCHEMA_JSON.encode()).decode(), prefixes, merged)
    for uri, content in logs:
        for block in L.read_blocks(content, uri, (L.HFILE_DATA,)):
            if block.block_type == L.HFILE_DATA:
                _live(hfile.HFile(block.content, uri), block.header.get(L.SCHEMA) or SCHEMA_JSON, prefixes, merged)
    return merged


def _merged_entries(base: bytes | None, logs: list[tuple[str, bytes]], base_uri: str,
                    name: str) -> list[tuple[bytes, bytes]]:
    """A group's live entries, for its new base file ``name`` (``index.groups.compact``)."""
    merged = _merge_slice(hfile.HFile(base, base_uri) if base is not None else None, logs, None)
    return [(key, encode_entry(False, name)) for key in sorted(k for k, live in merged.items() if live)]


def compact(spark: SparkSession, mdt: MetadataTable, slices: list[MetadataSlice], compaction_time: str) -> list[WriteStat]:
    """Compact secondary index file groups ``slices`` into new base HFiles: one Spark task each."""
    return groups.compact(spark, mdt, slices, compaction_time, _merged_entries)


def record_keys(table: HudiTable, index: SecondaryIndex, values: list[str | None]) -> set[str]:
    """The record keys index ``index`` holds of ``values`` (texts, ``value_text``): a lookup on the
    driver, each file group that may hold them read once, only its blocks that may hold them."""
    mdt = MetadataTable.load(table.storage, table.config, table.timeline)
    valid = valid_instants(table.timeline)
    slices = {s.file_id: s.readable(valid) for s in mdt.latest_slices(index.partition).values()}
    by_group: dict[int, list[bytes]] = {}
    for value in values:
        prefix = value_prefix(value)
        # V2 keeps a value's entries in one group; V1 spreads them by record key.
        for group in [group_of(prefix, index.count, index.version)] if index.version >= 9 else range(index.count):
            by_group.setdefault(group, []).append(prefix.encode())
    keys: set[str] = set()
    storage = mdt.storage
    for group, prefixes in by_group.items():
        s = slices.get(file_group_id(index.partition, group))
        if s is None:  # a group built empty, unchanged since
            continue
        logs = s.read_logs(storage)
        with s.base(storage) as base:
            merged = _merge_slice(base, logs, sorted(prefixes))
        keys.update(parse_key(k.decode())[1] for k, live in merged.items() if live)
    return keys
