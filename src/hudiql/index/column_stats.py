"""The column stats index of a table (``metadata.column_stats``), kept with
``hoodie.metadata.index.column.stats.enable``: which columns it ranges, the records a change adds
to the metadata delta commit (the ranges its write tasks computed, the stubs of the files it
deleted), its build from the table's base files, the compaction of its file groups, and the ranges
a query reads to skip files (``read.data_skipping``).

The ranges are metadata: write tasks compute them beside the files they write (``ranges_of``) and
hand them to the driver in their stats rows; a build reads them in Spark tasks, one per file of the
latest slices (base files and log files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from hudiql.config import registry as K
from hudiql.config.table_config import TableConfig
from hudiql.errors import ColumnError
from hudiql.formats import hfile
from hudiql.formats import log_file as L
from hudiql.index.groups import base_info, group_stat
from hudiql.io.storage import Storage
from hudiql.file_group.log_file.scanner import LogScanner
from hudiql.layout import HFILE_EXTENSION, base_file_name, join_partition, parse_data_file_name, write_token
from hudiql.metadata.column_stats import (
    COLUMN_STATS_PARTITION,
    COLUMN_STATS_TYPE,
    FILE_GROUP_COUNT,
    LAYOUT_VERSION,
    PARTITION_STATS_PARTITION,
    PARTITION_STATS_TYPE,
    ColumnRange,
    ValueKind,
    column_id,
    decode_range,
    decode_ranges,
    encode_range,
    encode_ranges,
    file_group_id,
    indexed_columns,
    merged,
    partition_id,
    ranges_of,
    stats_key,
    value_kinds,
)
from hudiql.metadata.index_definitions import IndexDefinitions
from hudiql.metadata.records import SCHEMA_JSON, file_group_index
from hudiql.record.schema import with_meta_columns
from hudiql.table.metadata_table import MetadataSlice, MetadataTable, valid_instants
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import WriteStat

_TOKEN = write_token(0, 0, 0)
Entries = list[tuple[bytes, bytes]]


def wanted(table: HudiTable) -> bool:
    """Whether writes keep the column stats index (``HudiTable.keeps_index``)."""
    return table.keeps_index(K.COLUMN_STATS_ENABLE, COLUMN_STATS_PARTITION)


def usable(table: HudiTable) -> bool:
    return table.has_index(COLUMN_STATS_PARTITION)


def _listed(table: HudiTable) -> list[str]:
    return [c.strip() for c in (table.settings.get(K.COLUMN_STATS_COLUMNS) or "").split(",") if c.strip()]


def columns(table: HudiTable) -> list[str]:
    """The columns the index ranges: ``hoodie.metadata.index.column.stats.column.list``, else
    Hudi's default (the meta columns it always ranges, then the first 32 data columns)."""
    return indexed_columns(with_meta_columns(table.schema), table.config.populate_meta_fields, _listed(table))


def check_columns(table: HudiTable) -> None:
    """Refuse a column list that names a column the table does not have, or one whose values have
    no range (a struct, an array, a map)."""
    fields = {f.name.lower(): f for f in with_meta_columns(table.schema).fields}
    for name in _listed(table):
        field = fields.get(name.lower())
        if field is None or ValueKind.of(field.dataType) is None:
            why = "does not have" if field is None else f"cannot range ({field.dataType.simpleString()})"
            raise ColumnError(f"{K.COLUMN_STATS_COLUMNS} names {name}, a column table {table.config.name} {why}; "
                              f"list columns of {', '.join(f.name for f in table.schema.fields)}")


def kinds(table: HudiTable) -> dict[str, ValueKind]:
    """How each column of the table (meta columns included) keeps its values in the index."""
    schema = with_meta_columns(table.schema)
    return {c: k for c, k in value_kinds(schema, schema.fieldNames()).items() if k is not None}


def _group_of(key: str, count: int) -> str:
    return file_group_id(file_group_index(key, count))


def encoded(table: HudiTable, ranges: Iterable[ColumnRange], key_of: Callable[[ColumnRange], str],
            group_of: Callable[[str], str], file_names: dict[str, str] | None = None,
            record_type: int = COLUMN_STATS_TYPE) -> dict[str, Entries]:
    """``ranges`` as HFile entries by file group: each keyed by ``key_of``, in the group
    ``group_of`` its key names (``file_names``: the base HFile of each group, for a build)."""
    known, version = kinds(table), table.config.version
    out: dict[str, Entries] = {}
    for r in ranges:
        key = key_of(r)
        group = group_of(key)
        value = encode_range(r, known.get(r.column), version, (file_names or {}).get(group), record_type)
        out.setdefault(group, []).append((key.encode(), value))
    return out


