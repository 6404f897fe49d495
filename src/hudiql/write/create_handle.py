"""Create handle: one new base file (of a new file group), written by a Spark task block by block,
as Hudi's create handle writes it: a marker first, then the parquet file, its footer holding the
record keys' bloom filter and their smallest and largest key. Bulk inserts (``write.bulk_insert``)
and clustering (``services.clustering``) write their files with it.

The rows it is given carry every meta column; ``new_record_meta`` makes them for new records.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

from hudiql import layout
from hudiql.config import registry as K
from hudiql.formats.bloom_filter import FilterSpec, KeyFooter, footer_filter
from hudiql.index.bloom import filter_spec
from hudiql.io.storage import Storage
from hudiql.metadata.column_stats import ColumnRange, encode_ranges, ranges_of, widened_ranges
from hudiql.record.keygen import KeyGenerator, record_keys_of
from hudiql.record.schema import FILE_NAME, META_COLUMNS, RECORD_KEY, conform, meta_values, to_arrow, with_meta_columns
from hudiql.table.table import HudiTable
from hudiql.timeline.commit import WriteStat
from hudiql.transaction.metadata_commit import ranged_columns


@dataclass(frozen=True)
class NewBaseFiles:
    """How the new base files of one commit are written (pickled to the executors)."""

    base_uri: str
    instant_time: str
    arrow_schema: pa.Schema  # meta columns + data columns, as stored
    compression: str = "snappy"
    #: The columns whose ranges the stats rows report (``transaction.metadata_commit.ranged_columns``).
    ranged_columns: tuple[str, ...] = ()
    #: The bloom filter of each file's footer (``index.bloom.filter_spec``).
    key_filter: FilterSpec | None = None
    #: A table without meta fields: its rows' keys are derived from their key columns by this, and
    #: new rows get empty meta columns but their file name (as Hudi writes them).
    virtual_keys: KeyGenerator | None = None

    @classmethod
    def of(cls, table: HudiTable, instant_time: str, schema: T.StructType | None = None,
           ranged: tuple[str, ...] | None = None) -> NewBaseFiles:
        """The new base files ``table``'s instant ``instant_time`` writes; ``schema`` and ``ranged``
        (its ranged columns) instead of the table's: a clustering that renames or drops columns."""
        return cls(
            table.base_uri, instant_time, to_arrow(with_meta_columns(schema or table.schema)),
            table.settings.choice(K.COMPRESSION), ranged_columns(table) if ranged is None else ranged,
            filter_spec(table), None if table.config.populate_meta_fields else table.keygen,
        )


def new_record_meta(rows: pa.Table, files: NewBaseFiles, partition_path: str, file_name: str, task: int,
                    first: int = 0) -> pa.Table:
    """``rows`` (data columns and ``RECORD_KEY``) with the meta columns of new records that task
    ``task`` writes to ``file_name``, from its ``first``-th record on (``schema.meta_values``)."""
    meta = meta_values(rows.column(RECORD_KEY), files.instant_time, partition_path, file_name, task, first)
    if files.virtual_keys is not None:
        meta = {name: values if name == FILE_NAME else pa.nulls(rows.num_rows, pa.string()) for name, values in meta.items()}
    data = {name: rows.column(name) for name in rows.column_names if name not in META_COLUMNS}
    return pa.table({**meta, **data})


def running_task() -> tuple[int, str]:
    """The Spark task this runs in: its partition id, and the write token of the files it writes
    (``<partition>-<stage>-<attempt>``; ``0-0-0`` outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, layout.write_token(0, 0, 0)
    return ctx.partitionId(), layout.write_token(ctx.partitionId(), ctx.stageId(), ctx.attemptNumber())


def with_generated_keys(rows: pa.Table, instant_time: str) -> pa.Table:
    """``rows`` whose ``RECORD_KEY`` is null given a key, as Hudi makes them for a table without
    a record key: ``<instant>_<task partition>_<row number in the task attempt>``."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    task = (ctx.stageId(), ctx.partitionId(), ctx.attemptNumber()) if ctx else (0, 0, 0)
    counter = _key_counters.setdefault(task, itertools.count())
    given = rows.column(RECORD_KEY).to_pylist()
    keys = [k if k is not None else f"{instant_time}_{task[1]}_{next(counter)}" for k in given]
    return rows.set_column(rows.schema.get_field_index(RECORD_KEY), RECORD_KEY, pa.array(keys, pa.string()))


