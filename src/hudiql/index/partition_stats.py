"""The partition stats index of a table (``metadata.column_stats``, partition ``partition_stats``):
each data partition's value range per column the column stats index ranges, kept beside that index
on partitioned tables (``hoodie.metadata.index.partition.stats.enable``), so that queries skip
whole partitions.

Readers prune every partition the index has no range of (Hudi's do), so each partition with rows
must have one, covering every value its files hold. A build ranges every file of the latest slices;
a change adds the range of the files it wrote in each partition, as a range that widens the one
before (not a tight one), so an index record is never narrower than the partition's values; a
dropped partition gets deletion stubs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pyspark.sql import SparkSession

from hudiql.config import registry as K
from hudiql.config.table_config import TableConfig
from hudiql.index import column_stats
from hudiql.index.column_stats import Entries, FileRanges, kinds, slice_ranges, write_base
from hudiql.layout import HFILE_EXTENSION, base_file_name, write_token
from hudiql.metadata.column_stats import (
    PARTITION_GROUP_COUNT,
    PARTITION_STATS_PARTITION,
    PARTITION_STATS_TYPE,
    ColumnRange,
    column_id,
    decode_ranges,
    partition_group_id,
    partition_stats_key,
    widened_ranges,
)
from hudiql.metadata.records import file_group_index
from hudiql.table.metadata_table import MetadataTable, valid_instants
from hudiql.table.table import HudiTable

_TOKEN = write_token(0, 0, 0)


def wanted(table: HudiTable) -> bool:
    """Whether writes of ``table`` that keep column stats keep partition stats too: on a
    partitioned table, unless ``hoodie.metadata.index.partition.stats.enable`` is false."""
    return bool(table.config.partition_fields) and table.settings.flag(K.PARTITION_STATS_ENABLE)


def usable(table: HudiTable) -> bool:
    return table.has_index(PARTITION_STATS_PARTITION)


def _partition_ranges(partition: str, ranges: list[ColumnRange]) -> list[ColumnRange]:
    """The ranges of files of data ``partition`` widened into the partition's, one per column."""
    return sorted((replace(r, name=partition) for r in widened_ranges([], ranges)), key=lambda r: r.column)


def _encoded(table: HudiTable, ranges: Iterable[ColumnRange], file_names: dict[str, str] | None = None) -> dict[str, Entries]:
    """Partition ranges as HFile entries by file group (``file_names``: base HFile by group, for a build)."""
    return column_stats.encoded(table, ranges, lambda r: partition_stats_key(r.column, r.name),
                                lambda key: partition_group_id(file_group_index(key, PARTITION_GROUP_COUNT)),
                                file_names, PARTITION_STATS_TYPE)


def change_entries(table: HudiTable, ranges: dict[tuple[str, str], str], dropped: set[str]) -> dict[str, Entries]:
    """The records a change adds, by file group: per data partition it wrote files in, the range
    of those files (``ranges``: (partition, file name) -> ``encode_ranges`` text), which widens the
    partition's range; deletion stubs for each ``dropped`` partition."""
    known, by_partition = kinds(table), {}
    for (partition, name), text in ranges.items():
        by_partition.setdefault(partition, []).extend(decode_ranges(name, text, known))
    found = [r for partition, rs in sorted(by_partition.items()) for r in _partition_ranges(partition, rs)]
    found += [ColumnRange.deleted(partition, c) for partition in sorted(dropped) for c in column_stats.columns(table)]
    return _encoded(table, found)


def build(spark: SparkSession, table: HudiTable, mdt: MetadataTable, found: list[FileRanges] | None = None) -> TableConfig:
    """Build the partition stats index of ``table`` from the ranges of the files of its latest
    slices (``found`` by a column stats build just now, else read in Spark tasks) as a new
    partition of its metadata table ``mdt``; returns the table's config as it now is. The caller
    holds the table lock."""
    mdt.storage.delete_dir(PARTITION_STATS_PARTITION)  # what a build that crashed left
    if found is None:
        found = column_stats.latest_file_ranges(spark, table, column_stats.columns(table))
    by_partition: dict[str, list[ColumnRange]] = {}
    for f in found:
        by_partition.setdefault(f.partition, []).extend(f.ranges)
    instant_time = mdt.timeline.new_instant_time()
    names = {partition_group_id(i): base_file_name(partition_group_id(i), _TOKEN, instant_time, HFILE_EXTENSION)
             for i in range(PARTITION_GROUP_COUNT)}
    ranges = [r for partition, rs in sorted(by_partition.items()) for r in _partition_ranges(partition, rs)]
    entries = _encoded(table, ranges, names)
    stats = [write_base(mdt, PARTITION_STATS_PARTITION, group, names[group], entries.get(group, []))
             for group in sorted(names)]
    return mdt.add_partition(PARTITION_STATS_PARTITION, instant_time, stats)


def partition_ranges(table: HudiTable, wanted_columns: Iterable[str]) -> dict[str, dict[str, ColumnRange]]:
    """The ranges the index holds of ``wanted_columns``: data partition -> column -> range. Reads
    only the HFile blocks whose keys begin with a column asked for."""
    mdt = MetadataTable.load(table.storage, table.config, table.timeline)
    valid = valid_instants(table.timeline)
    prefixes = sorted(column_id(c) for c in wanted_columns)
    out: dict[str, dict[str, ColumnRange]] = {}
    for s in mdt.latest_slices(PARTITION_STATS_PARTITION).values():
        for r in slice_ranges(mdt.storage, s.readable(valid), kinds(table), prefixes).values():
            if not r.is_deleted:
                out.setdefault(r.name, {})[r.column] = r
    return out