def _encoded(table: HudiTable, ranges: Iterable[ColumnRange], partition: str, count: int,
             file_names: dict[str, str] | None = None) -> dict[str, Entries]:
    """``ranges`` of files of data partition ``partition`` as HFile entries by file group."""
    return encoded(table, ranges, lambda r: stats_key(r.column, partition, r.name), lambda key: _group_of(key, count),
                   file_names)


def change_entries(table: HudiTable, mdt: MetadataTable, ranges: dict[tuple[str, str], str],
                   deleted: dict[str, set[str]]) -> dict[str, Entries]:
    """The records a change adds, by file group: the ranges its tasks computed of the files it
    wrote (``ranges``: (partition, file name) -> ``encode_ranges`` text), and a stub per indexed
    column of each file it deleted (a clean, a rollback)."""
    count = len(mdt.latest_slices(COLUMN_STATS_PARTITION)) or FILE_GROUP_COUNT
    known, indexed = kinds(table), columns(table)
    out: dict[str, Entries] = {}

    def add(partition: str, found: Iterable[ColumnRange]) -> None:
        for group, entries in _encoded(table, found, partition, count).items():
            out.setdefault(group, []).extend(entries)

    for (partition, name), text in ranges.items():
        add(partition, decode_ranges(name, text, known))
    for partition, names in deleted.items():
        add(partition, (ColumnRange.deleted(name, c) for name in names for c in indexed))
    return out


def build(spark: SparkSession, table: HudiTable, mdt: MetadataTable) -> tuple[TableConfig, list[FileRanges]]:
    """Build the column stats index of ``table`` from the files of its latest slices (their ranges
    read in Spark tasks) as a new partition of its metadata table ``mdt``, and define it in the
    table's index definitions; returns the table's config as it now is, and the ranges found (a
    partition stats build starts from them). The caller holds the table lock."""
    mdt.storage.delete_dir(COLUMN_STATS_PARTITION)  # what a build that crashed left
    indexed = columns(table)
    found = latest_file_ranges(spark, table, indexed)
    instant_time = mdt.timeline.new_instant_time()
    names = {file_group_id(i): base_file_name(file_group_id(i), _TOKEN, instant_time, HFILE_EXTENSION)
             for i in range(FILE_GROUP_COUNT)}
    entries: dict[str, Entries] = {group: [] for group in names}
    for file_ranges in found:
        for group, part in _encoded(table, file_ranges.ranges, file_ranges.partition, FILE_GROUP_COUNT, names).items():
            entries[group].extend(part)
    stats = [write_base(mdt, COLUMN_STATS_PARTITION, group, names[group], entries[group])
             for group in sorted(names)]
    defs = IndexDefinitions.load(table.storage, table.config).with_index(
        COLUMN_STATS_PARTITION, COLUMN_STATS_PARTITION, COLUMN_STATS_PARTITION, indexed,
        LAYOUT_VERSION[table.config.version])
    config = mdt.add_partition(COLUMN_STATS_PARTITION, instant_time, stats, defs.save(table.storage, table.config))
    return config, found


@dataclass(frozen=True)
class FileRanges:
    """The ranges of one data file, found by a build's task."""

    partition: str
    name: str
    ranges: list[ColumnRange]


def latest_file_ranges(spark: SparkSession, table: HudiTable, indexed: list[str]) -> list[FileRanges]:
    """The ranges of ``indexed`` columns in every file of the table's latest slices (base files
    and log files), read in Spark tasks, one per file."""
    files = [(s.partition_path, name) for s in table.file_system_view().latest_slices()
             for name in ([s.base_file] if s.base_file else []) + s.log_files]
    if not files:
        return []
    ranged = _FileRanges(table.storage.base_uri, tuple(indexed), table.slice_reader(table.columns).scanner)
    rows = spark.createDataFrame(files, "partition string, name string") \
        .repartition(max(1, min(len(files), spark.sparkContext.defaultParallelism * 4))) \
        .mapInArrow(ranged.udf(), "partition string, name string, ranges string").collect()
    known = kinds(table)
    return [FileRanges(r.partition, r.name, decode_ranges(r.name, r.ranges, known)) for r in rows]


def write_base(mdt: MetadataTable, partition: str, file_id: str, name: str, entries: Entries) -> WriteStat:
    """Write the base HFile ``name`` of file group ``file_id`` of ``mdt``'s ``partition``."""
    entries = sorted(entries)
    content = hfile.write_hfile(entries, file_info=base_info([k for k, _ in entries[:1] + entries[-1:]],
                                                             mdt.record_schema()))
    path = join_partition(partition, name)
    mdt.storage.write(path, content)
    return group_stat(partition, file_id, path, len(content), len(entries), True, "")


