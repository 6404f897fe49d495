"""What a change of a table does with its metadata table (``table.metadata_table``): whether the
statement keeps it (``keeps_metadata_table``) and its record index (``keeps_record_index``), and the
metadata delta commit around the completion of each data instant that changes files (``recording``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from hudiql.config import registry
from hudiql.errors import FormatError, HudiqlError, LostConflictError, warn
from hudiql.index.record_index import IndexWrites
from hudiql.metadata.record_index import RECORD_INDEX_PARTITION
from hudiql.metadata.records import FILES_PARTITION
from hudiql.index import bloom_filters, column_stats, partition_stats, record_index, secondary_index
from hudiql.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudiql.metadata.column_stats import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION
from hudiql.metadata.secondary_index import PARTITION_PREFIX
from hudiql.table.metadata_table import (
    FileChanges,
    MetadataSlice,
    MetadataTable,
    open_for_write,
    rebuild_hint,
    remove_partition,
)
from hudiql.table.table import HudiTable
from hudiql.timeline.active import Timeline
from hudiql.timeline.commit import WriteStat


def keeps_metadata_table(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table: ``hoodie.metadata.enable`` (true by
    default), on the table versions hudiql keeps one for (8 and 9)."""
    return table.settings.flag(registry.METADATA_ENABLE) and table.config.version >= 8


def keeps_record_index(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table's record index (``index.record_index``)."""
    return keeps_metadata_table(table) and record_index.wanted(table)


def keeps_column_stats(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table's column stats (``index.column_stats``)."""
    return keeps_metadata_table(table) and column_stats.wanted(table)


def keeps_partition_stats(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table's partition stats (``index.partition_stats``)."""
    return keeps_column_stats(table) and partition_stats.wanted(table)


def keeps_bloom_filters(table: HudiTable) -> bool:
    """Whether writes of ``table`` keep its metadata table's bloom filters (``index.bloom_filters``)."""
    return keeps_metadata_table(table) and bloom_filters.wanted(table)


def ranged_columns(table: HudiTable) -> tuple[str, ...]:
    """The columns whose value ranges a write's tasks compute of the files they write, for the
    column stats its writes keep (none when they keep none)."""
    return tuple(column_stats.columns(table)) if keeps_column_stats(table) else ()


def kept_partitions(table: HudiTable) -> set[str]:
    """The metadata table partitions the table's writes keep: ``files``, the indexes they ask for,
    and the secondary indexes it has, beside a record index they keep."""
    kept = {FILES_PARTITION}
    if keeps_record_index(table):
        kept |= {RECORD_INDEX_PARTITION, *(p for p in table.config.metadata_partitions if p.startswith(PARTITION_PREFIX))}
    if keeps_column_stats(table):
        kept.add(COLUMN_STATS_PARTITION)
    if keeps_partition_stats(table):
        kept.add(PARTITION_STATS_PARTITION)
    if keeps_bloom_filters(table):
        kept.add(BLOOM_FILTERS_PARTITION)
    return kept


@contextmanager
def recording(table: HudiTable, instant_time: str, changes: FileChanges,
              index_writes: IndexWrites | None = None) -> Iterator[MetadataTable | None]:
    """Around the completion of data instant ``instant_time``: its metadata delta commit first
    (the table's metadata table built first if it has none), then, once the data instant completed,
    the metadata table's compaction when due. The caller holds the table lock. Yields the metadata
    table written; on a table whose writes keep none (``keeps_metadata_table``), does nothing and
    yields None.

    ``index_writes``: what the change recorded in the record index (``index.record_index``); None
    when it moved keys without recording them there: the record index then goes (the next write
    that keeps one builds it again)."""
    if not keeps_metadata_table(table):
        yield None
        return
    mdt, config = open_for_write(table.storage, kept_partitions(table))
    secondary = {p for p in config.metadata_partitions if p.startswith(PARTITION_PREFIX)}
    if RECORD_INDEX_PARTITION in config.metadata_partitions:
        if index_writes is None:  # the secondary indexes go with it: they find rows through it
            for partition in sorted(secondary):
                config = secondary_index.drop(table, partition[len(PARTITION_PREFIX):])
            config = remove_partition(table.storage, RECORD_INDEX_PARTITION)
        elif index_writes.count not in (None, len(mdt.index_slices(RECORD_INDEX_PARTITION))):
            raise LostConflictError(f"the record index of table {table.config.name} was rebuilt while the write "
                                     "ran; run the statement again")
        elif index_writes.count is not None and index_writes.secondary_partitions != secondary:
            raise LostConflictError(f"an index of table {table.config.name} was created or dropped while the write "
                                     "ran; run the statement again")
    table.config.props = dict(config.props)  # the statement's snapshots share this config
    try:
        mdt.records(table.timeline)  # what this process read of it already is not read again
    except (HudiqlError, OSError) as exc:
        raise FormatError(f"{exc}; writes are refused until it is rebuilt. {rebuild_hint(table.config.name)}") from None
    kept_index = RECORD_INDEX_PARTITION in config.metadata_partitions
    entries = {}
    if COLUMN_STATS_PARTITION in config.metadata_partitions:
        entries[COLUMN_STATS_PARTITION] = column_stats.change_entries(table, mdt, changes.ranges, changes.deleted)
    if PARTITION_STATS_PARTITION in config.metadata_partitions:
        entries[PARTITION_STATS_PARTITION] = partition_stats.change_entries(table, changes.ranges,
                                                                            changes.dropped_partitions)
    if BLOOM_FILTERS_PARTITION in config.metadata_partitions:
        entries[BLOOM_FILTERS_PARTITION] = bloom_filters.change_entries(table, mdt, instant_time, changes.filters,
                                                                        changes.deleted)
    written = (*index_writes.stats, *index_writes.secondary) if kept_index and index_writes else ()
    mdt.commit(instant_time, changes, written, entries)
    try:
        yield mdt
    except BaseException:
        mdt.forget(instant_time)
        raise
    try:
        if mdt.compaction_due(table.settings.number(registry.METADATA_COMPACT_MAX_DELTA_COMMITS)):
            # with the instant that just completed
            mdt.compact(Timeline.load(table.storage, table.config), config.metadata_partitions,
                        lambda time, slices: _compact_groups(table, mdt, time, slices))
    except (HudiqlError, OSError) as exc:  # the data instant completed: the statement succeeded
        warn(f"could not compact the metadata table of {table.base_uri}: {exc}")


def _compact_groups(table: HudiTable, mdt: MetadataTable, compaction_time: str,
                    slices: list[MetadataSlice]) -> list[WriteStat]:
    """The index file groups compacted: the record index's, secondary indexes' and bloom filters'
    in Spark tasks, the column stats' and partition stats' on the driver (``index.column_stats``)."""
    spark = SparkSession.active()
    keyed = [s for s in slices if s.partition == RECORD_INDEX_PARTITION]
    valued = [s for s in slices if s.partition.startswith(PARTITION_PREFIX)]
    ranged = [s for s in slices if s.partition in (COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION)]
    stats = record_index.compact(spark, mdt, keyed, compaction_time) if keyed else []
    stats += secondary_index.compact(spark, mdt, valued, compaction_time) if valued else []
    filters = [s for s in slices if s.partition == BLOOM_FILTERS_PARTITION]
    stats += bloom_filters.compact(spark, mdt, filters, compaction_time) if filters else []
    return stats + column_stats.compact(table, mdt, ranged, compaction_time)
