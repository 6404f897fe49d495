"""What the metadata table's keyed indexes (the record index, secondary indexes: one record per
data record) share in Spark: rows shuffled to one task per index file group, the stats of the
HFiles a task writes, and the compaction of their file groups in Spark tasks."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from hudiql.formats.hfile import write_hfile
from hudiql.io.storage import Storage
from hudiql.layout import HFILE_EXTENSION, base_file_name, write_token
from hudiql.metadata.records import index_file_number
from hudiql.table.metadata_table import MetadataSlice, MetadataTable
from hudiql.timeline.commit import WriteStat

#: The column of an index's frames that names each row's index file group.
GROUP = "__index_group"
#: A slice's live entries merged, for a new base file of the given name: (base file content, None
#: for a group without one; [(log URI, log content)], base file URI, new base file name) -> sorted
#: (key, value) pairs.
SliceMerge = Callable[[bytes | None, list[tuple[str, bytes]], str, str], list[tuple[bytes, bytes]]]


def by_group(frame: DataFrame, count: int) -> DataFrame:
    """``frame`` shuffled by index file group (``GROUP``), one partition per group (bounded by the
    cores): the grouping that follows then needs no shuffle of its own."""
    parallel = max(1, min(count, frame.sparkSession.sparkContext.defaultParallelism * 4))
    return frame.repartition(parallel, GROUP)


def base_info(keys: list[bytes], schema: str) -> dict[str, bytes]:
    """The file info of a base HFile of sorted ``keys`` in record ``schema`` (its text), as Hudi's
    HFile writer describes one."""
    info = {"schema": schema.encode()}
    if keys:
        info.update(minRecordKey=keys[0], maxRecordKey=keys[-1])
    return info


def group_stat(partition: str, file_id: str, path: str, size: int, entries: int, base: bool,
               instant_time: str) -> WriteStat:
    """The write stat of an index file a task wrote: a group's base file, or a write's log file."""
    name = posixpath.basename(path)
    if base:
        return WriteStat(file_id, partition, path, num_writes=entries, num_inserts=entries,
                         total_write_bytes=size, file_size_in_bytes=size, base_file=name)
    return WriteStat(file_id, partition, path, prev_commit=instant_time, num_writes=entries,
                     num_update_writes=entries, total_write_bytes=size, file_size_in_bytes=size, log_files=[name],
                     log_version=1, total_log_blocks=1)


def compact(spark: SparkSession, mdt: MetadataTable, slices: list[MetadataSlice], compaction_time: str,
            merge: SliceMerge) -> list[WriteStat]:
    """Compact index file groups ``slices`` of ``mdt`` into new base HFiles at ``compaction_time``,
    in its record schema: one Spark task per group, its entries merged by ``merge``; a group without
    logs has its base file copied."""
    task = _GroupCompaction(mdt.storage.base_uri, compaction_time, merge, mdt.record_schema())
    return spark.sparkContext.parallelize(slices, len(slices)).map(task.compact).collect()


@dataclass(frozen=True)
class _GroupCompaction:
    mdt_uri: str
    compaction_time: str
    merge: SliceMerge
    schema: str

    def compact(self, s: MetadataSlice) -> WriteStat:
        storage = Storage(self.mdt_uri)
        token = write_token(index_file_number(s.file_id), 0, 0)
        name = base_file_name(s.file_id, token, self.compaction_time, HFILE_EXTENSION)
        path = s.path(name)
        if not s.log_files and s.base_file:
            storage.copy(s.path(s.base_file), path)
            size = storage.size(path)
            return WriteStat(s.file_id, s.partition, path, prev_commit=s.base_instant, total_write_bytes=size,
                             file_size_in_bytes=size, base_file=name)
        logs = [(storage.uri(s.path(n)), storage.read(s.path(n))) for n in s.log_files]
        base = storage.read(s.path(s.base_file)) if s.base_file else None
        entries = self.merge(base, logs, storage.uri(s.path(s.base_file)), name)
        content = write_hfile(entries, file_info=base_info([entries[0][0], entries[-1][0]] if entries else [],
                                                           self.schema))
        storage.write(path, content)
        return WriteStat(s.file_id, s.partition, path, prev_commit=s.base_instant, num_writes=len(entries),
                         total_write_bytes=len(content), file_size_in_bytes=len(content), base_file=name,
                         total_log_files=len(s.log_files))
