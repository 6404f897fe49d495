"""The record index (the metadata table's ``record_index`` partition, ``metadata.record_index``) in
Spark: built from the table's latest file slices, read to find the file group of each key a write
or a statement touches, appended to by each write, compacted with the metadata table.

Its entries are data (one per record key), so they move in Spark tasks, one task per index file
group: a write's changes are shuffled by group and each task writes its group's log file; a
lookup shuffles the keys it looks for the same way and each task reads its group's slice (the base
HFile by ranges: the blocks that may hold its keys). A statement that names its keys (``WHERE id =
17``) looks them up on the driver, which reads a few blocks of metadata, and reads only the file
groups they are in.

Which tables keep one: ``hoodie.metadata.record.index.enable=true`` or ``hoodie.index.type=
RECORD_INDEX`` (``wanted``), on a table whose writes keep a metadata table. Readers use it wherever
the table's properties name it (``usable``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from hudiql.config import registry as K
from hudiql.config.table_config import TableConfig
from hudiql.errors import FormatError, HudiqlError, warn
from hudiql.formats.hfile import write_hfile
from hudiql.index import groups
from hudiql.index.groups import GROUP, base_info, by_group, group_stat
from hudiql.io.storage import Storage
from hudiql.layout import (
    HFILE_EXTENSION,
    base_file_name,
    join_partition,
    log_file_name,
    write_token,
)
from hudiql.metadata.record_index import (
    FILE_GROUP_PREFIX,
    RECORD_INDEX_PARTITION,
    RecordIndexSlice,
    RecordLocation,
    encode_location,
    file_group_id,
    log_blocks,
)
from hudiql.metadata.records import file_group_index
from hudiql.record.keygen import java_hash_code
from hudiql.record.schema import RECORD_KEY
from hudiql.table.metadata_table import MetadataSlice, MetadataTable, rebuild_hint, valid_instants
from hudiql.table.table import HudiTable
from hudiql.timeline.active import Timeline
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, STATS_SCHEMA, WriteStat

#: Columns of the frames the index's tasks read: a key, its location (and ``groups.GROUP``, its
#: file group in the index).
KEY, LOCATED_PARTITION, LOCATED_FILE_ID, INSTANT, DELETED = (
    "__ri_key", "__ri_partition", "__ri_file_id", "__ri_instant", "__ri_deleted")
#: Hudi's estimate of a record index entry's size, and the headroom it builds with.
_ENTRY_BYTES, _GROWTH, _GROUP_BYTES = 48, 2.0, 1 << 30


@dataclass(frozen=True)
class IndexWrites:
    """What one change recorded in the record index: the log files its tasks wrote, for an index
    of ``count`` file groups (a key's group depends on it), and in the secondary indexes beside it
    (``secondary``: their log files; ``secondary_partitions``: the indexes it added entries to);
    ``KEYS_STAY``: a change that moves no key and changes no value (compaction, clean, a schema
    change)."""

    stats: tuple[WriteStat, ...] = ()
    count: int | None = None
    secondary: tuple[WriteStat, ...] = ()
    secondary_partitions: frozenset[str] = frozenset()


KEYS_STAY = IndexWrites()


def wanted(table: HudiTable) -> bool:
    """Whether writes keep the record index: as the statement's settings ask (its option, or
    ``hoodie.index.type=RECORD_INDEX``); when they say nothing, as the table has one (a table
    adopted from Hudi keeps its index unless told otherwise)."""
    if K.asks_record_index(table.settings) or K.RECORD_INDEX_ENABLE in table.settings:
        return K.asks_record_index(table.settings)
    return usable(table)


def usable(table: HudiTable) -> bool:
    return table.has_index(RECORD_INDEX_PARTITION)


def unreadable(table: HudiTable, exc: BaseException) -> None:
    """Say in one line that the table's record index cannot be read, so the statement reads every
    file group (never wrong rows), and how to rebuild it."""
    warn(f"{exc}; reading every file group instead. {rebuild_hint(table.config.name)}")


def check_writable(table: HudiTable) -> None:
    """Refuse a record index on a table whose keys it cannot hold (``config.registry.
    check_metadata_table`` refuses the options that rule one out)."""
    problem = None
    if not table.has_record_key:
        problem = "needs a record key; add PRIMARY KEY (...) to the table"
    elif not table.config.populate_meta_fields:
        problem = "needs the meta fields; create the table with hoodie.populate.meta.fields=true"
    if problem:
        raise HudiqlError(f"{K.RECORD_INDEX_ENABLE}=true on table {table.config.name}: the record index {problem}")


def group_column(record_key: Column, count: int) -> Column:
    """The index file group of ``record_key`` (``metadata.record_index.file_group_index``)."""
    return (F.abs(java_hash_code(record_key)) % count).cast("int")


@dataclass(frozen=True)
class _GroupWriter:
    """What a task writes for one index file group: its base HFile (a build) or a log file (a
    write's changes: keys placed, and keys deleted)."""

    mdt_uri: str
    instant_time: str
    count: int
    base: bool
    schema: str  # the metadata table's record schema (text)

    def udf(self):
        def write_group(rows: pa.Table) -> pa.Table:
            return pa.Table.from_pylist([self.write(rows)], schema=STATS_ARROW_SCHEMA)

        return write_group

    def write(self, rows: pa.Table) -> dict:
        rows = rows.sort_by(KEY)
        keys = rows.column(KEY).to_pylist()
        deleted = rows.column(DELETED).to_pylist() if DELETED in rows.column_names else [False] * len(keys)
        places = [RecordLocation(*place) for place in zip(
            rows.column(LOCATED_PARTITION).to_pylist(), rows.column(LOCATED_FILE_ID).to_pylist(),
            rows.column(INSTANT).to_pylist())]
        # One entry per key: a key a write both deleted and placed (moved between partitions) is placed.
        entries: dict[str, RecordLocation | None] = {}
        for key, place, gone in zip(keys, places, deleted):
            if not gone:
                entries[key] = place
            else:
                entries.setdefault(key, None)
        keys = list(entries)
        return self.write_file(rows.column(GROUP)[0].as_py(), keys, list(entries.values()),
                               [entries[k] is None for k in keys])

    def write_file(self, index: int, keys: list[str], places: list[RecordLocation], deleted: list[bool]) -> dict:
        """Write group ``index``'s file of ``keys`` (sorted) placed at ``places`` or ``deleted``."""
        file_id = file_group_id(index)
        token = write_token(index, 0, 0)  # a retried task writes the same file again
        if self.base:
            name = base_file_name(file_id, token, self.instant_time, HFILE_EXTENSION)
            content = write_hfile([(k.encode(), encode_location(place, name)) for k, place in zip(keys, places)],
                                  file_info=base_info([k.encode() for k in keys[:1] + keys[-1:]], self.schema))
        else:
            name = log_file_name(file_id, self.instant_time, 1, token)
            upserts = [(k.encode(), encode_location(place))
                       for k, place, gone in zip(keys, places, deleted) if not gone]
            content = log_blocks(self.instant_time, upserts, [k for k, gone in zip(keys, deleted) if gone], self.schema)
        path = join_partition(RECORD_INDEX_PARTITION, name)
        Storage(self.mdt_uri).write(path, content)
        return group_stat(RECORD_INDEX_PARTITION, file_id, path, len(content), len(keys), self.base,
                          self.instant_time).as_row()


def _written(frame: DataFrame, writer: _GroupWriter) -> DataFrame:
    """The stats rows (``STATS_SCHEMA``) of the files ``writer``'s tasks write, one per group of
    ``frame``: lazy, so that a write can collect them in the Spark job of its data files."""
    return by_group(frame, writer.count).groupBy(GROUP).applyInArrow(writer.udf(), STATS_SCHEMA)


def _write(frame: DataFrame, writer: _GroupWriter) -> list[WriteStat]:
    return [WriteStat.from_row(r.asDict()) for r in _written(frame, writer).collect()]


def build(table: HudiTable, mdt: MetadataTable, stored: DataFrame) -> TableConfig:
    """Build the record index of ``table`` from ``stored``, a frame of (record key, partition path,
    file id, instant time) of every stored record (``read.snapshot.stored_locations``), as a new
    partition of its metadata table ``mdt``; returns the table's config as it now is. The caller
    holds the table lock."""
    mdt.storage.delete_dir(RECORD_INDEX_PARTITION)  # what a build that crashed left
    located = stored.toDF(KEY, LOCATED_PARTITION, LOCATED_FILE_ID, INSTANT).persist()
    try:
        records = located.count()
        low, high = table.settings.number(K.RECORD_INDEX_MIN_FILE_GROUPS), table.settings.number(K.RECORD_INDEX_MAX_FILE_GROUPS)
        count = max(low, min(high, math.ceil(records * _GROWTH * _ENTRY_BYTES / _GROUP_BYTES)))
        instant_time = mdt.timeline.new_instant_time()
        writer = _GroupWriter(mdt.storage.base_uri, instant_time, count, True, mdt.record_schema())
        stats = _write(located.withColumn(GROUP, group_column(F.col(KEY), count)), writer)
    finally:
        located.unpersist()
    written = {s.file_id for s in stats}
    for index in range(count):  # every group has a base file, keys or not
        if file_group_id(index) not in written:
            stats.append(WriteStat.from_row(writer.write_file(index, [], [], [])))
    return mdt.add_partition(RECORD_INDEX_PARTITION, instant_time, sorted(stats, key=lambda s: s.file_id))


class RecordIndex:
    """The record index of one table as its metadata table's timeline has it: the latest slice
    of each file group, with the logs of completed data instants only."""

    def __init__(self, mdt: MetadataTable, data_timeline: Timeline) -> None:
        self.mdt = mdt
        valid = valid_instants(data_timeline)
        slices = mdt.index_slices(RECORD_INDEX_PARTITION)
        self.count = len(slices)
        if not slices or [s.file_id for s in slices.values()] != [file_group_id(i) for i in range(self.count)]:
            raise FormatError(f"the record index of {mdt.data_storage.base_uri} is not file groups "
                              f"{file_group_id(0)}, {file_group_id(1)}, ... on its timeline")
        self.slices = [s.readable(valid) for s in slices.values()]
        #: The secondary indexes (``index.secondary_index``) a write adds the entries of its rows
        #: to: they live beside the record index; the write sets them.
        self.secondary: list = []

    @classmethod
    def of(cls, table: HudiTable) -> RecordIndex:
        return cls(MetadataTable.load(table.storage, table.config, table.timeline), table.timeline)

    def locate(self, keys: Iterable[str]) -> dict[str, RecordLocation]:
        """The location of each of ``keys`` that the table holds (a lookup on the driver: a few
        keys, each a few reads of its group's files)."""
        by_group: dict[int, list[str]] = {}
        for key in keys:
            by_group.setdefault(file_group_index(key, self.count), []).append(key)
        found: dict[str, RecordLocation] = {}
        for index, group_keys in by_group.items():
            found.update(_lookup(self.mdt.storage, self.slices[index], group_keys))
        return found

    def tag(self, keys: DataFrame) -> DataFrame:
        """``keys`` (one ``RECORD_KEY`` column) with the partition and file group each is stored in
        (``LOCATED_PARTITION``, ``LOCATED_FILE_ID``), for the keys the table holds: a Spark job,
        one task per index file group."""
        lookup = _GroupLookup(self.mdt.storage.base_uri, tuple(self.slices))
        grouped = keys.select(F.col(RECORD_KEY).alias(KEY)).withColumn(GROUP, group_column(F.col(KEY), self.count))
        found = by_group(grouped, self.count).groupBy(GROUP).applyInArrow(
            lookup.udf(), f"{KEY} string, {LOCATED_PARTITION} string, {LOCATED_FILE_ID} string")
        return found.withColumnRenamed(KEY, RECORD_KEY)

    def change_logs(self, changes: DataFrame, instant_time: str) -> DataFrame:
        """The stats rows of the log files that write a data instant's ``changes`` to the index
        (lazy: the write collects them with its own). ``changes`` has ``KEY``, ``LOCATED_PARTITION``,
        ``LOCATED_FILE_ID`` and ``DELETED``, one row per key (a key both placed and deleted is
        placed); one log file per index file group that changes."""
        writer = _GroupWriter(self.mdt.storage.base_uri, instant_time, self.count, False, self.mdt.record_schema())
        return _written(changes.withColumn(INSTANT, F.lit(instant_time))
                        .withColumn(GROUP, group_column(F.col(KEY), self.count)), writer)

    def recorded(self, stats_rows: list[dict]) -> tuple[list[dict], IndexWrites]:
        """Split a write's collected stats rows into its data files' and what it recorded here."""
        secondary = {si.partition for si in self.secondary}

        def is_log(row: dict) -> bool:
            return row["partition_path"] == RECORD_INDEX_PARTITION and row["file_id"].startswith(FILE_GROUP_PREFIX)

        def is_secondary_log(row: dict) -> bool:
            return row["partition_path"] in secondary and row["file_id"].startswith(row["partition_path"].replace("_", "-"))

        logs = tuple(WriteStat.from_row(r) for r in stats_rows if is_log(r))
        entries = tuple(WriteStat.from_row(r) for r in stats_rows if is_secondary_log(r))
        rows = [r for r in stats_rows if not is_log(r) and not is_secondary_log(r)]
        return rows, IndexWrites(logs, self.count, entries, frozenset(secondary))


def _lookup(storage: Storage, s: MetadataSlice, keys: Iterable[str]) -> dict[str, RecordLocation]:
    """Look ``keys`` up in slice ``s``: its logs read whole (one write's changes each), its base
    HFile by ranges (the blocks that may hold the keys)."""
    logs = s.read_logs(storage)
    with s.ranged_base(storage) as base:
        return RecordIndexSlice(base, logs, storage.uri(s.path(s.base_file))).lookup(keys)


@dataclass(frozen=True)
class _GroupLookup:
    mdt_uri: str
    slices: tuple[MetadataSlice, ...]

    def udf(self):
        def lookup(rows: pa.Table) -> pa.Table:
            index = rows.column(GROUP)[0].as_py()
            found = _lookup(Storage(self.mdt_uri), self.slices[index], rows.column(KEY).to_pylist())
            return pa.table({KEY: list(found), LOCATED_PARTITION: [loc.partition for loc in found.values()],
                             LOCATED_FILE_ID: [loc.file_id for loc in found.values()]},
                            schema=pa.schema([(KEY, pa.string()), (LOCATED_PARTITION, pa.string()),
                                              (LOCATED_FILE_ID, pa.string())]))

        return lookup


def compact(spark: SparkSession, mdt: MetadataTable, slices: list[MetadataSlice], compaction_time: str) -> list[WriteStat]:
    """Compact the record index's file groups ``slices`` into new base HFiles at
    ``compaction_time``: one Spark task per group (``index.groups.compact``)."""
    return groups.compact(spark, mdt, slices, compaction_time, _merged_entries)


def _merged_entries(base: bytes | None, logs: list[tuple[str, bytes]], base_uri: str,
                    name: str) -> list[tuple[bytes, bytes]]:
    return list(RecordIndexSlice(base, logs, base_uri).entries(name))
