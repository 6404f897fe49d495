"""Merge-on-read append: runs in Spark tasks, writes updates and deletes as log blocks.

Rows arrive partitioned by file group (in any order), as a stream of Arrow batches. Each
file group gets a new log file version for this delta commit (a committed log file is never
appended to: object stores cannot append, and a crash can then never damage a committed file).

The write buffer works as Hudi's does: records of a file group are buffered
and flushed as one block per flush; a group flushes when its buffer reaches
``write.batch.size``, and when all buffers of the task together reach ``write.task.max.size``
the largest flushes first. Memory stays bounded however large the input.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql import layout
from hudiql.config import registry
from hudiql.formats import log_file as L
from hudiql.io.storage import Storage
from hudiql.metadata.column_stats import ColumnRange, encode_ranges, ranges_of, widened_ranges
from hudiql.record.schema import (
    IS_DELETED,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
    column_values,
    conform,
    meta_values,
)
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, WriteStat
from hudiql.write.handle import (
    DELETE,
    FILE_ID,
    SEQUENCE,
    flag,
)

DEFAULT_BATCH_SIZE = int(registry.KEYS[registry.WRITE_BATCH_SIZE].default) * 1024 * 1024
DEFAULT_TASK_MAX_SIZE = int(registry.KEYS[registry.WRITE_TASK_MAX_SIZE].default) * 1024 * 1024


class LogTarget(NamedTuple):
    """Where a file group's new log file goes: the base file of the slice it extends, and the
    instant and version the file is named by (``FileSystemView.log_targets``)."""

    base_file: str | None
    log_instant: str
    version: int


@dataclass
class _GroupBuffer:
    file_id: str
    partition_path: str
    base_file: str | None
    log_base: str
    log_version: int
    new: bool = False  # the write starts the group: its records are inserts
    pieces: list[pa.Table] = field(default_factory=list)
    size: int = 0
    stream: object = None
    path: str = ""
    blocks: int = 0
    updates: int = 0
    deletes: int = 0
    started: float = field(default_factory=time.monotonic)
    ranges: list[ColumnRange] = field(default_factory=list)  # of the rows of its data blocks


@dataclass
class _TaskState:
    partition_id: int
    token: str
    seq: int = 0  # records written by this task attempt, for _hoodie_commit_seqno


@dataclass(frozen=True)
class AppendTask:
    base_uri: str
    instant_time: str
    arrow_schema: pa.Schema  # meta + data columns
    avro_schema: dict  # writer schema with meta columns (block header)
    ordering_field: str | None
    ordering_wrapper: str | None
    #: Per (partition path, file id): file ids repeat across partitions (the fixed ids of the bucket
    #: index under non-blocking concurrency control).
    targets: dict[tuple[str, str], LogTarget]
    block_format: str = "avro"  # or "parquet"
    batch_size: int = DEFAULT_BATCH_SIZE
    task_max_size: int = DEFAULT_TASK_MAX_SIZE
    #: False: a table without meta fields, whose log records keep them empty, as Hudi writes them.
    populate_meta_fields: bool = True
    #: The columns whose ranges the stats rows report (``transaction.metadata_commit.ranged_columns``).
    ranged_columns: tuple[str, ...] = ()
    #: Where a file group this write starts with its log file goes (non-blocking concurrency
    #: control's buckets); ``None``: every row's group must be one of ``targets``.
    new_group: LogTarget | None = None

    def udf(self):
        """The function ``mapInArrow`` calls once per Spark partition."""

        def append(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield from self.run(batches)

        return append

    def write_group(self, rows: pa.Table) -> dict:
        """The rows of one file group as its log file; its stats row."""
        return next(self.run(iter(rows.to_batches()))).to_pylist()[0]

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition_id = ctx.partitionId() if ctx else 0
        task = _TaskState(partition_id, layout.log_write_token(partition_id, self.instant_time,
                                                               ctx.attemptNumber() if ctx else 0))
        storage = Storage(self.base_uri)
        groups: dict[tuple[str, str], _GroupBuffer] = {}
        for batch in batches:
            table = pa.Table.from_batches([batch])
            for key in table.group_by([PARTITION_PATH, FILE_ID]).aggregate([]).to_pylist():
                partition_path, file_id = key[PARTITION_PATH], key[FILE_ID]
                rows = table.filter(pc.and_(pc.equal(table.column(FILE_ID), file_id),
                                            pc.equal(table.column(PARTITION_PATH), partition_path)))
                group = groups.get((partition_path, file_id))
                if group is None:
                    target = self.targets.get((partition_path, file_id))
                    new = target is None
                    if new:
                        if self.new_group is None:
                            raise KeyError(f"no log target for file group {file_id} in partition '{partition_path}'")
                        target = self.new_group
                    group = _GroupBuffer(file_id, partition_path, target.base_file, target.log_instant, target.version,
                                         new)
                    groups[(partition_path, file_id)] = group
                group.pieces.append(rows)
                group.size += rows.nbytes
                if group.size >= self.batch_size:
                    self._flush(storage, group, task)
                while sum(g.size for g in groups.values()) >= self.task_max_size:
                    largest = max(groups.values(), key=lambda g: g.size)
                    if not largest.size:
                        break  # every buffer is empty: nothing more to flush
                    self._flush(storage, largest, task)
        stats = []
        for group in groups.values():
            self._flush(storage, group, task)
            group.stream.close()
            stats.append(self._stats(storage, group))
        if stats:
            yield pa.RecordBatch.from_pylist(stats, schema=STATS_ARROW_SCHEMA)

    def _flush(self, storage: Storage, group: _GroupBuffer, task: _TaskState) -> None:
        if not group.pieces:
            return
        rows = pa.concat_tables(group.pieces).sort_by(SEQUENCE)
        group.pieces, group.size = [], 0
        if group.stream is None:
            name = layout.log_file_name(group.file_id, group.log_base, group.log_version, task.token)
            group.path = layout.join_partition(group.partition_path, name)
            storage.write(layout.marker_path(self.instant_time, group.partition_path, name, "APPEND"), b"")
            group.stream = storage.open_output_stream(group.path)
        forced = flag(rows, DELETE)
        deletes = pc.or_(forced, flag(rows, IS_DELETED))
        updates = rows.filter(pc.invert(deletes))
        if updates.num_rows:
            group.stream.write(L.encode_block(self._data_block(updates, group, task)))
            group.blocks += 1
            group.updates += updates.num_rows
        if pc.any(deletes).as_py():
            removed = rows.filter(deletes)
            natural = forced.filter(deletes).to_pylist()
            orderings = (column_values(removed, self.ordering_field).to_pylist() if self.ordering_field
                         else [None] * removed.num_rows)
            records = [
                L.DeleteRecord(k, group.partition_path, None if n else o)
                for k, n, o in zip(removed.column(RECORD_KEY).to_pylist(), natural, orderings)
            ]
            content = L.delete_content(records, self.ordering_wrapper)
            group.stream.write(L.encode_block(L.LogBlock(L.DELETE, {L.INSTANT_TIME: self.instant_time}, content)))
            group.blocks += 1
            group.deletes += removed.num_rows

    def _data_block(self, updates: pa.Table, group: _GroupBuffer, task: _TaskState) -> L.LogBlock:
        n = updates.num_rows
        meta = meta_values(updates.column(RECORD_KEY), self.instant_time, group.partition_path, group.file_id, task.partition_id, task.seq)
        if not self.populate_meta_fields:
            meta = {name: pa.nulls(n, pa.string()) for name in meta}
        task.seq += n
        data = conform(updates, pa.schema([f for f in self.arrow_schema if f.name not in META_COLUMNS]))
        records = pa.table({**meta, **{c: data.column(c) for c in data.column_names}}).cast(self.arrow_schema)
        if self.ranged_columns:
            group.ranges = widened_ranges(group.ranges, ranges_of(group.path.rsplit("/", 1)[-1], records,
                                                                   self.ranged_columns))
        header = {L.INSTANT_TIME: self.instant_time, L.SCHEMA: json.dumps(self.avro_schema, separators=(",", ":"))}
        if self.block_format == "parquet":
            buf = io.BytesIO()
            pq.write_table(records, buf, compression="snappy")
            return L.LogBlock(L.PARQUET_DATA, header, buf.getvalue())
        return L.LogBlock(L.AVRO_DATA, header, L.avro_table_content(records, self.avro_schema))

    def _stats(self, storage: Storage, group: _GroupBuffer) -> dict:
        size = storage.size(group.path)
        name = group.path.rsplit("/", 1)[-1]
        return WriteStat(
            group.file_id, group.partition_path, group.path, group.log_base, num_writes=group.updates,
            num_deletes=group.deletes, num_update_writes=0 if group.new else group.updates,
            num_inserts=group.updates if group.new else 0, total_write_bytes=size,
            file_size_in_bytes=size, base_file=group.base_file or "", log_files=[name], log_version=group.log_version,
            total_log_records=group.updates + group.deletes, total_log_blocks=group.blocks, total_log_files=1,
            total_upsert_time_ms=int((time.monotonic() - group.started) * 1000),
            column_stats=encode_ranges(group.ranges) if group.ranges else "",
        ).as_row()