#: Per task attempt: its row numbers of generated keys, continued across the files it writes.
_key_counters: dict[tuple[int, int, int], itertools.count] = {}


def write_partition_metadata(storage: Storage, partition_path: str, instant_time: str) -> None:
    """The partition's ``.hoodie_partition_metadata``, unless it is there: written before the
    partition's first file (writers that race write the same content, atomically)."""
    path = layout.join_partition(partition_path, layout.PARTITION_METADATA_FILE)
    if not storage.exists(path):
        storage.write_atomic(path, layout.partition_metadata(instant_time, partition_path))


class CreateHandle:
    """One new base file being written: ``write`` its rows in blocks (each a row group), then ``close``."""

    def __init__(self, storage: Storage, files: NewBaseFiles, partition_path: str, token: str) -> None:
        self.storage, self.files, self.partition_path = storage, files, partition_path
        self.started = time.monotonic()
        self.name = layout.base_file_name(layout.new_file_id(), token, files.instant_time)
        self.path = layout.join_partition(partition_path, self.name)
        self.rows = 0
        self.ranges: list[ColumnRange] = []
        self.footer = KeyFooter(files.key_filter)
        # The marker comes first: a rollback of the instant finds the file by it.
        storage.write(layout.marker_path(files.instant_time, partition_path, self.name, "CREATE"), b"")
        self.sink = storage.open_output_stream(self.path)
        self.writer = pq.ParquetWriter(self.sink, files.arrow_schema, compression=files.compression)

    @property
    def written_bytes(self) -> int:
        return self.sink.tell()

    def write(self, rows: pa.Table) -> None:
        """Append ``rows`` (every meta column set) as one row group."""
        rows = conform(rows, self.files.arrow_schema)
        self.writer.write_table(rows, row_group_size=max(rows.num_rows, 1))
        self.footer.add(record_keys_of(rows, self.files.virtual_keys))
        self.rows += rows.num_rows
        if self.files.ranged_columns:
            self.ranges = widened_ranges(self.ranges, ranges_of(self.name, rows, self.files.ranged_columns))

    def abort(self) -> None:
        """Stop writing (the task failed): the unfinished file is left to the instant's rollback,
        which finds it by its marker."""
        for closing in (self.writer.close, self.sink.close):
            try:
                closing()
            except Exception:  # (the task's own error is the one to report)
                pass

    def close(self) -> dict:
        """Finish the file; its write stats row (``STATS_SCHEMA``)."""
        footer = self.footer.entries()
        self.writer.add_key_value_metadata(footer)
        self.writer.close()
        self.sink.close()
        size = self.storage.size(self.path)
        return WriteStat(
            layout.parse_data_file_name(self.name).file_id, self.partition_path, self.path, num_writes=self.rows,
            num_inserts=self.rows, total_write_bytes=size, file_size_in_bytes=size, base_file=self.name,
            total_create_time_ms=int((time.monotonic() - self.started) * 1000),
            column_stats=encode_ranges(self.ranges) if self.ranges else "", **footer_filter(footer),
        ).as_row()


def with_file_name(rows: pa.Table, file_name: str) -> pa.Table:
    """``rows`` moved to the file ``file_name``: their ``_hoodie_file_name`` set to it (a
    clustering's rows keep their other meta columns)."""
    return rows.set_column(rows.schema.get_field_index(FILE_NAME), FILE_NAME,
                           pa.repeat(pa.scalar(file_name, pa.string()), rows.num_rows))
