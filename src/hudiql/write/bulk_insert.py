"""Bulk insert: rows written into new base files by the Spark tasks that hold them, as Hudi's bulk
insert row writer writes them with its default sort mode (``hoodie.bulkinsert.sort.mode=NONE``):
no index lookup, no count, no shuffle of its own (rows combined by key were shuffled for that). Each task opens a file per partition path it meets and
starts another when the file reaches ``hoodie.parquet.max.file.size``; so a load costs about what
Spark's own parquet writer does, and the files come out as a Spark parquet write lays them out
(one or more per task and partition).

Rows are buffered per partition path and written a row group at a time: one row group per Arrow
batch would make a file of thousands of tiny row groups when the batches span many partitions.
When the task's buffers hold ``write.task.max.size`` in all, the largest is written out.

The writer takes this path for rows that only start file groups (``writer.write_rows``): a bulk
insert, an insert or upsert into a table no write completed on yet, and the rows of an overwrite.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from hudiql.io.storage import Storage
from hudiql.record.schema import META_COLUMNS, PARTITION_PATH, RECORD_KEY, conform
from hudiql.timeline.commit import STATS_ARROW_SCHEMA
from hudiql.write.create_handle import (
    CreateHandle,
    NewBaseFiles,
    new_record_meta,
    running_task,
    with_generated_keys,
    write_partition_metadata,
)

#: Arrow bytes a partition's buffer collects before they are written as a row group (about Hudi's
#: 120 MB parquet block, before compression).
ROW_GROUP_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class BulkInsertTask:
    """Writes the rows of one Spark partition (data columns, ``RECORD_KEY`` and ``PARTITION_PATH``)
    into new base files (pickled to the executors)."""

    files: NewBaseFiles
    max_file_size: int  # hoodie.parquet.max.file.size
    bytes_per_record: int  # the record size estimate
    #: Files hold ``max_file_size / bytes_per_record`` records, as Hudi's upsert partitioner sizes the
    #: new file groups of an insert or upsert; else (a bulk insert) they grow to ``max_file_size``
    #: bytes written, the estimate sizing a file's first row group only.
    sized_by_estimate: bool
    task_buffer_bytes: int  # write.task.max.size
    generate_keys: bool  # a table without a record key: keys are made here

    def udf(self):
        """The function ``mapInArrow`` calls once per Spark partition."""

        def bulk_insert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield pa.RecordBatch.from_pylist(self.write(batches), schema=STATS_ARROW_SCHEMA)

        return bulk_insert

    def write(self, batches: Iterator[pa.RecordBatch]) -> list[dict]:
        writer = _TaskWriter(self, Storage(self.files.base_uri), *running_task())
        data_schema = pa.schema([f for f in self.files.arrow_schema if f.name not in META_COLUMNS])
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                rows = pa.Table.from_batches([batch])
                if self.generate_keys:
                    rows = with_generated_keys(rows, self.files.instant_time)
                for partition_path, part in _by_partition_path(rows):
                    writer.add(partition_path, conform(part, data_schema, extra=[RECORD_KEY]))
            return writer.finish()
        except BaseException:
            writer.abort()
            raise


@dataclass
class _Partition:
    """One partition path's rows in a task: those buffered, and the file being written."""

    buffered: list[pa.Table] = field(default_factory=list)
    buffered_bytes: int = 0
    handle: CreateHandle | None = None


class _TaskWriter:
    def __init__(self, task: BulkInsertTask, storage: Storage, task_partition: int, token: str) -> None:
        self.task, self.storage, self.task_partition, self.token = task, storage, task_partition, token
        self.partitions: dict[str, _Partition] = {}
        self.buffered_bytes = 0
        self.stats: list[dict] = []

    def add(self, partition_path: str, rows: pa.Table) -> None:
        part = self.partitions.get(partition_path)
        if part is None:
            part = self.partitions[partition_path] = _Partition()
            write_partition_metadata(self.storage, partition_path, self.task.files.instant_time)
        part.buffered.append(rows)
        part.buffered_bytes += rows.nbytes
        self.buffered_bytes += rows.nbytes
        if part.buffered_bytes >= ROW_GROUP_BYTES:
            self._flush(partition_path, part)
        while self.buffered_bytes > self.task.task_buffer_bytes:
            largest = max(self.partitions, key=lambda p: self.partitions[p].buffered_bytes)
            self._flush(largest, self.partitions[largest])

    def abort(self) -> None:
        for part in self.partitions.values():
            if part.handle is not None:
                part.handle.abort()

    def finish(self) -> list[dict]:
        for partition_path, part in self.partitions.items():
            self._flush(partition_path, part)
            if part.handle is not None:
                self.stats.append(part.handle.close())
        return self.stats

    def _flush(self, partition_path: str, part: _Partition) -> None:
        """Write the partition's buffered rows, into as many files as their size needs."""
        if not part.buffered:
            return
        rows = pa.concat_tables(part.buffered)
        self.buffered_bytes -= part.buffered_bytes
        part.buffered, part.buffered_bytes = [], 0
        while rows.num_rows:
            if part.handle is None:
                part.handle = CreateHandle(self.storage, self.task.files, partition_path, self.token)
            handle = part.handle
            block = rows.slice(0, self._rows_that_fit(handle))
            rows = rows.slice(block.num_rows)
            handle.write(new_record_meta(block, self.task.files, partition_path, handle.name, self.task_partition,
                                         first=handle.rows))
            if self._size(handle) >= self.task.max_file_size:
                self.stats.append(handle.close())
                part.handle = None

    def _size(self, handle: CreateHandle) -> float:
        """The file's size, as the task sizes files (``BulkInsertTask.sized_by_estimate``)."""
        return handle.rows * self.task.bytes_per_record if self.task.sized_by_estimate else handle.written_bytes

    def _rows_that_fit(self, handle: CreateHandle) -> int:
        """How many more rows the file takes (at least one)."""
        per_record = self.task.bytes_per_record
        if handle.rows and not self.task.sized_by_estimate:
            per_record = handle.written_bytes / handle.rows
        return max(1, int((self.task.max_file_size - self._size(handle)) / max(per_record, 1.0)))


def _by_partition_path(rows: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """``rows`` split by their partition path, each part in input order and a copy of its own (a
    buffered part must not hold on to the whole batch it came from)."""
    encoded = rows.column(PARTITION_PATH).combine_chunks().dictionary_encode()
    paths = encoded.dictionary.to_pylist()
    if len(paths) == 1:
        yield paths[0], rows
        return
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    start = 0
    for code, count in enumerate(np.bincount(codes, minlength=len(paths))):
        if count:
            yield paths[code], rows.take(pa.array(order[start:start + count]))
            start += count