class _FileRanges:
    """A Spark task's work in a build: the ranges of each data file it is given (a base file's
    columns; a log file's records, read by ``scanner``)."""

    def __init__(self, base_uri: str, indexed: tuple[str, ...], scanner: LogScanner) -> None:
        self.base_uri, self.indexed, self.scanner = base_uri, indexed, scanner

    def udf(self) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            storage = Storage(self.base_uri)
            for batch in batches:
                out = []
                for partition, name in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                    rows = self._rows(storage, partition, name)
                    out.append({"partition": partition, "name": name,
                                "ranges": encode_ranges(ranges_of(name, rows, self.indexed))})
                yield pa.RecordBatch.from_pylist(out, schema=pa.schema(
                    [("partition", pa.string()), ("name", pa.string()), ("ranges", pa.string())]))

        return ranges

    def _rows(self, storage: Storage, partition: str, name: str) -> pa.Table:
        parsed = parse_data_file_name(name)
        if parsed is not None and parsed.is_log:
            wanted = sorted({*self.indexed, *self.scanner.merge_columns()} & set(self.scanner.arrow_schema.names))
            content = self.scanner.scan(partition, [name], wanted)
            return pa.concat_tables(content.tables) if content.tables else content.schema.empty_table()
        with storage.open_input_file(join_partition(partition, name)) as f:
            stored = pq.ParquetFile(f)
            return stored.read(columns=[c for c in self.indexed if c in stored.schema_arrow.names])


def compact(table: HudiTable, mdt: MetadataTable, slices: list[MetadataSlice], compaction_time: str) -> list[WriteStat]:
    """Compact file groups ``slices`` of the column stats or partition stats index into new base
    HFiles, on the driver (a file's or partition's records per indexed column: metadata), dropping
    the ranges of deleted files and partitions."""
    known, stats = kinds(table), []
    for s in slices:
        name = base_file_name(s.file_id, _TOKEN, compaction_time, HFILE_EXTENSION)
        ranges = slice_ranges(mdt.storage, s, known, None)
        record_type = PARTITION_STATS_TYPE if s.partition == PARTITION_STATS_PARTITION else COLUMN_STATS_TYPE
        entries = [(key.encode(), encode_range(r, known.get(r.column), table.config.version, name, record_type))
                   for key, r in ranges.items() if not r.is_deleted]
        stat = write_base(mdt, s.partition, s.file_id, name, entries)
        stat.prev_commit, stat.total_log_files = s.base_instant, len(s.log_files)
        stats.append(stat)
    return stats


def slice_ranges(storage: Storage, s: MetadataSlice, known: dict[str, ValueKind],
                  prefixes: list[str] | None) -> dict[str, ColumnRange]:
    """The merged records of slice ``s`` (those whose key starts with one of ``prefixes``, when
    given): its base HFile by ranges, then its logs' HFile blocks in order."""
    merged_ranges: dict[str, ColumnRange] = {}

    def merge(data: hfile.HFile, schema: str) -> None:
        found = data.entries() if prefixes is None else (e for p in prefixes for e in data.with_prefix(p.encode()))
        for key, value in found:
            r = decode_range(value, schema, known)
            older = merged_ranges.get(key.decode())
            merged_ranges[key.decode()] = merged(older, r) if older else r

    with s.base(storage) as base:
        if base is not None:
            merge(base, (base.file_info.get("schema") or SCHEMA_JSON.encode()).decode())
    for uri, content in s.read_logs(storage):
        for block in L.read_blocks(content, uri, (L.HFILE_DATA,)):
            if block.block_type == L.HFILE_DATA:
                merge(hfile.HFile(block.content, uri), block.header.get(L.SCHEMA) or SCHEMA_JSON)
    return merged_ranges


def file_ranges(table: HudiTable, wanted_columns: Iterable[str], partitions: Iterable[str]) -> dict[str, dict[str, ColumnRange]]:
    """The ranges the index holds of ``wanted_columns`` in data ``partitions``: file name ->
    column -> range (files it has no range of are absent). Reads only the HFile blocks whose keys
    begin with a column and partition asked for."""
    mdt = MetadataTable.load(table.storage, table.config, table.timeline)
    valid = valid_instants(table.timeline)
    known = kinds(table)
    prefixes = sorted(column_id(c) + partition_id(p) for c in wanted_columns for p in partitions)
    out: dict[str, dict[str, ColumnRange]] = {}
    for s in mdt.latest_slices(COLUMN_STATS_PARTITION).values():
        for r in slice_ranges(mdt.storage, s.readable(valid), known, prefixes).values():
            if not r.is_deleted:
                out.setdefault(r.name, {})[r.column] = r
    return out
